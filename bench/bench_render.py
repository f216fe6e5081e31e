"""Row 6 of ``docs/performance.md``: rendering one builtin variant, against one Jinja2 render.

A builtin collective's kernel is rendered from its package's templates wherever a program uses
it: on the CHIP rail once per sub-build that calls it (a model with hundreds of CHIP pipelines
renders the same kernel hundreds of times per chip), on the HOST rail once per variant a HOST
orchestrator dispatches (every template of the package), and every build renders each variant
on both rails once more to prove that the two agree. So the cost of one render, once whatever
can be prepared ahead is prepared (the template cache warm), is what a large build multiplies.

Measured, in one process after a warm-up: the CHIP-rail kernel of ``samples/moe_a2a``'s
all_to_all_v (``ChipBuiltinKernel.render``), the HOST-rail variant of ``samples/moe_a2a_host``
with all its templates (``HostVariant.render``), and the anchor: one ``render`` of the
package's kernel template compiled by Jinja2 beforehand, with the same variables. Blocks of
calls alternate; per-call times are block medians. Target: each at most 15 us where the
anchor takes 7.5 us, that is at most twice the anchor's median in the same run. Writes
``bench/results/render.json``; exits 1 when a target is missed. Run:
``python bench/bench_render.py [--repeat N] [--calls N]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

import jinja2
from recording import (
    REPO_ROOT,
    BenchmarkFailure,
    JsonValue,
    Target,
    load_average,
    machine,
    median,
    print_table,
    relative_to_repo,
    report_targets,
    summary,
    targets_exit_status,
    write_results,
)

from pypto_build.builtins.manifest import KERNEL_TEMPLATE
from pypto_build.chip_build.builtin_variants import (
    chip_builtin_kernel,
    host_variants,
    kernel_variables,
)
from pypto_build.chip_build.chips import get_chip
from pypto_build.chip_build.subbuild import RUNTIME, lower_file

CHIP = "a3"
CHIP_PROGRAM = REPO_ROOT / "samples" / "moe_a2a" / "src" / "moe_a2a" / "pipelines.py"
HOST_PROGRAM = REPO_ROOT / "samples" / "moe_a2a_host" / "src" / "moe_a2a_host" / "pipelines.py"
#: The issue's 15 us against its anchor's 7.5 us: a ratio, so that a busy machine, which slows
#: both alike, does not decide the verdict.
LIMIT_RATIO = 2.0


def _subjects() -> dict[str, Callable[[], object]]:
    """The two renders and the anchor, each a call without arguments."""
    (chip_program,) = lower_file(CHIP_PROGRAM, (CHIP,))
    kernels = [chip_builtin_kernel(func) for func in chip_program.program.functions]
    kernel = next(found for found in kernels if found is not None)
    (host_program,) = lower_file(HOST_PROGRAM, (CHIP,))
    variant = host_variants(host_program.program)[0]
    chip = get_chip(CHIP)
    environment = jinja2.Environment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    )
    template = environment.from_string(kernel.package.template(KERNEL_TEMPLATE).decode())
    variables = kernel_variables(kernel.package, kernel.variant_vars)
    if template.render(variables) != kernel.render():
        raise BenchmarkFailure("the anchor does not render the CHIP kernel")
    return {
        "Jinja2 render of the compiled kernel template": lambda: template.render(variables),
        "CHIP-rail kernel (ChipBuiltinKernel.render)": kernel.render,
        "HOST-rail variant, all templates (HostVariant.render)": lambda: variant.render(
            chip, RUNTIME
        ),
    }


def _per_call_us(action: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        action()
    return (time.perf_counter() - start) / calls * 1e6


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="blocks of each (default: 15)")
    parser.add_argument("--calls", type=int, default=200, help="calls per block (default: 200)")
    args = parser.parse_args(argv)
    load_before = load_average()
    subjects = _subjects()
    for action in subjects.values():  # the warm-up: templates compiled, caches filled
        action()
    times: dict[str, list[float]] = {name: [] for name in subjects}
    for index in range(args.repeat):
        order = list(subjects.items())
        for name, action in order if index % 2 == 0 else order[::-1]:
            times[name].append(_per_call_us(action, args.calls))
    print_table(
        ["render", "median us", "min us"],
        [[name, f"{median(v):.1f}", f"{min(v):.1f}"] for name, v in times.items()],
    )
    names = list(subjects)
    anchor_us = median(times[names[0]])
    anchor = f"one Jinja2 render of a compiled template ({anchor_us:.1f} us)"
    targets = [
        Target(
            "6",
            f"{name}: {median(times[name]):.1f} us",
            median(times[name]) / anchor_us,
            LIMIT_RATIO,
            "x",
            anchor,
        )
        for name in names[1:]
    ]
    document: dict[str, JsonValue] = {
        "benchmark": "render",
        "calls_per_block": args.calls,
        "chip": CHIP,
        "load_average_1min": {"after": load_average(), "before": load_before},
        "machine": machine(),
        "per_call_us": {name: summary(values, digits=2) for name, values in times.items()},
        "repeat": args.repeat,
        "targets": report_targets(targets),
    }
    path = write_results("render", document)
    print(f"\nwrote {relative_to_repo(path)}")
    return targets_exit_status(targets)


if __name__ == "__main__":
    raise SystemExit(main())
