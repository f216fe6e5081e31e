"""Configuring the remote cache: the settings keys and their environment variables, URLs,
credentials from the environment or netrc (never from pyproject.toml), a server that requires
them, and what ``pypto-build build`` reports about each remote."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from _support.console import run_cli
from _support.loopback import PASSWORD, USER, Nginx
from _support.scaling_samples import (
    SAMPLE_COMPILES,
    SAMPLE_SOURCES,
    copy_sample,
    machine_environment,
)
from _support.trees import make_tree

from pypto_build.chip_build.compile import compile_tree
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.remote import RemoteSpec, RemoteTier
from pypto_build.chip_build.toolchains import SimToolchain
from pypto_build.plugin.project_build import remote_specs
from pypto_build.plugin.settings import SettingsError, apply_environment, settings_from_table
from pypto_build.store.http_credentials import auth_headers, url_problem

PROGRAMS = {"programs": ["p.py"], "package": "pkg/_kernels"}


def _basic(user: str, password: str) -> dict[str, str]:
    pair = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {pair}"}


def test_settings_and_environment() -> None:
    settings = settings_from_table(
        {
            **PROGRAMS,
            "remote-cache-url": "http://cache.example:8080/pypto/main",
            "remote-cache-timeout": 3,
        }
    )
    main = "http://cache.example:8080/pypto/main"
    assert remote_specs(settings) == [RemoteSpec(main, False, 3.0)]
    environ = {
        "PYPTO_REMOTE_CACHE_URL": "https://cache.example/pypto/feature-x",
        "PYPTO_REMOTE_CACHE_FALLBACK_URL": "https://cache.example/pypto/main",
        "PYPTO_REMOTE_CACHE_READ_ONLY": "yes",
        "PYPTO_REMOTE_CACHE_TIMEOUT": "0.5",
    }
    assert remote_specs(apply_environment(settings, environ)) == [
        RemoteSpec("https://cache.example/pypto/feature-x", True, 0.5),
        RemoteSpec("https://cache.example/pypto/main", True, 0.5),
    ]
    off = apply_environment(settings, {"PYPTO_REMOTE_CACHE_URL": ""})
    assert remote_specs(off) == []
    assert remote_specs(settings_from_table(PROGRAMS)) == []


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"remote-cache-url": "ftp://cache/x"},
            "tool.pypto.remote-cache-url: 'ftp://cache/x' is not an http:// or https:// URL",
        ),
        (
            {"remote-cache-url": "http://ci:hunter2@cache/x"},
            "tool.pypto.remote-cache-url: 'http://ci:hunter2@cache/x' carries credentials; they "
            "are never read from settings",
        ),
        (
            {"remote-cache-fallback-url": "http://cache/x?branch=main"},
            "has a query or fragment",
        ),
        ({"remote-cache-timeout": 0}, "tool.pypto.remote-cache-timeout: 0.0 is not allowed"),
        ({"remote-cache-timeout": "5s"}, "tool.pypto.remote-cache-timeout: expected a number"),
        ({"remote-cache-read-only": "yes"}, "remote-cache-read-only: expected true or false"),
        (
            {"remote-cache-password": "hunter2"},
            "tool.pypto.remote-cache-password: credentials are never read from pyproject.toml; "
            "set PYPTO_REMOTE_CACHE_USERNAME and PYPTO_REMOTE_CACHE_PASSWORD, or "
            "PYPTO_REMOTE_CACHE_TOKEN",
        ),
        ({"remote-cache-token": "t"}, "credentials are never read from pyproject.toml"),
    ],
)
def test_invalid_settings(table: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError, match=None) as error:
        settings_from_table({**PROGRAMS, **table})
    assert message in str(error.value)


def test_environment_errors_name_the_variable() -> None:
    settings = settings_from_table(PROGRAMS)
    with pytest.raises(SettingsError, match="PYPTO_REMOTE_CACHE_READ_ONLY: 'maybe' is not a"):
        apply_environment(settings, {"PYPTO_REMOTE_CACHE_READ_ONLY": "maybe"})
    with pytest.raises(SettingsError, match="PYPTO_REMOTE_CACHE_TIMEOUT: 'soon' is not a number"):
        apply_environment(settings, {"PYPTO_REMOTE_CACHE_TIMEOUT": "soon"})


def test_url_problem_accepts_plain_urls() -> None:
    assert url_problem("http://127.0.0.1:8080") is None
    assert url_problem("https://cache.example/a/b/") is None
    assert "not a URL" in (url_problem("http://host:port/") or "")


def test_credentials_from_environment_then_netrc(tmp_path: Path) -> None:
    url = "https://cache.example/pypto"
    netrc = tmp_path / "netrc"
    netrc.write_text("machine cache.example login ci password from-netrc\n", encoding="utf-8")
    netrc.chmod(0o600)
    assert auth_headers(url, {"PYPTO_REMOTE_CACHE_TOKEN": "abc", "NETRC": str(netrc)}) == {
        "Authorization": "Bearer abc"
    }
    both = {"PYPTO_REMOTE_CACHE_USERNAME": "u", "PYPTO_REMOTE_CACHE_PASSWORD": "p"}
    assert auth_headers(url, {**both, "NETRC": str(netrc)}) == _basic("u", "p")
    assert auth_headers(url, {"NETRC": str(netrc)}) == _basic("ci", "from-netrc")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".netrc").write_bytes(netrc.read_bytes())
    (tmp_path / "home" / ".netrc").chmod(0o600)
    assert auth_headers(url, {"HOME": str(tmp_path / "home")}) == _basic("ci", "from-netrc")
    assert auth_headers("https://elsewhere.example/", {"NETRC": str(netrc)}) == {}
    assert auth_headers(url, {"NETRC": str(tmp_path / "missing")}) == {}


@pytest.mark.parametrize("with_credentials", [True, False])
def test_a_server_requiring_credentials(
    with_credentials: bool,
    sim: SimToolchain,
    nginx_server: Nginx,
    instance: str,
    tmp_path: Path,
) -> None:
    url = nginx_server.url(nginx_server.private, instance)
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login {USER} password {PASSWORD}\n", encoding="utf-8")
    netrc.chmod(0o600)
    environ = {"NETRC": str(netrc)} if with_credentials else {"HOME": str(tmp_path)}
    warnings: list[str] = []
    remote = RemoteTier([RemoteSpec(url, timeout=2.0)], warn=warnings.append, environ=environ)
    cache = CompileCache(tmp_path / "cache", remote=remote)
    report = compile_tree(make_tree(tmp_path / "out"), "a3", sim, cache=cache, progress=None)
    cache.flush()
    assert report.compiled == 4
    if with_credentials:
        assert warnings == []
        assert [summary.uploaded for summary in remote.summaries()] == [4]
    else:
        [warning] = warnings
        assert "answered HTTP 401: credentials missing or refused" in warning


def test_the_build_command_reports_each_remote(
    nginx_server: Nginx,
    instance: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = nginx_server.url(nginx_server.webdav, instance)
    fallback = nginx_server.url(nginx_server.webdav, f"{instance}-main")
    outputs = []
    for machine in ("one", "two"):
        environ = machine_environment(
            tmp_path / machine,
            PYPTO_REMOTE_CACHE_URL=url,
            PYPTO_REMOTE_CACHE_FALLBACK_URL=fallback,
        )
        monkeypatch.setattr("os.environ", environ)
        project = copy_sample(tmp_path / machine / "project")
        out = str(tmp_path / machine / "out")
        code, stdout, stderr = run_cli(capsys, "build", str(project), "--out", out)
        assert (code, stderr) == (0, "")
        outputs.append(stdout.splitlines()[2:])
    cache = tmp_path / "one" / "cache"
    assert outputs[0] == [
        f"cache: {SAMPLE_SOURCES - SAMPLE_COMPILES} hits / {SAMPLE_COMPILES} misses ({cache})",
        f"remote cache: {SAMPLE_COMPILES} uploaded, 0 damaged ({url})",
        f"remote cache: read only, 0 damaged ({fallback})",
    ]
    cache = tmp_path / "two" / "cache"
    assert outputs[1] == [
        f"cache: {SAMPLE_SOURCES} hits ({SAMPLE_COMPILES} from the remote) / 0 misses ({cache})",
        f"remote cache: 0 uploaded, 0 damaged ({url})",
        f"remote cache: read only, 0 damaged ({fallback})",
    ]
