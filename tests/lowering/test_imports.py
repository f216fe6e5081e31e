"""The import table finds a chain's canonical DSL path the same way whether asked first or
again (it keeps each answer for the file)."""

from __future__ import annotations

import ast

from pypto_build.lowering.frontend.imports import ImportTable, dotted_parts

_MODULE = """
import pypto.language as pl
import pypto.language.distributed as pld
from pypto_build import lang as L
import numpy
"""


def test_a_kept_answer_is_the_first_one() -> None:
    table = ImportTable.from_module(ast.parse(_MODULE))
    cases = {
        "pl.FP32": "pl.FP32",
        "pld.tensor.all_to_all_v": "pld.tensor.all_to_all_v",
        "L.distributed.window": "pld.window",
        "numpy.zeros": None,
        "unbound.name": None,
        "CORES": None,
    }
    for _ in range(2):
        for text, expected in cases.items():
            node = ast.parse(text, mode="eval").body
            parts = dotted_parts(node)
            assert parts is not None
            assert table.dsl_path(node) == table.dsl_path_of(parts) == expected
    assert table.dsl_path(ast.parse("f().x", mode="eval").body) is None
