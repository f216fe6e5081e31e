"""A build that would change nothing ships the record of the last one, and only then: every
input a full build reads, changed, makes the next build a full one; the record and its files are
trusted only after verification; the wheel is the same either way."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager
from pathlib import Path

import pytest
from _support.console import run_cli
from _support.hatch_projects import build_wheel, copy_sample, edit, hook_environment

import pypto_build
from pypto_build.build_records import record as build_record
from pypto_build.build_records import records as record_store
from pypto_build.build_records.signatures import (
    FileInput,
    FolderInput,
    distribution_inputs,
    tree_inputs,
)
from pypto_build.chip_build import publish
from pypto_build.chip_build.compile_cache.layout import LAYOUT
from pypto_build.chip_build.publish import KILL_AT_ENV
from pypto_build.chip_build.toolchains.wheel_platform import host_platform_tag
from pypto_build.files import walk_files
from pypto_build.plugin import project_build
from pypto_build.plugin.cli import ExitCode

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

KERNELS = Path("src") / "moe_a2a" / "kernels"
TEMPLATE = "builtins/collectives/all_to_all_v/templates/kernel.cpp.in"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache folder for the module, so that the full builds hit it; the records
    of the tests' projects (each its own copy of the sample) sit side by side in it."""
    return tmp_path_factory.mktemp("cache")


