"""The [tool.pypto] settings model: validation messages, environment overrides, the shipped JSON
schema (registered with validate-pyproject, agreeing with the runtime check on one corpus) and
the generated settings reference."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _support.settings_corpus import CASES, Case
from validate_pyproject import api as validate_pyproject
from validate_pyproject.error_reporting import ValidationError

from pypto_build.plugin.settings import (
    OTHER_VARIABLES,
    PyptoSettings,
    SettingsError,
    apply_config_settings,
    apply_environment,
    load_settings,
    override,
    settings_from_table,
)
from pypto_build.plugin.settings.reference import (
    DOCS_BEGIN,
    DOCS_END,
    reference_table,
    with_reference,
)
from pypto_build.plugin.settings.regenerate import main as regenerate
from pypto_build.plugin.settings.schema import SCHEMA_ID, SCHEMA_PATH, schema_text, settings_schema

SAMPLE = {
    "programs": ["src/moe/pipelines.py"],
    "chips": ["a3", "a5"],
    "toolchain": "auto",
    "package": "moe/_kernels",
}


def test_a_full_table() -> None:
    settings = settings_from_table(
        {**SAMPLE, "compiler-launcher": "ccache", "jobs": 4, "pto-isa-root": "/opt/pto-isa"}
    )
    assert settings == PyptoSettings(
        programs=("src/moe/pipelines.py",),
        chips=("a3", "a5"),
        toolchain="auto",
        package="moe/_kernels",
        compiler_launcher="ccache",
        jobs=4,
        pto_isa_root="/opt/pto-isa",
    )


def test_defaults() -> None:
    """Only ``programs`` is required; ``package`` and ``chips`` are found at build time (the
    wheel's import package, the chips the programs' ops support: tests/plugin/test_backend.py)."""
    settings = settings_from_table({"programs": ["p.py"]})
    assert (settings.package, settings.chips, settings.toolchain, settings.platform_tag) == (
        None,
        None,
        "auto",
        "auto",
    )
    assert settings.strict is False
    assert (settings.compiler_launcher, settings.jobs, settings.runtime_root) == (None, None, None)
    assert (settings.runtime_revision, settings.pto_isa_root, settings.pto_isa_revision) == (
        None,
        None,
        None,
    )


UNKNOWN_CHIP = "tool.pypto.chips[1]: unknown chip 'a9'; valid chips: a2, a3, a5"
BAD_TOOLCHAIN = "tool.pypto.toolchain: expected one of 'auto', 'cann', 'sim', got 'gcc'"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"chips": ["a3", "a9"]}, UNKNOWN_CHIP),
        ({"chips": []}, "tool.pypto.chips: at least one entry is needed"),
        ({"chips": ["a3", "a3"]}, "tool.pypto.chips[1]: 'a3' is listed twice"),
        ({"chips": "a3"}, "tool.pypto.chips: expected a list of strings, got 'a3'"),
        ({"chips": [3]}, "tool.pypto.chips[0]: expected a string, got 3"),
        ({"toolchain": "gcc"}, BAD_TOOLCHAIN),
        ({"jobs": 0}, "tool.pypto.jobs: 0 is not allowed; at least 1 is needed"),
        ({"jobs": True}, "tool.pypto.jobs: expected an integer, got True"),
        ({"jobs": "4"}, "tool.pypto.jobs: expected an integer, got '4'"),
        ({"package": "/abs"}, "tool.pypto.package: '/abs' must be a relative path"),
        ({"programs": ["../x.py"]}, "tool.pypto.programs[0]: '../x.py' must be a relative path"),
        ({"compiler-launcher": ["ccache"]}, "tool.pypto.compiler-launcher: expected a string"),
        ({"runtime-root": ["/opt/simpler"]}, "tool.pypto.runtime-root: expected a string"),
        (
            {"runtime-revision": "6ebaf77"},
            "tool.pypto.runtime-revision: '6ebaf77' is not a commit id; 40 lowercase hex digits",
        ),
        (
            {"pto-isa-revision": "CD4A3D3F7A1A27FCFE536F617E9BCA3008929664"},
            "tool.pypto.pto-isa-revision: 'CD4A3D3F7A1A27FCFE536F617E9BCA3008929664' is not a",
        ),
        ({"platform-tag": "py3-none-any"}, "tool.pypto.platform-tag: 'py3-none-any' is not a"),
        ({"chip": ["a3"]}, "tool.pypto: unknown key 'chip'; did you mean 'chips'?"),
        ({"chipz": ["a3"]}, "tool.pypto: unknown key 'chipz'; did you mean 'chips'?"),
        (
            {"compiler_launcher": "ccache"},
            "tool.pypto: unknown key 'compiler_launcher'; did you mean 'compiler-launcher'? "
            "(keys are spelled in kebab-case)",
        ),
        ({"optimize": True}, "tool.pypto: unknown key 'optimize'; valid keys: programs, package,"),
    ],
)
def test_errors_name_the_key_path(change: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        settings_from_table({**SAMPLE, **change})
    assert str(caught.value).startswith(message)


def test_programs_alone_are_required() -> None:
    with pytest.raises(SettingsError) as caught:
        settings_from_table({"chips": ["a3"]})
    assert caught.value.errors == ("tool.pypto: missing required key 'programs'",)


def test_every_error_of_a_table_is_reported_together() -> None:
    table = {
        "programs": [],
        "chip": ["a3"],
        "toolchain": "gcc",
        "runtime_root": "/opt/simpler",
        "jobs": 0,
    }
    with pytest.raises(SettingsError) as caught:
        settings_from_table(table)
    assert caught.value.errors == (
        "tool.pypto.programs: at least one entry is needed",
        "tool.pypto: unknown key 'chip'; did you mean 'chips'?",
        "tool.pypto.toolchain: expected one of 'auto', 'cann', 'sim', got 'gcc'",
        "tool.pypto: unknown key 'runtime_root'; did you mean 'runtime-root'? (keys are spelled "
        "in kebab-case)",
        "tool.pypto.jobs: 0 is not allowed; at least 1 is needed",
    )
    assert str(caught.value) == "\n".join(caught.value.errors)


def test_environment_overrides() -> None:
    settings = settings_from_table({**SAMPLE, "compiler-launcher": "ccache"})
    changed = apply_environment(
        settings,
        {
            "PYPTO_CHIPS": "a2, a5",
            "PYPTO_TOOLCHAIN": "sim",
            "PYPTO_JOBS": "3",
            "PYPTO_COMPILER_LAUNCHER": "",
        },
    )
    assert (changed.chips, changed.toolchain, changed.jobs) == (("a2", "a5"), "sim", 3)
    assert changed.compiler_launcher is None
    assert apply_environment(settings, {"PYPTO_CHIPS": " "}) == settings
    assert apply_environment(settings, {"PYPTO_CHIPS": "a5 a3"}).chips == ("a5", "a3")


def test_every_key_has_a_derived_environment_override() -> None:
    """One PYPTO_<KEY> per key of the model (hatchling passes a hook nothing else); an empty
    one turns an optional setting off."""
    commit = "6ebaf77156313aaeb5c9457c57b16c45b84ae7e8"
    environ = {
        "PYPTO_PROGRAMS": "a.py,b.py",
        "PYPTO_PACKAGE": "pkg/_kernels",
        "PYPTO_RUNTIME_ROOT": "/opt/simpler",
        "PYPTO_RUNTIME_REVISION": commit,
        "PYPTO_PTO_ISA_ROOT": "../pto-isa",
        "PYPTO_PTO_ISA_REVISION": commit,
    }
    changed = apply_environment(settings_from_table(SAMPLE), environ)
    assert changed == PyptoSettings(
        programs=("a.py", "b.py"),
        chips=("a3", "a5"),
        package="pkg/_kernels",
        runtime_root="/opt/simpler",
        runtime_revision=commit,
        pto_isa_root="../pto-isa",
        pto_isa_revision=commit,
    )
    # An empty variable turns an optional setting off (package: back to its default), and
    # leaves a required one, or a list, as it is.
    cleared = {
        "PYPTO_RUNTIME_ROOT": "",
        "PYPTO_PROGRAMS": "",
        "PYPTO_PACKAGE": "",
        "PYPTO_CHIPS": "",
    }
    assert apply_environment(changed, cleared) == dataclasses.replace(
        changed, runtime_root=None, package=None
    )
    assert apply_environment(changed, {"PYPTO_PLATFORM_TAG": "any"}).platform_tag == "any"


def test_every_bad_variable_is_reported_together() -> None:
    with pytest.raises(SettingsError) as caught:
        apply_environment(PyptoSettings(), {"PYPTO_CHIPS": "a9", "PYPTO_JOBS": "x"})
    assert caught.value.errors == (
        "PYPTO_CHIPS[0]: unknown chip 'a9'; valid chips: a2, a3, a5",
        "PYPTO_JOBS: 'x' is not a whole number",
    )


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"PYPTO_CHIPS": "a3,a9"}, "PYPTO_CHIPS[1]: unknown chip 'a9'; valid chips: a2, a3, a5"),
        ({"PYPTO_TOOLCHAIN": "nvcc"}, "PYPTO_TOOLCHAIN: expected one of 'auto', 'cann', 'sim'"),
        ({"PYPTO_JOBS": "lots"}, "PYPTO_JOBS: 'lots' is not a whole number"),
        ({"PYPTO_JOBS": "0"}, "PYPTO_JOBS: 0 is not allowed; at least 1 is needed"),
        ({"PYPTO_RUNTIME_REVISION": "HEAD"}, "PYPTO_RUNTIME_REVISION: 'HEAD' is not a commit id"),
    ],
)
def test_environment_errors_name_the_variable(environ: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        apply_environment(PyptoSettings(), environ)
    assert str(caught.value).startswith(message)


def test_command_line_override_names_the_option() -> None:
    assert override(PyptoSettings(), "--chip", "chips", ["a5"]).chips == ("a5",)
    with pytest.raises(SettingsError, match=r"--chip\[0\]: unknown chip 'x'"):
        override(PyptoSettings(), "--chip", "chips", ["x"])


def test_load_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [project]
            name = "demo"

            [tool.pypto]
            programs = ["src/demo/pipelines.py"]
            package = "demo/_kernels"
            chips = ["a3"]
            """
        ),
        encoding="utf-8",
    )
    settings = load_settings(tmp_path, {"PYPTO_TOOLCHAIN": "sim"})
    assert (settings.programs, settings.chips, settings.toolchain) == (
        ("src/demo/pipelines.py",),
        ("a3",),
        "sim",
    )


