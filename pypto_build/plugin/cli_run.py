"""``pypto-build run``: run a built program on P simulated ranks.

A thin adapter over :mod:`pypto_build.sim`. The program is the tree's HOST orchestrator or, named
with ``--program``, one of its chip orchestrations, run on every rank without a HOST
orchestrator. Its parameters come from a ``.npz`` file (one array per parameter name; a scalar
as a 0-d array; ``Out`` tensors and a chip orchestration's windows optional; a chip
orchestration's per-rank values with a leading rank axis), and the run's tensors and windows go
into another: the parameters under their names, a HOST orchestrator's window buffers under
``window/<name>`` (a key no parameter can have), and after a failure the error under
``run/error`` beside whatever the run had left. The outcome is printed as a summary line, a
table per rank and a table of the outputs (:mod:`.run_report`) or, with ``--json``, as a
document for machines with every dispatch's wall time; ``--expected`` compares outputs with an
``.npz`` of the same keys and exits 1 when one differs. A run that fails on a rank exits 1 with
each failed rank's error code and message, as does a host without a compiler for the runtime;
a build directory the simulator cannot run, inputs that do not match the program's parameters
(missing, unknown, or of the wrong shape or element type: every problem at once) and an
expected name that is no output are usage errors (exit 2). The simulator is imported only when
the command runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto_build.errors import ExitCode
from pypto_build.files import atomic_write_bytes, open_regular
from pypto_build.plugin.cli_common import (
    PROG,
    UsageError,
    add_chip_option,
    add_json_option,
    add_verbose_option,
    print_error,
    print_json,
    timed,
    verbose_stream,
    whole_number,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pypto_build.plugin.cli_common import Subparsers
    from pypto_build.plugin.run_report import Comparison
    from pypto_build.sim import DispatchRecord, SimProgram, SimResult, SimulationError


def register(commands: Subparsers) -> None:
    """Add ``run`` to the main parser's subcommands."""
    parser = commands.add_parser(
        "run",
        help="run a built program on P simulated ranks (toolchain sim)",
        description=(
            "Run a program of BUILD (an output folder of `pypto-build build` with toolchain "
            "sim, or one of its chip folders) on P simulated ranks on the CPU: its HOST "
            "orchestrator, or a chip orchestration dispatched on every rank with the windows "
            "its DistributedTensor parameters need. Every parameter is read by name from "
            "--inputs (an Out tensor or a window may be left out: it starts zeroed; a chip "
            "orchestration's per-rank values have a leading rank axis); every tensor parameter "
            "and window is written to --out as the run left it, also when it fails."
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
        help=(
            "the program to run: the HOST orchestrator, or a chip orchestration to run on "
            "every rank (default: the HOST orchestrator, else the only chip orchestration)"
        ),
    )
    parser.add_argument(
        "--inputs", metavar="FILE.npz", help="the parameters, one array per name (np.savez)"
    )
    parser.add_argument(
        "--out",
        metavar="FILE.npz",
        help="write every tensor parameter and window after the run here (also after a failure)",
    )
    parser.add_argument(
        "--expected",
        metavar="FILE.npz",
        help=(
            "compare the outputs with these arrays, by the keys --out writes (exit 1 when one "
            "differs)"
        ),
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        metavar="S",
        help="seconds one kernel wait may take (default: $PYPTO_SIM_TIMEOUT_S, else 10)",
    )
    add_json_option(parser)
    add_verbose_option(parser, "print each dispatch as it ran, and the time of each step")
    parser.set_defaults(command=_run)


def _ranks(text: str) -> int:
    value = whole_number(text)
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"{value}: a run has 1 to 64 ranks")
    return value


