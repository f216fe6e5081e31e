"""The chip catalog holds the sourced per-chip facts the rest of the build relies on."""

from __future__ import annotations

import dataclasses

import pytest

from pypto_build.builtins import all_packages
from pypto_build.chip_build.chips import CHIPS, CoreType, get_chip


def test_catalog_order_and_soc_names() -> None:
    assert [(chip.name, chip.soc) for chip in CHIPS] == [
        ("a2", "Ascend910B"),
        ("a3", "Ascend910_93"),
        ("a5", "Ascend950"),
    ]


@pytest.mark.parametrize(
    ("name", "platform", "sim_platform"),
    [("a2", "a2a3", "a2a3sim"), ("a3", "a2a3", "a2a3sim"), ("a5", "a5", "a5sim")],
)
def test_runtime_platform(name: str, platform: str, sim_platform: str) -> None:
    chip = get_chip(name)
    assert (chip.platform, chip.sim_platform) == (platform, sim_platform)


@pytest.mark.parametrize(
    ("name", "aiv", "aic"),
    [
        ("a2", "dav-c220-vec", "dav-c220-cube"),
        ("a3", "dav-c220-vec", "dav-c220-cube"),
        ("a5", "dav-c310-vec", "dav-c310-cube"),
    ],
)
def test_cce_arch_per_core_type(name: str, aiv: str, aic: str) -> None:
    chip = get_chip(name)
    assert chip.cce_arch(CoreType.AIV) == aiv
    assert chip.cce_arch(CoreType.AIC) == aic


def test_only_a5_adds_the_vf_alias_flag() -> None:
    assert get_chip("a2").ccec_extra_flags == ()
    assert get_chip("a3").ccec_extra_flags == ()
    assert get_chip("a5").ccec_extra_flags == ("-mllvm", "-cce-vf-aa-between-iters=true")


@pytest.mark.parametrize(("name", "aiv", "aic"), [("a2", 48, 24), ("a3", 48, 24), ("a5", 36, 36)])
def test_sync_start_capacity(name: str, aiv: int, aic: int) -> None:
    chip = get_chip(name)
    assert (chip.aiv_capacity, chip.aic_capacity) == (aiv, aic)
    assert chip.sync_start_limit(CoreType.AIV) == aiv
    assert chip.sync_start_limit(CoreType.AIC) == aic


@pytest.mark.parametrize(
    ("name", "method"), [("a2", "set_block_num"), ("a3", "set_block_num"), ("a5", "set_core_num")]
)
def test_launch_spec_method(name: str, method: str) -> None:
    assert get_chip(name).launch_spec_method == method


def test_every_chip_a_builtin_package_names_is_in_the_catalog() -> None:
    catalog = {chip.name for chip in CHIPS}
    for package in all_packages():
        assert set(package.chips) <= catalog, package.handle


def test_get_chip_returns_catalog_entry() -> None:
    assert get_chip("a3") is CHIPS[1]


def test_unknown_chip_lists_valid_names() -> None:
    with pytest.raises(ValueError, match=r"unknown chip 'a4'; valid chips: a2, a3, a5"):
        get_chip("a4")


def test_chips_are_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        CHIPS[0].aiv_capacity = 1  # type: ignore[misc]
    assert len({*CHIPS}) == 3
