"""A `cronledger` process names its PostgreSQL connections after its kind and opens no more
than docs/operations.md#connections-and-timeouts says."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.processes import started
from tests.support import POSTGRES_URL, fresh_postgres_url, needed

MOST_PER_PROCESS = 2 * (2 + 4) + 2  # 2 × (pool size + overflow) + 2, the defaults


@pytest.fixture
def postgres_url(postgres_ready: None) -> Iterator[str]:
    exists = Path("/proc/net/tcp").exists()
    needed(None if exists else "needs /proc to tell a process's connections apart")
    yield from fresh_postgres_url()


def _local_ports(pid: int) -> set[int]:
    """The local TCP ports of the sockets process `pid` holds (IPv4)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[9] in inodes:
            ports.add(int(fields[1].split(":")[1], 16))
    return ports


def _sessions_of(pid: int) -> list[str]:
    """The `application_name` of each server session the process at `pid` holds."""
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT application_name FROM pg_stat_activity WHERE client_port = ANY(%s) "
            "AND client_addr = '127.0.0.1'",
            (sorted(_local_ports(pid)),),
        ).fetchall()
    return [str(row[0]) for row in rows]


def test_the_projections_process_names_its_connections_within_the_documented_total(
    postgres_url: str,
) -> None:
    with started(postgres_url, "projections") as child:
        child.wait_for(lambda: child.logged("loop started"), "the loop started")
        sessions = child.wait_for(
            lambda: len(found := _sessions_of(child.process.pid)) >= 5 and found,
            "its pools and its listener open",
        )
        assert set(sessions) == {"cronledger-projections"}
        assert len(sessions) <= MOST_PER_PROCESS
