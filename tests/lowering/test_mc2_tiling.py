"""The MC2 op's build-time tiling (``pypto_build.lowering.aclnn.tiling``) against values worked
out by hand from upstream's tiling (``[tiling]`` of ``docs/mc2.md``, Upstream sources).

Every expected number below is written as the formula's arithmetic on literal sizes, never with
the module's helpers; the workspace is the uncut tiles' (E tiles E/ep, C tiles C or C/tp, one
tile, no tail), whatever the cut.

Workspace (``MC2SetWorkspace`` / ``MC2SetWorkspaceShard``), in 2-byte elements, plus 16 MiB =
16777216 bytes:
* y_shard_type 0: ``2*E*C*H/tp + E*C*H + max(E/ep*C*H, (ep-1)*E/ep*C*H)``;
* y_shard_type 1: ``2*E*C/tp*H + E*C*H``, and in Lite mode (C/tp <= 640), with
  ``r = C/tp*E/ep*tp`` the local tile's rows, ``+ max(r*M/tp, r*M/tp*(ep-1))`` (x gathered
  before the matmul) ``+ max(r*H, r*H*(ep-1))`` (the matmul's output).
Tiling key (``UpdateTilingKey``): ``10**18 + shard + 10*transposed + 100*bias + 1000*lite``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from _support.mc2 import mc2_request

from pypto_build.lowering.aclnn.rules import Mc2Request, check
from pypto_build.lowering.aclnn.tiling import (
    DISPATCHED_TILING_KEYS,
    SYSTEM_BYTES,
    MatmulShape,
    Mc2Tiling,
    TileInfo,
    tile,
    tiling_key,
    ub_capacity_for_add,
)
from pypto_build.lowering.contracts.mc2 import Mc2Contract
from pypto_build.lowering.ir.types import DataType

FP16, BF16, FP32 = DataType.FP16, DataType.BF16, DataType.FP32
MIB16 = 16 * 1024 * 1024


@dataclass(frozen=True)
class Case:
    """A configuration and its workspace user bytes, Lite flag and tiling key, by hand."""

    id: str
    request: Mc2Request
    user_bytes: int
    lite: bool
    key: int


CASES = [
    # The aclnn sample ([sample]) at ep 4, tp 2: E = 4*4 = 16, C = 6*2 = 12, H = 2*2 = 4,
    # M = 6*2 = 12, so E/ep = 4, C/tp = 6, H/tp = 2, M/tp = 6. With uncut tiles its workspace is
    # 1536 + 1440 = 2976 elements, 5952 bytes, 16,783,168 in all.
    Case(
        "sample-shard1-lite",
        mc2_request(4, 2, 1),
        user_bytes=(
            2 * 16 * 6 * 4
            + 16 * 12 * 4
            + max(6 * 4 * 2 * 6, 6 * 4 * 2 * 6 * 3)
            + max(6 * 4 * 2 * 4, 6 * 4 * 2 * 4 * 3)
        )
        * 2,
        lite=True,
        key=1_000_000_000_000_000_000 + 1 + 1000,
    ),
    # The same shapes reduce-scatter H: out (16, 12, 2); no Lite mode for y_shard_type 0.
    Case(
        "sample-shard0",
        mc2_request(4, 2, 0),
        user_bytes=(2 * 16 * 12 * 2 + 16 * 12 * 4 + max(4 * 12 * 4, 3 * 4 * 12 * 4)) * 2,
        lite=False,
        key=1_000_000_000_000_000_000,
    ),
    # The sample with a bias and a transposed weight: the flags change, the workspace does not
    # (2976 * 2 = 5952 and (1536 + 576) * 2 = 4224 bytes, as the two cases above).
    Case(
        "sample-shard1-bias-transposed",
        mc2_request(4, 2, 1, bias_rank=3, transpose_weight=True),
        user_bytes=5952,
        lite=True,
        key=1_000_000_000_000_000_000 + 1 + 10 + 100 + 1000,
    ),
    Case(
        "sample-shard0-bias-transposed",
        mc2_request(4, 2, 0, bias_rank=2, transpose_weight=True),
        user_bytes=4224,
        lite=False,
        key=1_000_000_000_000_000_000 + 10 + 100,
    ),
    # C/tp = 641: one row past Lite. ep 2, tp 2, E 4 (E/ep 2), C 1282, H 8, M 4 (M/tp 2).
    Case(
        "shard1-c-over-tp-641",
        mc2_request(2, 2, 1, E=4, C=1282, H=8, M=4),
        user_bytes=(2 * 4 * 641 * 8 + 4 * 1282 * 8) * 2,
        lite=False,
        key=1_000_000_000_000_000_000 + 1,
    ),
    # C/tp = 640: the last Lite size, same other sizes.
    Case(
        "shard1-c-over-tp-640-lite",
        mc2_request(2, 2, 1, E=4, C=1280, H=8, M=4),
        user_bytes=(
            2 * 4 * 640 * 8
            + 4 * 1280 * 8
            + max(640 * 2 * 2 * 2, 640 * 2 * 2 * 2 * 1)
            + max(640 * 2 * 2 * 8, 640 * 2 * 2 * 8 * 1)
        )
        * 2,
        lite=True,
        key=1_000_000_000_000_000_000 + 1 + 1000,
    ),
    # BF16 with an FP32 bias, shard 0, transposed: ep 8, tp 4, E 64 (E/ep 8), C 10, H 32
    # (H/tp 8), M 64 (M/tp 16).
    Case(
        "bf16-shard0-ep8-tp4",
        mc2_request(
            8, 4, 0, E=64, C=10, H=32, M=64, dtype=BF16, bias_rank=3, transpose_weight=True
        ),
        user_bytes=(2 * 64 * 10 * 8 + 64 * 10 * 32 + max(8 * 10 * 32, 7 * 8 * 10 * 32)) * 2,
        lite=False,
        key=1_000_000_000_000_000_000 + 10 + 100,
    ),
    # Lite with a bias, BF16: ep 2, tp 8, E 6 (E/ep 3), C 40 (C/tp 5), H 16, M 24 (M/tp 3).
    Case(
        "bf16-shard1-lite-ep2-tp8",
        mc2_request(2, 8, 1, E=6, C=40, H=16, M=24, dtype=BF16, bias_rank=2),
        user_bytes=(
            2 * 6 * 5 * 16
            + 6 * 40 * 16
            + max(5 * 3 * 8 * 3, 5 * 3 * 8 * 3 * 1)
            + max(5 * 3 * 8 * 16, 5 * 3 * 8 * 16 * 1)
        )
        * 2,
        lite=True,
        key=1_000_000_000_000_000_000 + 1 + 100 + 1000,
    ),
    # A configuration of uneven sizes: shard 1, ep 4, tp 2, E/ep 4, C/tp 5, M/tp 3, H 6.
    Case(
        "table-shard1-ep4-tp2",
        mc2_request(4, 2, 1, E=16, C=10, H=6, M=6),
        user_bytes=(
            2 * 16 * 5 * 6
            + 16 * 10 * 6
            + max(5 * 4 * 2 * 3, 5 * 4 * 2 * 3 * 3)
            + max(5 * 4 * 2 * 6, 5 * 4 * 2 * 6 * 3)
        )
        * 2,
        lite=True,
        key=1_000_000_000_000_000_000 + 1 + 1000,
    ),
    # The largest group sizes, not Lite: ep 32, tp 32, E 512 (E/ep 16), C 32*700 (C/tp 700),
    # H 1024, M 32*128.
    Case(
        "shard1-ep32-tp32",
        mc2_request(32, 32, 1, E=512, C=32 * 700, H=1024, M=32 * 128),
        user_bytes=(2 * 512 * 700 * 1024 + 512 * 22400 * 1024) * 2,
        lite=False,
        key=1_000_000_000_000_000_000 + 1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_workspace_lite_and_key_match_the_hand_computed_values(case: Case) -> None:
    tiling = tile(check(case.request))
    assert tiling.user_bytes == case.user_bytes
    assert tiling.total_bytes == case.user_bytes + 16 * 1024 * 1024
    assert tiling.system_bytes == SYSTEM_BYTES == 16777216
    assert tiling.is_lite is case.lite
    assert tiling.tiling_key == case.key
    assert tiling.tiling_key in DISPATCHED_TILING_KEYS


def test_the_worked_example_needs_16783168_bytes() -> None:
    """The aclnn sample's sizes: ep 4, tp 2, E 16, C 12, H 4, M 12, y_shard_type 1, Lite, uncut
    tiles."""
    tiling = tile(check(mc2_request(4, 2, 1)))
    assert (tiling.user_bytes, tiling.total_bytes) == (5952, 16_783_168)


# ---- the tiling key ----------------------------------------------------------------------------

#: Every flag combination (shard, transposed, bias, lite) and its key, digit by digit.
KEYS = {
    (0, False, False, False): 1_000_000_000_000_000_000,
    (1, False, False, False): 1_000_000_000_000_000_001,
    (0, True, False, False): 1_000_000_000_000_000_010,
    (1, True, False, False): 1_000_000_000_000_000_011,
    (0, False, True, False): 1_000_000_000_000_000_100,
    (1, False, True, False): 1_000_000_000_000_000_101,
    (0, True, True, False): 1_000_000_000_000_000_110,
    (1, True, True, False): 1_000_000_000_000_000_111,
    (0, False, False, True): 1_000_000_000_000_001_000,
    (1, False, False, True): 1_000_000_000_000_001_001,
    (0, True, False, True): 1_000_000_000_000_001_010,
    (1, True, False, True): 1_000_000_000_000_001_011,
    (0, False, True, True): 1_000_000_000_000_001_100,
    (1, False, True, True): 1_000_000_000_000_001_101,
    (0, True, True, True): 1_000_000_000_000_001_110,
    (1, True, True, True): 1_000_000_000_000_001_111,
}


@pytest.mark.parametrize(("flags", "key"), list(KEYS.items()), ids=[str(f) for f in KEYS])
def test_the_tiling_key_of_every_flag_combination(
    flags: tuple[int, bool, bool, bool], key: int
) -> None:
    """All 16 combinations have a key; the four with y_shard_type 0 and Lite are keys the
    kernel has no instance for (the tiling never sets Lite for y_shard_type 0)."""
    assert tiling_key(*flags) == key
    shard, _, _, lite = flags
    assert (key in DISPATCHED_TILING_KEYS) is (shard == 1 or not lite)


def test_the_kernel_dispatches_twelve_keys() -> None:
    """Template instances ([kernel]): shard 1 ...0001, 0011, 0101, 0111, 1001, 1011, 1101, 1111;
    shard 0 ...0000, 0010, 0100, 0110."""
    suffixes = {1, 11, 101, 111, 1001, 1011, 1101, 1111, 0, 10, 100, 110}
    assert {1_000_000_000_000_000_000 + s for s in suffixes} == DISPATCHED_TILING_KEYS


@pytest.mark.parametrize("shard", [0, 1])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("bias_rank", [None, 2])
@pytest.mark.parametrize("C", [6 * 2, 2 * 700])
def test_the_tiling_makes_only_dispatched_keys(
    shard: int, transpose: bool, bias_rank: int | None, C: int
) -> None:
    config = check(mc2_request(4, 2, shard, C=C, transpose_weight=transpose, bias_rank=bias_rank))
    tiling = tile(config)
    assert tiling.tiling_key in DISPATCHED_TILING_KEYS
    assert tiling.is_lite is (shard == 1 and C // 2 <= 640)


# ---- tiles, matmuls, HCCL, UB -------------------------------------------------------------------


@pytest.mark.parametrize(("shard", "c_rows"), [(0, 12), (1, 6)])
def test_the_sample_cuts_the_non_local_branch_only(shard: int, c_rows: int) -> None:
    """ep 4 > 2: the local branch has one round, so its E/ep = 4 experts and C = 12 (shard 0) or
    C/tp = 6 (shard 1) rows are one tile; the non-local branch has 4 rounds: 4 tiles of one
    expert, and then its rows in two halves."""
    tiling = tile(check(mc2_request(4, 2, shard)))
    assert tiling.local_tile_e == TileInfo(4, 1, 0, 0)
    assert tiling.local_tile_c == TileInfo(c_rows, 1, 0, 0)
    assert tiling.nonlocal_tile_e == TileInfo(1, 4, 0, 0)
    assert tiling.nonlocal_tile_c == TileInfo(c_rows // 2, 2, 0, 0)


@pytest.mark.parametrize(
    ("shard", "e_over_ep", "local_e", "nonlocal_e", "nonlocal_c"),
    [
        # ep 2: 2 local rounds, 3 non-local. Shard 1 cuts E evenly (no tail): 6 = 2 x 3 locally
        # (3, 2) and 3 x 2 non-locally (2, 3); 5 has no divisor <= 3 but 1: uncut.
        (1, 6, TileInfo(3, 2, 0, 0), TileInfo(2, 3, 0, 0), TileInfo(3, 1, 0, 0)),
        (1, 5, TileInfo(5, 1, 0, 0), TileInfo(5, 1, 0, 0), TileInfo(3, 1, 0, 0)),
        # Shard 1 with E/ep 2: one expert per non-local tile, so C/tp = 3 rows cut in 2 + 1.
        (1, 2, TileInfo(1, 2, 0, 0), TileInfo(1, 2, 0, 0), TileInfo(2, 1, 1, 1)),
        # Shard 0 cuts E with a tail: 5 = 3 + 2 locally, 2 + 2 + 1 non-locally; C = 3 uncut.
        (0, 5, TileInfo(3, 1, 2, 1), TileInfo(2, 2, 1, 1), TileInfo(3, 1, 0, 0)),
        # Shard 0 with E/ep 3: 3 non-local tiles of one expert, C = 3 rows cut in 2 + 1.
        (0, 3, TileInfo(2, 1, 1, 1), TileInfo(1, 3, 0, 0), TileInfo(2, 1, 1, 1)),
    ],
)
def test_cuts_at_ep_2(
    shard: int, e_over_ep: int, local_e: TileInfo, nonlocal_e: TileInfo, nonlocal_c: TileInfo
) -> None:
    request = mc2_request(2, 2, shard, E=2 * e_over_ep, C=6 if shard == 1 else 3, H=4, M=4)
    tiling = tile(check(request))
    assert (tiling.local_tile_e, tiling.nonlocal_tile_e) == (local_e, nonlocal_e)
    assert tiling.local_tile_c == TileInfo(3, 1, 0, 0)  # local C is never cut
    assert tiling.nonlocal_tile_c == nonlocal_c


def test_the_workspace_does_not_depend_on_the_cut() -> None:
    """The user part is upstream's formula for uncut tiles (the bound of every cut), so the
    sample's stays 2976 elements although its non-local branch is cut into 8 tiles."""
    tiling = tile(check(mc2_request(4, 2, 1)))
    assert tiling.nonlocal_tile_e.tile_cnt * tiling.nonlocal_tile_c.tile_cnt == 8
    assert tiling.user_bytes == 2976 * 2


