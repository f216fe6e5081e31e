"""The JSON schema of a ``[tool.pypto]`` table, generated from the model: shipped as
``settings.schema.json`` for editors and registered with validate-pyproject (its
``validate_pyproject.tool_schema`` entry point names :func:`tool_schema`)."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

from pypto_build.plugin.settings.model import (
    FIELDS,
    REQUIRED,
    TABLE,
    choices,
    setting_key,
    value_type,
)

#: Beside the settings package, where the wheel ships it.
SCHEMA_PATH = Path(__file__).parents[1] / "settings.schema.json"
#: The schema's identifier. validate-pyproject keys every registered schema by its ``$id``;
#: nothing is ever fetched from it.
SCHEMA_ID = "https://pypto-build.invalid/schema/settings.schema.json"


def _schema_of(name: str) -> dict[str, Any]:
    spec = FIELDS[name]
    annotation = value_type(name)
    schema: dict[str, Any] = {"description": spec.metadata["doc"]}
    if typing.get_origin(annotation) is tuple:
        schema.update(type="array", items={"type": "string"})
        if spec.metadata["unique"]:
            schema["uniqueItems"] = True
        if spec.metadata["non_empty"]:
            schema["minItems"] = 1
    elif choices(name):
        schema.update(type="string", enum=list(choices(name)))
    elif annotation is int:
        schema["type"] = "integer"
    elif annotation is bool:
        schema["type"] = "boolean"
    elif annotation is float:
        schema["type"] = "number"
    else:
        schema["type"] = "string"
    for key, value in spec.metadata["schema"].items():
        schema[key] = {**schema[key], **value} if isinstance(value, dict) else value
    if spec.default is not None and not spec.metadata["required"]:
        default = spec.default
        schema["default"] = list(default) if isinstance(default, tuple) else default
    return schema


def settings_schema() -> dict[str, Any]:
    """The JSON schema of a ``[tool.pypto]`` table, generated from :class:`PyptoSettings`."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": f"[{TABLE}]",
        "description": "Settings of pypto-build, the PyPTO kernel build plugin.",
        "type": "object",
        "additionalProperties": False,
        "required": list(REQUIRED),
        "properties": {setting_key(name): _schema_of(name) for name in FIELDS},
    }


def tool_schema(tool_name: str = "pypto") -> dict[str, Any]:
    """The schema of ``[tool.<tool_name>]``, for validate-pyproject (its
    ``validate_pyproject.tool_schema`` entry point ``pypto`` names this function)."""
    return settings_schema()


def schema_text() -> str:
    """The schema file's exact content."""
    return json.dumps(settings_schema(), indent=2) + "\n"
