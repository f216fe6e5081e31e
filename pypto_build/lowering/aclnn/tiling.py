"""The build-time tiling of ``batch_matmul_reduce_scatter_all_to_all`` from a checked config.

Every kernel variant is built for one static :class:`~pypto_build.lowering.aclnn.rules.Mc2Config`,
so its whole tiling is known at build time: :func:`tile` computes it exactly as upstream's host
tiling does ([tiling]), for the kernel template (:meth:`Mc2Tiling.template_vars`), the
variant's ``kernel_config.py`` entry (:meth:`Mc2Tiling.as_json`), ``pypto-build lower`` and the
workspace the op and the host API require.

Keys in brackets name upstream's files of the operator, listed with their repository and
revision in ``docs/mc2.md`` (Upstream sources).

**Tiles are cut.** Upstream cuts the local and non-local E and C axes into tiles
([formulaic tiling]) and the kernel runs one matmul, one ReduceScatter and (non-local) one
AlltoAllV per tile, so the communication of a tile overlaps the matmul of the next. Upstream sizes
the cuts with performance models of the matmul and of HCCL, which are not public; the result does
not depend on the tile shapes (a cut only partitions the same sums). :func:`cut_tiles` keeps the
formulas' structure and replaces the models by a fixed rule (docs/mc2.md, The tiles):

* at most ``MAX_TILE_CNT`` (5) tile rounds over both branches: with ep > 2 the local branch is not
  cut and the non-local one gets 4 rounds, with ep = 2 the local one gets 2 and the non-local 3;
* E (the E/ep experts): y_shard_type 1 cuts it into the most tiles that divide it evenly within
  the branch's rounds (no tail, ``EAxisCut``), y_shard_type 0 into that many rounds, the longer
  tiles first and a shorter tail (``CutAxisE``);
* non-local C (C/tp rows for y_shard_type 1, C for 0): cut in two, the longer tile first, only
  where the non-local E tile is a single expert (``CutAxisC``), so a tile's rows of one
  destination are contiguous in the AlltoAllV's buffers; local C is never cut.

**The workspace is the uncut tiling's.** The workspace formula only grows with the tile
lengths, so the workspace of uncut tiles (each tile the one ``InitTileInfo`` starts from: the
whole E/ep experts and the whole C or C/tp rows) bounds the workspace of every cut;
:attr:`Mc2Tiling.user_bytes` is that bound, the number a caller can work out by hand from the
shapes alone, whatever cut the kernel runs (the worked sizes in
``tests/lowering/test_mc2_tiling.py``). The kernel lays its buffers out in it and leaves what it
does not use at the end.

**Local and non-local** ([formulaic tiling]): a rank's rows bound for its own EP position
(``local``) need no AllToAll and go straight into ``out``; the rows for the other ep-1 positions
(``nonlocal``, upstream's ``domestic*`` fields) go ReduceScatter -> bias -> AllToAll, and the
kernel runs them first.

Names: the attributes are Python's; :meth:`Mc2Tiling.as_json` uses upstream's tiling-data names
([tiling], e.g. ``commonTiling.domesticTileE.tileLen``) and
:meth:`Mc2Tiling.template_vars` the snake_case of its key paths
(``common_tiling_domestic_tile_e_tile_len``). ``aivCoreNum``, a fact of the chip and not of the
configuration, is not part of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from pypto_build.lowering.aclnn.rules import Mc2Config
from pypto_build.lowering.ir.types import DataType

#: The workspace's system part: 16 MiB on top of the kernel's own buffers [tiling].
SYSTEM_BYTES = 16 * 1024 * 1024
#: The UB of one a3 (Ascend910_93) vector core: ``ub_size=196608`` in CANN's platform config
#: ``Ascend910_93.ini`` ([AICoreSpec]), the size of a3's vector core that [tiling] reads.
A3_UB_BYTES = 196608
#: ``LITE_THRESHOLD``: y_shard_type 1 runs in Lite mode when C/tp is at most this
#: [tiling].
LITE_THRESHOLD = 640
#: The tiling key's base; the flags are its last four decimal digits [tiling].
TILING_KEY_BASE = 1_000_000_000_000_000_000
#: Tiling data ``version`` and ``hcommCnt`` (two HCCL groups) [tiling].
TILING_VERSION = 2
HCOMM_CNT = 2
#: What each flag of the tiling key adds: yShardFlag, isWeightTrans, isBias, isLite.
_KEY_DIGITS = (1, 10, 100, 1000)
#: ``ALIGN16``: the add step's element count is a multiple of 16 [tiling].
UB_ALIGN = 16


def tiling_key(y_shard_type: int, transpose_weight: bool, has_bias: bool, is_lite: bool) -> int:
    """``UpdateTilingKey`` [tiling]: one decimal digit per flag (yShardFlag,
    isWeightTrans, isBias, isLite), for any of the 16 combinations."""
    flags = (y_shard_type == 1, transpose_weight, has_bias, is_lite)
    return TILING_KEY_BASE + sum(
        digit for digit, flag in zip(_KEY_DIGITS, flags, strict=True) if flag
    )


#: The keys the kernel has a template instance for [kernel]: all eight of
#: y_shard_type 1, and the four of y_shard_type 0 without Lite (which the tiling never sets
#: for y_shard_type 0).
DISPATCHED_TILING_KEYS = frozenset(
    tiling_key(shard, trans, bias, lite)
    for shard in (0, 1)
    for trans in (False, True)
    for bias in (False, True)
    for lite in (False, True)
    if shard == 1 or not lite
)


def is_lite(config: Mc2Config) -> bool:
    """Lite mode [tiling]: y_shard_type 1 with C/tp <= 640 gathers the tile's x rows
    into one batched matmul."""
    return config.y_shard_type == 1 and config.C_over_tp <= LITE_THRESHOLD


def datasize(dtype: DataType) -> int:
    """``GetDataSize``: 2 bytes for FP16 and BF16, 4 otherwise [tiling]."""
    return 2 if dtype in (DataType.FP16, DataType.BF16) else 4


def _tiling_bias_dtype(config: Mc2Config) -> DataType:
    """The bias dtype the tiling computes with. [tiling]'s derivation leaves
    the case without a bias open; upstream's tiling function then takes x's dtype
    (``biasDatatype = inputDatatype``), which decides ``biasDatasize`` (2) and, for BF16 x, the
    UB sizing's bias cast flag."""
    return config.dtype if config.bias_dtype is None else config.bias_dtype


