"""Every row of ``docs/performance.md``, measured again: ``bench/run_all [--rows ROW ...]``.

Runs the benchmark script of each row in turn (each writes its ``bench/results/*.json`` and
prints its own table), then prints every target in one table, in the form the document's table
takes, and exits 1 when any target is missed (0 when all are met). Rows are measured with the
scripts' default repeats, which keeps the whole run to a few minutes on the recorded machine;
each script takes ``--help`` for more repeats or other sizes. After a run, the table of
``docs/performance.md`` is rewritten from the results files (``--write-document`` does only
that, ``--check-document`` only checks it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
DOCUMENT = BENCH.parent / "docs" / "performance.md"
TABLE_BEGIN = "<!-- table written by bench/run_all -->"
TABLE_END = "<!-- end of table -->"

#: Each row's script and results file, in the document's order (1 also measures 1b).
ROWS: dict[str, tuple[str, str]] = {
    "1": ("bench_frontend.py", "frontend"),
    "2": ("bench_hook.py", "hook"),
    "3": ("bench_cache.py", "cache"),
    "4": ("bench_sim_build.py", "sim_build"),
    "5": ("bench_exchange.py", "exchange"),
    "6": ("bench_render.py", "render"),
    "7": ("bench_startup.py", "startup"),
    "8": ("bench_mc2.py", "mc2"),
}


def recorded_targets(rows: Sequence[str]) -> list[dict[str, Any]]:
    """Every target the results files of ``rows`` record, in row order."""
    targets: list[dict[str, Any]] = []
    for row in rows:
        path = RESULTS / f"{ROWS[row][1]}.json"
        if path.is_file():
            targets += json.loads(path.read_text(encoding="utf-8")).get("targets", [])
    return targets


def table_lines(targets: Sequence[Mapping[str, Any]]) -> list[str]:
    """The Markdown table of ``targets``, as the document holds it."""
    lines = [
        "| row | what | value | target | anchor | verdict |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for target in targets:
        relation = "<=" if target["relation"] == "at most" else ">="
        lines.append(
            f"| {target['row']} | {target['what']} | {target['value']:.3g}{target['unit']} "
            f"| {relation} {target['limit']:g}{target['unit']} | {target['anchor']} "
            f"| {'met' if target['met'] else 'MISSED'} |"
        )
    return lines


def document_status(*, write: bool) -> int:
    """Check (or rewrite) the table between the document's markers against the results files,
    so that the document never drifts from what ``run_all`` last measured."""
    text = DOCUMENT.read_text(encoding="utf-8")
    head, begin, rest = text.partition(TABLE_BEGIN)
    _, end, tail = rest.partition(TABLE_END)
    if not begin or not end:
        print(f"run_all: {DOCUMENT} has no {TABLE_BEGIN} ... {TABLE_END}", file=sys.stderr)
        return 1
    table = "\n".join(table_lines(recorded_targets(sorted(ROWS))))
    wanted = f"{head}{TABLE_BEGIN}\n{table}\n{TABLE_END}{tail}"
    if wanted == text:
        return 0
    if write:
        DOCUMENT.write_text(wanted, encoding="utf-8")
        return 0
    print(
        f"run_all: {DOCUMENT.name}'s table differs from bench/results; run "
        "bench/run_all --write-document",
        file=sys.stderr,
    )
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/run_all", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows",
        nargs="+",
        choices=sorted(ROWS),
        default=sorted(ROWS),
        metavar="ROW",
        help="rows to measure (default: all; row 1 includes 1b)",
    )
    parser.add_argument(
        "--check-document",
        action="store_true",
        help=f"measure nothing: exit 1 unless {DOCUMENT.name}'s table is the recorded results'",
    )
    parser.add_argument(
        "--write-document",
        action="store_true",
        help=f"measure nothing: rewrite {DOCUMENT.name}'s table from the recorded results",
    )
    args = parser.parse_args(argv)
    if args.check_document or args.write_document:
        return document_status(write=args.write_document)
    failed_scripts: list[str] = []
    for row in args.rows:
        script, _ = ROWS[row]
        print(f"\n=== row {row}: bench/{script}", flush=True)
        results = RESULTS / f"{ROWS[row][1]}.json"
        before = results.stat().st_mtime_ns if results.is_file() else None
        done = subprocess.run([sys.executable, str(BENCH / script)], check=False)
        written = results.is_file() and results.stat().st_mtime_ns != before
        # A script exits 1 when a target is missed, and so does one that crashed: only a
        # script that wrote its results measured anything.
        if done.returncode not in (0, 1) or not written:
            failed_scripts.append(f"{script} (exit status {done.returncode}, no results written)")
    targets = recorded_targets(args.rows)
    print()
    print("\n".join(table_lines(targets)))
    missed = [target for target in targets if not target["met"]]
    for script in failed_scripts:
        print(f"run_all: {script} did not finish", file=sys.stderr)
    print(f"\n{len(targets) - len(missed)} of {len(targets)} targets met")
    document_status(write=True)
    return 1 if missed or failed_scripts else 0


if __name__ == "__main__":
    raise SystemExit(main())
