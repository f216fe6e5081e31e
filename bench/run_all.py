"""Every row of ``docs/performance.md``, measured again: ``bench/run_all [--rows ROW ...]``.

Runs the benchmark script of each row in turn (each writes its ``bench/results/*.json`` and
prints its own table), then prints every target in one table, in the form the document's table
takes, and exits 1 when any target is missed (0 when all are met). Rows are measured with the
scripts' default repeats, which keeps the whole run to a few minutes on the recorded machine;
each script takes ``--help`` for more repeats or other sizes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"

#: Each row's script and results file, in the document's order (1 also measures 1b).
ROWS: dict[str, tuple[str, str]] = {
    "1": ("bench_frontend.py", "frontend"),
    "2": ("bench_hook.py", "hook"),
    "3": ("bench_cache.py", "cache"),
    "4": ("bench_sim_build.py", "sim_build"),
    "5": ("bench_exchange.py", "exchange"),
    "6": ("bench_render.py", "render"),
    "7": ("bench_startup.py", "startup"),
}


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
    args = parser.parse_args(argv)
    failed_scripts: list[str] = []
    for row in args.rows:
        script, _ = ROWS[row]
        print(f"\n=== row {row}: bench/{script}", flush=True)
        done = subprocess.run([sys.executable, str(BENCH / script)], check=False)
        if done.returncode not in (0, 1):
            failed_scripts.append(f"{script} (exit status {done.returncode})")
    targets = []
    for row in args.rows:
        _, results = ROWS[row]
        path = RESULTS / f"{results}.json"
        if path.is_file():
            targets += json.loads(path.read_text(encoding="utf-8")).get("targets", [])
    print("\n| row | what | value | target | anchor | verdict |")
    print("| --- | --- | --- | --- | --- | --- |")
    for target in targets:
        relation = "<=" if target["relation"] == "at most" else ">="
        print(
            f"| {target['row']} | {target['what']} | {target['value']:.3g}{target['unit']} "
            f"| {relation} {target['limit']:g}{target['unit']} | {target['anchor']} "
            f"| {'met' if target['met'] else 'MISSED'} |"
        )
    missed = [target for target in targets if not target["met"]]
    for script in failed_scripts:
        print(f"run_all: {script} did not finish", file=sys.stderr)
    print(f"\n{len(targets) - len(missed)} of {len(targets)} targets met")
    return 1 if missed or failed_scripts else 0


if __name__ == "__main__":
    raise SystemExit(main())
