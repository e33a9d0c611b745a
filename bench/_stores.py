"""Empty stores for benchmarks: a SQLite file and a PostgreSQL schema, removed afterwards."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

POSTGRES_URL = os.environ.get(
    "CRONLEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


@contextmanager
def empty_store(kind: str) -> Iterator[str]:
    """A database URL for an empty store of `kind`."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{folder}/bench.sqlite"
        return
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    try:
        yield f"{POSTGRES_URL}?schema={schema}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
