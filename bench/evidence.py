"""Issue 21's evidence: what the Merkle tree costs a projection catch-up, and how fast one
aggregate's evidence bundle comes out of a big log.

1. The log of bench/projections.py, projected from zero by every projection and by every one
   but the tree, alternately (BENCH_EVIDENCE_ROUNDS rounds, the order swapped each round),
   the best run of each kept. Goal: the tree costs less than 20% of the throughput.
2. A log of BENCH_EVIDENCE_EVENTS events (default 1,000,000) inserted in bulk, one aggregate's
   1,000 of them spread along it; the tree projected alone over it, then that aggregate's
   bundle made (signing a checkpoint first) and checked. Goal: a bundle in under a second.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

from bench._results import Figure, Result
from bench._stores import empty_store
from bench.projections import SCHEDULES, T0, _forget_read_models, _log
from cronledger.application.services import Services, open_services
from cronledger.clock import ManualClock
from cronledger.config import Settings
from cronledger.persistence.signing_key import create_signing_key
from domain.evidence import verify_bundle
from projections.catalog import all_projections
from projections.engine import Projector, Sql
from projections.merkle import MerkleTreeProjection

STORES = ("sqlite", "postgresql")
ROUNDS = int(os.environ.get("BENCH_EVIDENCE_ROUNDS", "2"))
LOG_EVENTS = int(os.environ.get("BENCH_EVIDENCE_EVENTS", "1000000"))
AGGREGATE_EVENTS = 1000
VERSIONS_EACH = 10  # events of each other (dummy) aggregate, one after another
TOPIC = "domain.schedules:Schedule.PlanAdvanced"
STATE = (
    b'{"timestamp":{"_type_":"datetime_iso","_data_":"2026-10-01T00:00:00.000001+00:00"},'
    b'"next_fire_at":{"_type_":"datetime_iso","_data_":"2026-10-01T00:02:00+00:00"},'
    b'"cycles":1,"at":{"_type_":"datetime_iso","_data_":"2026-10-01T00:01:00+00:00"},'
    b'"actor":"system:tick"}'
)
COLUMNS = "originator_id, originator_version, topic, state"
Row = tuple[UUID, int, str, bytes]


def run() -> Iterator[Result]:
    for kind in STORES:
        yield _tree_cost(kind)
    for kind in STORES:
        yield _bundle(kind)


def _tree_cost(kind: str) -> Result:
    with empty_store(kind) as url:
        clock = ManualClock(T0)
        services = open_services(Settings(database_url=url, catchup_per_scan=SCHEDULES), clock)
        try:
            events = _log(services, clock)
            runs = _alternated(services)
        finally:
            services.close()
    with_tree, without = (events / min(runs[tree]) for tree in (True, False))
    return Result(
        "evidence",
        f"projection catch-up with and without the Merkle tree, {kind}",
        (
            Figure("with the tree", with_tree, "events/s"),
            Figure("without it", without, "events/s"),
            Figure("throughput ratio", with_tree / without, "x", at_least=0.8),
        ),
        settings={
            "events": events,
            "runs": f"{ROUNDS} of each, alternated, the best kept",
            "seconds with": _listed(runs[True]),
            "seconds without": _listed(runs[False]),
        },
    )


def _alternated(services: Services) -> dict[bool, list[float]]:
    """Seconds of each catch-up from zero, with the tree (True) and without (False)."""
    runs: dict[bool, list[float]] = {True: [], False: []}
    for round_ in range(ROUNDS):
        for tree in (True, False) if round_ % 2 == 0 else (False, True):
            _forget_read_models(services)
            kept = [p for p in all_projections("UTC") if tree or p.name != "merkle_tree"]
            started = time.perf_counter()
            Projector(services.ledger, kept).catch_up()
            runs[tree].append(time.perf_counter() - started)
    return runs


def _bundle(kind: str) -> Result:
    with empty_store(kind) as url, tempfile.TemporaryDirectory() as folder:
        services = open_services(Settings(database_url=url), ManualClock(T0))
        try:
            return _bundle_of(kind, services, Path(folder))
        finally:
            services.close()


def _bundle_of(kind: str, services: Services, folder: Path) -> Result:
    target = uuid.uuid4()
    built = _timed(lambda: _insert(services, _rows(target, LOG_EVENTS)))
    tree = _timed(lambda: Projector(services.ledger, [MerkleTreeProjection()]).catch_up())
    _skip_other_projections(services)
    key = create_signing_key(folder / "k.pem")
    services.evidence.key = key
    first_seconds, _ = _timed_bundle(services, target)
    again_seconds, _ = _timed_bundle(services, target)
    _analyze(services)
    analyzed_seconds, bundle = _timed_bundle(services, target)
    report = verify_bundle(bundle, key.private.public_key())
    if report.problems or len(report.proven) != AGGREGATE_EVENTS:
        raise AssertionError(f"the bundle does not prove its events: {report.problems[:3]}")
    return Result(
        "evidence",
        f"bundle of an aggregate's {AGGREGATE_EVENTS:,} events on a log of {LOG_EVENTS:,}, {kind}",
        (
            Figure("first bundle", first_seconds, "s", at_most=1),
            Figure("bundle again", again_seconds, "s", at_most=1),
            Figure("bundle after ANALYZE", analyzed_seconds, "s", at_most=1),
            Figure("bundle size", len(json.dumps(bundle).encode()), "bytes"),
            Figure("tree projected alone", LOG_EVENTS / tree, "events/s"),
        ),
        settings={
            "log": f"inserted in bulk in {built:.0f} s, {VERSIONS_EACH} events per other aggregate",
            "first bundle": "signs a checkpoint first (none yet)",
            "ANALYZE": "the tables had no statistics before (freshly loaded), as after a rebuild",
            "verified": f"{len(report.proven)} events proven, no problem",
            "tree projection": f"{tree:.0f} s",
        },
    )


def _rows(target: UUID, count: int) -> Iterator[Row]:
    """`count` events in log order: the target's every `count // AGGREGATE_EVENTS`-th, the
    others' those of dummy aggregates, VERSIONS_EACH each."""
    step = count // AGGREGATE_EVENTS
    other = 0
    for position in range(1, count + 1):
        if position % step == 0 and position // step <= AGGREGATE_EVENTS:
            yield target, position // step, TOPIC, STATE
        else:
            yield UUID(int=other // VERSIONS_EACH + 1), other % VERSIONS_EACH + 1, TOPIC, STATE
            other += 1


def _insert(services: Services, rows: Iterable[Row]) -> None:
    """The rows straight into the events table, in one transaction (PostgreSQL: COPY)."""
    store, table = services.store, services.ledger.events_table
    if store.kind == "sqlite":
        with store.connect() as conn:
            conn.execute("BEGIN")
            conn.executemany(
                f"INSERT INTO {table} ({COLUMNS}) VALUES (?, ?, ?, ?)",
                ((i.hex, version, topic, state) for i, version, topic, state in rows),
            )
            conn.execute("COMMIT")
        return
    with store.dedicated() as conn, conn.transaction():
        conn.execute("SET LOCAL statement_timeout = 0")
        with conn.cursor().copy(f"COPY {table} ({COLUMNS}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def _skip_other_projections(services: Services) -> None:
    """The other read models count as caught up: the bundle's own catch-up is the tree's."""
    end = services.ledger.recorder.max_notification_id() or 0
    with services.store.connect() as conn:
        Sql(services.store.kind, conn).execute(
            "UPDATE projection_positions SET position = ? WHERE name <> 'merkle_tree'", (end,)
        )


def _analyze(services: Services) -> None:
    """Statistics for the freshly loaded tables, as autovacuum gathers them on a live store."""
    store = services.store
    tables = f"merkle_leaves, merkle_nodes, {services.ledger.events_table}"
    with store.connect() as conn:
        conn.execute("ANALYZE" if store.kind == "sqlite" else f"ANALYZE {tables}")


def _timed_bundle(services: Services, target: UUID) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    bundle = services.evidence.bundle(target)
    return time.perf_counter() - started, bundle


def _timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _listed(seconds: list[float]) -> str:
    return ", ".join(f"{s:.1f}" for s in seconds)


if __name__ == "__main__":
    for result in run():
        print(result.line)
