"""The varied environment of the determinism checks: a run sees every value of its variant, the
two variants differ in each, and check-render's second render differs from this process."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pypto_build
from pypto_build.chip_build.determinism.environment import (
    VARIANTS,
    Variant,
    current_umask,
    run_varied,
    unlike_this_process,
)

#: Prints what a process sees of everything a variant and its folder set.
OBSERVE = """\
import json, os, tempfile, pypto_build
umask = os.umask(0)
print(json.dumps({
    "cwd": os.getcwd(),
    "temp": tempfile.gettempdir(),
    "cache": os.environ["PYPTO_CACHE_DIR"],
    "hash_seed": os.environ["PYTHONHASHSEED"],
    "hash": hash("pypto"),
    "locale": [os.environ["LC_ALL"], os.environ["LANG"]],
    "time_zone": os.environ["TZ"],
    "umask": umask,
    "jobs": os.environ["PYPTO_JOBS"],
    "package": pypto_build.__file__,
    "extra": os.environ.get("EXTRA"),
}))
"""


def observe(variant: Variant, folder: Path) -> dict[str, object]:
    environ = {**os.environ, "PYTHONPATH": "/nowhere"}
    result = run_varied(
        [sys.executable, "-c", OBSERVE], variant, folder, environ, extra_environment={"EXTRA": "x"}
    )
    assert result.returncode == 0, result.stdout
    observed: dict[str, object] = json.loads(result.stdout)
    return observed


def test_a_run_sees_its_variant_in_its_own_folder(tmp_path: Path) -> None:
    first, second = (observe(variant, tmp_path / variant.name) for variant in VARIANTS)
    for variant, seen in zip(VARIANTS, (first, second), strict=True):
        folder = tmp_path / variant.name
        assert seen["cwd"] == str(folder)
        assert seen["temp"] == str(folder / "tmp")
        assert seen["cache"] == str(folder / "cache")
        assert seen["hash_seed"] == variant.hash_seed
        assert seen["locale"] == [variant.locale, variant.locale]
        assert seen["time_zone"] == variant.time_zone
        assert seen["umask"] == variant.umask
        assert seen["jobs"] == variant.jobs
        # This checkout comes first on the import path, whatever PYTHONPATH held.
        assert seen["package"] == pypto_build.__file__
        assert seen["extra"] == "x"
    assert [key for key in first if first[key] == second[key]] == ["package", "extra"]


def test_the_second_render_differs_from_this_process_in_every_value() -> None:
    first, second = VARIANTS
    assert unlike_this_process({}, 0o002) == Variant(
        "second", "2", "C.UTF-8", "Pacific/Kiritimati", 0o077, "2"
    )
    like_second = {
        "PYTHONHASHSEED": "2",
        "LANG": "C",
        "TZ": "Pacific/Kiritimati",
        "PYPTO_JOBS": "2",
    }
    assert unlike_this_process(like_second, 0o077) == Variant(
        "second", "1", "C.UTF-8", "UTC", 0o022, "1"
    )
    # LC_ALL outranks LANG: a process in C.UTF-8 through LC_ALL gets the second's C.
    assert unlike_this_process({"LC_ALL": "C.UTF-8", "LANG": "C"}, 0o022).locale == "C"
    assert unlike_this_process({"LC_CTYPE": "C.UTF-8"}, 0o022).locale == second.locale
    assert first.locale != second.locale


def test_reading_the_umask_leaves_it_as_it_was() -> None:
    before = os.umask(0o027)
    try:
        assert current_umask() == 0o027
        assert current_umask() == 0o027
    finally:
        os.umask(before)