def ub_capacity_for_add(
    x_dtype: DataType, bias_dtype: DataType, has_bias: bool, ub_bytes: int
) -> int:
    """``CalculateMaxSplitUB`` [tiling]: how many elements one bias-add step holds in
    ``ub_bytes`` of UB, for ``bias_dtype`` as the tiling takes it (x's without a bias, see
    :func:`_tiling_bias_dtype`). Per element it needs the left operand (2 bytes), its FP32
    cast for BF16 x, the bias (2) and its FP32 cast for a BF16 bias, and the output (2 with a
    bias, 4 when anything is cast); rounded down to a multiple of 16 elements."""
    x_cast = x_dtype is DataType.BF16
    bias_cast = bias_dtype is DataType.BF16
    add_out = 4 if bias_cast or (x_cast and has_bias) else 2 if has_bias else 0
    coeff = 2 + (4 if x_cast else 0) + (2 if has_bias else 0) + (4 if bias_cast else 0) + add_out
    return ub_bytes // coeff // UB_ALIGN * UB_ALIGN


@dataclass(frozen=True)
class TileInfo:
    """``TileInfo`` [tiling]: ``tile_cnt`` tiles of ``tile_len``, then ``tail_cnt``
    tiles of ``tail_len``."""

    tile_len: int
    tile_cnt: int
    tail_len: int
    tail_cnt: int

    @staticmethod
    def uncut(length: int) -> TileInfo:
        """The whole axis as one tile, as ``InitTileInfo`` sets it [tiling]."""
        return TileInfo(length, 1, 0, 0)

    @property
    def longest(self) -> int:
        return max(self.tile_len, self.tail_len)

    def as_json(self) -> dict[str, object]:
        """Upstream's field order (``tileLen, tileCnt, tailLen, tailCnt``) [tiling]."""
        return {
            "tileLen": self.tile_len,
            "tileCnt": self.tile_cnt,
            "tailLen": self.tail_len,
            "tailCnt": self.tail_cnt,
        }


