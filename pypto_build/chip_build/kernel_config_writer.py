"""Writing a sub-build's ``kernel_config.py``, in upstream's format byte for byte.

PyPTO's runtime loads a chip sub-build through this file, so the writer reproduces upstream's
format (``_generate_config_file`` of hw-native-sys/pypto at e2d0f78,
``python/pypto/backend/pto_backend.py``): the header with the ``ArgDirection`` import only when
some signature is present, ``RUNTIME_CONFIG``,
``ORCHESTRATION`` and ``KERNELS`` sorted by ``func_id``, tabs, and the blank lines that upstream's
line joining produces. Signatures list tensor arguments only; scalars are never emitted (the
direction type has no scalar member). Our additions (:mod:`.kernel_config`) are written only
when present: a kernel's ``binary`` as the last key of its entry, so a config without binaries
stays identical to upstream's, and a ``variant`` only for a kernel that has one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePosixPath

from pypto_build.chip_build.distributed_meta import DTYPE_NAMES
from pypto_build.chip_build.kernel_config import (
    ArgDirection,
    KernelConfig,
    KernelEntry,
    OrchestrationEntry,
    OrchestrationParam,
    Runtime,
)

_SIGNATURE_IMPORT = "from simpler.task_interface import ArgDirection as _D"


def render_kernel_config(
    orchestration: OrchestrationEntry | None,
    kernels: Sequence[KernelEntry],
    runtime: str = "tensormap_and_ringbuffer",
    enable_sdma: bool = False,
) -> str:
    """The ``kernel_config.py`` text for a sub-build (upstream format plus kernel binaries).

    ``orchestration`` is None for a sub-build without an orchestration of its own; the
    ``ORCHESTRATION`` block is then omitted. ``runtime`` is a wire name (:class:`Runtime`).
    """
    config = KernelConfig(
        orchestration=orchestration,
        kernels=tuple(kernels),
        runtime=Runtime.from_name(runtime),
        enable_sdma=enable_sdma,
    )
    return render_config(config)


def _signature_text(signature: tuple[ArgDirection, ...]) -> str:
    return "[" + ", ".join(f"_D.{direction.value}" for direction in signature) + "]"


def _root_path_text(relative: str) -> str:
    # A relative path's parts as PurePosixPath gives them, split as text: written several
    # hundred times for a sub-build of a hundred kernels, on every build.
    names = (
        PurePosixPath(relative).parts
        if relative.startswith("/")
        else [name for name in relative.split("/") if name not in ("", ".")]
    )
    parts = " / ".join(f'"{part}"' for part in names)
    return f"str(_ROOT_DIR / {parts})"


def _kernel_line(kernel: KernelEntry) -> str:
    text = (
        f'\t{{"func_id": {kernel.func_id}, "name": "{kernel.name}", '
        f'"source": {_root_path_text(kernel.source)}, "core_type": "{kernel.core_type.value}"'
    )
    if kernel.include_dirs:
        dirs = ", ".join(_root_path_text(path) for path in kernel.include_dirs)
        text += f', "extra_include_dirs": [{dirs}]'
    if kernel.signature:
        text += f', "signature": {_signature_text(kernel.signature)}'
    if kernel.variant:
        # One variable a line: a variant (an MC2 tiling) has dozens. Values are strings as the
        # template saw them; JSON's string syntax is Python's for them.
        lines = "".join(f"\t\t{json.dumps(k)}: {json.dumps(v)},\n" for k, v in kernel.variant)
        text += ', "variant": {\n' + lines + "\t}"
    if kernel.binary is not None:
        text += f', "binary": {_root_path_text(kernel.binary)}'
    return text + "},"


def _param_text(param: OrchestrationParam) -> str:
    """One parameter as a dict literal, keys in a fixed order and only those of its kind."""
    fields: list[tuple[str, object]] = [("name", param.name), ("kind", param.kind)]
    if param.is_tensor:
        fields += [("direction", param.direction), ("shape", list(param.shape))]
    if param.dtype is not None:
        fields.append(("dtype", DTYPE_NAMES[param.dtype]))
    if param.window is not None:
        fields.append(("window", param.window))
    return "{" + ", ".join(f'"{key}": {_literal(value)}' for key, value in fields) + "}"


def _literal(value: object) -> str:
    # Names are C identifiers and kinds, directions and element types plain words, so a
    # double-quoted string needs no escapes.
    return f'"{value}"' if isinstance(value, str) else repr(value)


def render_config(config: KernelConfig) -> str:
    """The ``kernel_config.py`` text for ``config``."""
    orchestration = config.orchestration
    has_signatures = any(kernel.signature for kernel in config.kernels) or bool(
        orchestration is not None and orchestration.signature
    )
    # Upstream joins these items with "\n" and adds a final "\n"; an item that already ends in
    # "\n" therefore leaves a blank line after it.
    items = ["# Kernel and Orchestration Configuration\n", "from pathlib import Path\n"]
    if has_signatures:
        items.append(_SIGNATURE_IMPORT + "\n")
    items.append("_ROOT_DIR = Path(__file__).parent\n")
    items += [
        f"# Runtime configuration for {config.runtime.value}.",
        "# AICPU thread count 0 selects the runtime's architecture default (a2a3: 4; a5: 5).",
        "RUNTIME_CONFIG = {",
        f'\t"runtime": "{config.runtime.value}",',
        '\t"aicpu_thread_num": 0,',
    ]
    if config.enable_sdma:
        items.append('\t"enable_sdma": True,')
    items.append("}\n")
    if orchestration is not None:
        items += [
            "ORCHESTRATION = {",
            f'\t"source": {_root_path_text(orchestration.source)},',
            f'\t"function_name": "{orchestration.function_name}",',
        ]
        if orchestration.signature:
            items.append(f'\t"signature": {_signature_text(orchestration.signature)},')
        if orchestration.params:
            items.append('\t"params": [')
            items += [f"\t\t{_param_text(param)}," for param in orchestration.params]
            items.append("\t],")
        if orchestration.ranks is not None:
            items.append(f'\t"ranks": {orchestration.ranks},')
        if orchestration.binary is not None:
            items.append(f'\t"binary": {_root_path_text(orchestration.binary)},')
        items.append("}\n")
    items.append("KERNELS = [")
    items += [_kernel_line(kernel) for kernel in config.kernels]
    items.append("]")
    return "\n".join(items) + "\n"