def test_load_without_the_table_or_with_broken_toml(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    with pytest.raises(SettingsError, match=r"no \[tool.pypto\] table"):
        load_settings(tmp_path, {})
    (tmp_path / "pyproject.toml").write_text("[tool.pypto\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"pyproject\.toml: "):
        load_settings(tmp_path, {})


def test_the_sample_package_is_valid(repo_root: Path) -> None:
    settings = load_settings(repo_root / "samples" / "moe_a2a", {})
    assert settings.chips == ("a3", "a5")


def test_shipped_schema_matches_the_model() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text()
    assert json.loads(schema_text()) == settings_schema()
    assert regenerate(["--check"]) == 0


def test_schema_describes_every_field_and_constraint() -> None:
    schema = settings_schema()
    assert schema["$id"] == SCHEMA_ID
    properties = schema["properties"]
    assert list(properties) == [
        "programs",
        "package",
        "chips",
        "toolchain",
        "platform-tag",
        "compiler-launcher",
        "jobs",
        "build-type",
        "sim-defines",
        "sim-cxxflags",
        "cann-defines",
        "cann-cxxflags",
        "runtime-root",
        "runtime-revision",
        "pto-isa-root",
        "pto-isa-revision",
        "cache-max-size",
        "remote-cache-url",
        "remote-cache-read-only",
        "remote-cache-signed",
        "remote-cache-fallback-url",
        "remote-cache-timeout",
        "verbose",
        "strict",
    ]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["programs"]
    assert "default" not in properties["programs"]
    assert properties["programs"]["minItems"] == 1
    assert properties["chips"]["items"] == {"type": "string", "enum": ["a2", "a3", "a5"]}
    assert (properties["chips"]["minItems"], properties["chips"]["uniqueItems"]) == (1, True)
    assert properties["toolchain"]["enum"] == ["auto", "cann", "sim"]
    assert properties["toolchain"]["default"] == "auto"
    assert properties["jobs"] == {
        "description": properties["jobs"]["description"],
        "type": "integer",
        "minimum": 1,
    }
    assert all(prop["description"] for prop in properties.values())
    assert properties["remote-cache-read-only"]["type"] == "boolean"
    assert properties["remote-cache-timeout"]["exclusiveMinimum"] == 0


def test_validate_pyproject_finds_the_schema_through_its_entry_point() -> None:
    (entry,) = importlib.metadata.entry_points(group="validate_pyproject.tool_schema", name="pypto")
    assert entry.load()("pypto") == settings_schema()


@pytest.fixture(scope="module")
def validator() -> validate_pyproject.Validator:
    return validate_pyproject.Validator()


def _schema_accepts(validator: validate_pyproject.Validator, table: dict[str, object]) -> bool:
    try:
        validator({"tool": {"pypto": table}})
    except ValidationError:
        return False
    return True


def _runtime_accepts(table: dict[str, object]) -> bool:
    try:
        settings_from_table(table)
    except SettingsError:
        return False
    return True


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_schema_and_runtime_check_agree_on_every_table(
    validator: validate_pyproject.Validator, case: Case
) -> None:
    assert (_schema_accepts(validator, case.table), _runtime_accepts(case.table)) == (
        case.valid,
        case.valid,
    )


def test_the_validate_pyproject_command_checks_the_table(tmp_path: Path, repo_root: Path) -> None:
    command = [sys.executable, "-m", "validate_pyproject"]
    for sample in ("moe_a2a", "moe_a2a_host", "moe_mc2"):
        good = repo_root / "samples" / sample / "pyproject.toml"
        done = subprocess.run([*command, str(good)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    bad = tmp_path / "pyproject.toml"
    text = (repo_root / "samples" / "moe_a2a" / "pyproject.toml").read_text(encoding="utf-8")
    bad.write_text(text.replace('chips = ["a3", "a5"]', 'chips = ["a3", "a9"]'), encoding="utf-8")
    done = subprocess.run([*command, str(bad)], capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "tool.pypto.chips[1]" in done.stdout + done.stderr
    # Pointed at the shipped file instead of the entry point, it reads the same schema.
    tool = f"--tool=pypto={SCHEMA_PATH.as_uri()}"
    done = subprocess.run([*command, tool, str(bad)], capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "tool.pypto.chips[1]" in done.stdout + done.stderr


def test_the_settings_reference_in_the_docs_is_generated_from_the_model(repo_root: Path) -> None:
    docs = (repo_root / "docs" / "settings.md").read_text(encoding="utf-8")
    assert with_reference(docs) == docs, "run python -m pypto_build.plugin.settings --docs ..."
    table = docs[docs.index(DOCS_BEGIN) : docs.index(DOCS_END)]
    assert table.count("\n| `") == len(settings_schema()["properties"])
    assert "| `platform-tag` | string | `auto` | `PYPTO_PLATFORM_TAG` |" in reference_table()


# --- unknown overrides ----------------------------------------------------------------------


def test_an_unknown_pypto_variable_is_a_warning_with_a_did_you_mean() -> None:
    warned: list[str] = []
    settings = apply_environment(
        settings_from_table({"programs": ["p.py"]}),
        {"PYPTO_CHIP": "a3", "PYPTO_CACHE_DIR": "/c", "PYPTO_BUILD_TEST_KILL_AT": "x"},
        warn=warned.append,
    )
    assert settings.chips is None  # the misspelt variable changed nothing
    assert warned == [
        "PYPTO_CHIP: unknown variable; did you mean PYPTO_CHIPS? (docs/settings.md lists "
        "them); ignored"
    ]


def test_strict_makes_an_unknown_variable_an_error() -> None:
    with pytest.raises(SettingsError) as caught:
        apply_environment(
            settings_from_table({"programs": ["p.py"], "strict": True}),
            {"PYPTO_TOOLCHIAN": "sim"},
        )
    assert caught.value.errors == (
        "PYPTO_TOOLCHIAN: unknown variable; did you mean PYPTO_TOOLCHAIN? (docs/settings.md "
        "lists them) [strict]",
    )
    with pytest.raises(SettingsError, match=r"^PYPTO_CHIP: unknown variable"):
        apply_environment(
            settings_from_table({"programs": ["p.py"]}), {"PYPTO_CHIP": "a3", "PYPTO_STRICT": "1"}
        )


def test_the_other_variables_are_those_their_modules_read() -> None:
    from pypto_build.chip_build.sim.world import TIMEOUT_ENV
    from pypto_build.store import http_credentials

    assert set(OTHER_VARIABLES) == {
        "PYPTO_CACHE_DIR",
        TIMEOUT_ENV,
        http_credentials.USERNAME_VARIABLE,
        http_credentials.PASSWORD_VARIABLE,
        http_credentials.TOKEN_VARIABLE,
    }


def test_config_settings_override_the_table_and_name_the_option() -> None:
    base = settings_from_table({"programs": ["p.py"], "chips": ["a3"]})
    warned: list[str] = []
    settings = apply_config_settings(
        base, {"chips": ["a3", "a5"], "toolchain": "sim", "chip": "a2"}, warn=warned.append
    )
    assert (settings.chips, settings.toolchain) == (("a3", "a5"), "sim")
    assert warned == ["-C chip: unknown key; did you mean 'chips'?; ignored"]
    with pytest.raises(SettingsError) as caught:
        apply_config_settings(base, {"jobs": "many", "strict": "1", "chps": "a3"})
    assert caught.value.errors == (
        "-C jobs: 'many' is not a whole number",
        "-C chps: unknown key; did you mean 'chips'? [strict]",
    )