@dataclass(frozen=True)
class HcclConfig:
    """One HCCL communication of the kernel [tiling]: the group it runs on (the op's
    ``group_ep`` or ``group_tp``), HCCL's op type, the algorithm string and the reduce op."""

    group: Literal["ep", "tp"]
    op_type: int
    alg_config: str
    reduce_type: int

    def as_json(self) -> dict[str, object]:
        return {
            "group": self.group,
            "opType": self.op_type,
            "algConfig": self.alg_config,
            "reduceType": self.reduce_type,
        }


#: ReduceScatter (op type 7, sum) over the TP group; the algorithm is the newer upstream
#: tiling's ``doublering`` ([tiling] at c29bc10 says ``ring``; see docs/mc2.md).
REDUCE_SCATTER = HcclConfig("tp", 7, "ReduceScatter=level0:doublering", 0)
#: AlltoAll (op type 8) over the EP group [tiling].
ALL_TO_ALL = HcclConfig("ep", 8, "AlltoAll=level0:fullmesh;level1:pairwise", 0)
#: The HCCL element type of each I/O dtype [kernel].
HCCL_DATA_TYPES = {DataType.FP16: "HCCL_DATA_TYPE_FP16", DataType.BF16: "HCCL_DATA_TYPE_BFP16"}


@dataclass(frozen=True)
class MatmulShape:
    """The problem one batched matmul of a tile solves, ``(m, n, k, batch)``; bias is never the
    matmul's [tiling]."""

    m: int
    n: int
    k: int
    batch: int

    def as_json(self) -> dict[str, object]:
        return {"m": self.m, "n": self.n, "k": self.k, "batch": self.batch}


@dataclass(frozen=True)
class Mc2Tiling:
    """The tiling of one configuration; ``config`` holds the sizes the common tiling repeats."""

    config: Mc2Config
    input_datasize: int
    bias_datasize: int
    ub_capacity_for_add: int
    total_ub_size: int
    local_tile_e: TileInfo
    nonlocal_tile_e: TileInfo
    local_tile_c: TileInfo
    nonlocal_tile_c: TileInfo
    local_matmul: MatmulShape
    nonlocal_matmul: MatmulShape
    is_lite: bool
    tiling_key: int
    #: The workspace the kernel's own buffers take; a window must hold at least this.
    user_bytes: int
    hccl_data_type: str
    reduce_scatter: HcclConfig = REDUCE_SCATTER
    all_to_all: HcclConfig = ALL_TO_ALL

    @property
    def system_bytes(self) -> int:
        return SYSTEM_BYTES

    @property
    def total_bytes(self) -> int:
        """``workspace[0]`` of upstream's tiling: the user part and the 16 MiB system part."""
        return self.user_bytes + SYSTEM_BYTES

    def as_json(self) -> dict[str, object]:
        """The tiling as upstream lays it out ([tiling]; the commonTiling fields in
        declaration order), with the key, Lite mode and the workspace."""
        c = self.config
        return {
            "version": TILING_VERSION,
            "hcommCnt": HCOMM_CNT,
            "tilingKey": self.tiling_key,
            "isLite": self.is_lite,
            "workspace": {
                "userBytes": self.user_bytes,
                "systemBytes": self.system_bytes,
                "totalBytes": self.total_bytes,
            },
            "hcclDataType": self.hccl_data_type,
            "hcommCfgRS": self.reduce_scatter.as_json(),
            "hcommCfgATA": self.all_to_all.as_json(),
            "commonTiling": {
                "epGroupSize": c.ep,
                "tpGroupSize": c.tp,
                "expert": c.E,
                "EOverEp": c.E_over_ep,
                "C": c.C,
                "COverTp": c.C_over_tp,
                "H": c.H,
                "HOverTp": c.H_over_tp,
                "MOverTp": c.M_over_tp,
                "inputDatasize": self.input_datasize,
                "biasDatasize": self.bias_datasize,
                "ubCapacityForAdd": self.ub_capacity_for_add,
                "totalUbSize": self.total_ub_size,
                "isBias": c.has_bias,
                "isWeightTrans": c.transpose_weight,
                "localTileE": self.local_tile_e.as_json(),
                "domesticTileE": self.nonlocal_tile_e.as_json(),
                "localTileC": self.local_tile_c.as_json(),
                "domesticTileC": self.nonlocal_tile_c.as_json(),
                "yShardFlag": c.y_shard_type,
            },
            "localMatmul": self.local_matmul.as_json(),
            "domesticMatmul": self.nonlocal_matmul.as_json(),
        }

    def template_vars(self) -> dict[str, str]:
        """Every value of :meth:`as_json` as a kernel template variable, in its order: the key
        path in snake_case (``common_tiling_expert``), the value as C++ spells it (``true``,
        ``false``, decimal integers; strings unquoted)."""
        return dict(_flatten(self.as_json(), ""))


