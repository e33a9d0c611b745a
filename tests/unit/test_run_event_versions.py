"""Run events stored before they named the status (and error) they leave, read back today."""

from __future__ import annotations

from datetime import timedelta

from domain.launch import LaunchFailed
from domain.overlap import Blocker
from domain.runs import Run, run_trace_id
from tests.support import stored_by_an_older_release
from tests.unit.helpers import LEASE, POLICY, T0, new_run


def test_every_older_run_event_reads_with_the_status_it_always_left() -> None:
    run = new_run()
    run.claim("w1", T0, LEASE)
    run.claim("w2", T0 + LEASE, LEASE)  # the first lease ran out: interrupted
    cancelled = new_run()
    cancelled.cancel(T0, "ops")
    cancelled.retry(T0, "ops")
    skipped = new_run()
    skipped.skip_overlap(Blocker("earlier"), T0, "w1")
    events = [*run.collect_events(), *cancelled.collect_events(), *skipped.collect_events()]
    statuses = {
        type(e).__name__: stored_by_an_older_release(e, "status").status
        for e in events
        if type(e).__name__ not in {"Registered", "AttemptInterrupted"}
    }
    assert statuses == {
        "AttemptStarted": "RUNNING",
        "Cancelled": "CANCELLED",
        "Retried": "PENDING",
        "SkippedOverlap": "SKIPPED_OVERLAP",
    }


def test_an_older_interrupted_attempt_reads_with_its_error() -> None:
    run = new_run()
    run.claim("w1", T0, LEASE)
    run.claim("w2", T0 + LEASE + timedelta(seconds=1), LEASE)
    interrupted = next(e for e in run.collect_events() if "Interrupted" in type(e).__name__)
    older = stored_by_an_older_release(interrupted, "code", "message")
    assert (older.code, older.message, older.status) == (
        "INTERRUPTED",
        "the worker's lease ran out",
        "RETRY_WAIT",
    )


def test_an_older_failed_attempt_reads_without_the_values_its_code_names() -> None:
    run = new_run()
    number = run.claim("w1", T0, LEASE)
    run.fail(number, "w1", LaunchFailed("SAVER_INACTIVE", "words"), POLICY, T0)
    failed = next(e for e in run.collect_events() if isinstance(e, Run.AttemptFailed))
    older = stored_by_an_older_release(failed, "reason_params")
    assert (older.code, older.message, older.reason_params) == ("SAVER_INACTIVE", "words", None)


def test_a_snapshot_before_version_6_keeps_its_errors_words_without_their_values() -> None:
    failed = {"code": "INITIATOR_INACTIVE", "message": "initiator ann is inactive"}
    interrupted = {"code": "INTERRUPTED", "message": "the worker's lease ran out"}
    state = {
        "last_error": dict(failed),
        "attempts": [{"error": dict(failed)}, {"error": dict(interrupted)}, {"error": None}],
    }
    Run.upcast_v5_v6(state)
    assert state == {
        "last_error": {**failed, "params": None},
        "attempts": [
            {"error": {**failed, "params": None}},
            {"error": {**interrupted, "params": {}}},
            {"error": None},
        ],
    }


def test_a_run_registered_before_version_4_was_started_under_no_callers_trace() -> None:
    run = new_run()
    registered = next(e for e in run.collect_events() if isinstance(e, Run.Registered))
    older = stored_by_an_older_release(registered, "traceparent")
    assert older.traceparent is None
    assert run_trace_id(older.originator_id, older.traceparent) == older.originator_id.hex


def test_a_snapshot_before_version_7_is_of_a_run_under_no_callers_trace() -> None:
    state: dict[str, object] = {}
    Run.upcast_v6_v7(state)
    assert state == {"traceparent": None}
