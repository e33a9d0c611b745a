"""`cronledger backup PATH`: a consistent copy of a SQLite store, taken while it runs.

SQLite's online backup API (`sqlite3.Connection.backup`) copies the database as one read
transaction sees it: every commit made before the copy started is in it, none half made after.
PostgreSQL stores are backed up with `pg_dump` (docs/operations.md, Backups): `pg_dump_command`
is that command for the configured store.
"""

from __future__ import annotations

import os
import shlex
import sqlite3
import uuid
from contextlib import closing, suppress
from dataclasses import dataclass
from pathlib import Path

from cronledger.persistence.store import Store


class BackupRefused(Exception):
    """The copy cannot be made as asked (no store there, the target exists)."""


@dataclass(frozen=True)
class Copied:
    """What a backup wrote: where, and how big."""

    path: Path
    size: int


def backup_sqlite(store: Store, target: Path) -> Copied:
    """Copy the SQLite store to `target` (a new file, 0600) with the online backup API.

    The copy is written beside `target` under a temporary name and given its own when complete, so
    `target` is either absent or a whole backup. A missing folder is made for the owner alone.
    """
    source = Path(store.sqlite_path)
    if not source.is_file():
        raise BackupRefused(f"no SQLite store at {source}")
    if target.exists():
        raise BackupRefused(f"{target} exists already; give a new path")
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial-{uuid.uuid4().hex[:8]}")
    os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        timeout = store.limits.sqlite_busy_timeout
        with (
            closing(sqlite3.connect(source, timeout=timeout)) as live,
            closing(sqlite3.connect(partial)) as copy,
        ):
            live.backup(copy)  # all pages in one step: one read transaction, one snapshot
            # One self-contained file: no -wal beside it to carry along.
            copy.execute("PRAGMA journal_mode=DELETE").fetchall()
        _put_in_place(partial, target)
    finally:
        for leftover in (partial, *(Path(f"{partial}{s}") for s in ("-journal", "-wal", "-shm"))):
            with suppress(FileNotFoundError):
                leftover.unlink()
    return Copied(path=target, size=target.stat().st_size)


def _put_in_place(partial: Path, target: Path) -> None:
    """Give the finished copy its name, never replacing a file that appeared meanwhile."""
    try:
        os.link(partial, target)
    except FileExistsError:
        raise BackupRefused(f"{target} exists already; give a new path") from None
    except OSError:  # a filesystem without hard links: rename, after one more look
        if target.exists():
            raise BackupRefused(f"{target} exists already; give a new path") from None
        os.rename(partial, target)


def pg_dump_command(store: Store, target: Path) -> str:
    """The `pg_dump` command that backs up this PostgreSQL store to `target` (no password:
    pg_dump reads it from PGPASSWORD or ~/.pgpass)."""
    pg = store.postgres
    words = [
        "pg_dump",
        "--format=custom",
        f"--file={target}",
        f"--host={pg['host']}",
        f"--port={pg['port']}",
        f"--username={pg['user']}",
    ]
    if store.schema != "public":
        words.append(f"--schema={store.schema}")
    words.append(pg["dbname"])
    return shlex.join(words)
