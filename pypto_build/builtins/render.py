"""Rendering a builtin package's templates with Jinja2.

The output must be a pure function of (template bytes, variables): that is what lets CI prove
that two renders, and the HOST and CHIP rails' renders, are byte-identical. So the environment is
strict — an unknown placeholder is an error instead of text left behind in a kernel
(``StrictUndefined`` at render time, plus a static check of every name a template references), no
globals are visible, nothing is escaped, the trailing newline is kept — and a template is given
exactly the variables its manifest entry declares, no more and no fewer.

A template is code a third party wrote, run inside every build that uses its op. So it runs in
Jinja2's sandbox (``jinja2.sandbox.SandboxedEnvironment``: no attribute that reaches Python's
internals, ``''.__class__.__mro__`` and the like, hence no ``os.system``), and within bounds: a
value it builds with ``*`` or ``**`` and the text it renders are limited in size
(:data:`MAX_VALUE`, :data:`MAX_OUTPUT`), and a template that includes itself is an error, not a
``RecursionError``. None of that changes a byte of what a well-behaved template renders.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pypto_build.builtins.manifest import BuiltinPackage, TemplateSpec
from pypto_build.errors import PyptoUsageError

if TYPE_CHECKING:
    # Jinja2 is loaded by the first render: a process that reads this package for its headers
    # and registry only (a toolchain, a build that changed nothing) must not pay for it.
    import jinja2


#: The longest string or sequence a template may build with ``*``, and the most characters it
#: may render: ours render a few kilobytes.
MAX_VALUE = 1 << 20
MAX_OUTPUT = 16 << 20


class TemplateRenderError(PyptoUsageError, ValueError):
    """A template could not be rendered with the given variables; names template and variable."""

    def __init__(self, package: BuiltinPackage, template: str, message: str) -> None:
        super().__init__(f"builtin {package.handle} template {template}: {message}")
        self.handle = package.handle
        self.template = template


def render(package: BuiltinPackage, template: str, variables: Mapping[str, str]) -> str:
    """Render ``package``'s template ``template`` (e.g. ``kernel.cpp.in``) with ``variables``."""
    return _renders(package).render(template, variables)


#: Renders remembered per package (by template and variables); past this, the least recently
#: used is forgotten. A build renders a handful of variants, each many times.
RENDERS_KEPT = 512


class _Renders:
    """One package's templates as a process renders them: each parsed, checked and compiled by
    Jinja2 once, and each rendering remembered by its variables.

    A render is a pure function of the template's bytes and the variables (the module's
    premise), and a package's templates are read once per process, as its manifest is (the
    registry discovers packages once). A large build renders one variant for every sub-build
    that calls it, and every build renders each variant on both rails to compare them: with a
    new environment, parse and compile for each of those, rendering cost thousands of times a
    Jinja2 render; now all but the first are a lookup.
    """

    def __init__(self, package: BuiltinPackage) -> None:
        self.package = package
        self._environment: jinja2.Environment | None = None
        self._compiled: dict[str, jinja2.Template] = {}
        self._texts: OrderedDict[tuple[str, tuple[tuple[str, str], ...]], str] = OrderedDict()

    def render(self, template: str, variables: Mapping[str, str]) -> str:
        try:
            key = (template, tuple(sorted(variables.items())))
            hash(key)
        except TypeError:  # a value of another type, which the checks below name
            key = None
        if key is not None:
            text = self._texts.get(key)
            if text is not None:
                self._texts.move_to_end(key)
                return text
        package = self.package
        try:
            spec = package.template_spec(template)
        except LookupError as error:
            raise TemplateRenderError(package, template, str(error)) from error
        _check_variables(package, spec, variables)
        import jinja2

        try:
            text = _bounded(self._template(spec), variables)
        except _ValueTooLarge as error:
            raise TemplateRenderError(package, template, str(error)) from None
        except jinja2.exceptions.SecurityError as error:
            raise TemplateRenderError(package, template, f"unsafe: {error}") from None
        except RecursionError:
            raise TemplateRenderError(
                package, template, "includes itself without end (or nests too deeply)"
            ) from None
        except jinja2.TemplateSyntaxError as error:
            raise TemplateRenderError(
                package, error.name or template, f"line {error.lineno}: {error.message}"
            ) from error
        except jinja2.UndefinedError as error:
            raise TemplateRenderError(
                package, template, f"undefined name: {error.message}"
            ) from error
        except jinja2.TemplateNotFound as error:
            raise TemplateRenderError(
                package, template, f"includes {error.name!r}, which the package does not declare"
            ) from error
        if key is not None:
            self._texts[key] = text
            if len(self._texts) > RENDERS_KEPT:
                self._texts.popitem(last=False)
        return text

    def _template(self, spec: TemplateSpec) -> jinja2.Template:
        """``spec``'s template compiled, once its references are checked against its declared
        variables."""
        compiled = self._compiled.get(spec.name)
        if compiled is None:
            import jinja2.meta

            if self._environment is None:
                self._environment = _environment(self.package)
            parsed = self._environment.parse(_source(self.package, spec.name), name=spec.name)
            _check_references(self.package, spec, jinja2.meta.find_undeclared_variables(parsed))
            compiled = self._compiled[spec.name] = self._environment.from_string(parsed)
        return compiled


class _ValueTooLarge(Exception):
    """A template built a value or a text past its bounds."""


def _bounded(template: jinja2.Template, variables: Mapping[str, str]) -> str:
    """``template`` rendered (its chunks joined, as ``render`` does), stopped past
    :data:`MAX_OUTPUT` characters."""
    chunks = []
    size = 0
    for chunk in template.generate(dict(variables)):
        size += len(chunk)
        if size > MAX_OUTPUT:
            raise _ValueTooLarge(f"renders more than {MAX_OUTPUT} characters")
        chunks.append(chunk)
    return "".join(chunks)


def _check_binop(operator: str, left: object, right: object) -> None:
    """Refuse ``left <operator> right`` when it would build a value past :data:`MAX_VALUE`:
    repeating a string or a list, or raising to a large power."""
    if operator == "*":
        for sized, count in ((left, right), (right, left)):
            if (
                isinstance(sized, str | bytes | list | tuple)
                and isinstance(count, int)
                and len(sized) * count > MAX_VALUE
            ):
                raise _ValueTooLarge(f"builds a value larger than {MAX_VALUE} items")
    elif operator == "**" and isinstance(right, int) and abs(right) > 64:
        raise _ValueTooLarge(f"builds a value larger than {MAX_VALUE} items (a power of {right})")


def _renders(package: BuiltinPackage) -> _Renders:
    """The renders of ``package``, kept with the package object (a registry's packages live as
    long as the registry)."""
    found: dict[str, _Renders] = package.__dict__
    renders = found.get(_RENDERS)
    if renders is None:
        renders = found[_RENDERS] = _Renders(package)
    return renders


_RENDERS = "_renders"


def _environment(package: BuiltinPackage) -> jinja2.Environment:
    """A strict, sandboxed environment whose loader sees only the package's declared
    templates."""
    import jinja2
    import jinja2.sandbox

    declared = {spec.name for spec in package.templates}

    def load(name: str) -> str | None:
        return _source(package, name) if name in declared else None

    class Bounded(jinja2.sandbox.SandboxedEnvironment):
        # Intercepted, these are never folded at compile time either.
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(
            self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any
        ) -> Any:
            _check_binop(operator, left, right)
            return super().call_binop(context, operator, left, right)

    environment = Bounded(
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
    except OSError as error:
        raise TemplateRenderError(
            package, template, f"cannot be read: {error.strerror or error}"
        ) from None
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
