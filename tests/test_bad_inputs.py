"""No traceback, whatever the input: a corpus of hostile inputs across settings, programs,
kernels, builtin template packages and paths.

Each case prepares its inputs in a fresh workspace that already holds an earlier render in
``out/``, runs the command line on them, and asserts the one clear message, the documented exit
code (never 3, an internal error), no traceback, and that ``out/`` is exactly as it was, with
nothing left beside it. ``docs/reliability.md`` counts these cases.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _support.builtin_distributions import InstallDistribution, installer
from _support.console import run_cli
from _support.tiny_project import PROGRAM, kernel, write_project

REPO = Path(__file__).resolve().parent.parent
ALLGATHER = REPO / "tests" / "third_party" / "acme-collectives" / "acme_collectives" / "allgather"
ALLGATHER_PROGRAM = REPO / "tests" / "third_party" / "programs" / "allgather.py"

Setup = Callable[[Path], list[str]]


@dataclass(frozen=True)
class Bad:
    """A hostile input: ``setup(workspace)`` writes it and returns the command line."""

    id: str
    setup: Setup
    code: int
    message: str
    env: dict[str, str] = field(default_factory=dict)


def _render(program: str) -> Setup:
    """``render`` of a program file with the given text (beside the tiny kernel)."""

    def setup(ws: Path) -> list[str]:
        (ws / "bad.py").write_text(program, encoding="utf-8")
        return ["render", str(ws / "bad.py"), "--out", str(ws / "out"), "--chip", "a3"]

    return setup


def _render_bytes(data: bytes) -> Setup:
    def setup(ws: Path) -> list[str]:
        (ws / "bad.py").write_bytes(data)
        return ["render", str(ws / "bad.py"), "--out", str(ws / "out"), "--chip", "a3"]

    return setup


def _render_padded(size: int) -> Setup:
    """``render`` of the tiny program extended to ``size`` bytes (a sparse file: its tail is
    never read)."""

    def setup(ws: Path) -> list[str]:
        (ws / "bad.py").write_text(PROGRAM, encoding="utf-8")
        os.truncate(ws / "bad.py", size)
        return ["render", str(ws / "bad.py"), "--out", str(ws / "out"), "--chip", "a3"]

    return setup


def _tiny(old: str, new: str) -> str:
    assert old in PROGRAM, old
    return PROGRAM.replace(old, new, 1)


def _project(pyproject: str | bytes) -> Setup:
    """``build`` of a project whose pyproject.toml is ``pyproject``."""

    def setup(ws: Path) -> list[str]:
        project = ws / "proj"
        write_project(project)
        path = project / "pyproject.toml"
        if isinstance(pyproject, bytes):
            path.write_bytes(pyproject)
        else:
            path.write_text(textwrap.dedent(pyproject), encoding="utf-8")
        return ["build", str(project), "--out", str(ws / "out"), "--toolchain", "sim"]

    return setup


def _settings(extra: str) -> Setup:
    """A project with a valid table plus ``extra`` lines (which make it invalid)."""
    return _project(
        '[tool.pypto]\nprograms = ["tiny.py"]\npackage = "pkg/_kernels"\nchips = ["a3"]\n' + extra
    )


def _argv(*argv: str) -> Setup:
    """A command line naming ``{ws}`` (the workspace) and ``{good}`` (the tiny program)."""

    def setup(ws: Path) -> list[str]:
        return [arg.format(ws=ws, good=ws / "good" / "tiny.py") for arg in argv]

    return setup


def _kernel_file(make: Callable[[Path], object]) -> Setup:
    """``render`` of the tiny program whose kernel ``k.cpp`` is what ``make`` puts there."""

    def setup(ws: Path) -> list[str]:
        folder = ws / "kp"
        folder.mkdir()
        (folder / "tiny.py").write_text(PROGRAM, encoding="utf-8")
        make(folder / "k.cpp")
        return ["render", str(folder / "tiny.py"), "--out", str(ws / "out"), "--chip", "a3"]

    return setup


def _kernel_build(source: str) -> Setup:
    """``build`` (sim) of the tiny program with kernel source ``source``."""

    def setup(ws: Path) -> list[str]:
        folder = ws / "kb"
        write_project(folder)
        (folder / "k.cpp").write_text(source, encoding="utf-8")
        return build_command(folder / "tiny.py", ws / "out")

    return setup


def build_command(program: Path, out: Path) -> list[str]:
    return ["build", str(program), "--out", str(out), "--chip", "a3", "--toolchain", "sim"]


def _package(change: Callable[[Path], object]) -> Setup:
    """``render`` of the allgather program with a copy of the acme package, broken by
    ``change(package folder)``, installed (the ``acme_site`` fixture registers it)."""

    def setup(ws: Path) -> list[str]:
        root = ws / "site" / "acme_collectives" / "allgather"
        change(root)
        program = ws / "allgather" / "allgather.py"
        (program.parent / "kernels").mkdir(parents=True)
        shutil.copy(ALLGATHER_PROGRAM, program)
        (program.parent / "kernels" / "copy_pairs.cpp").write_text(kernel(1), encoding="utf-8")
        return ["render", str(program), "--out", str(ws / "out"), "--chip", "a3"]

    return setup


def _manifest(old: str, new: str) -> Callable[[Path], object]:
    def change(root: Path) -> None:
        manifest = root / "builtin.toml"
        text = manifest.read_text(encoding="utf-8")
        assert old in text, old
        manifest.write_text(text.replace(old, new, 1), encoding="utf-8")

    return change


def _template(name: str, text: str | None) -> Callable[[Path], object]:
    def change(root: Path) -> None:
        path = root / "templates" / name
        if text is None:
            path.unlink()
        else:
            path.write_text(text, encoding="utf-8")

    return change


def _link(name: str, target: str) -> Callable[[Path], object]:
    """The package's file ``name`` replaced by a symbolic link to ``target``."""

    def change(root: Path) -> None:
        (root / name).unlink()
        (root / name).symlink_to(target)

    return change


