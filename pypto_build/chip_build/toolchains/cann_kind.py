"""The ``cann`` toolchain in the registry: selected when a CANN toolkit is found, and what
``doctor`` reports of it — the toolkit (or every place searched for one), PyPTO's runtime and
the PTO-ISA root CANN builds are made for, with the folders derived for each platform and the
revisions, and the warning a build would give when a revision is unknown."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pypto_build.chip_build.chips import get_chip
from pypto_build.chip_build.toolchains.base import Toolchain, ToolchainError
from pypto_build.chip_build.toolchains.cann import CannToolchain
from pypto_build.chip_build.toolchains.discovery import find_toolkit
from pypto_build.chip_build.toolchains.kind import DoctorSection, ToolchainRequest
from pypto_build.chip_build.toolchains.registry import AUTO
from pypto_build.chip_build.toolchains.revisions import Revision, settled_revision
from pypto_build.chip_build.toolchains.runtime_tree import RuntimeTree
from pypto_build.chip_build.toolchains.target import (
    PTO_ISA_REVISION_KEY,
    PTO_ISA_ROOT_KEY,
    RUNTIME_REVISION_KEY,
    RUNTIME_ROOT_KEY,
    TargetSettings,
    resolve_pto_isa_root,
    resolve_target,
    unknown_revisions,
)

#: What to set for a root that is not configured.
_UNCONFIGURED = {
    "runtime": f"set {RUNTIME_ROOT_KEY} or PYPTO_RUNTIME_ROOT; toolchain 'cann' needs it",
    "pto-isa": (
        f"set {PTO_ISA_ROOT_KEY} or PTO_ISA_ROOT, or {RUNTIME_ROOT_KEY} for its managed "
        "clone; toolchain 'cann' needs it"
    ),
}


class CannKind:
    """Selects and reports the ``cann`` toolchain (see the module)."""

    def select(self, request: ToolchainRequest, requested: str) -> Toolchain | None:
        search = find_toolkit(request.environ, home=request.home)
        if search.toolkit is None and requested == AUTO:
            return None
        toolkit = search.require()
        needed_by = f"toolchain '{requested}' (the CANN toolkit at {toolkit.root})"
        resolved = resolve_target(request.target, request.environ, needed_by=needed_by)
        return CannToolchain(toolkit, resolved, request.cann_extra)

    def doctor(self, request: ToolchainRequest, chips: Sequence[str]) -> DoctorSection:
        cann = _toolkit_report(request)
        runtime, runtime_revision = _runtime_report(request.target, chips)
        pto_isa, pto_isa_revision = _pto_isa_report(request)
        warning = None
        if runtime_revision is not None and pto_isa_revision is not None:
            warning = unknown_revisions(runtime_revision, pto_isa_revision)
        document = {
            "binary_context_warning": warning,
            "cann": cann,
            "pto_isa": pto_isa,
            "runtime": runtime,
        }
        return DoctorSection(document, _lines(document), usable=bool(cann["found"]))


KIND = CannKind()


def _toolkit_report(request: ToolchainRequest) -> dict[str, Any]:
    """The CANN toolkit found, or every place searched for one and why it was passed over."""
    search = find_toolkit(request.environ, home=request.home)
    toolkit = search.toolkit
    cann: dict[str, Any] = {
        "found": toolkit is not None,
        "searched": [
            {
                "origin": place.origin,
                "path": None if place.path is None else str(place.path),
                "reason": place.reason,
                "description": place.describe(),
            }
            for place in search.searched
        ],
    }
    if toolkit is not None:
        cann.update(
            root=str(toolkit.root),
            origin=toolkit.origin,
            version=str(toolkit.version),
            version_file=str(toolkit.version_file),
            ccec=str(toolkit.ccec),
            ld_lld=str(toolkit.ld_lld),
            host_cxx=None if toolkit.host_cxx is None else str(toolkit.host_cxx),
        )
    return cann


def _runtime_report(
    target: TargetSettings, chips: Sequence[str]
) -> tuple[dict[str, Any], Revision | None]:
    """The runtime root, the folders and sources derived for the chips' platforms (each with
    whether it exists) and its revision; the revision too, None without a usable root."""
    if target.runtime_root is None:
        return {"root": None, "error": "not configured"}, None
    try:
        tree = RuntimeTree(target.runtime_root, RUNTIME_ROOT_KEY)
    except ToolchainError as exc:
        return {"root": str(target.runtime_root), "error": str(exc)}, None
    revision = settled_revision(target.runtime_revision, RUNTIME_REVISION_KEY, tree.root)
    platforms: dict[str, Any] = {}
    for platform in dict.fromkeys(get_chip(chip).platform for chip in chips):
        try:
            dirs = tree.platform_dirs(platform)
        except ToolchainError as exc:
            platforms[platform] = {"error": str(exc)}
            continue
        platforms[platform] = {
            kind: [{"path": str(path), "exists": path.exists()} for path in paths]
            for kind, paths in (
                ("orchestration_include_dirs", dirs.orchestration_include_dirs),
                ("orchestration_sources", dirs.orchestration_sources),
                ("kernel_include_dirs", dirs.kernel_include_dirs),
            )
        }
    report = {
        "root": str(tree.root),
        "platforms": platforms,
        "revision": dataclasses.asdict(revision),
    }
    return report, revision


def _pto_isa_report(request: ToolchainRequest) -> tuple[dict[str, Any], Revision | None]:
    """The PTO-ISA root, which setting named it and its revision (or why there is none); the
    revision too, None without a usable root."""
    target = request.target
    try:
        pto = resolve_pto_isa_root(target, request.environ)
    except ToolchainError as exc:
        return {"root": None, "error": str(exc)}, None
    if pto is None:
        return {"root": None, "error": "not configured"}, None
    revision = settled_revision(target.pto_isa_revision, PTO_ISA_REVISION_KEY, pto.path)
    report = {"root": str(pto.path), "origin": pto.origin, "revision": dataclasses.asdict(revision)}
    return report, revision


def _lines(report: dict[str, Any]) -> list[str]:
    """``doctor``'s text for ``report``: the toolkit, the runtime, PTO-ISA, the warning."""
    cann = report["cann"]
    if cann["found"]:
        host = cann["host_cxx"] or "missing (orchestrations cannot be built)"
        lines = [
            f"cann: {cann['version']} at {cann['root']} (found via {cann['origin']})",
            f"  ccec: {cann['ccec']}",
            f"  ld.lld: {cann['ld_lld']}",
            f"  aarch64 host compiler: {host}",
        ]
    else:
        lines = ["cann: not found; searched:"]
        lines += [f"  {place['description']}" for place in cann["searched"]]
    lines += _runtime_lines(report["runtime"])
    pto = report["pto_isa"]
    if pto["root"] is None:
        lines.append(_root_problem("pto-isa", pto["error"]))
    else:
        revision = Revision(**pto["revision"]).describe()
        lines.append(f"pto-isa: {pto['root']} ({pto['origin']}), revision {revision}")
    if report["binary_context_warning"] is not None:
        lines.append(f"warning: {report['binary_context_warning']}")
    return lines


def _root_problem(what: str, error: str) -> str:
    """``<what>: <error>``, the error of a root, or for one not configured what to set."""
    if error == "not configured":
        error = f"not configured ({_UNCONFIGURED[what]})"
    return f"{what}: {error}"


def _runtime_lines(runtime: dict[str, Any]) -> list[str]:
    """The runtime root with its revision, then per platform how many derived folders and
    sources there are, and each one missing."""
    if "error" in runtime:
        return [_root_problem("runtime", runtime["error"])]
    revision = Revision(**runtime["revision"]).describe()
    lines = [f"runtime: {runtime['root']}, revision {revision}"]
    for platform, derived in runtime["platforms"].items():
        if "error" in derived:
            lines.append(f"  {platform}: {derived['error']}")
            continue
        counts = ", ".join(
            f"{len(entries)} {kind.replace('_', ' ')}" for kind, entries in derived.items()
        )
        missing = [
            entry["path"]
            for entries in derived.values()
            for entry in entries
            if not entry["exists"]
        ]
        state = f"{len(missing)} missing:" if missing else "all present"
        lines.append(f"  {platform}: {counts}; {state}")
        lines += [f"    {path}" for path in missing]
    return lines
