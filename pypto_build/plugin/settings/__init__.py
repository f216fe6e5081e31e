"""The ``[tool.pypto]`` settings: one typed model, validated, with environment overrides, a JSON
schema and a reference page generated from it, one module for each job: the model
(:mod:`.model`, its value checks in :mod:`.values`), turning a table into settings
(:mod:`.convert`), the overrides (:mod:`.overrides`), reading ``pyproject.toml``
(:mod:`.pyproject`), the schema (:mod:`.schema`), the reference (:mod:`.reference`) and their
regeneration (:mod:`.regenerate`). This package offers what the front ends use.

The model is a frozen dataclass whose fields carry their documentation and constraints in
``metadata``; validation, the schema (``settings.schema.json``, shipped for editors and
registered with validate-pyproject), the settings reference (``docs/settings.md``), the
environment variables and the error messages all derive from it, so they cannot drift apart.
A test runs one corpus of good and bad tables through both the schema and
:func:`settings_from_table` and requires them to agree.

* **Spelling.** Keys are the field names in kebab-case (``compiler-launcher`` for the field
  ``compiler_launcher``), as hatch and scikit-build-core spell theirs; a field added to the model
  gets its key, schema entry, variable and reference row without further code. Any other
  spelling is refused with a did-you-mean.
* **Errors** name the key path and what is allowed
  (``tool.pypto.chips[1]: unknown chip 'a9'; valid chips: a2, a3, a5``); every error of a table is
  reported at once, one per line.
* **Environment.** One ``PYPTO_<KEY>`` per key overrides the file (hatchling hands hooks no
  ``config_settings``): ``PYPTO_CHIPS`` with comma- or space-separated chips,
  ``PYPTO_RUNTIME_ROOT``, an empty ``PYPTO_COMPILER_LAUNCHER`` for no launcher,
  ``PYPTO_REMOTE_CACHE_READ_ONLY=1``; errors name the variable.
* **No credentials.** ``pyproject.toml`` is committed and shipped, so a key named like a
  credential is an error pointing at the environment variables and netrc the remote cache reads.

Regenerate the schema file and the reference with ``python -m pypto_build.plugin.settings
[--docs FILE]``.
"""

from pypto_build.plugin.settings.convert import override, settings_from_table
from pypto_build.plugin.settings.model import (
    REQUIRED,
    TABLE,
    PyptoSettings,
    environment_variable,
    setting_key,
)
from pypto_build.plugin.settings.overrides import (
    OTHER_VARIABLES,
    apply_config_settings,
    apply_environment,
    unknown_variables,
)
from pypto_build.plugin.settings.pyproject import load_settings, pypto_table, read_pyproject
from pypto_build.plugin.settings.values import CHIP_NAMES, MAX_SECONDS, SettingsError

__all__ = [
    "CHIP_NAMES",
    "MAX_SECONDS",
    "OTHER_VARIABLES",
    "REQUIRED",
    "TABLE",
    "PyptoSettings",
    "SettingsError",
    "apply_config_settings",
    "apply_environment",
    "environment_variable",
    "load_settings",
    "override",
    "pypto_table",
    "read_pyproject",
    "setting_key",
    "settings_from_table",
    "unknown_variables",
]
