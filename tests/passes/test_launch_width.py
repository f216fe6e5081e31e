"""CalAllToAllVBlocks: the worked table of hw-native-sys/pypto issue #2521, and the argument
contract."""

from __future__ import annotations

import pytest

from pypto_build.lowering.launch_width import cal_all_to_all_v_blocks

#: (P, L, B) from the issue's worked examples, the benchmark harness and the multicore ST.
WORKED = [
    *(
        (8, core_num, blocks)
        for core_num, blocks in zip(
            (1, 2, 4, 7, 8, 10, 15, 16), (1, 2, 4, 7, 8, 8, 8, 16), strict=True
        )
    ),
    *((16, core_num, core_num) for core_num in (1, 4, 8, 15, 16)),
    (4, 16, 16),  # no 2P cap
    (2, 5, 4),
    (2, 6, 6),
    (4, 10, 8),
    (2, 51, 50),
]


@pytest.mark.parametrize(("nranks", "core_num", "blocks"), WORKED)
def test_worked_table(nranks: int, core_num: int, blocks: int) -> None:
    assert cal_all_to_all_v_blocks(nranks, core_num) == blocks


@pytest.mark.parametrize("bad", [True, 2.0, "2", None])
@pytest.mark.parametrize("position", [0, 1])
def test_non_int_is_a_type_error(bad: object, position: int) -> None:
    args: list[object] = [4, 4]
    args[position] = bad
    with pytest.raises(TypeError, match="must be int"):
        cal_all_to_all_v_blocks(*args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("nranks", "core_num"), [(0, 4), (4, 0), (-1, 4), (4, -3)])
def test_non_positive_is_a_value_error(nranks: int, core_num: int) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        cal_all_to_all_v_blocks(nranks, core_num)
