"""Inputs for ``MoeDispatch.host_orch`` on NR simulated ranks, and a check of a run's outputs.

    python make_inputs.py inputs.npz             # write the In parameters: tokens, counts
    python make_inputs.py --check outputs.npz    # compare `pypto-build run --out` with NumPy

The inputs are fixed, so a run can be checked by eye as well as by ``--check``: the token row
rank ``r`` routes to rank ``d`` as its ``k``-th row holds ``r*1000 + d*100 + k*10 + j % 10`` in
column ``j``, and rank ``r`` routes ``(r + 2*d) % (MAX_RECV + 2)`` rows to rank ``d``. That
covers an empty block (0 rows), a full one (MAX_RECV) and one over capacity (MAX_RECV + 1),
which the exchange clamps to MAX_RECV.

The ``Out`` parameters (``out``, ``recv_out``) are not written: the simulator allocates them
zero-filled. The sizes (NR, MAX_RECV, HIDDEN) are read from the program file, so they cannot
drift from it; importing it is harmless, as its decorators only mark the functions.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

PROGRAM = Path(__file__).resolve().parent / "src" / "moe_a2a" / "pipelines.py"


def _program() -> ModuleType:
    spec = importlib.util.spec_from_file_location("moe_a2a_pipelines", PROGRAM)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{PROGRAM}: cannot load the program file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def routed_counts(nr: int, max_recv: int) -> npt.NDArray[np.int32]:
    """``counts[r, d]``: the rows rank r routes to rank d, before the exchange clamps them."""
    r, d = np.meshgrid(np.arange(nr), np.arange(nr), indexing="ij")
    return ((r + 2 * d) % (max_recv + 2)).astype(np.int32)


def tokens(nr: int, max_recv: int, hidden: int) -> npt.NDArray[np.float32]:
    """``tokens[r, d*MAX_RECV + k, j] = r*1000 + d*100 + k*10 + j % 10``."""
    r, d, k, j = np.meshgrid(
        np.arange(nr), np.arange(nr), np.arange(max_recv), np.arange(hidden), indexing="ij"
    )
    values = r * 1000 + d * 100 + k * 10 + j % 10
    return values.reshape(nr, nr * max_recv, hidden).astype(np.float32)


def inputs(program: ModuleType) -> dict[str, npt.NDArray[np.generic]]:
    """The ``In`` parameters of ``host_orch``, by name."""
    nr, max_recv, hidden = program.NR, program.MAX_RECV, program.HIDDEN
    return {
        "tokens": tokens(nr, max_recv, hidden).reshape(nr * nr * max_recv, hidden),
        "counts": routed_counts(nr, max_recv).reshape(nr * nr),
    }


def golden(program: ModuleType) -> dict[str, npt.NDArray[np.generic]]:
    """What a correct run leaves in ``out`` and ``recv_out``: slot s of rank d's ``out`` holds
    the rows rank s routed to d, zeros past their clamped count; ``recv_out`` that count."""
    nr, max_recv, hidden = program.NR, program.MAX_RECV, program.HIDDEN
    sent = tokens(nr, max_recv, hidden)
    received = np.clip(routed_counts(nr, max_recv), 0, max_recv).T  # [d, s]
    out = np.zeros((nr, nr * max_recv, hidden), dtype=np.float32)
    for d in range(nr):
        for s in range(nr):
            n = int(received[d, s])
            out[d, s * max_recv : s * max_recv + n] = sent[s, d * max_recv : d * max_recv + n]
    return {
        "out": out.reshape(nr * nr * max_recv, hidden),
        "recv_out": received.reshape(nr * nr, 1).astype(np.int32),
    }


def check(program: ModuleType, path: Path) -> int:
    expected = golden(program)
    with np.load(path, allow_pickle=False) as archive:
        actual = {name: archive[name] for name in expected if name in archive.files}
    for name, want in expected.items():
        got = actual.get(name)
        if got is None:
            print(f"{path}: no array '{name}'", file=sys.stderr)
            return 1
        if got.shape != want.shape or got.dtype != want.dtype:
            print(
                f"{name}: {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}",
                file=sys.stderr,
            )
            return 1
        wrong = np.argwhere(got != want)
        if wrong.size:
            at = tuple(int(i) for i in wrong[0])
            print(
                f"{name}: {len(wrong)} elements differ; first at {list(at)}: "
                f"{got[at]}, expected {want[at]}",
                file=sys.stderr,
            )
            return 1
    rows = int(expected["recv_out"].sum())
    print(
        f"outputs match the NumPy golden: {program.NR} ranks exchanged {rows} token rows "
        f"(out {list(expected['out'].shape)}, recv_out {expected['recv_out'].ravel().tolist()})"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="the .npz to write (or, with --check, to read)")
    parser.add_argument(
        "--check", action="store_true", help="compare the outputs in PATH with the golden"
    )
    args = parser.parse_args(argv)
    program = _program()
    if args.check:
        return check(program, args.path)
    args.path.parent.mkdir(parents=True, exist_ok=True)
    # Any: savez's stub types its keywords like its own allow_pickle flag.
    arrays: dict[str, Any] = inputs(program)
    with args.path.open("wb") as stream:
        np.savez(stream, **arrays)
    shapes = ", ".join(f"{name} {a.dtype}{list(a.shape)}" for name, a in arrays.items())
    print(f"wrote {args.path}: {shapes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
