"""What ``pypto-build run`` prints of a run: a table per rank, a table of the outputs, and their
comparison with an ``--expected`` file.

A run's JSON (``--json``) lists every dispatch; a person wants to see at a glance which rank did
what and whether the outputs are right. The tables here say, per rank, how many dispatches and
kernel tasks it ran and their wall time, and per output its shape and element type and, given
the arrays expected, whether it is equal to them or by how much it differs
(:func:`compare`). Kept apart from the command's argument handling (:mod:`.cli_run`) because
the comparison is a rule of its own: exact equality (NaN equal to NaN), the largest absolute
difference of the values otherwise, and a shape or element type that differs is a mismatch by
itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pypto_build.sim import DispatchRecord


@dataclass(frozen=True)
class Comparison:
    """One output against the array expected for it."""

    name: str
    equal: bool
    #: The largest absolute difference of the values (None when equal, or when shapes or
    #: element types differ, or the values are not numbers).
    max_abs_diff: float | None
    #: Why the two cannot be compared value by value (shape or element type), else None.
    problem: str | None

    def describe(self) -> str:
        if self.equal:
            return "equal"
        if self.problem is not None:
            return self.problem
        return f"differs: max abs diff {self.max_abs_diff:.6g}"

    def to_json(self) -> dict[str, object]:
        return {"equal": self.equal, "max_abs_diff": self.max_abs_diff, "problem": self.problem}


def compare(
    expected: Mapping[str, npt.NDArray[np.generic]], actual: Mapping[str, npt.NDArray[np.generic]]
) -> list[Comparison]:
    """Each array of ``expected`` against the output of its name in ``actual`` (every name
    must be one; the caller checks), sorted by name."""
    import numpy as np

    comparisons = []
    for name in sorted(expected):
        want, got = expected[name], actual[name]
        if want.shape != got.shape or want.dtype != got.dtype:
            problem = (
                f"expected shape {list(want.shape)} {want.dtype}, got shape {list(got.shape)} "
                f"{got.dtype}"
            )
            comparisons.append(Comparison(name, False, None, problem))
            continue
        numeric = want.dtype.kind in "biufc"
        if np.array_equal(want, got, equal_nan=numeric and want.dtype.kind in "fc"):
            comparisons.append(Comparison(name, True, None, None))
            continue
        diff = None
        if numeric and want.size:
            difference = np.abs(want.astype(np.complex128) - got.astype(np.complex128))
            diff = float(np.nanmax(difference)) if not np.isnan(difference).all() else None
        comparisons.append(Comparison(name, False, diff, None))
    return comparisons


def rank_rows(records: Sequence[DispatchRecord], ranks: int) -> list[tuple[str, ...]]:
    """The per-rank table: rank, dispatches run, kernel tasks, wall time, failed dispatches."""
    rows: list[tuple[str, ...]] = []
    for rank in range(ranks):
        mine = [record for record in records if record.rank == rank]
        ran = [record for record in mine if not record.skipped]
        seconds = sum(record.seconds for record in ran)
        failed = sum(record.code != 0 for record in ran)
        rows.append(
            (
                str(rank),
                str(len(ran)),
                str(sum(record.tasks for record in ran)),
                f"{seconds * 1000:.2f} ms",
                "-" if not failed else str(failed),
            )
        )
    return rows


def output_rows(
    arrays: Mapping[str, npt.NDArray[np.generic]], comparisons: Sequence[Comparison]
) -> list[tuple[str, ...]]:
    """The output table: name, shape, element type and, when compared, the comparison."""
    compared = {comparison.name: comparison.describe() for comparison in comparisons}
    rows: list[tuple[str, ...]] = []
    for name in sorted(arrays):
        array = arrays[name]
        row = (name, str(list(array.shape)), str(array.dtype))
        rows.append((*row, compared.get(name, "-")) if comparisons else row)
    return rows


def table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """``rows`` under ``header`` in aligned columns; a column of numbers is right-aligned."""
    columns = range(len(header))
    widths = [max(len(row[i]) for row in (header, *rows)) for i in columns]
    right = [bool(rows) and all(_numeric(row[i]) for row in rows) for i in columns]

    def line(cells: Sequence[str]) -> str:
        padded = [
            cells[i].rjust(widths[i]) if right[i] else cells[i].ljust(widths[i]) for i in columns
        ]
        return (indent + "  ".join(padded)).rstrip()

    return [line(header), *(line(row) for row in rows)]


def _numeric(cell: str) -> bool:
    """A count, a time (``1.25 ms``) or the ``-`` of none."""
    return cell == "-" or cell.split(" ")[0].replace(".", "", 1).isdigit()