def _seconds(text: str) -> float:
    from pypto_build.plugin.settings import MAX_SECONDS

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
    from pypto_build.chip_build.sim.library import RuntimeBuildError
    from pypto_build.chip_build.toolchains import ToolchainError
    from pypto_build.sim import SimProgram, SimulationError

    verbose = verbose_stream(args)
    with timed(verbose, f"opened {args.build}"):
        program = SimProgram.open(args.build, chip=args.chip, program=args.program)
    inputs = _read_arrays(args.inputs, "inputs")
    expected = _read_arrays(args.expected, "expected outputs")
    try:
        with timed(verbose, f"ran {program.name} on {args.ranks} simulated ranks"):
            result = program.run(inputs, ranks=args.ranks, timeout=_timeout(args))
    except SimulationError as exc:
        if args.out is not None:
            _write_outputs(Path(args.out), exc.result, exc)
        _report_failure(args, program, exc)
        return ExitCode.PROGRAM_ERROR
    except (ToolchainError, RuntimeBuildError) as exc:  # no host compiler, or a broken one
        print_error(f"the simulation runtime cannot be built: {exc}")
        return ExitCode.PROGRAM_ERROR
    except (ValueError, IndexError) as exc:  # inputs that do not fit the program's parameters
        raise UsageError(str(exc)) from None
    if verbose is not None:
        for record in result.dispatches:
            print(f"{PROG}: {_dispatch_line(record)}", file=verbose)
    if args.out is not None:
        _write_outputs(Path(args.out), result, None)
    comparisons = _compare(args, result, expected)
    _report_success(args, program, result, comparisons)
    if any(not comparison.equal for comparison in comparisons):
        differing = ", ".join(c.name for c in comparisons if not c.equal)
        print_error(f"outputs differ from {args.expected}: {differing}")
        return ExitCode.PROGRAM_ERROR
    return ExitCode.OK


def _dispatch_line(record: DispatchRecord) -> str:
    """One dispatch as ``-v`` prints it."""
    what = "skipped" if record.skipped else f"{record.tasks} tasks, code {record.code}"
    return (
        f"rank {record.rank} dispatch {record.index} {record.next_level}: {what} "
        f"({record.seconds * 1000:.2f} ms)"
    )


def _compare(
    args: argparse.Namespace,
    result: SimResult,
    expected: Mapping[str, npt.NDArray[np.generic]],
) -> list[Comparison]:
    """The outputs against ``--expected`` (none without it); a name that is no output is a
    usage error listing the outputs."""
    from pypto_build.plugin.run_report import compare

    if args.expected is None:
        return []
    outputs = output_arrays(result, None)
    unknown = sorted(set(expected) - set(outputs))
    if unknown:
        raise UsageError(
            f"{args.expected}: {', '.join(unknown)}: not an output of the run (outputs: "
            f"{', '.join(outputs) or 'none'})"
        )
    return compare(expected, outputs)


#: The ``.npz`` key of a window buffer a HOST orchestrator allocated, and of a failed run's
#: error: a slash keeps them apart from parameters, whose names are identifiers.
WINDOW_KEY = "window/{}"
ERROR_KEY = "run/error"


def output_arrays(
    result: SimResult | None, failure: SimulationError | None
) -> dict[str, npt.NDArray[np.generic]]:
    """What ``--out`` holds, by key (sorted): every tensor parameter, the windows that are not
    parameters (a HOST orchestrator's buffers), and a failure's error, one line per rank. A run
    whose process a kernel ended left no tensors: only its error."""
    import numpy as np

    arrays = {} if result is None else {name: result[name] for name in result}
    for name, window in {} if result is None else result.windows.items():
        # A chip orchestration's window is a parameter, the same array: written once, by name.
        if result is not None and result.get(name) is not window:
            arrays[WINDOW_KEY.format(name)] = window
    if failure is not None:
        arrays[ERROR_KEY] = np.array([str(error) for error in failure.ranks])
    return dict(sorted(arrays.items()))


def _write_outputs(path: Path, result: SimResult | None, failure: SimulationError | None) -> None:
    import numpy as np

    # Any: savez's stub types its keywords like its own allow_pickle flag.
    arrays: dict[str, Any] = output_arrays(result, failure)
    stream = io.BytesIO()
    np.savez(stream, **arrays)
    # Whole or not at all, and never written through what ``path`` names (a link, a FIFO).
    atomic_write_bytes(path, stream.getvalue())


