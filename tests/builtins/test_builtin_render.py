"""Rendering: strict variables, determinism, and the properties the rails rely on."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path

import jinja2
import jinja2.meta
import pytest

from pypto_build.builtins import (
    BuiltinPackage,
    BuiltinRegistry,
    TemplateRenderError,
    all_packages,
    render,
    resolve,
)
from pypto_build.builtins.manifest import COLLECTIVE

MakePackage = Callable[..., Path]
VariablesFor = Callable[[BuiltinPackage, str, str], dict[str, str]]

#: Our collectives: one payload dtype variable, fp32 and int8 variants, both rails. (The mc2
#: package's kernel, configured by its contract, has tests of its own: test_mc2_package.py.)
OURS = [package.handle for package in all_packages() if package.contract == COLLECTIVE]
TEMPLATES = ["kernel.cpp.in", "entry.cpp.in", "kernel_config.py.in"]


def registered(root: Path) -> BuiltinPackage:
    """A test package, resolved through a registry that also searches ``root``."""
    return BuiltinRegistry.discover(extra_roots=[root]).resolve(":acme.kernels.copy")


def render_error(package: BuiltinPackage, template: str, variables: dict[str, object]) -> str:
    with pytest.raises(TemplateRenderError) as error:
        render(package, template, variables)  # type: ignore[arg-type]
    assert error.value.handle == package.handle
    return str(error.value)


def test_a_declared_variable_is_substituted_verbatim(make_package: MakePackage) -> None:
    package = registered(make_package())
    assert render(package, "kernel.cpp.in", {"dtype_cpp": "float"}) == "using T = float;\n"
    # No escaping, no trailing-newline trimming.
    assert render(package, "kernel.cpp.in", {"dtype_cpp": "<a & 'b'>"}) == "using T = <a & 'b'>;\n"


def test_an_undeclared_variable_is_refused(make_package: MakePackage) -> None:
    message = render_error(
        registered(make_package()), "kernel.cpp.in", {"dtype_cpp": "float", "dtype": "fp32"}
    )
    assert message == (
        "builtin :acme.kernels.copy template kernel.cpp.in: variable 'dtype' is not declared "
        "for this template (declared: dtype_cpp)"
    )


def test_a_missing_variable_is_refused(make_package: MakePackage) -> None:
    message = render_error(registered(make_package()), "kernel.cpp.in", {})
    assert message == (
        "builtin :acme.kernels.copy template kernel.cpp.in: "
        "declared variable 'dtype_cpp' was not given"
    )


def test_an_unknown_placeholder_is_an_error_not_left_verbatim(make_package: MakePackage) -> None:
    package = registered(
        make_package(templates={"kernel.cpp.in": "{% if false %}{{ mystery }}{% endif %}"})
    )
    message = render_error(package, "kernel.cpp.in", {"dtype_cpp": "float"})
    assert "template kernel.cpp.in: references 'mystery'" in message
    # Jinja's default globals are not available either: only declared variables are.
    package = registered(make_package(folder="g", templates={"kernel.cpp.in": "{{ range }}"}))
    assert "references 'range'" in render_error(package, "kernel.cpp.in", {"dtype_cpp": "x"})


def test_a_non_string_value_is_refused(make_package: MakePackage) -> None:
    package = registered(make_package())
    message = render_error(package, "kernel.cpp.in", {"dtype_cpp": 4})
    assert "variable 'dtype_cpp' must be a string, got int" in message
    # A value that cannot even be a lookup key gets the same message.
    message = render_error(package, "kernel.cpp.in", {"dtype_cpp": ["x"]})
    assert "variable 'dtype_cpp' must be a string, got list" in message


def test_an_undeclared_template_is_refused(make_package: MakePackage) -> None:
    message = render_error(registered(make_package()), "entry.cpp.in", {})
    assert "template entry.cpp.in: builtin :acme.kernels.copy has no template" in message


def test_a_syntax_error_names_the_line(make_package: MakePackage) -> None:
    package = registered(make_package(templates={"kernel.cpp.in": "ok\n{{ dtype_cpp\n"}))
    message = render_error(package, "kernel.cpp.in", {"dtype_cpp": "float"})
    assert message.startswith("builtin :acme.kernels.copy template kernel.cpp.in: line 2:")


def test_includes_see_only_declared_templates(
    make_package: MakePackage, minimal_manifest: str
) -> None:
    manifest = minimal_manifest + '\n[templates."common.in"]\nvariables = ["dtype_cpp"]\n'
    templates = {
        "kernel.cpp.in": '{% include "common.in" %}',
        "common.in": "T = {{ dtype_cpp }}\n",
        "leak.txt": "not a template",
    }
    root = make_package(manifest=manifest, templates=templates)
    package = registered(root)
    assert render(package, "kernel.cpp.in", {"dtype_cpp": "float"}) == "T = float\n"
    (package.root / "templates" / "kernel.cpp.in").write_text('{% include "leak.txt" %}')
    # A package is read once per registry (its templates when first rendered): the edited
    # template is the package a new registry finds.
    assert render(package, "kernel.cpp.in", {"dtype_cpp": "float"}) == "T = float\n"
    message = render_error(registered(root), "kernel.cpp.in", {"dtype_cpp": "float"})
    assert "includes 'leak.txt', which the package does not declare" in message


@pytest.mark.parametrize("handle", OURS)
@pytest.mark.parametrize("template", TEMPLATES)
def test_renders_are_deterministic(handle: str, template: str, variables_for: VariablesFor) -> None:
    package = resolve(handle)
    variables = variables_for(package, template, "fp32")
    first = render(package, template, variables)
    assert render(package, template, dict(reversed(variables.items()))) == first
    assert "{{" not in first and "{%" not in first


def test_renders_do_not_depend_on_the_hash_seed(variables_for: VariablesFor) -> None:
    package = resolve(OURS[0])
    variables = variables_for(package, "kernel.cpp.in", "int8")
    expected = hashlib.sha256(render(package, "kernel.cpp.in", variables).encode()).hexdigest()
    script = (
        "import hashlib, sys\n"
        "from pypto_build.builtins import render, resolve\n"
        f"text = render(resolve({package.handle!r}), 'kernel.cpp.in', {variables!r})\n"
        "sys.stdout.write(hashlib.sha256(text.encode()).hexdigest())\n"
    )
    for seed in ("1", "2"):
        result = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert result.stdout == expected


@pytest.mark.parametrize("handle", OURS)
@pytest.mark.parametrize("template", ["kernel.cpp.in", "entry.cpp.in"])
def test_fp32_and_int8_renders_differ_only_in_the_element_type(
    handle: str, template: str, variables_for: VariablesFor
) -> None:
    package = resolve(handle)
    base = variables_for(package, template, "fp32")
    fp32 = render(package, template, {**base, **package.dtype_variables("fp32")})
    int8 = render(package, template, {**base, **package.dtype_variables("int8")})
    sentinel = "@@ELEMENT_TYPE@@"
    generic = render(package, template, {**base, "dtype_cpp": sentinel})
    assert fp32 != int8
    assert generic.replace(sentinel, "float") == fp32
    assert generic.replace(sentinel, "int8_t") == int8


@pytest.mark.parametrize("handle", OURS)
def test_kernel_template_has_no_rail_specific_input(handle: str) -> None:
    """Both rails feed kernel.cpp.in the same two variables, so their renders are identical."""
    package = resolve(handle)
    source = package.template("kernel.cpp.in").decode()
    referenced = jinja2.meta.find_undeclared_variables(jinja2.Environment().parse(source))
    assert package.template_spec("kernel.cpp.in").variables == ("template_package", "dtype_cpp")
    assert referenced == {"template_package", "dtype_cpp"}
    assert source.startswith("// Generated from {{ template_package }}.\n")


@pytest.mark.parametrize("handle", OURS)
@pytest.mark.parametrize("template", TEMPLATES)
def test_every_declared_variable_is_used(handle: str, template: str) -> None:
    package = resolve(handle)
    source = package.template(template).decode()
    referenced = jinja2.meta.find_undeclared_variables(jinja2.Environment().parse(source))
    assert referenced == set(package.template_spec(template).variables)


@pytest.mark.parametrize("handle", OURS)
def test_kernel_config_is_the_upstream_format(
    handle: str, variables_for: VariablesFor, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    package = resolve(handle)
    variables = variables_for(package, "kernel_config.py.in", "fp32")
    text = render(package, "kernel_config.py.in", variables)
    assert text.startswith("# Kernel and Orchestration Configuration\n\nfrom pathlib import Path\n")
    assert '\t"runtime": "tensormap_and_ringbuffer",\n\t"aicpu_thread_num": 0,\n' in text

    task_interface = types.ModuleType("simpler.task_interface")
    task_interface.ArgDirection = types.SimpleNamespace(  # type: ignore[attr-defined]
        IN="IN", OUT="OUT", INOUT="INOUT"
    )
    monkeypatch.setitem(sys.modules, "simpler", types.ModuleType("simpler"))
    monkeypatch.setitem(sys.modules, "simpler.task_interface", task_interface)
    config: dict[str, object] = {"__file__": str(tmp_path / "kernel_config.py")}
    exec(compile(text, "kernel_config.py", "exec"), config)

    entry, kernel_name = variables["entry"], variables["kernel_name"]
    directions = ["INOUT" if op.direction.value == "InOut" else "IN" for op in package.operands]
    assert config["RUNTIME_CONFIG"] == {
        "runtime": "tensormap_and_ringbuffer",
        "aicpu_thread_num": 0,
    }
    assert config["ORCHESTRATION"] == {
        "source": str(tmp_path / "orchestration" / f"{entry}.cpp"),
        "function_name": "aicpu_orchestration_entry",
        # The operands, then the ordering token the entry receives but does not forward.
        "signature": [*directions, "INOUT"],
    }
    assert config["KERNELS"] == [
        {
            "func_id": 0,
            "name": kernel_name,
            "source": str(tmp_path / "kernels" / "aiv" / f"{kernel_name}.cpp"),
            "core_type": "aiv",
            # The headers the kernel includes travel with the sub-build.
            "extra_include_dirs": [str(tmp_path / "include")],
            "signature": directions,
        }
    ]


@pytest.mark.parametrize("handle", OURS)
def test_generated_sources_name_their_package(handle: str, variables_for: VariablesFor) -> None:
    package = resolve(handle)
    for template in ("kernel.cpp.in", "entry.cpp.in"):
        text = render(package, template, variables_for(package, template, "int8"))
        assert text.splitlines()[0] == f"// Generated from {package.package}."