#: ``MAX_TILE_CNT_TWO_COMM``: tile rounds over the local and the non-local branch
#: ([formulaic tiling]).
MAX_TILE_CNT = 5


def branch_rounds(ep: int) -> tuple[int, int]:
    """The rounds of the local and of the non-local branch ([formulaic tiling]'s
    ``AsignMaxCutNumForBranches``: with ep > 2 the local branch is not cut and the non-local one
    gets 4; with ep = 2, where both branches are one EP position, 2 and 3)."""
    return (1, MAX_TILE_CNT - 1) if ep > 2 else (2, MAX_TILE_CNT - 2)


def cut_even(length: int, rounds: int) -> TileInfo:
    """``length`` in the most tiles that divide it evenly, at most ``rounds`` (``EAxisCut``
    decrements the count until it divides)."""
    count = min(length, rounds)
    while length % count:
        count -= 1
    return TileInfo(length // count, count, 0, 0)


def cut_with_tail(length: int, rounds: int) -> TileInfo:
    """``length`` in ``min(length, rounds)`` tiles as equal as they can be: the longer ones
    first, then a shorter tail (``CutAxisE`` / ``CutAxisC``)."""
    count = min(length, rounds)
    long_len = -(-length // count)
    long_cnt = count if length % count == 0 else (length - count * (long_len - 1))
    tail_cnt = count - long_cnt
    return TileInfo(long_len, long_cnt, long_len - 1 if tail_cnt else 0, tail_cnt)


@dataclass(frozen=True)
class Tiles:
    """The four cuts of one configuration."""

    local_e: TileInfo
    nonlocal_e: TileInfo
    local_c: TileInfo
    nonlocal_c: TileInfo


def cut_tiles(config: Mc2Config) -> Tiles:
    """The cut of ``config``'s E and C axes (module docstring)."""
    rows = config.C_over_tp if config.y_shard_type == 1 else config.C
    local_rounds, nonlocal_rounds = branch_rounds(config.ep)
    cut_e = cut_even if config.y_shard_type == 1 else cut_with_tail
    nonlocal_e = cut_e(config.E_over_ep, nonlocal_rounds)
    single_expert = nonlocal_e.tile_len == 1 and nonlocal_e.tail_cnt == 0
    return Tiles(
        local_e=cut_e(config.E_over_ep, local_rounds),
        nonlocal_e=nonlocal_e,
        local_c=TileInfo.uncut(rows),
        nonlocal_c=cut_with_tail(rows, 2) if single_expert else TileInfo.uncut(rows),
    )


def tile(config: Mc2Config, *, ub_bytes: int = A3_UB_BYTES) -> Mc2Tiling:
    """The tiling of ``config`` with :func:`cut_tiles`' tiles and the uncut tiles' workspace
    (module docstring), for a vector core with ``ub_bytes`` of UB (a3's by default)."""
    lite = is_lite(config)
    rows = config.C_over_tp if config.y_shard_type == 1 else config.C
    uncut_e, uncut_c = TileInfo.uncut(config.E_over_ep), TileInfo.uncut(rows)
    tiles = cut_tiles(config)
    bias_dtype = _tiling_bias_dtype(config)
    input_datasize = datasize(config.dtype)
    return Mc2Tiling(
        config=config,
        input_datasize=input_datasize,
        bias_datasize=datasize(bias_dtype),
        ub_capacity_for_add=ub_capacity_for_add(
            config.dtype, bias_dtype, config.has_bias, ub_bytes
        ),
        total_ub_size=ub_bytes,
        local_tile_e=tiles.local_e,
        nonlocal_tile_e=tiles.nonlocal_e,
        local_tile_c=tiles.local_c,
        nonlocal_tile_c=tiles.nonlocal_c,
        local_matmul=_matmul(config, tiles.local_e, tiles.local_c, 1, lite),
        nonlocal_matmul=_matmul(config, tiles.nonlocal_e, tiles.nonlocal_c, config.ep - 1, lite),
        is_lite=lite,
        tiling_key=tiling_key(config.y_shard_type, config.transpose_weight, config.has_bias, lite),
        user_bytes=_workspace_elements(config, uncut_e, uncut_c, uncut_e, uncut_c, lite)
        * input_datasize,
        hccl_data_type=HCCL_DATA_TYPES[config.dtype],
    )


def _matmul(
    config: Mc2Config, tile_e: TileInfo, tile_c: TileInfo, destinations: int, lite: bool
) -> MatmulShape:
    """The matmul of one tile bound for ``destinations`` EP positions [tiling]: one
    expert's C rows at a time, or in Lite mode every expert of the tile and the rows for every
    TP and EP destination in one batched call."""
    if not lite:
        return MatmulShape(tile_c.tile_len, config.H, config.M_over_tp, 1)
    rows = tile_c.tile_len * config.tp * destinations
    return MatmulShape(rows, config.H, config.M_over_tp, tile_e.tile_len)


def _workspace_elements(
    config: Mc2Config,
    local_e: TileInfo,
    local_c: TileInfo,
    nonlocal_e: TileInfo,
    nonlocal_c: TileInfo,
    lite: bool,
) -> int:
    """The user workspace in elements, ``MC2SetWorkspace`` / ``MC2SetWorkspaceShard``
    [tiling], for the given tiles."""
    E, C, H, ep, tp = config.E, config.C, config.H, config.ep, config.tp
    if config.y_shard_type == 0:
        # The ReduceScatter and AllToAll buffers, then the matmul output of the largest tile
        # (all ep-1 non-local destinations at once).
        comm_out = 2 * E * C * config.H_over_tp + E * C * H
        trans_out = max(
            local_e.longest * local_c.longest * H,
            (ep - 1) * nonlocal_e.longest * nonlocal_c.longest * H,
        )
        return comm_out + trans_out
    comm_out = 2 * E * config.C_over_tp * H + E * C * H
    if lite:
        # transBeforeBMM (x rows, M/tp wide) and sharedBMMOut (matmul rows, H wide), each as
        # large as the larger of the local and the non-local tile.
        local_rows = local_c.longest * local_e.tile_len * tp
        nonlocal_rows = nonlocal_c.longest * nonlocal_e.tile_len * tp * (ep - 1)
        for width in (config.M_over_tp, H):
            comm_out += max(local_rows * width, nonlocal_rows * width)
    return comm_out


def _flatten(tree: dict[str, object], prefix: str) -> Iterator[tuple[str, str]]:
    for key, value in tree.items():
        name = prefix + _snake_case(key)
        if isinstance(value, dict):
            yield from _flatten(value, name + "_")
        else:
            yield name, _cpp(value)


def _snake_case(name: str) -> str:
    """``EOverEp`` -> ``e_over_ep``, ``hcommCfgRS`` -> ``hcomm_cfg_rs``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _cpp(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
