"""What a CANN build is built for, over a FAKE runtime: the runtime tree and its per-platform
folders, the PTO-ISA root, the include scan, the revisions and the ``binary_context.json``
PyPTO's runtime checks before it reuses binaries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _support.fake_toolkit import cann_toolchain
from _support.fakes.fake_cann import FakeCann, make_fake_cann, make_fake_pto_isa
from _support.fakes.fake_simpler import commit_all, make_fake_runtime
from _support.trees import make_tree

from pypto_build.build_records.record import toolchain_description
from pypto_build.chip_build.chips import get_chip
from pypto_build.chip_build.compile import BuildFailed, compile_tree
from pypto_build.chip_build.toolchains import (
    RuntimeTree,
    TargetSettings,
    ToolchainError,
    resolve_pto_isa_root,
    resolve_target,
)
from pypto_build.chip_build.toolchains.includes import include_closure
from pypto_build.chip_build.toolchains.runtime_tree import read_build_config
from pypto_build.tree_layout import TreeLayout

KEY = "tool.pypto.runtime-root"
RUNTIME_COMMIT = "1" * 40
PTO_ISA_COMMIT = "2" * 40


@pytest.fixture
def runtime(tmp_path: Path) -> Path:
    return make_fake_runtime(tmp_path)


@pytest.fixture
def fake_cann(tmp_path: Path) -> FakeCann:
    return make_fake_cann(tmp_path / "toolkit")


# --- the runtime tree ------------------------------------------------------------------------


def test_platform_folders_of_a_checkout(runtime: Path) -> None:
    """Per platform, the folders upstream's compile path uses (the command-line tests pin their
    order): kernels include the platform's runtime headers, never the other platform's."""
    tree = RuntimeTree(runtime, KEY)
    a5 = tree.platform_dirs("a5")
    rt = runtime / "src/a5/runtime/tensormap_and_ringbuffer"
    assert a5.kernel_include_dirs == (
        runtime / "simpler_setup/incore",
        runtime / "src/common/platform/include",
        rt / "runtime",
        rt / "common",
        runtime / "src/a5/runtime",
        runtime / "src/common",
        runtime / "src/common/task_interface",
    )
    assert len(a5.orchestration_include_dirs) == 10
    assert a5.orchestration_sources[0] == rt / "orchestration/common.cpp"
    assert not any("a2a3" in str(path) for path in a5.orchestration_include_dirs)
    assert tree.platform_dirs("a5") is a5  # derived once


def test_an_installed_runtime_finds_incore_beside_its_assets(tmp_path: Path) -> None:
    """An installed simpler keeps src/ under simpler_setup/_assets and the kernels' helper
    headers in the package itself, simpler_setup/incore."""
    assets = tmp_path / "site-packages" / "simpler_setup" / "_assets"
    assets.parent.mkdir(parents=True)
    make_fake_runtime(tmp_path).rename(assets)
    tree = RuntimeTree(assets, KEY)
    assert tree.incore_dir == tmp_path / "site-packages/simpler_setup/incore"
    assert tree.platform_dirs("a2a3").kernel_include_dirs[0] == tree.incore_dir


def test_a_root_without_src_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError) as caught:
        RuntimeTree(tmp_path, KEY)
    assert str(caught.value).startswith(
        f"{KEY} = {tmp_path}: not a simpler checkout or installed simpler runtime (no src/ folder)"
    )


def test_a_platform_the_runtime_lacks_fails_only_its_builds(
    runtime: Path, fake_cann: FakeCann, tmp_path: Path
) -> None:
    (runtime / "src/a5/runtime/tensormap_and_ringbuffer/build_config.py").unlink()
    toolchain = cann_toolchain(fake_cann, tmp_path, runtime)
    assert compile_tree(make_tree(tmp_path / "out", "a3"), "a3", toolchain, progress=None)
    with pytest.raises(BuildFailed) as caught:
        compile_tree(make_tree(tmp_path / "out", "a5"), "a5", toolchain, progress=None)
    assert (
        f"{KEY} = {runtime}: no src/a5/runtime/tensormap_and_ringbuffer/build_config.py; this "
        "runtime has no tensormap_and_ringbuffer runtime for platform a5"
    ) in str(caught.value)


def test_the_toolchain_description_changes_with_the_runtime_s_source_list(
    runtime: Path, fake_cann: FakeCann, tmp_path: Path
) -> None:
    # A build that would change nothing compiles nothing, so no compile key sees a source file
    # added to the runtime: the description it compares with the last build's must.
    def described() -> dict[str, Any]:
        toolchain = cann_toolchain(fake_cann, tmp_path, runtime)
        return toolchain_description(toolchain, ("a3",))

    before = described()
    folder = runtime / "src/a2a3/runtime/tensormap_and_ringbuffer/orchestration"
    (folder / "added.cpp").write_text("\n", encoding="utf-8")
    after = described()
    assert after != before
    assert str(folder / "added.cpp") in after["chips"]["a3"]["layout"]["orchestration_sources"]


def test_a_missing_aicpu_source_is_named(runtime: Path) -> None:
    (runtime / "src/common/platform/onboard/aicpu/device_time.cpp").unlink()
    with pytest.raises(ToolchainError, match=r"no src/common/platform/onboard/aicpu/device_time"):
        RuntimeTree(runtime, KEY).platform_dirs("a2a3")


def test_orchestration_sources_are_every_c_and_cpp_file_sorted(runtime: Path) -> None:
    folder = runtime / "src/a2a3/runtime/tensormap_and_ringbuffer/orchestration"
    for name in ("b.c", "a.cpp", "notes.txt", "z.h"):
        (folder / name).write_text("\n", encoding="utf-8")
    sources = RuntimeTree(runtime, KEY).platform_dirs("a2a3").orchestration_sources
    assert [path.name for path in sources] == [
        "a.cpp",
        "b.c",
        "common.cpp",
        "cache_ops.cpp",
        "device_time.cpp",
    ]


def test_build_config_is_read_as_a_literal_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    config = tmp_path / "build_config.py"
    config.write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "# Tensormap and Ringbuffer Runtime build configuration\n"
        "BUILD_CONFIG = {\n"
        '    "aicore": {"include_dirs": ["runtime"], "source_dirs": []},\n'
        '    "orchestration": {"include_dirs": ["x", ".."], "source_dirs": ["o"]},\n'
        "}\n",
        encoding="utf-8",
    )
    read = read_build_config(config)
    assert (read.kernel_include_dirs, read.orchestration_include_dirs) == (
        ("runtime",),
        ("x", ".."),
    )
    assert read.orchestration_source_dirs == ("o",)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CONFIG = {}\n", "no BUILD_CONFIG dictionary literal"),
        ("BUILD_CONFIG = dict(a=1)\n", "no BUILD_CONFIG dictionary literal"),
        ("BUILD_CONFIG = {\n", "cannot read the runtime's build configuration"),
        (
            'BUILD_CONFIG = {"aicore": {"include_dirs": "runtime"}}\n',
            "BUILD_CONFIG['aicore']['include_dirs'] is not a list of paths",
        ),
    ],
)
def test_a_malformed_build_config_is_named(text: str, message: str, tmp_path: Path) -> None:
    config = tmp_path / "build_config.py"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(ToolchainError) as caught:
        read_build_config(config)
    assert str(caught.value).startswith(f"{config}: {message}")


def test_include_closure_follows_quoted_and_angled_includes(tmp_path: Path) -> None:
    """Quoted names are found beside the includer first, angled ones in the include dirs only;
    system headers and cycles end the walk."""
    (tmp_path / "inc" / "sub").mkdir(parents=True)
    files = {
        "main.cpp": '#include "local.h"\n  #  include <sub/a.h>\n#include <vector>\n',
        "local.h": '#pragma once\n#include "main.cpp"\n',
        "inc/sub/a.h": '#include "b.h"\n// #include "never.h" is a comment\n',
        "inc/sub/b.h": "",
        "inc/local.h": "",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    found = include_closure([tmp_path / "main.cpp"], [tmp_path / "inc"])
    assert found == (
        tmp_path / "main.cpp",
        tmp_path / "local.h",
        tmp_path / "inc/sub/a.h",
        tmp_path / "inc/sub/b.h",
    )


# --- PTO-ISA ---------------------------------------------------------------------------------


def test_pto_isa_root_setting_then_environment_then_the_managed_clone(
    runtime: Path, tmp_path: Path
) -> None:
    managed = runtime / "build" / "pto-isa"
    other = make_fake_pto_isa(tmp_path / "elsewhere")
    environ = {"PTO_ISA_ROOT": str(other)}
    settings = TargetSettings(runtime_root=runtime)
    chosen = resolve_pto_isa_root(settings, {})
    assert chosen is not None
    assert (chosen.path, chosen.origin) == (managed, "the runtime's managed clone")
    chosen = resolve_pto_isa_root(settings, environ)
    assert chosen is not None
    assert (chosen.path, chosen.origin) == (other, "PTO_ISA_ROOT")
    setting = TargetSettings(runtime_root=runtime, pto_isa_root=managed)
    chosen = resolve_pto_isa_root(setting, environ)
    assert chosen is not None
    assert (chosen.path, chosen.origin) == (managed, "tool.pypto.pto-isa-root")
    assert resolve_pto_isa_root(TargetSettings(), {}) is None


def test_a_pto_isa_root_without_include_is_refused(tmp_path: Path) -> None:
    runtime = make_fake_runtime(tmp_path, pto_isa=False)
    with pytest.raises(ToolchainError) as caught:
        resolve_target(TargetSettings(runtime_root=runtime), {}, needed_by="toolchain 'cann'")
    assert str(caught.value) == (
        f"PTO-ISA root {runtime}/build/pto-isa (the runtime's managed clone) is not a PTO-ISA "
        "checkout (no include/ folder); set tool.pypto.pto-isa-root or PTO_ISA_ROOT to one"
    )


# --- revisions and binary_context.json -------------------------------------------------------


def _context(platform: str, runtime: str, pto_isa: str) -> str:
    document = {
        "platform": platform,
        "pto_isa_revision": pto_isa,
        "runtime_name": "tensormap_and_ringbuffer",
        "runtime_revision": runtime,
        "schema": 1,
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


@pytest.mark.parametrize(("chip", "platform"), [("a3", "a2a3"), ("a5", "a5")])
def test_revisions_from_the_settings_are_recorded(
    chip: str, platform: str, runtime: Path, fake_cann: FakeCann, tmp_path: Path
) -> None:
    toolchain = cann_toolchain(
        fake_cann,
        tmp_path,
        runtime,
        runtime_revision=RUNTIME_COMMIT,
        pto_isa_revision=PTO_ISA_COMMIT,
    )
    assert toolchain.target.unknown_revisions() is None
    tree = make_tree(tmp_path / "out", chip)
    compile_tree(tree, chip, toolchain, progress=None)
    written = TreeLayout(tree).sub_build("pipe").binary_context
    assert written.read_text(encoding="utf-8") == _context(platform, RUNTIME_COMMIT, PTO_ISA_COMMIT)
    manifest = json.loads(TreeLayout(tree).manifest.read_text(encoding="utf-8"))
    assert manifest["binary_context"] == json.loads(
        _context(platform, RUNTIME_COMMIT, PTO_ISA_COMMIT)
    )


def test_revisions_come_from_clean_git_checkouts(
    runtime: Path, fake_cann: FakeCann, tmp_path: Path
) -> None:
    """As PyPTO takes them: the HEAD of the runtime root and of the PTO-ISA root (the managed
    clone, which the runtime checkout ignores)."""
    runtime_head = commit_all(runtime)
    (runtime / "build/pto-isa/include/pto/pto.hpp").write_text("\n", encoding="utf-8")
    pto_head = commit_all(runtime / "build" / "pto-isa")
    toolchain = cann_toolchain(fake_cann, tmp_path, runtime)
    assert toolchain.target.runtime_revision.describe() == f"{runtime_head} (git HEAD of {runtime})"
    tree = make_tree(tmp_path / "out")
    compile_tree(tree, "a3", toolchain, progress=None)
    written = TreeLayout(tree).sub_build("pipe").binary_context
    assert written.read_text(encoding="utf-8") == _context("a2a3", runtime_head, pto_head)


def test_a_dirty_checkout_has_no_revision_and_no_context_is_written(
    runtime: Path, fake_cann: FakeCann, tmp_path: Path
) -> None:
    commit_all(runtime)
    (runtime / "src" / "scratch.txt").write_text("untracked\n", encoding="utf-8")
    toolchain = cann_toolchain(fake_cann, tmp_path, runtime, pto_isa_revision=PTO_ISA_COMMIT)
    assert toolchain.binary_context(get_chip("a3")) is None
    assert toolchain.target.unknown_revisions() == (
        "CANN builds write no cache/binary_context.json, as the runtime revision is unknown "
        f"({runtime} has uncommitted changes); PyPTO's runtime will rebuild their binaries "
        "instead of reusing them (set tool.pypto.runtime-revision)"
    )
    tree = make_tree(tmp_path / "out")
    stale = TreeLayout(tree).sub_build("pipe").binary_context
    stale.parent.mkdir()
    stale.write_text("{}\n", encoding="utf-8")
    compile_tree(tree, "a3", toolchain, progress=None)
    assert not stale.parent.exists()  # an older build's context is no longer true


def test_no_git_checkout_means_both_revisions_unknown(
    runtime: Path, fake_cann: FakeCann, tmp_path: Path
) -> None:
    toolchain = cann_toolchain(fake_cann, tmp_path, runtime)
    assert toolchain.binary_context(get_chip("a3")) is None
    assert toolchain.target.unknown_revisions() == (
        "CANN builds write no cache/binary_context.json, as the runtime revision is unknown "
        f"({runtime} is not a git checkout), the PTO-ISA revision is unknown "
        f"({runtime}/build/pto-isa is not a git checkout); PyPTO's runtime will rebuild their "
        "binaries instead of reusing them (set tool.pypto.runtime-revision and "
        "tool.pypto.pto-isa-revision)"
    )
