"""The comparison and tables ``pypto-build run`` prints (:mod:`pypto_build.plugin.run_report`)."""

from __future__ import annotations

import numpy as np

from pypto_build.plugin.run_report import Comparison, compare, output_rows, table


def test_outputs_compare_exactly_nan_included_and_report_the_largest_difference() -> None:
    nan = np.array([1.0, np.nan], dtype=np.float32)
    actual = {
        "same": nan,
        "off": np.array([[1, 2], [3, 4]], dtype=np.int32),
        "shape": np.zeros(3, dtype=np.float32),
        "dtype": np.zeros(2, dtype=np.int64),
    }
    expected = {
        "same": nan.copy(),
        "off": np.array([[1, 2], [3, 9]], dtype=np.int32),
        "shape": np.zeros((3, 1), dtype=np.float32),
        "dtype": np.zeros(2, dtype=np.int32),
    }
    assert compare(expected, actual) == [
        Comparison("dtype", False, None, "expected shape [2] int32, got shape [2] int64"),
        Comparison("off", False, 5.0, None),
        Comparison("same", True, None, None),
        Comparison("shape", False, None, "expected shape [3, 1] float32, got shape [3] float32"),
    ]
    assert Comparison("off", False, 5.0, None).describe() == "differs: max abs diff 5"


def test_tables_align_numbers_right_and_names_left() -> None:
    rows = output_rows({"out": np.zeros((2, 3), np.float32), "x": np.zeros(1, np.uint8)}, [])
    assert table(("output", "shape", "dtype"), rows) == [
        "  output  shape   dtype",
        "  out     [2, 3]  float32",
        "  x       [1]     uint8",
    ]
    assert table(("rank", "time"), [("0", "1.50 ms"), ("10", "12.25 ms")]) == [
        "  rank      time",
        "     0   1.50 ms",
        "    10  12.25 ms",
    ]