def _fifo(path: Path) -> None:
    os.mkfifo(path)


_HOST_DIM = "4294967296, 4294967296"

CASES = (
    # --- settings: pyproject.toml, [tool.pypto], PYPTO_* ------------------------------------
    Bad("tool-not-a-table", _project("tool = 3\n"), 2, "tool: expected a table, got 3"),
    Bad(
        "tool-pypto-not-a-table",
        _project("[tool]\npypto = 3\n"),
        2,
        "tool.pypto: expected a table, got 3",
    ),
    Bad("pyproject-not-utf8", _project(b"\xff\xfe[tool.pypto]\n"), 2, "not UTF-8 text"),
    Bad("pyproject-not-toml", _project("[tool.pypto\n"), 2, "pyproject.toml: "),
    Bad(
        "pyproject-a-folder",
        lambda ws: _pyproject_folder(ws),
        2,
        "pyproject.toml: cannot read it: not a regular file",
    ),
    Bad("unknown-key", _settings("chip = 'a3'\n"), 2, "did you mean 'chips'?"),
    Bad("snake-case-key", _settings("compiler_launcher = 'x'\n"), 2, "kebab-case"),
    Bad("missing-programs", _project("[tool.pypto]\npackage = 'p'\n"), 2, "'programs'"),
    Bad(
        "unknown-chip",
        _project('[tool.pypto]\nprograms = ["tiny.py"]\npackage = "p"\nchips = ["a9"]\n'),
        2,
        "unknown chip 'a9'",
    ),
    Bad(
        "chips-a-string",
        _project('[tool.pypto]\nprograms = ["tiny.py"]\npackage = "p"\nchips = "a3"\n'),
        2,
        "tool.pypto.chips: expected",
    ),
    Bad(
        "chips-empty",
        _project('[tool.pypto]\nprograms = ["tiny.py"]\npackage = "p"\nchips = []\n'),
        2,
        "at least one entry is needed",
    ),
    Bad(
        "chips-twice",
        _project('[tool.pypto]\nprograms = ["tiny.py"]\npackage = "p"\nchips = ["a3", "a3"]\n'),
        2,
        "'a3' is listed twice",
    ),
    Bad("unknown-toolchain", _settings("toolchain = 'gcc'\n"), 2, "tool.pypto.toolchain"),
    Bad("jobs-zero", _settings("jobs = 0\n"), 2, "at least 1 is needed"),
    Bad("jobs-a-string", _settings("jobs = '4'\n"), 2, "tool.pypto.jobs: expected"),
    Bad("jobs-a-bool", _settings("jobs = true\n"), 2, "tool.pypto.jobs: expected"),
    Bad(
        "launcher-unbalanced-quote",
        _settings("compiler-launcher = 'cc\"ache'\n"),
        2,
        "is not a command line (No closing quotation)",
    ),
    Bad(
        "launcher-not-on-path",
        _settings("compiler-launcher = 'no-such-launcher-xyz'\n"),
        1,
        "compiler launcher 'no-such-launcher-xyz' is not on PATH",
    ),
    Bad(
        "program-outside-project",
        _project('[tool.pypto]\nprograms = ["../tiny.py"]\npackage = "p"\n'),
        2,
        "must be a relative path inside the project",
    ),
    Bad(
        "program-missing",
        _project('[tool.pypto]\nprograms = ["nope.py"]\npackage = "p"\nchips = ["a3"]\n'),
        2,
        "tool.pypto.programs[0]: nope.py: no such file",
    ),
    Bad(
        "program-path-nul",
        _project('[tool.pypto]\nprograms = ["ti\\u0000ny.py"]\npackage = "p"\nchips = ["a3"]\n'),
        2,
        "tool.pypto.programs[0]: 'ti\\x00ny.py' holds a NUL byte, which no path can",
    ),
    Bad(
        "package-path-nul",
        _project('[tool.pypto]\nprograms = ["tiny.py"]\npackage = "p\\u0000k"\nchips = ["a3"]\n'),
        2,
        "tool.pypto.package: 'p\\x00k' holds a NUL byte, which no path can",
    ),
    Bad(
        "program-a-folder",
        _project('[tool.pypto]\nprograms = ["."]\npackage = "p"\nchips = ["a3"]\n'),
        2,
        "not a regular file",
    ),
    Bad(
        "package-absolute",
        _project('[tool.pypto]\nprograms = ["tiny.py"]\npackage = "/abs"\n'),
        2,
        "tool.pypto.package",
    ),
    Bad("revision-not-a-commit", _settings("runtime-revision = 'xyz'\n"), 2, "not a commit id"),
    Bad("platform-tag-malformed", _settings("platform-tag = 'Linux X'\n"), 2, "platform tag"),
    Bad("remote-url-ftp", _settings("remote-cache-url = 'ftp://h/c'\n"), 2, "remote-cache-url"),
    Bad("remote-timeout-inf", _settings("remote-cache-timeout = inf\n"), 2, "at most 86400"),
    Bad("remote-timeout-huge", _settings("remote-cache-timeout = 1e300\n"), 2, "at most 86400"),
    Bad("remote-timeout-zero", _settings("remote-cache-timeout = 0\n"), 2, "above 0"),
    Bad("read-only-a-string", _settings("remote-cache-read-only = 'yes'\n"), 2, "read-only"),
    Bad(
        "env-unknown-chip",
        _settings(""),
        2,
        "PYPTO_CHIPS[0]: unknown chip 'x1'",
        {"PYPTO_CHIPS": "x1"},
    ),
    Bad("env-jobs-nan", _settings(""), 2, "PYPTO_JOBS", {"PYPTO_JOBS": "abc"}),
    Bad(
        "env-launcher-quote",
        _settings(""),
        2,
        "PYPTO_COMPILER_LAUNCHER: 'cc\"' is not a command line",
        {"PYPTO_COMPILER_LAUNCHER": 'cc"'},
    ),
    Bad(
        "env-timeout-huge",
        _settings(""),
        2,
        "PYPTO_REMOTE_CACHE_TIMEOUT",
        {"PYPTO_REMOTE_CACHE_TIMEOUT": "1e300"},
    ),
    # --- programs -----------------------------------------------------------------------------
    Bad("syntax-error", _render("def (\n"), 1, "invalid syntax"),
    Bad(
        "nested-10000-unary",
        _render("x = " + "-" * 10000 + "1\n"),
        1,
        "program is nested too deeply to parse",
    ),
    Bad(
        "nested-10000-not",
        _render("x = " + "not " * 10000 + "1\n"),
        1,
        "program is nested too deeply to parse",
    ),
    Bad(
        "nested-10000-parentheses",
        _render("x = " + "(" * 10000 + "1" + ")" * 10000 + "\n"),
        1,
        "too many nested parentheses",
    ),
    Bad(
        "nested-100000-additions",
        _render("x = 1" + " + 1" * 100000 + "\n"),
        1,
        "nested too deeply",
    ),
    Bad("no-program-class", _render("x = 1\n"), 1, "defines no @pl.program class"),
    Bad(
        "program-over-32-mib",
        _render_padded(32 * 1024 * 1024 + 1),
        1,
        "program file is 33,554,433 bytes, above the limit of 33,554,432 bytes (32 MiB)",
    ),
    Bad("program-not-utf8", _render_bytes(b"x = '\xff'\n"), 1, "cannot decode program file"),
    Bad("program-nul-byte", _render_bytes(b"x = 1\x00\n"), 1, "error:"),
    Bad(
        "function-name-not-ascii",
        _render(_tiny("def orch(", "def orch\u00e9(")),
        1,
        "is not an ASCII C identifier",
    ),
    Bad(
        "function-name-too-long",
        _render(_tiny("def orch(", "def orch" + "x" * 250 + "(")),
        1,
        "at most 200 are allowed",
    ),
    Bad(
        "tensor-bytes-overflow",
        _render(_tiny("pl.Tensor[[4, 4], pl.FP32], y", f"pl.Tensor[[{_HOST_DIM}], pl.FP32], y")),
        1,
        "more than a 64-bit byte offset reaches",
    ),
    Bad(
        "create-bytes-overflow",
        _render(
            _tiny(
                "        return self.k(x, y)",
                f"        t = pl.create_tensor([{_HOST_DIM}], dtype=pl.INT64)\n"
                "        return self.k(x, y)",
            )
        ),
        1,
        "more than a 64-bit byte offset reaches",
    ),
    Bad("unknown-op", _render(_tiny("return self.k(x, y)", "return pl.frob(x)")), 1, "frob"),
    Bad(
        "dimension-not-constant",
        _render(_tiny("pl.Tensor[[4, 4], pl.FP32], y", "pl.Tensor[[4, Q], pl.FP32], y")),
        1,
        "'Q'",
    ),
    Bad("build-of-no-program", lambda ws: _write_and_build(ws, "x = 1\n"), 1, "no @pl.program"),
    Bad(
        "two-files-one-class-name",
        lambda ws: _two_files(ws),
        1,
        "so these names must be unique across the programs of a build",
    ),
    # --- kernels ------------------------------------------------------------------------------
    Bad("kernel-missing", _kernel_file(lambda path: None), 1, "does not exist"),
    Bad(
        "kernel-a-folder",
        _kernel_file(lambda path: path.mkdir()),
        1,
        "cannot be read: not a regular file",
    ),
    Bad(
        "orchestration-duplicate-parameter",
        _render(
            _tiny(
                "def orch(\n        self, x: pl.Tensor[[4, 4], pl.FP32], y:",
                "def orch(\n        self, x: pl.Tensor[[4, 4], pl.FP32], x:",
            )
        ),
        1,
        "bad.py:13:46: error: duplicate parameter 'x' of 'orch'",
    ),
    Bad(
        "kernel-path-nul",
        _render(_tiny('external_source="k.cpp"', 'external_source="k\\x00.cpp"')),
        1,
        "bad.py:7:5: error: external_source 'k\\x00.cpp' of kernel 'k' holds a NUL byte",
    ),
    Bad("kernel-a-fifo", _kernel_file(_fifo), 1, "cannot be read: not a regular file"),
    Bad(
        "kernel-a-dangling-link",
        _kernel_file(lambda path: path.symlink_to(path.parent / "nowhere.cpp")),
        1,
        "does not exist",
    ),
    Bad(
        "kernel-without-kernel-entry",
        _kernel_build('extern "C" void other(long* args) { (void)args; }\n'),
        1,
        "required symbol `kernel_entry' not defined",
    ),
    Bad("kernel-not-cpp", _kernel_build("this is not C++;\n"), 1, "compiles failed for chip a3"),
    # --- paths --------------------------------------------------------------------------------
    Bad(
        "out-under-a-file",
        _argv("render", "{good}", "--out", "{ws}/good/tiny.py/out", "--chip", "a3"),
        2,
        "tiny.py is not a folder",
    ),
    Bad(
        "out-under-proc",
        _argv("render", "{good}", "--out", "/proc/pypto-out", "--chip", "a3"),
        2,
        "cannot create the output folder /proc/pypto-out",
    ),
    Bad(
        "out-a-file",
        _argv("render", "{good}", "--out", "{good}", "--chip", "a3"),
        2,
        "exists and is not a render tree",
    ),
    Bad(
        "out-not-a-render",
        _argv("render", "{good}", "--out", "{ws}/good", "--chip", "a3"),
        2,
        "exists and is not a render tree",
    ),
    Bad(
        "program-path-too-long",
        _argv("render", "{ws}/" + "p" * 300 + ".py", "--out", "{ws}/out"),
        2,
        "File name too long",
    ),
    Bad("program-file-missing", _argv("render", "{ws}/nope.py", "--out", "{ws}/out"), 2, "no such"),
    Bad(
        "program-a-fifo",
        lambda ws: (_fifo(ws / "fifo.py"), ["lower", str(ws / "fifo.py")])[1],
        2,
        "not a regular file",
    ),
    Bad("program-dev-zero", _argv("lower", "/dev/zero"), 2, "not a regular file"),
    Bad(
        "source-root-missing",
        _argv("render", "{good}", "--out", "{ws}/out", "--source-root", "{ws}/nowhere"),
        2,
        "--source-root",
    ),
    Bad(
        "kernel-outside-source-root",
        _argv("render", "{good}", "--out", "{ws}/out", "--chip", "a3", "--source-root", "{ws}/o"),
        2,
        "is not under the source root",
    ),
    Bad("unknown-class", _argv("lower", "{good}", "--class", "Nope"), 2, "Nope"),
    Bad("unknown-pass", _argv("lower", "{good}", "--after", "Nope"), 2, "Nope"),
    Bad("prune-size", _argv("cache", "prune", "--max-size", "5X"), 2, "invalid size '5X'"),
    Bad("run-timeout-inf", _argv("run", "{ws}/out", "--ranks", "2", "--timeout", "inf"), 2, "inf"),
    Bad(
        "run-timeout-huge",
        _argv("run", "{ws}/out", "--ranks", "2", "--timeout", "1e300"),
        2,
        "1e300",
    ),
    Bad("run-ranks-zero", _argv("run", "{ws}/out", "--ranks", "0"), 2, "1 to 64 ranks"),
    Bad("run-a-render", _argv("run", "{ws}/out", "--ranks", "2"), 2, "error:"),
    # --- builtin template packages (a broken third-party package installed) -------------------
    Bad("package-not-toml", _package(_manifest("[op]", "[op")), 2, "builtin.toml"),
    Bad(
        "package-unknown-key",
        _package(_manifest('core_type = "aiv"', 'core_type = "aiv"\ncolour = "red"')),
        2,
        "colour",
    ),
    Bad(
        "package-unknown-chip",
        _package(_manifest('chips = ["a2", "a3", "a5"]', 'chips = ["a9"]')),
        1,
        "pld.tensor.allgather requires chip a9; the build targets a3",
    ),
    Bad(
        "package-unknown-rail",
        _package(_manifest('rails = ["host", "chip"]', 'rails = ["moon"]')),
        2,
        "moon",
    ),
    Bad(
        "package-unknown-launch-rule",
        _package(_manifest('launch_width = "exact"', 'launch_width = "magic"')),
        2,
        "magic",
    ),
    Bad(
        "package-bad-direction",
        _package(_manifest('direction = "In"', 'direction = "Sideways"')),
        2,
        "Sideways",
    ),
    Bad(
        "package-unknown-dtype", _package(_manifest("[dtypes.int8]", "[dtypes.fp128]")), 2, "fp128"
    ),
    Bad(
        "package-claims-our-op",
        _package(
            _manifest('public = "pld.tensor.allgather"', 'public = "pld.tensor.all_to_all_v"')
        ),
        2,
        "pld.tensor.all_to_all_v",
    ),
    Bad(
        "package-handle-without-colon",
        _package(_manifest('handle = ":acme.collectives.allgather"', 'handle = "acme"')),
        2,
        "builtin.toml",
    ),
    Bad(
        "package-manifest-not-utf8",
        _package(lambda root: (root / "builtin.toml").write_bytes(b"\xff\xfe")),
        2,
        "builtin.toml",
    ),
    Bad(
        "package-manifest-a-folder",
        _package(lambda root: _replace_with_folder(root / "builtin.toml")),
        2,
        "builtin.toml",
    ),
    Bad("package-template-missing", _package(_template("kernel.cpp.in", None)), 2, "kernel.cpp.in"),
    Bad(
        "package-template-undeclared-variable",
        _package(_template("kernel.cpp.in", "{{ nowhere }}\n")),
        2,
        "nowhere",
    ),
    Bad(
        "package-template-a-link",
        _package(_link("templates/kernel.cpp.in", "/etc/passwd")),
        2,
        "templates/kernel.cpp.in: a symbolic link, which is not followed",
    ),
    Bad(
        "package-manifest-a-link",
        _package(_link("builtin.toml", "/etc/passwd")),
        2,
        "builtin.toml: cannot read the manifest: a symbolic link, which is not followed",
    ),
    Bad(
        "package-manifest-nested-deep",
        _package(_manifest("[op]", "deep = " + "[" * 100_000 + "]" * 100_000 + "\n[op]")),
        2,
        "builtin.toml: not valid TOML: nested too deeply",
    ),
    Bad(
        "package-template-recursive",
        _package(_template("kernel.cpp.in", "{% include 'kernel.cpp.in' %}\n")),
        2,
        "template kernel.cpp.in: includes itself without end",
    ),
    Bad(
        "package-template-huge-output",
        _package(_template("kernel.cpp.in", "{{ 'x' * 4000000000 }}\n")),
        2,
        "template kernel.cpp.in: builds a value larger than",
    ),
    Bad(
        "package-template-huge",
        _package(_template("kernel.cpp.in", "x" * (2 << 20))),
        2,
        "templates/kernel.cpp.in: larger than 1048576 bytes",
    ),
    Bad(
        "package-template-leaves-the-sandbox",
        _package(_template("kernel.cpp.in", "{{ ''.__class__.__mro__[1].__subclasses__() }}\n")),
        2,
        "template kernel.cpp.in: unsafe: ",
    ),
    Bad(
        "package-template-syntax",
        _package(_template("kernel.cpp.in", "{% if %}\n")),
        2,
        "kernel.cpp.in",
    ),
)


