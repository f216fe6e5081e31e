"""Builtin kernel template packages: manifests, templates, the headers they include, the registry
that resolves a template-dir handle to a package, and the renderer.

This package is a leaf of the package's layering (``tests/test_layering.py``): it imports
nothing else from ``pypto_build``.
"""

from pypto_build.builtins.manifest import (
    BuiltinPackage,
    CoreType,
    Direction,
    DtypeVariant,
    EntryAbi,
    KernelAbi,
    ManifestError,
    Operand,
    Rail,
    TemplateSpec,
    load_package,
)
from pypto_build.builtins.registry import (
    ENTRY_POINT_GROUP,
    BuiltinRegistry,
    BuiltinRegistryError,
    UnknownBuiltinError,
    all_packages,
    default_registry,
    include_dir,
    resolve,
)
from pypto_build.builtins.render import TemplateRenderError, render

__all__ = [
    "ENTRY_POINT_GROUP",
    "BuiltinPackage",
    "BuiltinRegistry",
    "BuiltinRegistryError",
    "CoreType",
    "Direction",
    "DtypeVariant",
    "EntryAbi",
    "KernelAbi",
    "ManifestError",
    "Operand",
    "Rail",
    "TemplateRenderError",
    "TemplateSpec",
    "UnknownBuiltinError",
    "all_packages",
    "default_registry",
    "include_dir",
    "load_package",
    "render",
    "resolve",
]