def _read_arrays(path: str | None, what: str) -> dict[str, npt.NDArray[np.generic]]:
    """The arrays of the ``.npz`` file ``path`` (none without one), read as a regular file (a
    FIFO is refused, not waited for); ``what`` they are names them in an error, and a damaged
    archive, whatever NumPy's zip reader raises for it, is one usage error."""
    import zipfile
    import zlib

    import numpy as np

    if path is None:
        return {}
    try:
        with open_regular(path) as stream:
            loaded = np.load(stream, allow_pickle=False)
            if not isinstance(loaded, np.lib.npyio.NpzFile):
                raise ValueError("not an .npz archive of named arrays (np.savez writes one)")
            with loaded as archive:
                return {name: archive[name] for name in sorted(archive.files)}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        raise UsageError(f"{path}: cannot read the {what}: {exc}") from None


def _summary(args: argparse.Namespace, program: SimProgram) -> dict[str, object]:
    return {
        "chip": program.build.chip.name,
        "kind": program.kind,
        "program": program.name,
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
        "seconds": round(record.seconds, 6),
        "skipped": record.skipped,
        "tasks": record.tasks,
    }


def _arrays_json(arrays: Mapping[str, npt.NDArray[np.generic]]) -> dict[str, object]:
    return {
        name: {"dtype": str(arrays[name].dtype), "shape": list(arrays[name].shape)}
        for name in sorted(arrays)
    }


def _result_json(result: SimResult) -> dict[str, object]:
    return {
        "dispatches": [_dispatch_json(record) for record in result.dispatches],
        "outputs": _arrays_json(result),
        "windows": _arrays_json(result.windows),
    }


def _print_ranks(records: tuple[DispatchRecord, ...], ranks: int) -> None:
    from pypto_build.plugin.run_report import rank_rows, table

    header = ("rank", "dispatches", "tasks", "time", "failed")
    print("\n".join(table(header, rank_rows(records, ranks))))


def _report_success(
    args: argparse.Namespace,
    program: SimProgram,
    result: SimResult,
    comparisons: list[Comparison],
) -> None:
    from pypto_build.plugin.run_report import output_rows, table

    if args.json:
        document = {**_summary(args, program), "status": "ok", **_result_json(result)}
        if args.expected is not None:
            document["expected"] = {c.name: c.to_json() for c in comparisons}
            if any(not comparison.equal for comparison in comparisons):
                document["status"] = "mismatch"
        print_json(document)
        return
    tasks = sum(record.tasks for record in result.dispatches)
    print(
        f"{program.name} ({program.build.chip.name}) ran on {args.ranks} simulated ranks: "
        f"{len(result.dispatches)} dispatches, {tasks} kernel tasks"
    )
    _print_ranks(result.dispatches, args.ranks)
    header = ("output", "shape", "dtype", *(("expected",) if comparisons else ()))
    print("\n".join(table(header, output_rows(output_arrays(result, None), comparisons))))
    for record in result.dispatches:
        for line in record.log:
            print(f"  rank {record.rank} {record.next_level}: {line}")
    if args.out is not None:
        print(f"wrote {', '.join(output_arrays(result, None))} to {args.out}")


def _report_failure(
    args: argparse.Namespace, program: SimProgram, failure: SimulationError
) -> None:
    from pypto_build.sim import error_name

    errors = failure.ranks
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
            "dispatches": [_dispatch_json(record) for record in failure.dispatches],
        }
        if failure.result is not None:
            document.update(_result_json(failure.result))
        print_json(document)
    else:
        _print_ranks(failure.dispatches, args.ranks)
    print(f"{PROG}: the simulated run failed on {len(errors)} rank(s):", file=sys.stderr)
    for error in errors:
        print(f"  {error}", file=sys.stderr)
    if args.out is not None:
        left = "the error" if failure.result is None else "what the run left, with the error,"
        print(f"{PROG}: wrote {left} to {args.out}", file=sys.stderr)
