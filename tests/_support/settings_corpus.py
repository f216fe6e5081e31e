"""Good and bad ``[tool.pypto]`` tables: the one corpus that both the runtime check
(``settings_from_table``) and the shipped JSON schema (through validate-pyproject) must judge
alike, entry by entry."""

from __future__ import annotations

from typing import NamedTuple

COMMIT = "6ebaf77156313aaeb5c9457c57b16c45b84ae7e8"
#: The smallest valid table: the two required keys.
MINIMAL: dict[str, object] = {"programs": ["src/moe/pipelines.py"], "package": "moe/_kernels"}


class Case(NamedTuple):
    name: str
    table: dict[str, object]
    valid: bool


def _with(**changes: object) -> dict[str, object]:
    table = {**MINIMAL}
    for key, value in changes.items():
        table[key.replace("_", "-")] = value
    return table


def _without(key: str) -> dict[str, object]:
    return {name: value for name, value in MINIMAL.items() if name != key}


CASES = [
    Case("minimal", MINIMAL, True),
    Case(
        "full",
        _with(
            chips=["a2", "a3", "a5"],
            toolchain="sim",
            platform_tag="manylinux_2_28_x86_64",
            compiler_launcher="ccache --some-flag",
            jobs=4,
            runtime_root="/opt/simpler",
            runtime_revision=COMMIT,
            pto_isa_root="../pto-isa",
            pto_isa_revision=COMMIT,
        ),
        True,
    ),
    Case("several-programs", _with(programs=["a.py", "sub/b.py"]), True),
    Case("package-with-trailing-slash", _with(package="moe/_kernels/"), True),
    Case("platform-tag-any", _with(platform_tag="any"), True),
    Case("empty-launcher", _with(compiler_launcher=""), True),
    Case("no-programs-key", _without("programs"), False),
    Case("no-package-key", _without("package"), True),
    Case("empty-programs", _with(programs=[]), False),
    Case("program-not-a-list", _with(programs="a.py"), False),
    Case("program-not-a-string", _with(programs=[1]), False),
    Case("program-listed-twice", _with(programs=["a.py", "a.py"]), False),
    Case("program-absolute", _with(programs=["/abs/a.py"]), False),
    Case("program-outside", _with(programs=["../a.py"]), False),
    Case("program-dotdot-inside", _with(programs=["src/../a.py"]), False),
    Case("program-backslash", _with(programs=["src\\a.py"]), False),
    Case("program-empty-string", _with(programs=[""]), False),
    Case("package-absolute", _with(package="/moe/_kernels"), False),
    Case("package-outside", _with(package="../_kernels"), False),
    Case("package-empty", _with(package=""), False),
    Case("package-not-a-string", _with(package=["moe"]), False),
    Case("unknown-chip", _with(chips=["a3", "a9"]), False),
    Case("no-chips", _with(chips=[]), False),
    Case("chip-twice", _with(chips=["a3", "a3"]), False),
    Case("chips-not-a-list", _with(chips="a3"), False),
    Case("unknown-toolchain", _with(toolchain="gcc"), False),
    Case("platform-tag-with-dashes", _with(platform_tag="py3-none-any"), False),
    Case("platform-tag-uppercase", _with(platform_tag="Linux_x86_64"), False),
    Case("launcher-not-a-string", _with(compiler_launcher=["ccache"]), False),
    Case("jobs-zero", _with(jobs=0), False),
    Case("jobs-boolean", _with(jobs=True), False),
    Case("jobs-string", _with(jobs="4"), False),
    Case("jobs-float", _with(jobs=2.5), False),
    Case("runtime-root-not-a-string", _with(runtime_root=["/opt/simpler"]), False),
    Case("short-revision", _with(runtime_revision="6ebaf77"), False),
    Case("uppercase-revision", _with(pto_isa_revision=COMMIT.upper()), False),
    Case(
        "debug-build-with-flags",
        _with(
            build_type="debug",
            sim_defines=["TRACE", "LEVEL=2"],
            sim_cxxflags="-fsanitize=address -fno-omit-frame-pointer",
            cann_defines=["X_Y"],
            cann_cxxflags="-g",
            verbose=True,
        ),
        True,
    ),
    Case("unknown-build-type", _with(build_type="relwithdebinfo"), False),
    Case("define-with-dash-d", _with(sim_defines=["-DTRACE"]), False),
    Case("define-not-an-identifier", _with(cann_defines=["2X=1"]), False),
    Case("cxxflags-a-list", _with(sim_cxxflags=["-g"]), False),
    Case("verbose-a-string", _with(verbose="yes"), False),
    Case("misspelt-key", {**MINIMAL, "chip": ["a3"]}, False),
    Case("snake-case-key", {**MINIMAL, "compiler_launcher": "ccache"}, False),
    Case("unknown-key", {**MINIMAL, "optimize": True}, False),
]