def _pyproject_folder(ws: Path) -> list[str]:
    project = ws / "proj"
    write_project(project)
    (project / "pyproject.toml").mkdir()
    return ["build", str(project), "--out", str(ws / "out")]


def _write_and_build(ws: Path, text: str) -> list[str]:
    folder = ws / "nb"
    write_project(folder)
    (folder / "tiny.py").write_text(text, encoding="utf-8")
    return build_command(folder / "tiny.py", ws / "out")


def _two_files(ws: Path) -> list[str]:
    """Two program files defining the same class name with the same sub-build."""
    first = write_project(ws / "two")
    second = first.parent / "again.py"
    second.write_text(PROGRAM, encoding="utf-8")
    return ["build", str(first), str(second), *build_command(first, ws / "out")[2:]]


def _replace_with_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (compile logs aside) with its bytes, and its neighbours."""
    files = {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and ".pypto-build-logs" not in path.parts
    }
    files.update({f"../{p.name}": b"" for p in folder.parent.iterdir() if p.name.startswith(".")})
    return files


@pytest.fixture(scope="module")
def earlier_render(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace template: the tiny program (``good/``) and its render in ``out/``."""
    ws = tmp_path_factory.mktemp("template")
    program = write_project(ws / "good")
    code = run_cli_plain("render", str(program), "--out", str(ws / "out"), "--chip", "a3")
    assert code == 0
    (ws / "o").mkdir()
    return ws


