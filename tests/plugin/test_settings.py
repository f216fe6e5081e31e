"""The [tool.pypto] settings model: validation messages, environment overrides and the
shipped JSON schema."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest

from pypto_build.plugin.settings import (
    SCHEMA_PATH,
    PyptoSettings,
    SettingsError,
    apply_environment,
    load_settings,
    override,
    schema_text,
    settings_from_table,
    settings_schema,
)

SAMPLE = {
    "programs": ["src/moe/pipelines.py"],
    "chips": ["a3", "a5"],
    "toolchain": "auto",
    "package": "moe/_kernels",
}


def test_a_full_table() -> None:
    settings = settings_from_table(
        {**SAMPLE, "compiler_launcher": "ccache", "jobs": 4, "pto_isa_root": "/opt/pto-isa"}
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
    settings = settings_from_table({"programs": ["p.py"]})
    assert (settings.chips, settings.toolchain, settings.package) == (
        ("a2", "a3", "a5"),
        "auto",
        None,
    )
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
        ({"compiler_launcher": ["ccache"]}, "tool.pypto.compiler_launcher: expected a string"),
        ({"runtime_root": ["/opt/simpler"]}, "tool.pypto.runtime_root: expected a string"),
        (
            {"runtime_revision": "6ebaf77"},
            "tool.pypto.runtime_revision: '6ebaf77' is not a commit id; 40 lowercase hex digits",
        ),
        (
            {"pto_isa_revision": "CD4A3D3F7A1A27FCFE536F617E9BCA3008929664"},
            "tool.pypto.pto_isa_revision: 'CD4A3D3F7A1A27FCFE536F617E9BCA3008929664' is not a",
        ),
        ({"chip": ["a3"]}, "tool.pypto: unknown key 'chip'; valid keys: programs, chips, "),
    ],
)
def test_errors_name_the_key_path(change: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        settings_from_table({**SAMPLE, **change})
    assert str(caught.value).startswith(message)


def test_programs_are_required() -> None:
    with pytest.raises(SettingsError, match=r"tool\.pypto: missing required key 'programs'"):
        settings_from_table({"chips": ["a3"]})


def test_environment_overrides() -> None:
    settings = settings_from_table({**SAMPLE, "compiler_launcher": "ccache"})
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
    assert apply_environment(changed, {"PYPTO_RUNTIME_ROOT": "", "PYPTO_PROGRAMS": ""}) == (
        dataclasses.replace(changed, runtime_root=None)
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


def test_schema_describes_every_field_and_constraint() -> None:
    schema = settings_schema()
    properties = schema["properties"]
    assert list(properties) == [
        "programs",
        "chips",
        "toolchain",
        "package",
        "compiler_launcher",
        "jobs",
        "runtime_root",
        "runtime_revision",
        "pto_isa_root",
        "pto_isa_revision",
        "remote_cache_url",
        "remote_cache_read_only",
        "remote_cache_fallback_url",
        "remote_cache_timeout",
    ]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["programs"]
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
    assert properties["remote_cache_read_only"]["type"] == "boolean"
    assert properties["remote_cache_timeout"]["exclusiveMinimum"] == 0