class Builds:
    """Builds of one copy of the sample, counting the full ones."""

    def __init__(self, root: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.cache = cache
        self.project = copy_sample(root / "moe_a2a", chips=("a3",))
        self.full = 0
        self._wheels = 0
        engine = project_build.build_project

        def counted(*args: object, **kwargs: object) -> object:
            self.full += 1
            return engine(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(project_build, "build_project", counted)

    def wheel(self, version: str = "standard") -> Path:
        """Build a wheel into a folder of its own; its path."""
        self._wheels += 1
        return build_wheel(self.project, self.root / f"dist{self._wheels}", version)

    def record(self) -> Path:
        """The record of the last build (the tests of a module run one at a time)."""
        records = (self.cache / "projects" / "v1" / "records").glob("*.json")
        return max(records, key=lambda path: path.stat().st_mtime_ns)

    def blobs(self) -> list[Path]:
        """The stored files of the last build's record."""
        outputs = json.loads(self.record().read_text())["outputs"]
        store = self.cache / "projects" / "v1" / "blobs"
        return sorted({store / o["sha256"][:2] / o["sha256"] for o in outputs})


@pytest.fixture
def builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path) -> Builds:
    hook_environment(monkeypatch, cache, tmp_path / "tmp")
    return Builds(tmp_path, cache, monkeypatch)


def _members(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _warm(builds: Builds) -> Path:
    """A full build, which records itself, then one that ships the record; the first wheel."""
    first = builds.wheel()
    assert builds.full == 1
    second = builds.wheel()
    assert builds.full == 1, "nothing changed, yet the engine ran"
    assert second.read_bytes() == first.read_bytes()
    return first


def test_a_build_that_changes_nothing_ships_a_byte_identical_wheel_without_the_engine(
    builds: Builds, capfd: pytest.CaptureFixture[str]
) -> None:
    _warm(builds)
    output = capfd.readouterr()
    assert "pypto: a3: nothing changed since the last build, 4 binaries reused" in (
        output.out + output.err
    )
    last = json.loads((builds.cache / LAYOUT / "last-build.json").read_text())
    assert (last["hits"], last["misses"]) == (4, 0)
    # The no-op build leaves no staging folder behind.
    assert [p.name for p in (builds.root / "tmp").iterdir() if p.name.startswith("pypto-")] == []


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as stream:
        stream.write(text)


def test_a_changed_program_file_builds_in_full(
    builds: Builds, capfd: pytest.CaptureFixture[str]
) -> None:
    _warm(builds)
    program = builds.project / "src" / "moe_a2a" / "pipelines.py"
    _append(program, "\n# edited\n")
    capfd.readouterr()
    builds.wheel()
    assert builds.full == 2
    output = capfd.readouterr()
    assert f"pypto: {program} changed since the last build" in output.out + output.err
    builds.wheel()
    assert builds.full == 2, "the new build was not recorded"


def test_a_changed_kernel_source_builds_in_full_and_ships_the_new_kernel(builds: Builds) -> None:
    first = _warm(builds)
    kernel = builds.project / KERNELS / "consume_step.cpp"
    _append(kernel, "\n// edited\n")
    members = _members(builds.wheel())
    assert builds.full == 2
    shipped = "moe_a2a/_kernels/a3/next_levels/chip_pipeline/kernels/aiv/consume_step.cpp"
    assert members[shipped] == kernel.read_bytes()
    assert members != _members(first)


def test_a_file_saved_while_the_build_runs_is_not_recorded_as_built(
    builds: Builds, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    kernel = builds.project / KERNELS / "consume_step.cpp"
    engine = project_build.build_project

    def saved_meanwhile(*args: object, **kwargs: object) -> object:
        result = engine(*args, **kwargs)  # type: ignore[arg-type]
        _append(kernel, "\n// saved while the build ran\n")
        return result

    monkeypatch.setattr(project_build, "build_project", saved_meanwhile)
    builds.wheel()
    output = capfd.readouterr()
    assert f"{kernel} changed during the build" in output.out + output.err
    # No record of the older bytes: the next build compiles the saved kernel and ships it.
    monkeypatch.setattr(project_build, "build_project", engine)
    members = _members(builds.wheel())
    assert builds.full == 2
    shipped = "moe_a2a/_kernels/a3/next_levels/chip_pipeline/kernels/aiv/consume_step.cpp"
    assert members[shipped] == kernel.read_bytes()


def test_a_changed_header_a_kernel_includes_builds_in_full(builds: Builds) -> None:
    header = builds.root / "include" / "user_config.h"
    header.parent.mkdir()
    header.write_text("#define USER_SCALE 1\n", encoding="utf-8")
    kernel = builds.project / KERNELS / "consume_step.cpp"
    edit(kernel, "#include <cstdint>\n", f'#include <cstdint>\n#include "{header}"\n')
    _warm(builds)
    header.write_text("#define USER_SCALE 2\n", encoding="utf-8")
    builds.wheel()
    assert builds.full == 2


def test_a_changed_setting_builds_in_full(builds: Builds, monkeypatch: pytest.MonkeyPatch) -> None:
    _warm(builds)
    monkeypatch.setenv("PYPTO_JOBS", "1")
    builds.wheel()
    assert builds.full == 2
    tag = f'toolchain = "auto"\nplatform-tag = "{host_platform_tag()}"'
    edit(builds.project / "pyproject.toml", 'toolchain = "auto"', tag)
    builds.wheel()
    assert builds.full == 3


def test_cxxflags_build_in_full_and_verbose_does_not(
    builds: Builds, monkeypatch: pytest.MonkeyPatch
) -> None:
    _warm(builds)
    monkeypatch.setenv("PYPTO_VERBOSE", "1")  # what a build prints changes nothing it makes
    builds.wheel()
    assert builds.full == 1
    monkeypatch.setenv("CXXFLAGS", "-DTRACE")  # the sim compiles' own variable
    builds.wheel()
    assert builds.full == 2
    builds.wheel()
    assert builds.full == 2


def test_another_compiler_builds_in_full(
    builds: Builds, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _warm(builds)
    wrapper = tmp_path / "bin" / "g++"
    wrapper.parent.mkdir()
    real = shutil.which("g++")
    wrapper.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo "g++ (patched) 12.2.0"; exit 0; fi\n'
        f'exec {real} "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("CXX", str(wrapper))
    builds.wheel()
    assert builds.full == 2


def test_another_pypto_build_version_builds_in_full(
    builds: Builds, monkeypatch: pytest.MonkeyPatch
) -> None:
    _warm(builds)
    monkeypatch.setattr(pypto_build, "__version__", "0.0.0+other")
    builds.wheel()
    assert builds.full == 2


def test_the_record_lists_the_templates_the_headers_and_the_kernel_sources(
    builds: Builds,
) -> None:
    _warm(builds)
    record = json.loads(builds.record().read_text())
    files = {entry["path"] for entry in record["files"]}
    package = Path(pypto_build.__file__).resolve().parent
    assert str(package / TEMPLATE) in files
    assert str(builds.project / KERNELS / "consume_step.cpp") in files
    assert str(builds.project / "src" / "moe_a2a" / "pipelines.py") in files
    # A system header the compiles read, from the compile cache's entries.
    assert any(path.startswith("/usr/include/") for path in files)


def test_an_entry_whose_shared_list_is_not_its_own_vouches_for_no_binary(
    builds: Builds, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once the compiles are done, beside each entry one with the same manifest but an emptied
    # shared.json (listed first): it names none of the headers the compile read, so the record
    # must not take it (a lookup would evict it).
    engine = project_build.build_project

    def planting(*args: object, **kwargs: object) -> object:
        result = engine(*args, **kwargs)  # type: ignore[arg-type]
        for manifest in (builds.cache / LAYOUT / "entries").glob("*/*/*/manifest.json"):
            planted = manifest.parent.parent / "-planted"
            if not planted.exists():
                shutil.copytree(manifest.parent, planted)
                (planted / "shared.json").write_text("[]", encoding="utf-8")
        return result

    monkeypatch.setattr(project_build, "build_project", planting)
    builds.wheel()
    files = {entry["path"] for entry in json.loads(builds.record().read_text())["files"]}
    assert any(path.startswith("/usr/include/") for path in files)


def test_a_changed_template_builds_in_full(builds: Builds) -> None:
    """pypto-build's own files cannot be edited under a test; the record of the template is
    made stale as an edit would make it (other bytes, another signature)."""
    _warm(builds)
    path = builds.record()
    record = json.loads(path.read_text())
    template = str(Path(pypto_build.__file__).resolve().parent / TEMPLATE)
    (entry,) = [entry for entry in record["files"] if entry["path"] == template]
    entry["sha256"] = "0" * 64
    entry["signature"][1] -= 1
    path.write_text(json.dumps(record))
    builds.wheel()
    assert builds.full == 2


def test_a_damaged_record_is_removed_with_a_warning_and_the_build_runs(
    builds: Builds, capfd: pytest.CaptureFixture[str]
) -> None:
    first = _warm(builds)
    builds.record().write_text('{"format": 1, "key": "not this one"}')
    capfd.readouterr()
    assert _members(builds.wheel()) == _members(first)
    assert builds.full == 2
    output = capfd.readouterr()
    assert "build record: removed damaged" in output.out + output.err
    builds.wheel()
    assert builds.full == 2


def test_a_record_behind_a_link_is_not_followed(builds: Builds) -> None:
    _warm(builds)
    path = builds.record()
    kept = path.with_name("kept")
    path.rename(kept)
    path.symlink_to(kept)
    builds.wheel()
    assert builds.full == 2
    assert not path.is_symlink()


def test_a_damaged_file_of_the_record_is_not_shipped(
    builds: Builds, capfd: pytest.CaptureFixture[str]
) -> None:
    first = _warm(builds)
    blob = builds.blobs()[0]
    blob.chmod(0o644)
    blob.write_bytes(b"flipped" + blob.read_bytes())
    capfd.readouterr()
    assert _members(builds.wheel()) == _members(first)
    assert builds.full == 2
    output = capfd.readouterr()
    assert "does not have the hash it is stored under" in output.out + output.err


def test_a_file_of_the_record_that_is_not_a_regular_file_is_not_read(
    builds: Builds, capfd: pytest.CaptureFixture[str]
) -> None:
    first = _warm(builds)
    blob = builds.blobs()[0]
    blob.unlink()
    blob.mkdir()  # what a read would block or fail on
    capfd.readouterr()
    assert _members(builds.wheel()) == _members(first)
    assert builds.full == 2
    output = capfd.readouterr()
    assert f"build record: [Errno 22] not a regular file: '{blob}'; building" in (
        output.out + output.err
    )


def test_a_missing_file_of_the_record_builds_in_full(builds: Builds) -> None:
    first = _warm(builds)
    for blob in builds.blobs():
        blob.unlink()
    assert _members(builds.wheel()) == _members(first)
    assert builds.full == 2


def test_an_editable_install_writes_the_recorded_trees_in_place(builds: Builds) -> None:
    builds.wheel("editable")
    tree = builds.project / "src" / "moe_a2a" / "_kernels" / "a3"

    def contents() -> dict[Path, tuple[bytes, int]]:
        return {
            path: ((tree / path).read_bytes(), stat.S_IMODE((tree / path).stat().st_mode))
            for path in walk_files(tree)
        }

    built = contents()
    builds.wheel("editable")
    assert builds.full == 1
    assert contents() == built
    # A standard wheel of the same project ships the same record.
    builds.wheel()
    assert builds.full == 1


# --- the signatures a record checks ----------------------------------------------------------


def test_a_file_is_changed_only_when_its_bytes_are(tmp_path: Path) -> None:
    path = tmp_path / "kernel.cpp"
    path.write_bytes(b"int x;\n")
    recorded = FileInput.read(path)
    assert recorded.unchanged()
    os.utime(path, ns=(1, 1))  # touched: another signature, the same bytes
    assert recorded.unchanged()
    path.write_bytes(b"int y;\n")  # the same size
    assert not recorded.unchanged()
    path.unlink()
    assert not recorded.unchanged()


def test_a_file_added_to_a_package_is_a_change(tmp_path: Path) -> None:
    package = tmp_path / "templates"
    (package / "__pycache__").mkdir(parents=True)
    (package / "kernel.cpp.in").write_text("{{ x }}\n", encoding="utf-8")
    files, folders = tree_inputs(package)
    assert [Path(f.path).name for f in files] == ["kernel.cpp.in"]
    (package / "__pycache__" / "x.pyc").write_bytes(b"")  # bytecode is no input
    assert all(folder.unchanged() for folder in folders)
    (package / "extra.h").write_text("", encoding="utf-8")
    assert not all(folder.unchanged() for folder in folders)


def test_a_distribution_installed_or_registering_a_template_package_is_a_change(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site-packages"
    (site / "one-1.0.dist-info").mkdir(parents=True)
    (site / "one").mkdir()
    table = site / "one-1.0.dist-info" / "entry_points.txt"
    table.write_text("[console_scripts]\none = one:main\n", encoding="utf-8")
    files, folders = distribution_inputs([str(site)])
    assert folders == [FolderInput(str(site), ("one-1.0.dist-info",), True)]
    (site / "module.py").write_text("", encoding="utf-8")  # no distribution
    assert folders[0].unchanged()
    table.write_text("[pypto_build.builtins]\nops = one.ops\n", encoding="utf-8")
    assert not files[0].unchanged()
    (site / "two-2.0.dist-info").mkdir()
    assert not folders[0].unchanged()


@pytest.fixture
def record_document() -> Iterator[dict[str, object]]:
    yield {
        "format": build_record.FORMAT,
        "key": "k",
        "toolchain": {},
        "packages": {},
        "files": [],
        "folders": [],
        "directories": [["a3", 0o755]],
        "outputs": [{"path": "a3/manifest.json", "mode": 0o644, "sha256": "a" * 64}],
        "reports": [],
        "warnings": [],
    }


def test_a_record_parses_only_in_its_exact_shape(record_document: dict[str, object]) -> None:
    record = build_record.BuildRecord.from_json(record_document, "k")
    assert (
        build_record.BuildRecord.from_json(json.loads(json.dumps(record.to_json())), "k") == record
    )
    with pytest.raises(build_record.Damaged, match="another key"):
        build_record.BuildRecord.from_json(record_document, "other")
    for path in ("../x", "/etc/passwd", "a3//x", "a3/./x"):
        bad = dict(record_document, outputs=[{"path": path, "mode": 420, "sha256": "a" * 64}])
        with pytest.raises(build_record.Damaged, match="not a path inside the output folder"):
            build_record.BuildRecord.from_json(bad, "k")
    with pytest.raises(build_record.Damaged, match="malformed"):
        build_record.BuildRecord.from_json(dict(record_document, directories=[["a3", True]]), "k")


def _record(key: str, sha256: str) -> build_record.BuildRecord:
    return build_record.BuildRecord(
        key=key,
        toolchain={},
        packages={},
        files=(),
        folders=(),
        directories=(("a3", 0o755),),
        outputs=(build_record.OutputFile("a3/f", 0o644, sha256),),
        reports=(),
        warnings=(),
    )


def test_the_store_keeps_the_last_used_records_and_the_files_they_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(record_store, "MAX_RECORDS", 2)
    store = record_store.RecordStore(tmp_path / "cache", warn=pytest.fail)
    out = tmp_path / "out"
    (out / "a3").mkdir(parents=True)
    digests = []
    for index in range(3):
        (out / "a3" / "f").write_bytes(f"version {index}".encode())
        digests.append(hashlib.sha256(f"version {index}".encode()).hexdigest())
        store.save(_record(f"k{index}", digests[-1]), out)
        last_use = time.time() - 100 + index
        os.utime(store.root / "records" / f"k{index}.json", (last_use, last_use))
    records = sorted(path.name for path in (store.root / "records").iterdir())
    assert records == ["k1.json", "k2.json"]
    blobs = sorted(path.name for path in (store.root / "blobs").glob("*/*"))
    assert blobs == sorted(digests[1:])
    assert store.load("k0") is None
    assert store.load("k2") == _record("k2", digests[2])
    store.clear()
    assert not store.root.exists()


def test_pruning_the_whole_cache_removes_the_build_records(
    builds: Builds, capsys: pytest.CaptureFixture[str]
) -> None:
    _warm(builds)
    code, _, _ = run_cli(capsys, "cache", "prune", "--all")
    assert code == ExitCode.OK
    assert not (builds.cache / "projects" / "v1").exists()
    builds.wheel()
    assert builds.full == 2, "the build after prune --all must compile"


def test_clearing_debris_takes_the_lock_only_where_a_build_left_a_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wheel build clears an editable install's leftovers first; where there are none it
    neither waits nor writes a lock file into the package."""
    target = tmp_path / "pkg" / "_kernels"
    target.parent.mkdir()
    locked = publish._locked
    taken: list[Path] = []

    def spy(path: Path, notify: Callable[[str], None]) -> ContextManager[None]:
        taken.append(path)
        return locked(path, notify)

    monkeypatch.setattr(publish, "_locked", spy)
    publish.clear_debris(target)
    assert taken == [] and list(target.parent.iterdir()) == []
    staging = target.parent / "._kernels.k1ll3d.new"
    staging.mkdir()
    publish.clear_debris(target)
    assert taken == [target] and list(target.parent.iterdir()) == []


def _editable_build(project: Path, dist: Path, **environ: str) -> subprocess.CompletedProcess[str]:
    """An editable build in a fresh interpreter (the same command each time, so the same
    record key), with ``environ`` added."""
    code = (
        "import sys; from hatchling.builders.wheel import WheelBuilder; "
        "next(WheelBuilder(sys.argv[1]).build(directory=sys.argv[2], versions=['editable']))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(project), str(dist)],
        env={**os.environ, **environ},
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_killed_restore_leaves_the_folder_as_it_was(builds: Builds) -> None:
    tree = builds.project / "src" / "moe_a2a" / "_kernels"
    assert _editable_build(builds.project, builds.root / "dist").returncode == 0
    older = builds.root / "older"
    shutil.copytree(tree, older)
    _append(builds.project / KERNELS / "consume_step.cpp", "\n// edited\n")
    assert _editable_build(builds.project, builds.root / "dist").returncode == 0
    newer = {path: (tree / "a3" / path).read_bytes() for path in walk_files(tree / "a3")}
    shutil.rmtree(tree)
    shutil.copytree(older, tree)  # the folder no longer holds what the record does
    killed = _editable_build(builds.project, builds.root / "dist", **{KILL_AT_ENV: "swapping"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert [path for path in walk_files(tree)] == [path for path in walk_files(older)]
    assert all((tree / p).read_bytes() == (older / p).read_bytes() for p in walk_files(older))
    again = _editable_build(builds.project, builds.root / "dist")
    assert "nothing changed since the last build" in again.stdout + again.stderr
    # The trees the record holds (the compile logs beside them are not output: none is
    # written by a build that compiled nothing).
    assert {path: (tree / "a3" / path).read_bytes() for path in walk_files(tree / "a3")} == newer


def test_the_cache_bound_covers_the_build_records_and_leaves_no_empty_folder(
    tmp_path: Path,
) -> None:
    """Records count against ``cache-max-size``: pruning to 100K removes the least recently
    used records and, at once, the files only they named, and no empty folder is left."""
    from pypto_build.build_records.folder_bound import bound_cache

    store = record_store.RecordStore(tmp_path / "cache", warn=pytest.fail)
    out = tmp_path / "out"
    (out / "a3").mkdir(parents=True)
    digests = []
    for index in range(6):
        data = bytes([index]) * 40_000
        (out / "a3" / "f").write_bytes(data)
        digests.append(hashlib.sha256(data).hexdigest())
        store.save(_record(f"k{index}", digests[-1]), out)
        last_use = time.time() - 100 + index
        os.utime(store.root / "records" / f"k{index}.json", (last_use, last_use))
    assert store.size() > 240_000
    bound_cache(tmp_path / "cache", 100_000, warn=pytest.fail)
    assert store.size() <= 100_000
    assert sorted(path.name for path in (store.root / "records").iterdir()) == [
        "k4.json",
        "k5.json",
    ]
    assert sorted(path.name for path in (store.root / "blobs").glob("*/*")) == sorted(digests[4:])
    empty = [p for p in (tmp_path / "cache").rglob("*") if p.is_dir() and not any(p.iterdir())]
    assert empty == []
