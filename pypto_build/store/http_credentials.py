"""Where the store's HTTP backend (:mod:`.http`) finds the URL's problems and its credentials.

Credentials never come from ``pyproject.toml``: a bearer token from
``PYPTO_REMOTE_CACHE_TOKEN``, a user name and password from ``PYPTO_REMOTE_CACHE_USERNAME`` and
``PYPTO_REMOTE_CACHE_PASSWORD``, else the remote's host in the netrc file (``$NETRC``, else
``~/.netrc``). A leaf, so that settings can check a URL without loading an HTTP client.
"""

from __future__ import annotations

import base64
import netrc
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

TOKEN_VARIABLE = "PYPTO_REMOTE_CACHE_TOKEN"
USERNAME_VARIABLE = "PYPTO_REMOTE_CACHE_USERNAME"
PASSWORD_VARIABLE = "PYPTO_REMOTE_CACHE_PASSWORD"


def url_problem(url: str) -> str | None:
    """What is wrong with a remote cache URL, or None: an ``http``/``https`` URL with a host,
    and no user name, password, query or fragment (credentials come from the environment or
    netrc, never from a setting)."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # parsing the port validates it
    except ValueError as exc:
        return f"'{url}' is not a URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"'{url}' is not an http:// or https:// URL with a host"
    if parts.username is not None or parts.password is not None:
        return (
            f"'{url}' carries credentials; they are never read from settings: set "
            f"{USERNAME_VARIABLE} and {PASSWORD_VARIABLE}, or {TOKEN_VARIABLE}, in the "
            "environment, or put the host in ~/.netrc"
        )
    if parts.query or parts.fragment:
        return f"'{url}' has a query or fragment; give the base URL of the ac/ and cas/ folders"
    return None


def auth_headers(url: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The ``Authorization`` header for ``url`` from the environment or the netrc file (none
    when neither has credentials). An unreadable netrc file is no credentials, as for curl."""
    token = environ.get(TOKEN_VARIABLE)
    if token:
        return {"Authorization": f"Bearer {token}"}
    user, password = environ.get(USERNAME_VARIABLE), environ.get(PASSWORD_VARIABLE)
    if not user and not password:
        path = environ.get("NETRC") or str(Path(environ.get("HOME") or Path.home()) / ".netrc")
        host = urlsplit(url).hostname or ""
        try:
            found = netrc.netrc(path).authenticators(host)
        except (OSError, netrc.NetrcParseError):
            found = None
        if found is None:
            return {}
        user, _, password = found
    pair = f"{user or ''}:{password or ''}".encode()
    return {"Authorization": f"Basic {base64.b64encode(pair).decode('ascii')}"}
