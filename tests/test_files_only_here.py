"""One module reads, hashes, walks and atomically writes the files users, manifests, cache
entries and templates name (:mod:`pypto_build.files`): regular files only, links not followed
where one could lead elsewhere, bounded reads. This test finds every call anywhere else in the
package that opens, reads, hashes, walks or replaces a file itself, and fails on any that is
not listed here with the reason it is not such a file."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pypto_build"

#: Method names that read, write or walk a path (``Path.read_bytes``, ``Path.open``, ...).
_METHODS = frozenset({"read_bytes", "read_text", "write_bytes", "write_text", "rglob"})
#: ``module.function`` calls that open, replace, walk or hash files.
_FUNCTIONS = frozenset({"os.open", "os.replace", "os.walk", "hashlib.file_digest"})

#: (module, call) -> why the file is not one a user, manifest, cache entry or template names.
ALLOWED = {
    ("plugin/cli.py", "os.open"): "/dev/null, for a reader that went away",
    (
        "plugin/settings/regenerate.py",
        "read_text",
    ): "the docs page the settings generator rewrites (dev tool)",
    (
        "plugin/settings/regenerate.py",
        "write_text",
    ): "the docs page the settings generator rewrites (dev tool)",
    (
        "build_records/records.py",
        "os.open",
    ): "a new file created O_EXCL|O_NOFOLLOW in a staging tree",
    ("build_records/signatures.py", "os.walk"): "folders of a package, listed for their names only",
    ("build_records/record.py", "os.walk"): "the folders of a tree, for their modes only",
    ("chip_build/subbuild.py", "os.open"): "a new output file created O_EXCL in a staging tree",
    ("chip_build/subbuild.py", "os.walk"): "the folders of a staging tree, for their modes",
    ("chip_build/publish.py", "os.open"): "the output folder's lock file, O_NOFOLLOW",
    ("chip_build/build.py", "os.replace"): "the staged log folder renamed into place",
    ("store/disk.py", "os.open"): "its staging folders, O_DIRECTORY|O_NOFOLLOW, to lock",
    ("store/disk.py", "os.replace"): "a staged value, or a verified hard link, renamed into place",
    (
        "chip_build/compile_cache/entry_publisher.py",
        "write_bytes",
    ): "an entry's files in its private staging folder",
    (
        "chip_build/compile_cache/cache.py",
        "write_bytes",
    ): "the artifact's private copy in a staging folder",
    ("chip_build/compile.py", "rglob"): "a fresh render's tree, every file listed in its manifest",
    ("builtins/registry.py", "rglob"): "our own package folder's manifests",
    ("mc2/kernels.py", "write_text"): "a program file it writes into its own temporary folder",
    ("chip_build/jobs.py", "read_text"): "/proc/meminfo",
    ("chip_build/sim/isolation.py", "read_text"): "/proc/<worker>/stat",
    ("chip_build/sim/worker.py", "open"): "/proc/self/task/<thread>/children",
    # The simulator's own modules are another engineer's, changed concurrently: its runtime
    # library, its sources and the tree it runs are read there (left for a later change).
    ("chip_build/sim/runtime.py", "read_bytes"): "the simulator runtime's compiled library",
    ("chip_build/sim/library.py", "read_bytes"): "the simulator runtime's own sources",
    ("chip_build/sim/program.py", "read_text"): "a build tree verified against its manifest",
    ("chip_build/sim/host_env.py", "read_text"): "a build tree verified against its manifest",
}


def _calls(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.append("open")
        elif isinstance(func, ast.Attribute):
            if func.attr in _METHODS:
                found.append(func.attr)
            elif isinstance(func.value, ast.Name) and f"{func.value.id}.{func.attr}" in _FUNCTIONS:
                found.append(f"{func.value.id}.{func.attr}")
    return found


def test_no_other_module_opens_hashes_walks_or_replaces_files_itself() -> None:
    unlisted = []
    seen = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module == "files.py":
            continue
        for call in _calls(ast.parse(path.read_text(encoding="utf-8"))):
            seen.add((module, call))
            if (module, call) not in ALLOWED:
                unlisted.append(f"{module}: {call}")
    assert unlisted == []
    assert set(ALLOWED) <= seen, f"listed but gone: {set(ALLOWED) - seen}"
