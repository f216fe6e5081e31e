"""check-render's second render, in a process of its own.

``python -m pypto_build.chip_build.determinism.render_worker PATH --out DIR --source-root DIR
--chip CHIP...`` renders the program file ``PATH`` with the engine's
:func:`~pypto_build.chip_build.build.render`: lowering, then the renderer that check-render's
first render runs in check-render's own process. A process of its own is what lets the render
run under another hash seed, locale, time zone, umask and working directory
(:mod:`.environment`), which cannot change inside one process. It calls the engine directly,
not the ``pypto-build`` command line: the check belongs to the engine, and the command line is
one of its front ends. Not a user command; its exit status is 0 after a render and 1, with the
reason on standard error, after a refused one.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pypto_build.chip_build.build import render
from pypto_build.chip_build.render_errors import RenderError
from pypto_build.lowering.diagnostics import ProgramError


def main(argv: Sequence[str] | None = None) -> int:
    """Render as ``argv`` says (see the module); the exit status."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--source-root", type=Path, required=True)
    parser.add_argument("--chip", dest="chips", action="append", required=True)
    args = parser.parse_args(argv)
    try:
        render([args.path], chips=args.chips, out_dir=args.out, source_root=args.source_root)
    except ProgramError as err:
        print(err.render(), file=sys.stderr)
        return 1
    except RenderError as err:
        print(err, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
