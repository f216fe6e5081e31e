"""The options of ``pypto-build build`` that set a setting: each is named by its key, applied
through the settings model, its older spelling kept, and ``-C KEY=VALUE`` sets any key."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pypto_build.plugin.cli_build import SETTING_OPTIONS
from pypto_build.plugin.cli_setting_options import (
    RUNTIME_ROOT,
    add_config_setting_option,
    add_setting_options,
    apply_setting_options,
)
from pypto_build.plugin.settings import PyptoSettings, SettingsError, setting_key

#: The spellings ``build`` had before its options were named by their keys.
EARLIER = {"--chip": "chips", "--launcher": "compiler_launcher", "-j": "jobs", "-v": "verbose"}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_setting_options(parser, SETTING_OPTIONS)
    add_config_setting_option(parser)
    return parser


def _applied(*argv: str) -> PyptoSettings:
    return apply_setting_options(PyptoSettings(), _parser().parse_args(argv), SETTING_OPTIONS)


def test_each_option_is_named_by_the_key_it_sets() -> None:
    fields = {field for field in PyptoSettings.__dataclass_fields__}
    for option in SETTING_OPTIONS:
        assert option.name in fields
        assert option.flag == f"--{setting_key(option.name)}"
    assert RUNTIME_ROOT in SETTING_OPTIONS


def test_every_earlier_spelling_still_sets_its_key() -> None:
    spelled = {alias: option.name for option in SETTING_OPTIONS for alias in option.aliases}
    assert spelled == EARLIER
    assert _applied("--chip", "a5", "--chip", "a3", "--chip", "a5").chips == ("a5", "a3")
    assert _applied("--chips", "a3").chips == ("a3",)
    assert _applied("--launcher", "ccache").compiler_launcher == "ccache"
    assert _applied("--compiler-launcher", " ").compiler_launcher is None
    assert _applied("-j", "3").jobs == 3
    assert _applied("-v").verbose is True
    assert _applied("--toolchain", "sim").toolchain == "sim"


def test_a_path_option_is_relative_to_the_current_folder() -> None:
    assert _applied("--runtime-root", "rt").runtime_root == str(Path("rt").absolute())


def test_options_not_given_leave_the_settings_as_they_are() -> None:
    assert _applied() == PyptoSettings()


def test_an_error_names_the_spelling_typed() -> None:
    parser = argparse.ArgumentParser()
    add_setting_options(parser, SETTING_OPTIONS)
    for spelling in ("--launcher", "--compiler-launcher"):
        args = parser.parse_args([spelling, "'unclosed"])
        with pytest.raises(SettingsError, match=rf"^{spelling}: "):
            apply_setting_options(PyptoSettings(), args, SETTING_OPTIONS)


def test_config_settings_set_any_key_before_the_named_options() -> None:
    settings = _applied("-C", "cache-max-size=1G", "-C", "chips=a3", "-C", "chips=a5")
    assert (settings.cache_max_size, settings.chips) == ("1G", ("a3", "a5"))
    assert _applied("-C", "jobs=2", "--jobs", "4").jobs == 4
    with pytest.raises(SettingsError, match=r"^-C jobs: 'x' is not a whole number$"):
        _applied("-C", "jobs=x")
