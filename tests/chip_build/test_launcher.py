"""Compiler launchers: resolving the setting, prefixing compile steps only, and the real ccache
turning a second compile into a cache hit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _support.fake_toolkit import cann_toolchain
from _support.fakes.fake_cann import FakeCann, make_fake_cann
from _support.fakes.fake_simpler import make_fake_runtime
from _support.trees import make_tree

from pypto_build.chip_build.compile import compile_tree, default_log_path
from pypto_build.chip_build.toolchains import (
    Launcher,
    SimToolchain,
    ToolchainError,
    find_launchers,
    resolve_launcher,
)

_RECORDING_LAUNCHER = """\
#!{python}
# A launcher for tests: records the command it is asked to run, then runs it.
import json, os, sys
with open({record!r}, "a", encoding="utf-8") as stream:
    stream.write(json.dumps(sys.argv[1:]) + "\\n")
os.execv(sys.argv[1], sys.argv[1:])
"""


def _recording_launcher(directory: Path) -> tuple[Path, Path]:
    """A launcher script named ``wrap`` in ``directory`` and the file it records into."""
    directory.mkdir(parents=True, exist_ok=True)
    record = directory / "launched.jsonl"
    script = directory / "wrap"
    script.write_text(
        _RECORDING_LAUNCHER.format(python=sys.executable, record=str(record)), encoding="utf-8"
    )
    script.chmod(0o755)
    return script, record


def _launched(record: Path) -> list[list[str]]:
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


def test_setting_resolution(tmp_path: Path) -> None:
    script, _ = _recording_launcher(tmp_path / "bin")
    environ = {"PATH": str(tmp_path / "bin")}
    assert resolve_launcher(None, environ) is None
    assert resolve_launcher("  ", environ) is None
    assert resolve_launcher("wrap", environ) == Launcher((str(script),))
    launcher = resolve_launcher("wrap --flag 'two words'", environ)
    assert launcher == Launcher((str(script), "--flag", "two words"))
    with pytest.raises(ToolchainError, match="compiler launcher 'sccache' is not on PATH"):
        resolve_launcher("sccache", environ)


def test_find_launchers_reports_each_known_one(tmp_path: Path) -> None:
    (tmp_path / "ccache").write_text("#!/bin/sh\n", encoding="utf-8")
    (tmp_path / "ccache").chmod(0o755)
    assert find_launchers({"PATH": str(tmp_path)}) == {
        "ccache": tmp_path / "ccache",
        "distcc": None,
        "sccache": None,
    }


def test_launcher_prefixes_compiles_but_not_links(tmp_path: Path) -> None:
    fake: FakeCann = make_fake_cann(tmp_path / "toolkit")
    toolchain = cann_toolchain(fake, tmp_path, make_fake_runtime(tmp_path))
    script, record = _recording_launcher(tmp_path / "bin")
    tree = make_tree(tmp_path / "out")
    compile_tree(tree, "a3", toolchain, launcher=Launcher((str(script),)), progress=None)
    launched = _launched(record)
    ccec = str(toolchain.toolkit.ccec)
    host_cxx = str(toolchain.toolkit.host_cxx)
    assert sorted(argv[0] for argv in launched) == [ccec, ccec, ccec, host_cxx]
    assert [argv[1:] for argv in launched if argv[0] == ccec] == fake.calls("ccec")
    assert len(fake.calls("ld.lld")) == 3  # links ran, without the launcher
    log = default_log_path(tree, "a3").read_text(encoding="utf-8")
    assert f"&& {script} {ccec} -c -O3" in log
    assert f"&& {toolchain.toolkit.ld_lld} -e kernel_entry" in log


def _ccache_stats(environ: dict[str, str]) -> dict[str, int]:
    completed = subprocess.run(
        ["ccache", "--print-stats"], env=environ, capture_output=True, text=True, check=True
    )
    stats: dict[str, int] = {}
    for line in completed.stdout.splitlines():
        name, _, value = line.partition("\t")
        if value.isdigit():
            stats[name] = int(value)
    return stats


@pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache is not on PATH")
def test_second_compile_through_ccache_is_a_ccache_hit(
    sim: SimToolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    monkeypatch.delenv("CCACHE_DISABLE", raising=False)
    monkeypatch.delenv("CCACHE_RECACHE", raising=False)
    environ = dict(os.environ)
    launcher = resolve_launcher("ccache")
    assert launcher is not None
    # Our own cache is off, so both builds run the compiler command through ccache.
    first = compile_tree(make_tree(tmp_path / "one"), "a3", sim, launcher=launcher, progress=None)
    after_first = _ccache_stats(environ)
    second = compile_tree(make_tree(tmp_path / "two"), "a3", sim, launcher=launcher, progress=None)
    after_second = _ccache_stats(environ)
    assert first.compiled == second.compiled == 4
    hits = ("direct_cache_hit", "preprocessed_cache_hit")
    assert sum(after_first.get(name, 0) for name in hits) == 0
    assert after_first["cache_miss"] == 4
    assert sum(after_second.get(name, 0) for name in hits) == 4
    assert after_second["cache_miss"] == 4
    assert after_second.get("called_for_link", 0) == 0  # links never go through the launcher
    for result in second.results:
        one = (tmp_path / "one" / "a3" / result.artifact).read_bytes()
        assert (tmp_path / "two" / "a3" / result.artifact).read_bytes() == one
