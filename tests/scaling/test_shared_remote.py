"""Two machines sharing one remote compile cache (nginx WebDAV on loopback): the sample's wheel
built by ``pip wheel`` from two copies of the project, with different compile caches, build
folders and homes. The second build compiles nothing and its wheel is byte-identical."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _support.loopback import Nginx
from _support.scaling_samples import (
    SAMPLE_COMPILES,
    SAMPLE_SOURCES,
    copy_sample,
    machine_environment,
)

from pypto_build.chip_build.compile_cache.layout import LAYOUT


def _wheel(machine: Path, url: str) -> tuple[Path, dict[str, int]]:
    """Build the sample's wheel as ``machine``; the wheel and the cache's counts of the build."""
    project = copy_sample(machine / "project")
    environ = machine_environment(machine, PYPTO_REMOTE_CACHE_URL=url)
    command = [
        sys.executable,
        *("-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-cache-dir"),
        *("--disable-pip-version-check", "--verbose"),
        *("--wheel-dir", str(machine / "wheel"), str(project)),
    ]
    completed = subprocess.run(
        command, cwd=machine, env=environ, capture_output=True, text=True, timeout=300
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "pypto: a3: " in output  # the hook's output is shown, and with it any warning
    assert "pypto-build: warning" not in output, output
    [wheel] = (machine / "wheel").glob("*.whl")
    counts = json.loads((machine / "cache" / LAYOUT / "last-build.json").read_text("utf-8"))
    return wheel, counts


@pytest.mark.slow
def test_the_second_machine_compiles_nothing(
    nginx_server: Nginx, instance: str, tmp_path: Path
) -> None:
    url = nginx_server.url(nginx_server.webdav, instance)
    first, counts = _wheel(tmp_path / "first", url)
    assert counts == {
        "hits": SAMPLE_SOURCES - SAMPLE_COMPILES,
        "misses": SAMPLE_COMPILES,
        "remote_hits": 0,
    }
    second, counts = _wheel(tmp_path / "second", url)
    # Each distinct compile comes from the remote; the other chip's equal kernels then hit the
    # entries the remote's hits were stored as.
    assert counts == {"hits": SAMPLE_SOURCES, "misses": 0, "remote_hits": SAMPLE_COMPILES}
    assert second.name == first.name
    assert second.read_bytes() == first.read_bytes()
