"""Which cycles are due, which were missed, and what the plan becomes (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from domain.planning import plan_due_cycles
from domain.runs import PENDING, SKIPPED_MISSED

EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}
T0 = datetime(2026, 10, 1, 0, 0, tzinfo=UTC)
GRACE = timedelta(seconds=6)


def minutes(*offsets: int) -> list[datetime]:
    return [T0 + timedelta(minutes=m) for m in offsets]


def plan(
    policy: str, now: datetime, limit: int = 20
) -> tuple[list[tuple[datetime, str, int]], datetime | None]:
    result = plan_due_cycles(EVERY_MINUTE, "UTC", policy, T0, now, limit, GRACE)
    return [(c.planned_at, c.status, c.skipped_count) for c in result.cycles], result.next_fire_at


def test_catch_up_registers_oldest_first_and_leaves_the_rest_due() -> None:
    cycles, next_fire = plan("catch_up", T0 + timedelta(hours=3), limit=20)
    assert [c[0] for c in cycles] == minutes(*range(20))
    assert {c[1] for c in cycles} == {PENDING}
    assert next_fire == T0 + timedelta(minutes=20)


def test_catch_up_on_time_moves_the_plan_past_now() -> None:
    cycles, next_fire = plan("catch_up", T0 + timedelta(seconds=1))
    assert [c[0] for c in cycles] == [T0]
    assert next_fire == T0 + timedelta(minutes=1)


def test_skip_summarises_the_missed_and_plans_after_now() -> None:
    now = T0 + timedelta(hours=3, seconds=2)  # 180 missed, the 3h one on time
    cycles, next_fire = plan("skip", now)
    assert cycles == [(T0, SKIPPED_MISSED, 180), (T0 + timedelta(hours=3), PENDING, 0)]
    assert next_fire == T0 + timedelta(hours=3, minutes=1)


def test_skip_records_first_and_last_missed_instant() -> None:
    result = plan_due_cycles(
        EVERY_MINUTE, "UTC", "skip", T0, T0 + timedelta(minutes=10, seconds=30), 20, GRACE
    )
    summary = result.cycles[0]
    assert (summary.planned_at, summary.missed_until, summary.skipped_count) == (
        T0,
        T0 + timedelta(minutes=10),
        11,
    )


def test_once_registers_the_newest_missed_and_summarises_the_rest() -> None:
    cycles, next_fire = plan("once", T0 + timedelta(hours=3, seconds=30))
    assert cycles == [(T0, SKIPPED_MISSED, 180), (T0 + timedelta(hours=3), PENDING, 0)]
    assert next_fire == T0 + timedelta(hours=3, minutes=1)


def test_once_with_a_single_missed_cycle_just_runs_it() -> None:
    cycles, _ = plan("once", T0 + timedelta(seconds=30))
    assert cycles == [(T0, PENDING, 0)]


def test_within_the_grace_nothing_counts_as_missed() -> None:
    cycles, _ = plan("skip", T0 + timedelta(seconds=6))
    assert cycles == [(T0, PENDING, 0)]
    cycles, _ = plan("skip", T0 + timedelta(seconds=7))
    assert cycles == [(T0, SKIPPED_MISSED, 1)]
