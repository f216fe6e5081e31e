"""The command-line options that set a setting, each named by its ``[tool.pypto]`` key.

An option is declared once with the settings field it sets: its flag is the field's key
(``--compiler-launcher`` for ``compiler-launcher``, :func:`~.settings.setting_key`), its value is
converted and checked by the settings model (:func:`~.settings.override`), and the spelling the
user typed names it in an error. The spellings commands used before they were named by their
keys stay as aliases (``--launcher``, ``--chip``), so no command line breaks. ``-C KEY=VALUE``
sets any other key as a front end's config settings do (``pip wheel -C``), the way
scikit-build-core derives its options from its settings model.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto_build.plugin.cli_common import UsageError

if TYPE_CHECKING:
    from pypto_build.plugin.settings import PyptoSettings

#: The namespace attribute recording which spelling of each setting option the user typed.
_SPELLED = "setting_spellings"


def _unchanged(value: Any) -> object:
    return value


@dataclass(frozen=True)
class SettingOption:
    """One option that sets the settings field ``name`` (see the module)."""

    name: str
    help: str
    #: Other spellings of the option, kept working.
    aliases: tuple[str, ...] = ()
    metavar: str | None = None
    #: The value's argparse type; None for a flag that turns a boolean setting on.
    parse: Callable[[str], object] | None = str
    choices: Sequence[str] | None = None
    #: Whether the option repeats, each use adding one value to a list setting.
    repeatable: bool = False
    #: The setting's value for what the command line gave (a path made absolute).
    value: Callable[[Any], object] = _unchanged

    @property
    def flag(self) -> str:
        """``--<key>``, the option's name."""
        from pypto_build.plugin.settings import setting_key

        return f"--{setting_key(self.name)}"


class _Spelled(argparse.Action):
    """Stores an option's value (appends it, for a repeatable one; True, for a flag) and which
    spelling gave it."""

    def __init__(self, *args: Any, repeatable: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.repeatable = repeatable

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if self.nargs == 0:
            values = True
        elif self.repeatable:
            values = [*(getattr(namespace, self.dest) or ()), values]
        setattr(namespace, self.dest, values)
        spelled = getattr(namespace, _SPELLED, None) or {}
        setattr(namespace, _SPELLED, {**spelled, self.dest: option_string})


def add_setting_options(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, options: Sequence[SettingOption]
) -> None:
    """Add ``options`` to ``parser``, each under its key's flag and its aliases."""
    for option in options:
        spellings = sorted((option.flag, *option.aliases), key=lambda flag: flag.startswith("--"))
        extra: dict[str, Any] = {"nargs": 0} if option.parse is None else {"type": option.parse}
        parser.add_argument(
            *spellings,
            dest=option.name,
            action=_Spelled,
            repeatable=option.repeatable,
            default=None,
            metavar=option.metavar,
            choices=option.choices,
            help=option.help,
            **extra,
        )


def add_config_setting_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``-C KEY=VALUE``: any setting, spelt and valued as a front end's config settings."""
    parser.add_argument(
        "-C",
        "--config-setting",
        dest="config_settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=(
            "set the [tool.pypto] key KEY, its value as the PYPTO_<KEY> variable takes it "
            "(repeatable; a key given twice is a list), as pip wheel -C does"
        ),
    )


def apply_setting_options(
    settings: PyptoSettings, args: argparse.Namespace, options: Sequence[SettingOption]
) -> PyptoSettings:
    """``settings`` with the ``-C`` settings of ``args`` (when the command has them) and then
    each given option of ``options`` applied, errors naming the spelling typed."""
    from pypto_build.plugin.settings import apply_config_settings, override

    config: dict[str, str | list[str]] = {}
    for setting in getattr(args, "config_settings", ()):
        key, equals, value = setting.partition("=")
        if not equals:
            raise UsageError(f"-C {setting}: give KEY=VALUE")
        previous = config.get(key)
        config[key] = value if previous is None else [*_listed(previous), value]
    if config:
        settings = apply_config_settings(settings, config)
    spelled = getattr(args, _SPELLED, None) or {}
    for option in options:
        given = getattr(args, option.name)
        if given is not None:
            where = spelled.get(option.name) or option.flag
            settings = override(settings, where, option.name, option.value(given))
    return settings


def _listed(value: str | list[str]) -> list[str]:
    return value if isinstance(value, list) else [value]


def _absolute(path: str) -> str:
    # A command-line path is relative to the current folder, so it is made absolute before it
    # meets the project-relative setting.
    return str(Path(path).absolute())


#: ``--runtime-root``, which ``build`` and ``doctor`` take.
RUNTIME_ROOT = SettingOption(
    "runtime_root",
    "PyPTO's runtime the CANN binaries are built for (a simpler checkout or an installed "
    "simpler's simpler_setup/_assets folder); overrides tool.pypto.runtime-root",
    metavar="DIR",
    value=_absolute,
)
