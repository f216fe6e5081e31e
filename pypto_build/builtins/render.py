"""Rendering a builtin package's templates with Jinja2.

The output must be a pure function of (template bytes, variables): that is what lets CI prove
that two renders, and the HOST and CHIP rails' renders, are byte-identical. So the environment is
strict — an unknown placeholder is an error instead of text left behind in a kernel
(``StrictUndefined`` at render time, plus a static check of every name a template references), no
globals are visible, nothing is escaped, the trailing newline is kept — and a template is given
exactly the variables its manifest entry declares, no more and no fewer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import jinja2
import jinja2.meta

from pypto_build.builtins.manifest import BuiltinPackage, TemplateSpec


class TemplateRenderError(ValueError):
    """A template could not be rendered with the given variables; names template and variable."""

    def __init__(self, package: BuiltinPackage, template: str, message: str) -> None:
        super().__init__(f"builtin {package.handle} template {template}: {message}")
        self.handle = package.handle
        self.template = template


def render(package: BuiltinPackage, template: str, variables: Mapping[str, str]) -> str:
    """Render ``package``'s template ``template`` (e.g. ``kernel.cpp.in``) with ``variables``."""
    try:
        spec = package.template_spec(template)
    except LookupError as error:
        raise TemplateRenderError(package, template, str(error)) from error
    _check_variables(package, spec, variables)
    environment = _environment(package)
    try:
        parsed = environment.parse(_source(package, template), name=template)
        referenced = jinja2.meta.find_undeclared_variables(parsed)
        _check_references(package, spec, referenced)
        return environment.from_string(parsed).render(dict(variables))
    except jinja2.TemplateSyntaxError as error:
        raise TemplateRenderError(
            package, error.name or template, f"line {error.lineno}: {error.message}"
        ) from error
    except jinja2.UndefinedError as error:
        raise TemplateRenderError(package, template, f"undefined name: {error.message}") from error
    except jinja2.TemplateNotFound as error:
        raise TemplateRenderError(
            package, template, f"includes {error.name!r}, which the package does not declare"
        ) from error


def _environment(package: BuiltinPackage) -> jinja2.Environment:
    """A strict environment whose loader sees only the package's declared templates."""
    declared = {spec.name for spec in package.templates}

    def load(name: str) -> str | None:
        return _source(package, name) if name in declared else None

    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(load),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        auto_reload=False,
    )
    environment.globals.clear()
    return environment


def _source(package: BuiltinPackage, template: str) -> str:
    try:
        return package.template(template).decode("utf-8")
    except UnicodeDecodeError as error:
        raise TemplateRenderError(
            package, template, f"is not UTF-8 (byte {error.start})"
        ) from error


def _check_variables(
    package: BuiltinPackage, spec: TemplateSpec, variables: Mapping[str, str]
) -> None:
    declared = set(spec.variables)
    for name in sorted(variables):
        if name not in declared:
            raise TemplateRenderError(
                package,
                spec.name,
                f"variable {name!r} is not declared for this template "
                f"(declared: {_names(spec.variables)})",
            )
        value: object = variables[name]
        if not isinstance(value, str):
            raise TemplateRenderError(
                package,
                spec.name,
                f"variable {name!r} must be a string, got {type(value).__name__}",
            )
    for name in spec.variables:
        if name not in variables:
            raise TemplateRenderError(
                package, spec.name, f"declared variable {name!r} was not given"
            )


def _check_references(package: BuiltinPackage, spec: TemplateSpec, referenced: set[str]) -> None:
    for name in sorted(referenced):
        if name not in spec.variables:
            raise TemplateRenderError(
                package,
                spec.name,
                f"references {name!r}, which is not a declared variable of this template "
                f"(declared: {_names(spec.variables)})",
            )


def _names(names: Iterable[str]) -> str:
    return ", ".join(names) or "none"
