"""Where and when the benchmarks ran: the header of bench/results.md and results.json."""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from bench._stores import POSTGRES_URL
from cronledger.persistence.store import redacted_url

ROOT = Path(__file__).parent.parent


def describe_machine() -> dict[str, str]:
    """Date, CPU, Python, SQLite and PostgreSQL versions, the commit, the scale chosen."""
    machine = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{os.cpu_count()} x {cpu_model()}",
        "memory": memory_total(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "postgresql": postgres_version(),
        "commit": commit(),
        "scale": os.environ.get("BENCH_SCALE", "default"),
    }
    if os.environ.get("BENCH_NOTE"):
        machine["note"] = os.environ["BENCH_NOTE"]
    return machine


def cpu_model() -> str:
    return _proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown"


def memory_total() -> str:
    kib = _proc_field("/proc/meminfo", "MemTotal")
    return f"{int(kib.split()[0]) / 2**20:.1f} GiB" if kib else "unknown"


def postgres_version() -> str:
    try:
        with psycopg.connect(POSTGRES_URL, connect_timeout=2) as conn:
            row = conn.execute("SHOW server_version").fetchone()
    except psycopg.Error as error:
        return f"unreachable at {redacted_url(POSTGRES_URL)} ({error})".strip()
    return str(row[0]) if row else "unknown"


def commit() -> str:
    """The commit checked out, and whether the tree had changes beside it."""
    try:
        head = _git("rev-parse", "--short", "HEAD")
        changed = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{head} with uncommitted changes" if changed else head


def _git(*arguments: str) -> str:
    return subprocess.run(
        ["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def _proc_field(path: str, name: str) -> str:
    """A `name: value` line's value from a /proc file; empty where there is none."""
    try:
        with open(path) as lines:
            for line in lines:
                key, _, value = line.partition(":")
                if key.strip() == name:
                    return value.strip()
    except OSError:
        pass
    return ""
