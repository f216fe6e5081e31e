"""The servers the scaling tests share: one nginx per test worker, each test using a cache
instance of its own under it (a URL prefix), so tests cannot see each other's entries."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _support.loopback import Nginx, nginx


@pytest.fixture(scope="session")
def nginx_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nginx]:
    with nginx(tmp_path_factory.mktemp("nginx")) as server:
        yield server


@pytest.fixture
def instance(request: pytest.FixtureRequest) -> str:
    """A cache instance name (URL prefix) no other test uses."""
    return "".join(char if char.isalnum() else "-" for char in request.node.name)
