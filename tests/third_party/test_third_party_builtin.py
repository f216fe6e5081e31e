"""A third-party builtin package, end to end, through a real installed distribution.

``acme-collectives`` (beside this file) is built and installed by pip, the real consumer of its
``pyproject.toml``, into a folder of its own (``pip install --target``). pypto-build then runs in
subprocesses whose ``PYTHONPATH`` puts that folder first, so it finds the package the way it
finds any: through the installed ``.dist-info``'s entry point in the ``pypto_build.builtins``
group, read by ``importlib.metadata``. This test process never sees the package, nor does any
other test.

The package implements ``pld.tensor.allgather``, which pypto-build alone only parses. The program
``programs/allgather.py`` calls it on both rails; it is lowered, rendered (its HOST-rail variant
sub-build and its CHIP-rail kernel are the same kernel, which ``check-render`` proves), built with
the sim toolchain and run on 4 simulated ranks against a NumPy golden. Then the mistakes a
package author meets: each is refused before any program is lowered, naming the manifest.

The distribution also implements ``pld.tensor.ring_shift``, an op pypto-build knows nothing of,
with typing of its own: its manifest names a contract and a launch-width rule the distribution
registers as code (``acme_collectives/ring_code.py``). ``programs/ring_shift.py`` is lowered,
rendered and compiled with the sim toolchain.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from _support.sim_programs import COPY_PAIRS

from pypto_build.builtins import ENTRY_POINT_GROUP, default_registry, resolve
from pypto_build.tree_layout import SubBuildLayout, TreeLayout

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
DISTRIBUTION = HERE / "acme-collectives"
#: The package folder inside the distribution, where its ``builtin.toml`` lives.
PACKAGE = Path("acme_collectives") / "allgather"
PROGRAM = HERE / "programs" / "allgather.py"
RING_SHIFT = HERE / "programs" / "ring_shift.py"
HANDLE = ":acme.collectives.allgather"

#: The program's geometry (its module constants).
NR, M, SIZE = 4, 2, 16
#: What each payload type changes in the program text (written for FP32).
PAYLOAD_EDITS = {
    "fp32": {},
    "int8": {"pl.FP32": "pl.INT8", "ELEM_BYTES = 4": "ELEM_BYTES = 1"},
}


@dataclass(frozen=True)
class Environment:
    """Where pypto-build runs: a Python path with the installed distribution first, and a compile
    cache of this module's own (its runs compile the simulation runtime once)."""

    site: Path
    cache: Path

    def python(self, *args: str | int | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
        """``python ARGS`` in ``cwd``, with this environment."""
        path = os.pathsep.join(filter(None, [str(self.site), os.environ.get("PYTHONPATH")]))
        return subprocess.run(
            [sys.executable, *map(str, args)],
            cwd=cwd,
            env={**os.environ, "PYTHONPATH": path, "PYPTO_CACHE_DIR": str(self.cache)},
            capture_output=True,
            text=True,
            check=False,
        )

    def pypto_build(self, *args: str | int | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
        """``pypto-build ARGS`` in ``cwd``, with this environment."""
        return self.python("-m", "pypto_build", *args, cwd=cwd)


def pip_install(source: Path, target: Path) -> Path:
    """Build the distribution at ``source`` with its own backend and install it into ``target``,
    as a user would (offline: no dependencies, this environment's hatchling)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(source),
        ],
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        check=True,
    )
    return target.resolve()


def install_edited(folder: Path, old: str, new: str) -> Environment:
    """acme-collectives with ``old`` replaced by ``new`` in its manifest, installed into
    ``folder``: what its author would install after that edit."""
    source = shutil.copytree(DISTRIBUTION, folder / "acme-collectives")
    manifest = source / PACKAGE / "builtin.toml"
    text = manifest.read_text(encoding="utf-8")
    assert old in text, old
    manifest.write_text(text.replace(old, new), encoding="utf-8")
    return Environment(pip_install(source, folder / "site"), folder / "cache")


def write_program(folder: Path, dtype: str = "fp32") -> Path:
    """``programs/allgather.py`` for payload ``dtype``, with its kernel, into ``folder``."""
    (folder / "kernels").mkdir(parents=True)
    shutil.copyfile(COPY_PAIRS, folder / "kernels" / COPY_PAIRS.name)
    text = PROGRAM.read_text(encoding="utf-8")
    for old, new in PAYLOAD_EDITS[dtype].items():
        assert old in text, old
        text = text.replace(old, new)
    program = folder / PROGRAM.name
    program.write_text(text, encoding="utf-8")
    return program


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def acme(tmp_path_factory: pytest.TempPathFactory) -> Environment:
    """acme-collectives, installed."""
    root = tmp_path_factory.mktemp("acme")
    return Environment(pip_install(DISTRIBUTION, root / "site"), root / "cache")


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The FP32 program, with its kernel, in a folder of its own."""
    return write_program(tmp_path_factory.mktemp("allgather"))


def test_the_package_registers_through_its_installed_entry_point(
    acme: Environment, tmp_path: Path
) -> None:
    script = (
        "import importlib.metadata\n"
        "from pypto_build.builtins import resolve\n"
        f"[ep] = importlib.metadata.entry_points(group={ENTRY_POINT_GROUP!r}, name='allgather')\n"
        f"print(ep.dist.name, ep.value, resolve({HANDLE!r}).root)\n"
    )
    found = ok(acme.python("-c", script, cwd=tmp_path)).split()
    assert found == ["acme-collectives", "acme_collectives.allgather", str(acme.site / PACKAGE)]
    # This process (and so every other test) never sees it.
    assert not importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    assert HANDLE not in default_registry().handles()


def test_lowering_takes_the_op_from_the_package(acme: Environment, program: Path) -> None:
    lowered = ok(acme.pypto_build("lower", program.name, "--after", "all", cwd=program.parent))
    # CHIP rail: a task of chip_gather's pipeline, calling the synthesized kernel exactly
    # CHIP_CORES = 8 blocks wide (launch_width = "exact"), with its context after the tensors.
    assert (
        "chip_data = self.__builtin_allgather__fp32(chip_in, chip_data, signal, chip_data__ctx, "
        "signal__ctx, core_num=8, sync_start=True, " in lowered
    )
    assert f'"builtin_template_dir": "{HANDLE}", "builtin_template_vars": "dtype_cpp=float"' in (
        lowered
    )
    # HOST rail: one dispatch of the package's internal op per rank, core_num forwarded.
    assert (
        "builtin.tensor.allgather(host_stage, host_data, signal, dtype=pl.FP32, "
        'core_num=core_num, attrs={"dtype": pl.FP32, "device": r1, '
        '"arg_directions": ("In", "InOut", "InOut")})' in lowered
    )


def test_both_rails_render_the_same_kernel(acme: Environment, program: Path) -> None:
    folder = program.parent
    out = json.loads(
        ok(acme.pypto_build("render", program.name, "--out", "render", "--json", cwd=folder))
    )
    # Every chip the package supports, since no --chip was given.
    assert sorted(out["chips"]) == ["a2", "a3", "a5"]
    tree = folder / "render" / "a3"
    variant = TreeLayout(tree).sub_build("builtin.tensor.allgather__fp32").root
    host_kernel = SubBuildLayout(variant).kernel("aiv", "builtin_tensor_allgather__fp32_kernel")
    chip_kernel = (
        TreeLayout(tree).sub_build("chip_gather").kernel("aiv", "__builtin_allgather__fp32")
    )
    assert host_kernel.read_bytes() == chip_kernel.read_bytes()
    assert chip_kernel.read_text().startswith("// Generated from acme.collectives.allgather.\n")
    # The variant holds the rest of the package and the headers its sources include.
    assert SubBuildLayout(variant).orchestration("builtin_tensor_allgather__fp32").is_file()
    assert (variant / "include" / "pypto_build" / "all_to_all_v_protocol.h").is_file()
    assert (
        "set_block_num(core_num)"
        in SubBuildLayout(variant).orchestration("builtin_tensor_allgather__fp32").read_text()
    )
    inputs = json.loads(TreeLayout(tree).manifest.read_text())["inputs"]
    assert {
        f"{HANDLE}/templates/{name}"
        for name in ("entry.cpp.in", "kernel.cpp.in", "kernel_config.py.in")
    } <= set(inputs)

    checks = ok(acme.pypto_build("check-render", program.name, "--report", "report", cwd=folder))
    assert checks.splitlines() == [
        "ok: rail-identity: the HOST and CHIP rails render the same kernel for "
        "builtin.tensor.allgather__fp32",
        "ok: reproducible: two renders (different output path, working and temporary "
        "directories, PYTHONHASHSEED, locale, time zone, umask and job count) are identical",
    ]


def test_an_op_with_its_own_contract_is_lowered_rendered_and_compiled(
    acme: Environment, tmp_path: Path
) -> None:
    program = Path(shutil.copyfile(RING_SHIFT, tmp_path / RING_SHIFT.name))
    lowered = ok(acme.pypto_build("lower", program.name, "--after", "all", cwd=tmp_path))
    # The contract's typing and variant, the distribution's launch-width rule (4 blocks for
    # core_num=8 on 4 ranks).
    assert (
        "data = self.__builtin_ring_shift__fp32(rows, data, signal, data__ctx, signal__ctx, "
        "core_num=4, sync_start=True, " in lowered
    )
    assert '"builtin_template_vars": "dtype_cpp=float,shift=1"' in lowered
    build = ("build", program.name, "--toolchain", "sim", "--chip", "a3", "--out", "build")
    ok(acme.pypto_build(*build, "--jobs", 2, cwd=tmp_path))
    kernels = tmp_path / "build" / "a3" / "next_levels" / "chip_ring" / "kernels" / "aiv"
    assert "constexpr int64_t kShift = 2;\n" in (
        kernels / "__builtin_ring_shift__fp32.cpp"
    ).read_text(encoding="utf-8")


def rows(rng: np.random.Generator, dtype: str) -> npt.NDArray[np.generic]:
    """One host tensor of every rank's rows; never 0, which an unwritten row of the fresh
    windows would read."""
    shape = (NR * M, SIZE)
    if dtype == "int8":
        return rng.integers(1, 128, shape).astype(np.int8)
    return rng.uniform(1.0, 2.0, shape).astype(np.float32)


@pytest.mark.parametrize(
    ("dtype", "chip", "host_cores"),
    [
        # CHIP rail 8 blocks wide: two blocks per destination, each pushing half the rows. HOST
        # rail 3 blocks wide: fewer blocks than ranks, block 0 pushes to ranks 0 and 3.
        ("fp32", "a3", 3),
        # INT8 on a5, whose entry launches through set_core_num; 8 blocks on both rails.
        ("int8", "a5", 8),
    ],
)
def test_runs_on_four_simulated_ranks(
    acme: Environment, tmp_path: Path, dtype: str, chip: str, host_cores: int
) -> None:
    program = write_program(tmp_path, dtype)
    build = ("build", program.name, "--toolchain", "sim", "--chip", chip, "--out", "build")
    ok(acme.pypto_build(*build, "--jobs", 2, cwd=tmp_path))
    rng = np.random.default_rng(7)
    inputs = {
        "chip_in": rows(rng, dtype),
        "host_in": rows(rng, dtype),
        "core_num": np.array(host_cores),
    }
    np.savez(tmp_path / "inputs.npz", **inputs)
    run_args = ("run", "build", "--ranks", NR, "--inputs", "inputs.npz", "--out", "outputs.npz")
    run = json.loads(ok(acme.pypto_build(*run_args, "--json", cwd=tmp_path)))
    assert (run["chip"], run["status"]) == (chip, "ok")
    variant = f"builtin.tensor.allgather__{dtype}"
    # Every rank ran the CHIP-rail pipeline, the package's HOST-rail variant, then the drain.
    dispatches = [(d["rank"], d["next_level"]) for d in run["dispatches"]]
    expected = [(r, name) for r in range(NR) for name in ("chip_gather", variant, "drain_orch")]
    assert sorted(dispatches) == sorted(expected)

    outputs = np.load(tmp_path / "outputs.npz")
    # Every rank holds every rank's rows, in rank order: each rank's input, as a whole.
    for name in ("chip", "host"):
        got = outputs[f"{name}_out"].reshape(NR, NR * M, SIZE)
        np.testing.assert_array_equal(got, np.broadcast_to(inputs[f"{name}_in"], got.shape))
    # Both calls took exactly their credits off every lane: the signal is ready for reuse.
    np.testing.assert_array_equal(outputs["signal_out"], 0)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        pytest.param(
            'rails = ["host", "chip"]',
            'rails = ["host", "chip"]\nchip_notes = "a misspelt chip_note"',
            "{manifest}: chip_notes: unknown key",
            id="manifest-error",
        ),
        pytest.param(
            'public = "pld.tensor.allgather"\nbuiltin = "builtin.tensor.allgather"',
            'public = "pld.tensor.all_to_all_v"\nbuiltin = "builtin.tensor.all_to_all_v"',
            "op pld.tensor.all_to_all_v is implemented twice: by {manifest} and by {ours}",
            id="op-clash",
        ),
        pytest.param(
            'launch_width = "exact"',
            'launch_width = "ring"',
            "{manifest}: op.launch_width: unknown launch-width rule 'ring' "
            "(known: acme_one_per_peer, all_to_all_v, exact)",
            id="unknown-launch-width-rule",
        ),
        pytest.param(
            'dtype = "int32"',
            'dtype = "i32"',
            "{manifest}: operands[2].dtype: unknown dtype 'i32' "
            "(known: fp32, fp16, bf16, int8, uint8, int16, int32, int64, index, bool)",
            id="unknown-dtype",
        ),
    ],
)
def test_a_broken_package_is_refused_naming_its_manifest(
    tmp_path: Path, program: Path, old: str, new: str, message: str
) -> None:
    broken = install_edited(tmp_path, old, new)
    result = broken.pypto_build("lower", program, cwd=tmp_path)
    ours = resolve(":pypto.runtime.builtins.collectives.all_to_all_v").manifest_path
    expected = message.format(manifest=broken.site / PACKAGE / "builtin.toml", ours=ours)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"pypto-build: error: {expected}\n"