def test_matmul_shapes() -> None:
    """The matmul sub-tilings: (m, n, k, batch) = (C tile, H, M/tp, 1), in Lite mode (C tile * tp,
    ..., E tile) locally and (C tile * tp * (ep-1), ..., E tile) for the other ep-1 positions."""
    lite = tile(check(mc2_request(4, 2, 1)))
    assert lite.local_matmul == MatmulShape(6 * 2, 4, 6, 4)
    assert lite.nonlocal_matmul == MatmulShape(3 * 2 * 3, 4, 6, 1)
    plain = tile(check(mc2_request(4, 2, 0)))
    assert plain.local_matmul == MatmulShape(12, 4, 6, 1)
    assert plain.nonlocal_matmul == MatmulShape(6, 4, 6, 1)


def test_hccl_configuration() -> None:
    """``SetHcomConfig``, with the newer tiling's ``doublering`` for the ReduceScatter."""
    tiling = tile(check(mc2_request(dtype=BF16)))
    rs, ata = tiling.reduce_scatter, tiling.all_to_all
    assert (rs.group, rs.op_type, rs.alg_config, rs.reduce_type) == (
        "tp",
        7,
        "ReduceScatter=level0:doublering",
        0,
    )
    assert (ata.group, ata.op_type, ata.alg_config, ata.reduce_type) == (
        "ep",
        8,
        "AlltoAll=level0:fullmesh;level1:pairwise",
        0,
    )
    assert tiling.hccl_data_type == "HCCL_DATA_TYPE_BFP16"
    assert tile(check(mc2_request())).hccl_data_type == "HCCL_DATA_TYPE_FP16"


