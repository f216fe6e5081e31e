"""Manifest parsing: what a valid ``builtin.toml`` yields, and errors that name file and key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pypto_build.builtins import (
    Direction,
    DtypeVariant,
    EntryAbi,
    KernelAbi,
    ManifestError,
    Operand,
    TemplateSpec,
    load_package,
    resolve,
)

MakePackage = Callable[..., Path]


def test_a_valid_manifest(make_package: MakePackage) -> None:
    package = load_package(make_package())
    assert package.handle == ":acme.kernels.copy"
    assert package.package == "acme.kernels.copy"
    assert package.operands == (
        Operand("source", "source", Direction.IN, False, False, "payload", (("N",),)),
    )
    assert (package.public_op, package.builtin_op) == ("pld.tensor.copy", "builtin.tensor.copy")
    assert package.launch_width == "exact"
    assert package.chip_note is None
    assert package.dtypes == (DtypeVariant("fp32", (("dtype_cpp", "float"),)),)
    assert package.abi == KernelAbi(1, 1, EntryAbi(scalars=(), ordering_token=False))
    assert package.templates == (TemplateSpec("kernel.cpp.in", ("dtype_cpp",)),)


def test_loading_our_folder_gives_the_registered_package() -> None:
    registered = resolve(":pypto.runtime.builtins.collectives.all_to_all_v")
    assert load_package(registered.root) == registered


def test_undeclared_template_lookup(make_package: MakePackage) -> None:
    package = load_package(make_package())
    with pytest.raises(LookupError, match=r"has no template 'entry\.cpp\.in'; it declares: kernel"):
        package.template("entry.cpp.in")


# (replace this, with that) in the minimal manifest -> the key path and message expected.
MUTATIONS = [
    ('handle = ":acme.kernels.copy"\n', "", "handle: is required"),
    (
        'handle = ":acme.kernels.copy"',
        'handle = "acme.kernels.copy"',
        "handle: must be a ':' followed by a dotted package name, got 'acme.kernels.copy'",
    ),
    ('core_type = "aiv"', 'core_type = "aiv"\nfrobnicate = 1', "frobnicate: unknown key"),
    ('core_type = "aiv"', 'core_type = "cube"', "core_type: must be one of aiv, aic, mix"),
    (
        'rails = ["chip"]',
        'rails = ["device"]',
        "rails: must name rails among host, chip, incore, got 'device'",
    ),
    (
        'launch_width = "exact"',
        'launch_width = "exact rule"',
        "op.launch_width: must be a launch-width rule name",
    ),
    ("remote = false", "remote = 0", "operands[0].remote: must be a boolean, got a number"),
    ('shapes = [["N"]]', "shapes = []", "operands[0].shapes: must be a non-empty array of shapes"),
    (
        'shapes = [["N"]]',
        'shapes = [["N", 0]]',
        "operands[0].shapes: a dimension is a positive integer or a symbol such as 'NR'",
    ),
    (
        'shapes = [["N"]]',
        'shapes = [["N+1"]]',
        "operands[0].shapes: a dimension is a positive integer or a symbol such as 'NR'",
    ),
    ('chips = ["a5"]', 'chips = ["a5"]\nchip_note = 5', "chip_note: must be a string"),
    ('chips = ["a5"]', "chips = []", "chips: must not be empty"),
    ('public = "pld.tensor.copy"', 'public = "copy"', "op.public: must be a dotted op name"),
    (
        'direction = "In"',
        'direction = "Inout"',
        "operands[0].direction: must be one of In, Out, InOut, got 'Inout'",
    ),
    ("window = false", 'window = "no"', "operands[0].window: must be a boolean, got a string"),
    ('role = "source"', 'role = "source"\nalias = "x"', "operands[0].alias: unknown key"),
    ('dtype = "payload"', 'dtype = "float 32"', "operands[0].dtype: must be 'payload' or"),
    ("[[operands]]", "[operands]", "operands: must be a non-empty array of tables"),
    (
        "tensor_count = 1",
        "tensor_count = 2",
        "abi.tensor_count: must equal the number of operands (1), got 2",
    ),
    ("ctx_slot = 1", "ctx_slot = 0", "abi.ctx_slot: must be at least 1, got 0"),
    ("ctx_slot = 1", "ctx_slot = true", "abi.ctx_slot: must be an integer, got a boolean"),
    ("ordering_token = false", "", "abi.entry.ordering_token: is required"),
    (
        'dtype_cpp = "float"',
        'dtype_cpp = "float"\n[dtypes.int8]\nctype = "int8_t"',
        "dtypes.int8: must set the same template variables as 'fp32' (dtype_cpp)",
    ),
    (
        'variables = ["dtype_cpp"]',
        "variables = []",
        "dtypes.fp32: sets 'dtype_cpp', which no template declares",
    ),
    (
        'variables = ["dtype_cpp"]',
        'variables = ["dtype_cpp", "dtype_cpp"]',
        'templates."kernel.cpp.in".variables: repeats the entry',
    ),
    (
        'variables = ["dtype_cpp"]',
        'variables = ["dtype_cpp"]\n[templates."entry.cpp.in"]\nvariables = []',
        'templates."entry.cpp.in": declares a template that templates/entry.cpp.in does not hold',
    ),
    (
        '[templates."kernel.cpp.in"]',
        '[templates."../kernel.cpp.in"]',
        "a template is a file name ending in '.in'",
    ),
    ('name = "source"', 'name = "source"\nname = "again"', "not valid TOML"),
    (
        'rails = ["chip"]',
        'rails = ["host", "chip"]',
        'templates."entry.cpp.in": is required: the HOST rail renders the chip callable that '
        "launches the kernel from it",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), MUTATIONS)
def test_manifest_errors_name_file_and_key(
    make_package: MakePackage, minimal_manifest: str, old: str, new: str, expected: str
) -> None:
    assert old in minimal_manifest
    root = make_package(manifest=minimal_manifest.replace(old, new, 1))
    with pytest.raises(ManifestError) as error:
        load_package(root)
    message = str(error.value)
    assert message.startswith(f"{root / 'builtin.toml'}: ")
    assert expected in message


def test_duplicate_operand_names(make_package: MakePackage, minimal_manifest: str) -> None:
    operand = minimal_manifest[
        minimal_manifest.index("[[operands]]") : minimal_manifest.index("[dtypes.fp32]")
    ]
    manifest = minimal_manifest.replace(operand, operand * 2).replace(
        "tensor_count = 1\nctx_slot = 1", "tensor_count = 2\nctx_slot = 2"
    )
    with pytest.raises(ManifestError, match="operands: repeats the operand name 'source'"):
        load_package(make_package(manifest=manifest))


def test_a_template_file_nobody_declares(make_package: MakePackage) -> None:
    root = make_package(templates={"kernel.cpp.in": "{{ dtype_cpp }}\n", "extra.cpp.in": "x\n"})
    with pytest.raises(ManifestError, match=r"templates: templates/extra\.cpp\.in is not declared"):
        load_package(root)


def test_a_rail_needs_the_templates_it_renders(
    make_package: MakePackage, minimal_manifest: str
) -> None:
    manifest = minimal_manifest.replace('[templates."kernel.cpp.in"]', '[templates."other.cpp.in"]')
    root = make_package(manifest=manifest, templates={"other.cpp.in": "{{ dtype_cpp }}\n"})
    with pytest.raises(ManifestError) as error:
        load_package(root)
    assert str(error.value) == (
        f'{root / "builtin.toml"}: templates."kernel.cpp.in": is required: the CHIP and HOST '
        "rails render the kernel from it"
    )
    config_only = minimal_manifest.replace('rails = ["chip"]', 'rails = ["host"]') + (
        '[templates."entry.cpp.in"]\nvariables = []\n'
    )
    templates = {"kernel.cpp.in": "{{ dtype_cpp }}\n", "entry.cpp.in": "\n"}
    with pytest.raises(ManifestError, match=r'"kernel_config\.py\.in": is required: the HOST rail'):
        load_package(make_package("host_only", manifest=config_only, templates=templates))


def test_a_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="cannot read the manifest"):
        load_package(tmp_path)
