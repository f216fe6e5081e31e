"""Inputs for ``MoeDispatch.host_orch`` on NR simulated ranks, and a check of a run's outputs.

    python make_inputs.py inputs.npz             # write the In parameters: tokens, counts
    python make_inputs.py --check outputs.npz    # compare `pypto-build run --out` with NumPy

The inputs and the expected outputs are the package's own (``src/moe_a2a/golden.py``, which
also checks the installed wheel in ``python -m moe_a2a.demo``); this script uses them from the
source tree, so it works before anything is installed but pypto-build.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))

from moe_a2a import golden  # from the source tree put on the path above


def check(path: Path) -> int:
    """Compare the outputs in ``path`` with the golden; print the verdict."""
    with np.load(path, allow_pickle=False) as archive:
        actual = {name: archive[name] for name in archive.files}
    problem = golden.mismatch(actual)
    if problem is not None:
        print(f"{path}: {problem}", file=sys.stderr)
        return 1
    print(golden.summary())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="the .npz to write (or, with --check, to read)")
    parser.add_argument(
        "--check", action="store_true", help="compare the outputs in PATH with the golden"
    )
    args = parser.parse_args(argv)
    if args.check:
        return check(args.path)
    args.path.parent.mkdir(parents=True, exist_ok=True)
    # Any: savez's stub types its keywords like its own allow_pickle flag.
    arrays: dict[str, Any] = golden.inputs()
    with args.path.open("wb") as stream:
        np.savez(stream, **arrays)
    shapes = ", ".join(f"{name} {a.dtype}{list(a.shape)}" for name, a in arrays.items())
    print(f"wrote {args.path}: {shapes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