@pytest.mark.parametrize(
    ("dtype", "bias_rank", "capacity", "bias_datasize"),
    [
        (FP16, None, 196608 // 2 // 16 * 16, 2),  # 98304
        (FP16, 2, 196608 // (2 + 2 + 2) // 16 * 16, 2),  # 32768
        (BF16, 2, 196608 // (2 + 4 + 2 + 4) // 16 * 16, 4),  # 16384
        # No bias: the tiling takes x's dtype for it, so BF16 counts a bias cast and a 4-byte
        # output: 196608 // 14 = 14043, rounded down to 14032.
        (BF16, None, 196608 // (2 + 4 + 4 + 4) // 16 * 16, 2),
    ],
)
def test_ub_sizing_and_data_sizes(
    dtype: DataType, bias_rank: int | None, capacity: int, bias_datasize: int
) -> None:
    tiling = tile(check(mc2_request(dtype=dtype, bias_rank=bias_rank)))
    assert tiling.ub_capacity_for_add == capacity
    assert tiling.total_ub_size == 196608
    assert (tiling.input_datasize, tiling.bias_datasize) == (2, bias_datasize)


def test_ub_sizing_for_another_ub() -> None:
    assert ub_capacity_for_add(FP16, FP16, False, 196352) == 196352 // 2 // 16 * 16
    assert ub_capacity_for_add(FP16, FP16, True, 1000) == 1000 // 6 // 16 * 16
    tiling = tile(check(mc2_request()), ub_bytes=131072)
    assert (tiling.total_ub_size, tiling.ub_capacity_for_add) == (131072, 65536)


# ---- what a template and kernel_config.py get ----------------------------------------------------

#: The template variables, in order: a rename here is a rename in every template.
TEMPLATE_VARIABLES = [
    "version",
    "hcomm_cnt",
    "tiling_key",
    "is_lite",
    "workspace_user_bytes",
    "workspace_system_bytes",
    "workspace_total_bytes",
    "hccl_data_type",
    *(
        f"hcomm_cfg_{g}_{f}"
        for g in ("rs", "ata")
        for f in ("group", "op_type", "alg_config", "reduce_type")
    ),
    *(
        f"common_tiling_{f}"
        for f in (
            "ep_group_size",
            "tp_group_size",
            "expert",
            "e_over_ep",
            "c",
            "c_over_tp",
            "h",
            "h_over_tp",
            "m_over_tp",
            "input_datasize",
            "bias_datasize",
            "ub_capacity_for_add",
            "total_ub_size",
            "is_bias",
            "is_weight_trans",
        )
    ),
    *(
        f"common_tiling_{t}_{f}"
        for t in ("local_tile_e", "domestic_tile_e", "local_tile_c", "domestic_tile_c")
        for f in ("tile_len", "tile_cnt", "tail_len", "tail_cnt")
    ),
    "common_tiling_y_shard_flag",
    *(f"{m}_{f}" for m in ("local_matmul", "domestic_matmul") for f in ("m", "n", "k", "batch")),
]


def _sample() -> Mc2Tiling:
    return tile(check(mc2_request(4, 2, 1, bias_rank=3, transpose_weight=True)))


def test_template_vars_are_strings_in_a_fixed_order() -> None:
    variables = _sample().template_vars()
    assert list(variables) == TEMPLATE_VARIABLES
    assert list(tile(check(mc2_request(8, 4, 0, dtype=BF16))).template_vars()) == TEMPLATE_VARIABLES
    assert variables["tiling_key"] == "1000000000000001111"
    assert variables["is_lite"] == variables["common_tiling_is_bias"] == "true"
    assert variables["workspace_user_bytes"] == "5952"
    assert variables["workspace_total_bytes"] == "16783168"
    assert variables["hcomm_cfg_rs_alg_config"] == "ReduceScatter=level0:doublering"
    assert variables["common_tiling_domestic_tile_c_tile_len"] == "3"
    assert variables["domestic_matmul_m"] == "18"


def test_as_json_is_upstreams_tiling_data() -> None:
    """Upstream's tiling-data names and the commonTiling fields in declaration order
    (``aivCoreNum``, a chip fact, left out), JSON all the way down."""
    data = _sample().as_json()
    assert json.loads(json.dumps(data)) == data
    common = data["commonTiling"]
    assert isinstance(common, dict)
    assert list(common) == [
        "epGroupSize",
        "tpGroupSize",
        "expert",
        "EOverEp",
        "C",
        "COverTp",
        "H",
        "HOverTp",
        "MOverTp",
        "inputDatasize",
        "biasDatasize",
        "ubCapacityForAdd",
        "totalUbSize",
        "isBias",
        "isWeightTrans",
        "localTileE",
        "domesticTileE",
        "localTileC",
        "domesticTileC",
        "yShardFlag",
    ]
    assert common["localTileE"] == {"tileLen": 4, "tileCnt": 1, "tailLen": 0, "tailCnt": 0}
    assert (common["expert"], common["C"], common["COverTp"], common["yShardFlag"]) == (
        16,
        12,
        6,
        1,
    )
    assert data["workspace"] == {"userBytes": 5952, "systemBytes": MIB16, "totalBytes": 16783168}
    assert (data["version"], data["hcommCnt"]) == (2, 2)


def test_the_window_tail_holds_the_simulated_hccl_state_of_the_largest_groups() -> None:
    """The MC2 contract's window tail holds host_mix.h's state area for groups of up to
    COMM_MAX_RANK_NUM (64) ranks: 40 bytes of flag counters (3 flags x 3 cores, 8-aligned), 8
    of group counters, a mailbox of 16 + 2 * 4 bytes per group position (tests/sim/test_mc2.py
    runs configurations whose workspace leaves no room for it)."""
    assert Mc2Contract.window_tail >= 40 + 8 + 16 + 8 * 64
