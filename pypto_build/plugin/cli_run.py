"""``pypto-build run``: run a built program on P simulated ranks (DESIGN §1, §8).

A thin adapter over :mod:`pypto_build.sim`: the program's parameters come from a ``.npz`` file
(one array per parameter name; a scalar as a 0-d array; ``Out`` tensors optional, zero-filled when
absent), every tensor parameter goes back into another one, and the outcome is printed as a short
summary or, with ``--json``, as a document for machines. A run that fails on a rank exits 1 with
each failed rank's error code and message, as does a host without a compiler for the runtime; a
build directory the simulator cannot run or inputs that do not match the program's parameters
(missing, unknown, or of the wrong shape or element type) are usage errors (exit 2). The
simulator is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto_build.plugin.cli_common import (
    PROG,
    ExitCode,
    UsageError,
    add_chip_option,
    add_json_option,
    print_error,
    print_json,
    whole_number,
)
from pypto_build.plugin.settings import MAX_SECONDS

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pypto_build.plugin.cli_common import Subparsers
    from pypto_build.sim import DispatchRecord, RankError, SimProgram, SimResult


def register(commands: Subparsers) -> None:
    """Add ``run`` to the main parser's subcommands."""
    parser = commands.add_parser(
        "run",
        help="run a built program on P simulated ranks (toolchain sim)",
        description=(
            "Run the HOST orchestrator of BUILD (an output folder of `pypto-build build` with "
            "toolchain sim, or one of its chip folders) on P simulated ranks on the CPU. Every "
            "parameter is read by name from --inputs (an Out tensor may be left out: it starts "
            "zero-filled); every tensor parameter is written to --out as the run left it."
        ),
    )
    parser.add_argument("build", metavar="BUILD", help="the build folder")
    parser.add_argument(
        "--ranks", type=_ranks, required=True, metavar="P", help="simulated ranks (1 to 64)"
    )
    add_chip_option(
        parser, "the chip tree to run (default: the only one in BUILD)", repeatable=False
    )
    parser.add_argument(
        "--program",
        metavar="NAME",
        help="the HOST orchestrator to run (default: the only one)",
    )
    parser.add_argument(
        "--inputs", metavar="FILE.npz", help="the parameters, one array per name (np.savez)"
    )
    parser.add_argument(
        "--out", metavar="FILE.npz", help="write every tensor parameter after the run here"
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        metavar="S",
        help="seconds one kernel wait may take (default: $PYPTO_SIM_TIMEOUT_S, else 10)",
    )
    add_json_option(parser)
    parser.set_defaults(command=_run)


def _ranks(text: str) -> int:
    value = whole_number(text)
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"{value}: a run has 1 to 64 ranks")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text}: the timeout must be positive")
    # inf or 1e300 would reach the runtime's waits as a duration it cannot represent.
    if not value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text}: the timeout must be at most {MAX_SECONDS:g} seconds (one day)"
        )
    return value


def _timeout(args: argparse.Namespace) -> float | None:
    """``--timeout``, else ``$PYPTO_SIM_TIMEOUT_S`` checked as the option is (None: neither)."""
    from pypto_build.chip_build.sim.world import TIMEOUT_ENV

    if args.timeout is not None:
        return float(args.timeout)
    text = os.environ.get(TIMEOUT_ENV)
    if not text:
        return None
    try:
        return _seconds(text)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"{TIMEOUT_ENV}: {exc}") from None


def _run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("numpy") is None:
        print_error("run needs NumPy for the simulator: pip install 'pypto-build[sim]'")
        return ExitCode.PROGRAM_ERROR
    import numpy as np

    from pypto_build.chip_build.sim.library import RuntimeBuildError
    from pypto_build.chip_build.toolchains import ToolchainError
    from pypto_build.sim import BuildTreeError, SimProgram, SimulationError

    try:
        program = SimProgram.open(args.build, chip=args.chip, program=args.program)
    except BuildTreeError as exc:
        raise UsageError(str(exc)) from None
    inputs = _read_inputs(args.inputs)
    try:
        result = program.run(inputs, ranks=args.ranks, timeout=_timeout(args))
    except SimulationError as exc:
        _report_failure(args, program, exc.ranks)
        return ExitCode.PROGRAM_ERROR
    except (ToolchainError, RuntimeBuildError) as exc:  # no host compiler, or a broken one
        print_error(f"the simulation runtime cannot be built: {exc}")
        return ExitCode.PROGRAM_ERROR
    except (ValueError, IndexError) as exc:  # inputs that do not fit the program's parameters
        raise UsageError(str(exc)) from None
    if args.out is not None:
        # Any: savez's stub types its keywords like its own allow_pickle flag.
        outputs: dict[str, Any] = {name: result[name] for name in sorted(result)}
        with Path(args.out).open("wb") as stream:
            np.savez(stream, **outputs)
    _report_success(args, program, result)
    return ExitCode.OK


def _read_inputs(path: str | None) -> dict[str, npt.NDArray[np.generic]]:
    import numpy as np

    if path is None:
        return {}
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in sorted(archive.files)}
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read the inputs: {exc}") from None


def _summary(args: argparse.Namespace, program: SimProgram) -> dict[str, object]:
    return {
        "chip": program.build.chip.name,
        "program": program.host.name,
        "ranks": args.ranks,
    }


def _dispatch_json(record: DispatchRecord) -> dict[str, object]:
    return {
        "code": record.code,
        "index": record.index,
        "log": list(record.log),
        "message": record.message,
        "next_level": record.next_level,
        "rank": record.rank,
        "skipped": record.skipped,
        "tasks": record.tasks,
    }


def _report_success(args: argparse.Namespace, program: SimProgram, result: SimResult) -> None:
    if args.json:
        document = {
            **_summary(args, program),
            "status": "ok",
            "dispatches": [_dispatch_json(record) for record in result.dispatches],
            "outputs": {
                name: {"dtype": str(result[name].dtype), "shape": list(result[name].shape)}
                for name in sorted(result)
            },
        }
        print_json(document)
        return
    tasks = sum(record.tasks for record in result.dispatches)
    print(
        f"{program.host.name} ({program.build.chip.name}) ran on {args.ranks} simulated ranks: "
        f"{len(result.dispatches)} dispatches, {tasks} kernel tasks"
    )
    for record in result.dispatches:
        for line in record.log:
            print(f"  rank {record.rank} {record.next_level}: {line}")
    if args.out is not None:
        print(f"wrote {', '.join(sorted(result))} to {args.out}")


def _report_failure(
    args: argparse.Namespace, program: SimProgram, errors: tuple[RankError, ...]
) -> None:
    from pypto_build.sim import error_name

    if args.json:
        document = {
            **_summary(args, program),
            "status": "failed",
            "errors": [
                {
                    "code": error.code,
                    "message": error.message,
                    "name": error_name(error.code),
                    "next_level": error.next_level,
                    "rank": error.rank,
                }
                for error in errors
            ],
        }
        print_json(document)
    print(f"{PROG}: the simulated run failed on {len(errors)} rank(s):", file=sys.stderr)
    for error in errors:
        print(f"  {error}", file=sys.stderr)
