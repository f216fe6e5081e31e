"""The ``pypto-build`` console script and ``python -m pypto_build``.

``--version`` is answered here, before the command line is loaded: scripts, editors and CI
probe the version far more often than they run a command, and building the parser loads the
options of every command. Everything else goes to :func:`pypto_build.plugin.cli.main`.
"""

from __future__ import annotations

import sys


def main() -> int:
    """Run ``pypto-build`` on ``sys.argv[1:]`` and return the exit code."""
    if sys.argv[1:] == ["--version"]:
        from pypto_build import PROG, __version__

        print(f"{PROG} {__version__}")
        return 0
    from pypto_build.plugin.cli import main as run

    return run()
