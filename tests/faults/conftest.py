"""Fixtures of the fault tests: PostgreSQL behind a proxy the test can take away."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.faults.proxy import Proxy, proxy_to
from tests.support import fresh_postgres_url


@dataclass(frozen=True)
class Proxied:
    """A fresh PostgreSQL schema, reached directly (`direct_url`, for the test's own checks)
    and through `proxy` (`url`, for the processes under test)."""

    proxy: Proxy
    url: str
    direct_url: str


def through(url: str, port: int) -> str:
    """`url` with its host and port replaced by the proxy's."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@127.0.0.1:{port}" if credentials else f"127.0.0.1:{port}"
    return urlunsplit(parts._replace(netloc=netloc))


@pytest.fixture
def proxied(postgres_ready: None) -> Iterator[Proxied]:
    """An empty PostgreSQL store whose processes reach the server through a proxy."""
    for direct_url in fresh_postgres_url():
        parts = urlsplit(direct_url)
        with proxy_to(parts.hostname or "127.0.0.1", parts.port or 5432) as proxy:
            yield Proxied(proxy, through(direct_url, proxy.port), direct_url)