def run_cli_plain(*argv: str) -> int:
    from pypto_build.plugin.cli import main

    return main(list(argv))


@pytest.fixture
def acme_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The acme allgather package copied into ``site/`` and registered (a test breaks it)."""
    install: Iterator[InstallDistribution] = installer(tmp_path / "site", monkeypatch)
    site = next(install)({"allgather": "acme_collectives.allgather"}, "acme-collectives")
    shutil.copytree(ALLGATHER.parent, site / "acme_collectives")
    yield site
    next(install, None)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_hostile_input_gets_one_message_and_leaves_the_output_alone(
    case: Bad,
    earlier_render: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    if case.id.startswith("package-"):
        request.getfixturevalue("acme_site")
    ws = tmp_path
    shutil.copytree(earlier_render, ws, dirs_exist_ok=True)
    (ws / "good" / "k.cpp").write_text(kernel(1), encoding="utf-8")
    before = _snapshot(ws / "out")
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(ws / "cache"))
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    argv = case.setup(ws)
    code, _, err = run_cli(capsys, *argv)
    assert "Traceback" not in err
    assert code == case.code, err
    assert case.message in err, err
    assert _snapshot(ws / "out") == before


def test_the_corpus_is_large_and_distinct() -> None:
    assert len(CASES) >= 60
    assert len({case.id for case in CASES}) == len(CASES)
