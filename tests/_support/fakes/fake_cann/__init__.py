"""A FAKE CANN toolkit tree, for tests on machines without the real toolkit.

:func:`make_fake_cann` lays out ``<base>/Ascend/ascend-toolkit/<version>/`` as a real toolkit
is laid out — ``bin/ccec``, ``bin/ld.lld``, the aarch64 cross compilers
``tools/hcc/bin/aarch64-target-linux-gnu-{g++,gcc}``, a version file, and a ``latest`` link
beside it — so that both pypto-build and upstream's own compile path (simpler's
``KernelCompiler``, whose ``CCECToolchain`` and ``Aarch64GxxToolchain`` refuse to start
without those four files) run against it. Every tool is a small Python script that appends its
argv (one JSON object per line: tool, argv, cwd) to a record file and writes a deterministic
stand-in for its output. Nothing here compiles anything; it only lets tests see exactly which
commands are run, and how their results are handled.

Behaviour of the fake tools:

* ``--version`` prints one line and exits 0 (not recorded). The aarch64 compilers call
  themselves GCC or, with ``host_compiler="clang"``, clang (upstream passes ``-fno-gnu-unique``
  to GCC only).
* a compiler (ccec, the aarch64 g++) writes ``-o``'s file, a digest of every source it was
  given (arguments ending in ``.cpp`` or ``.c``, as a multi-source orchestration build passes
  them), and with ``-MF`` a make-style dependency file naming its last source, as GCC does
  when one command compiles several; a source containing ``FAKE_CCEC_FAIL`` makes it print
  ``<source>:1:1: error: fake failure requested`` and exit 1 without writing anything.
* ld.lld writes ``-o``'s file from its input.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

FAIL_MARKER = "FAKE_CCEC_FAIL"
#: The aarch64 host (AICPU) cross compilers, relative to the toolkit root.
HOST_COMPILERS = ("aarch64-target-linux-gnu-g++", "aarch64-target-linux-gnu-gcc")

_TOOL = """\
#!{python}
# FAKE {tool} of a pypto-build test: records its argv, writes stand-in outputs.
import hashlib, json, os, sys

TOOL = {tool!r}
RECORD = {record!r}
args = sys.argv[1:]
if args == ["--version"]:
    print({version_line!r})
    sys.exit(0)
with open(RECORD, "a", encoding="utf-8") as stream:
    stream.write(json.dumps({{"tool": TOOL, "argv": args, "cwd": os.getcwd()}}) + "\\n")
output = args[args.index("-o") + 1]
if TOOL == "ld.lld":
    with open(args[-1], "rb") as stream:
        data = b"FAKE-LINKED " + stream.read()
else:
    sources = [arg for arg in args if arg.endswith((".cpp", ".c")) and not arg.startswith("-")]
    digest = hashlib.sha256()
    for source in sources:
        with open(source, "rb") as stream:
            text = stream.read()
        if {marker!r}.encode() in text:
            print(f"{{source}}:1:1: error: fake failure requested")
            sys.exit(1)
        digest.update(hashlib.sha256(text).digest())
    data = f"FAKE-{{TOOL}} {{digest.hexdigest()}}\\n".encode()
    if "-MF" in args:
        target = args[args.index("-MT") + 1]
        with open(args[args.index("-MF") + 1], "w", encoding="utf-8") as stream:
            stream.write(f"{{target}}: {{sources[-1]}}\\n")
with open(output, "wb") as stream:
    stream.write(data)
"""


@dataclass(frozen=True)
class FakeCann:
    """A fake toolkit: its root and the file its tools record their calls in."""

    root: Path
    record: Path

    @property
    def install_dir(self) -> Path:
        """``<base>/Ascend/ascend-toolkit``, holding ``<version>/`` and ``latest``."""
        return self.root.parent

    def calls(self, tool: str | None = None) -> list[list[str]]:
        """The recorded argv lists (of ``tool`` only, if given), in call order."""
        return [entry["argv"] for entry in self.entries(tool)]

    def entries(self, tool: str | None = None) -> list[dict[str, object]]:
        """The recorded calls (of ``tool`` only, if given): ``tool``, ``argv``, ``cwd``."""
        if not self.record.exists():
            return []
        lines = self.record.read_text(encoding="utf-8").splitlines()
        entries = [json.loads(line) for line in lines]
        return [entry for entry in entries if tool is None or entry["tool"] == tool]


def _write_tool(path: Path, tool: str, record: Path, version_line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    script = _TOOL.format(
        python=sys.executable,
        tool=tool,
        record=str(record),
        marker=FAIL_MARKER,
        version_line=version_line,
    )
    path.write_text(script, encoding="utf-8")
    path.chmod(0o755)


def make_fake_cann(
    base: Path,
    version: str = "8.3.RC1",
    *,
    version_file: str = "install_info",
    host_compiler: Literal["gcc", "clang"] | None = "gcc",
) -> FakeCann:
    """Create a FAKE toolkit at ``<base>/Ascend/ascend-toolkit/<version>``.

    ``version_file`` picks where the version is written: ``install_info``
    (``<arch>-linux/ascend_toolkit_install.info``, ``version=``), ``compiler`` (
    ``compiler/version.info``, ``Version=``), ``version_cfg`` (``version.cfg``,
    ``runtime_running_version=[<internal>:<version>]``) or ``none``. ``host_compiler`` is the
    family the aarch64 cross compilers claim to be, or None to leave them out.
    """
    install_dir = base / "Ascend" / "ascend-toolkit"
    root = install_dir / version
    record = base / f"fake-cann-{version}.calls.jsonl"
    for tool in ("ccec", "ld.lld"):
        _write_tool(root / "bin" / tool, tool, record, f"fake {tool} 0.0 (pypto-build test double)")
    if host_compiler is not None:
        family = "gcc (GCC) 7.3.0" if host_compiler == "gcc" else "clang version 15.0.4"
        for tool in HOST_COMPILERS:
            line = f"{tool} fake {family} (pypto-build test double)"
            _write_tool(root / "tools" / "hcc" / "bin" / tool, tool, record, line)
    arch = platform.machine()
    files = {
        "install_info": (f"{arch}-linux/ascend_toolkit_install.info", f"version={version}\n"),
        "compiler": ("compiler/version.info", f"Version={version}\n"),
        "version_cfg": (
            "version.cfg",
            f"# version: 1.0\nruntime_running_version=[7.7.0.1.1:{version}]\n",
        ),
    }
    if version_file != "none":
        name, text = files[version_file]
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    latest = install_dir / "latest"
    if not latest.exists():
        os.symlink(version, latest)
    return FakeCann(root, record)


def make_fake_pto_isa(base: Path) -> Path:
    """A FAKE PTO-ISA checkout: just the ``include/pto`` directories the flags name."""
    root = base / "pto-isa"
    (root / "include" / "pto").mkdir(parents=True, exist_ok=True)
    return root
