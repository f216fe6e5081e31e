"""Reading a sub-build's ``kernel_config.py`` back, without importing or executing it.

Our own tools (the compile engine, the simulator, the host API) read the file the writer
(:mod:`.kernel_config_writer`) produced, interpreting its syntax tree: anything outside the
format the writer writes is a :class:`~.kernel_config.KernelConfigError` naming the line, never
silently dropped.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pypto_build.chip_build.chips import CoreType
from pypto_build.chip_build.distributed_meta import dtype_of_name
from pypto_build.chip_build.kernel_config import (
    ArgDirection,
    KernelConfig,
    KernelConfigError,
    KernelEntry,
    OrchestrationEntry,
    OrchestrationParam,
    Runtime,
)
from pypto_build.chip_build.kernel_config_writer import render_config
from pypto_build.files import read_text
from pypto_build.tree_layout import KERNEL_CONFIG, ORCHESTRATION


def read_kernel_config(path_or_text: Path | str) -> KernelConfig:
    """Read a ``kernel_config.py`` written by :mod:`.kernel_config_writer`, without importing it.

    A :class:`~pathlib.Path` is read from disk; a ``str`` is the file's text. Anything outside
    the format the writer writes (other statements' values, unknown keys, computed
    expressions) is a :class:`KernelConfigError` naming the line, never silently dropped.
    """
    if isinstance(path_or_text, Path):
        filename = str(path_or_text)
        text = read_text(path_or_text)
    else:
        filename = KERNEL_CONFIG
        text = path_or_text
    config = _read_rendered(text)
    return _Reader(filename).read(text) if config is None else config


#: The ``KERNELS`` block as :func:`.render_config` writes it, one kernel a line.
_KERNELS_START = "\nKERNELS = [\n"
_KERNELS_END = "]\n"
_ROOT_PATH = r'str\(_ROOT_DIR((?: / "[^"\\]*")+)\)'
#: A kernel line as :func:`.render_config` writes it without a variant; the source is
#: checked by the round trip, as it follows from the name and core type.
_KERNEL_LINE = re.compile(
    r'\t\{"func_id": (\d+), "name": "([^"\\]*)", "source": ' + _ROOT_PATH + ", "
    r'"core_type": "([^"\\]*)"'
    r'(?:, "extra_include_dirs": \[(str\(_ROOT_DIR[^\]]*)\])?'
    r'(?:, "signature": \[(_D\.\w+(?:, _D\.\w+)*)\])?'
    r'(?:, "binary": ' + _ROOT_PATH + r")?\},"
)
_ROOT_PATHS = re.compile(_ROOT_PATH)
_PATH_PART = re.compile(r' / "([^"\\]*)"')


def _read_rendered(text: str) -> KernelConfig | None:
    """The config of a file exactly as :func:`.render_config` writes it, read without parsing
    the whole file into a syntax tree; None for any other text, which :class:`_Reader` then
    reads (or names the error of).

    A sub-build of a hundred kernels has a hundred ``KERNELS`` lines, and building the syntax
    tree of them is most of the cost of reading the file, read on every build. So only the
    short part before ``KERNELS`` goes through :class:`_Reader`; each kernel line is matched
    against the one form the writer gives it. The result is trusted only when rendering it
    gives back ``text`` byte for byte: the reader and the writer are inverses, so a text the
    writer produces from a config reads back as that config, whichever way it is read.
    """
    header, found, block = text.partition(_KERNELS_START)
    if not found or not block.endswith(_KERNELS_END):
        return None
    lines = block[: -len(_KERNELS_END)].split("\n")
    try:
        kernels = tuple(_rendered_kernel(line) for line in lines[:-1])
        if lines[-1]:
            return None
        base = _Reader(KERNEL_CONFIG).read(f"{header}{_KERNELS_START}{_KERNELS_END}")
        config = KernelConfig(base.orchestration, kernels, base.runtime, base.enable_sdma)
    except (KernelConfigError, ValueError, KeyError):
        return None
    return config if render_config(config) == text else None


def _rendered_kernel(line: str) -> KernelEntry:
    """One ``KERNELS`` line in the form :func:`.render_config` gives it; ValueError for any
    other line."""
    match = _KERNEL_LINE.fullmatch(line)
    if match is None:
        raise ValueError("not a rendered kernel line")
    func_id, name, _, core_type, include_dirs, signature, binary = match.groups()
    return KernelEntry(
        int(func_id),
        name,
        CoreType(core_type),
        tuple(ArgDirection[item.removeprefix("_D.")] for item in signature.split(", "))
        if signature
        else (),
        None if binary is None else _rendered_path(binary),
        tuple(_rendered_path(path) for path in _ROOT_PATHS.findall(include_dirs or "")),
    )


def _rendered_path(parts: str) -> str:
    """`` / "a" / "b"`` -> ``a/b``; ValueError for a component :class:`_Reader` refuses."""
    names = _PATH_PART.findall(parts)
    if any(name in ("", ".", "..") or "/" in name for name in names):
        raise ValueError("invalid path component")
    return "/".join(names)


@dataclass(frozen=True)
class _Reader:
    filename: str

    def error(self, node: ast.AST, message: str) -> KernelConfigError:
        line = getattr(node, "lineno", 1)
        return KernelConfigError(f"{self.filename}:{line}: {message}")

    def read(self, text: str) -> KernelConfig:
        try:
            module = ast.parse(text, filename=self.filename)
        except SyntaxError as exc:
            raise KernelConfigError(f"{self.filename}:{exc.lineno}: {exc.msg}") from None
        assignments: dict[str, ast.expr] = {}
        for statement in module.body:
            if not isinstance(statement, ast.Assign):
                continue
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    if target.id in assignments:
                        raise self.error(statement, f"{target.id} is assigned twice")
                    assignments[target.id] = statement.value
        runtime_node = assignments.get("RUNTIME_CONFIG")
        kernels_node = assignments.get("KERNELS")
        if runtime_node is None or kernels_node is None:
            raise self.error(module, "RUNTIME_CONFIG and KERNELS must both be assigned")
        runtime, enable_sdma = self.runtime_config(runtime_node)
        orchestration_node = assignments.get("ORCHESTRATION")
        orchestration = (
            None if orchestration_node is None else self.orchestration(orchestration_node)
        )
        if not isinstance(kernels_node, ast.List):
            raise self.error(kernels_node, "KERNELS must be a list literal")
        kernels = tuple(self.kernel(element) for element in kernels_node.elts)
        try:
            return KernelConfig(orchestration, kernels, runtime, enable_sdma)
        except KernelConfigError as exc:
            raise self.error(kernels_node, str(exc)) from None

    def runtime_config(self, node: ast.expr) -> tuple[Runtime, bool]:
        entries = self.dict_entries(
            node, "RUNTIME_CONFIG", {"runtime", "aicpu_thread_num"}, {"enable_sdma"}
        )
        try:
            runtime = Runtime.from_name(self.string(entries["runtime"], "runtime"))
        except ValueError as exc:
            raise self.error(entries["runtime"], str(exc)) from None
        threads = entries["aicpu_thread_num"]
        if not (
            isinstance(threads, ast.Constant) and type(threads.value) is int and threads.value == 0
        ):
            raise self.error(threads, "aicpu_thread_num must be 0 (the architecture default)")
        sdma = entries.get("enable_sdma")
        if sdma is not None and not (isinstance(sdma, ast.Constant) and sdma.value is True):
            raise self.error(sdma, "enable_sdma is written only as True")
        return runtime, sdma is not None

    def orchestration(self, node: ast.expr) -> OrchestrationEntry:
        entries = self.dict_entries(
            node,
            "ORCHESTRATION",
            {"source", "function_name"},
            {"signature", "binary", "params", "ranks"},
        )
        source = self.root_path(entries["source"], "orchestration source")
        path = PurePosixPath(source)
        if path.parent != PurePosixPath(ORCHESTRATION) or path.suffix != ".cpp":
            raise self.error(
                entries["source"],
                f"orchestration source '{source}' is not 'orchestration/<name>.cpp'",
            )
        signature = self.signature(entries.get("signature"))
        function_name = self.string(entries["function_name"], "function_name")
        binary = self.optional_root_path(entries.get("binary"), "binary")
        params = self.params(entries.get("params"))
        ranks = self.optional_int(entries.get("ranks"), "ranks")
        try:
            return OrchestrationEntry(path.stem, signature, function_name, binary, params, ranks)
        except KernelConfigError as exc:
            raise self.error(node, str(exc)) from None

    def optional_int(self, node: ast.expr | None, what: str) -> int | None:
        if node is None:
            return None
        if not (isinstance(node, ast.Constant) and type(node.value) is int):
            raise self.error(node, f"{what} must be an integer")
        value: int = node.value
        return value

    def params(self, node: ast.expr | None) -> tuple[OrchestrationParam, ...]:
        if node is None:
            return ()
        if not isinstance(node, ast.List) or not node.elts:
            raise self.error(node, "params must be a non-empty list of parameter dicts")
        return tuple(self.param(element) for element in node.elts)

    def param(self, node: ast.expr) -> OrchestrationParam:
        entries = self.dict_entries(
            node, "a params entry", {"name", "kind"}, {"direction", "shape", "dtype", "window"}
        )
        try:
            values = {key: ast.literal_eval(value) for key, value in entries.items()}
        except ValueError:
            raise self.error(node, "a params entry holds literals only") from None
        shape = values.get("shape", [])
        if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)):
            raise self.error(node, f"shape {shape!r} is not a list of sizes")
        dtype = values.get("dtype")
        try:
            return OrchestrationParam(
                name=self.string(entries["name"], "a parameter name"),
                kind=values["kind"],
                direction=values.get("direction", "In"),
                shape=tuple(shape),
                dtype=None if dtype is None else dtype_of_name(dtype),
                window=values.get("window"),
            )
        except (KernelConfigError, ValueError) as exc:
            raise self.error(node, str(exc)) from None

    def kernel(self, node: ast.expr) -> KernelEntry:
        entries = self.dict_entries(
            node,
            "a KERNELS entry",
            {"func_id", "name", "source", "core_type"},
            {"signature", "binary", "extra_include_dirs", "variant"},
        )
        func_id = entries["func_id"]
        if not (isinstance(func_id, ast.Constant) and type(func_id.value) is int):
            raise self.error(func_id, "func_id must be an integer literal")
        core_type_text = self.string(entries["core_type"], "core_type")
        try:
            core_type = CoreType(core_type_text)
        except ValueError:
            raise self.error(
                entries["core_type"], f"unknown core_type '{core_type_text}'"
            ) from None
        name = self.string(entries["name"], "name")
        signature = self.signature(entries.get("signature"))
        binary = self.optional_root_path(entries.get("binary"), "binary")
        include_dirs = self.include_dirs(entries.get("extra_include_dirs"))
        variant = self.variant(entries.get("variant"))
        try:
            kernel = KernelEntry(
                func_id.value, name, core_type, signature, binary, include_dirs, variant
            )
        except KernelConfigError as exc:
            raise self.error(node, str(exc)) from None
        source = self.root_path(entries["source"], "kernel source")
        if source != kernel.source:
            raise self.error(
                entries["source"],
                f"source of kernel '{kernel.name}' is '{source}', expected '{kernel.source}'",
            )
        return kernel

    def dict_entries(
        self, node: ast.expr, what: str, required: set[str], optional: set[str]
    ) -> dict[str, ast.expr]:
        if not isinstance(node, ast.Dict):
            raise self.error(node, f"{what} must be a dict literal")
        entries: dict[str, ast.expr] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise self.error(value, f"{what} keys must be string literals")
            if key.value not in required | optional:
                raise self.error(key, f"unknown key '{key.value}' in {what}")
            if key.value in entries:
                raise self.error(key, f"duplicate key '{key.value}' in {what}")
            entries[key.value] = value
        missing = sorted(required - entries.keys())
        if missing:
            raise self.error(node, f"{what} lacks {', '.join(repr(k) for k in missing)}")
        return entries

    def string(self, node: ast.expr, what: str) -> str:
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            raise self.error(node, f"{what} must be a string literal")
        return node.value

    def root_path(self, node: ast.expr, what: str) -> str:
        """``str(_ROOT_DIR / "a" / "b")`` -> ``"a/b"``."""
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "str"
            and len(node.args) == 1
            and not node.keywords
        ):
            raise self.error(node, f"{what} must be str(_ROOT_DIR / ...)")
        parts: list[str] = []
        current = node.args[0]
        while isinstance(current, ast.BinOp) and isinstance(current.op, ast.Div):
            parts.append(self.path_part(current.right, what))
            current = current.left
        if not (isinstance(current, ast.Name) and current.id == "_ROOT_DIR") or not parts:
            raise self.error(node, f"{what} must be str(_ROOT_DIR / ...)")
        return "/".join(reversed(parts))

    def optional_root_path(self, node: ast.expr | None, what: str) -> str | None:
        return None if node is None else self.root_path(node, what)

    def variant(self, node: ast.expr | None) -> tuple[tuple[str, str], ...]:
        """``{"name": "value", ...}``, string literals only, in the file's order."""
        if node is None:
            return ()
        if not isinstance(node, ast.Dict) or not node.keys:
            raise self.error(node, "variant must be a non-empty dict literal")
        pairs = []
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise self.error(value, "variant must be a dict literal without ** entries")
            pairs.append(
                (self.string(key, "a variant variable"), self.string(value, "a variant value"))
            )
        return tuple(pairs)

    def include_dirs(self, node: ast.expr | None) -> tuple[str, ...]:
        if node is None:
            return ()
        if not isinstance(node, ast.List) or not node.elts:
            raise self.error(node, "extra_include_dirs must be a non-empty list")
        return tuple(self.root_path(element, "an include directory") for element in node.elts)

    def path_part(self, node: ast.expr, what: str) -> str:
        part = self.string(node, f"a component of {what}")
        if part in ("", ".", "..") or "/" in part or "\\" in part:
            raise self.error(node, f"{what} has an invalid path component '{part}'")
        return part

    def signature(self, node: ast.expr | None) -> tuple[ArgDirection, ...]:
        if node is None:
            return ()
        if not isinstance(node, ast.List) or not node.elts:
            raise self.error(node, "signature must be a non-empty list of _D.<direction>")
        directions: list[ArgDirection] = []
        for element in node.elts:
            if not (
                isinstance(element, ast.Attribute)
                and isinstance(element.value, ast.Name)
                and element.value.id == "_D"
                and element.attr in ArgDirection.__members__
            ):
                raise self.error(element, f"unsupported signature entry {ast.unparse(element)}")
            directions.append(ArgDirection[element.attr])
        return tuple(directions)