#: A CHIP orchestration gathering into a window over a rank-1 signal, ``core_num`` wide.
RANK_1_SIGNAL = """\
import pypto.language as pl
import pypto.language.distributed as pld


@pl.program
class RankOneSignal:
    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_gather(
        self,
        rows: pl.Tensor[[2, 16], pl.FP32],
        data: pl.InOut[pld.DistributedTensor[[8, 16], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[4], pl.INT32]],
    ) -> pld.DistributedTensor[[8, 16], pl.FP32]:
        return pld.tensor.allgather(rows, data, signal, core_num={core_num})
"""


def test_a_rank_1_signal_has_one_lane(tmp_path: Path) -> None:
    """A package may take a signal ``[NR]`` as well as ``[NR, S]``: one lane, as the kernels'
    headers read it, so the CHIP rail launches one block on it and refuses more."""
    acme = install_edited(tmp_path, 'shapes = [["NR", "S"]]', 'shapes = [["NR"], ["NR", "S"]]')
    program = tmp_path / "rank_1_signal.py"
    program.write_text(RANK_1_SIGNAL.format(core_num=1), encoding="utf-8")
    lowered = ok(acme.pypto_build("lower", program.name, "--after", "all", cwd=tmp_path))
    assert "return self.__builtin_allgather__fp32(rows, data, signal, data__ctx, signal__ctx, " in (
        lowered
    )

    program.write_text(RANK_1_SIGNAL.format(core_num=2), encoding="utf-8")
    result = acme.pypto_build("lower", program.name, "--after", "all", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"{program.name}:14:49: error: CHIP pld.tensor.allgather: signal stride (1) is smaller "
        "than the admitted block count (2) for core_num=2, nranks=4 [LowerL2TensorCollectives]\n"
    )
