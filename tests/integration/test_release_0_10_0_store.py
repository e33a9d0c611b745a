"""A store release 0.10.0 wrote with the overlap policy `skip` opens with this release: its
schedules and runs read `skip_while_open` everywhere and skip as before, until the documented
bulk step moves them to the default; its stored bytes never change.

`tests/fixtures/release-0.10.0.sqlite` (see the script beside it): two every-minute schedules
saved with `skip` whose approvals wait ten minutes, one instance of each still waiting, a cycle
registered and not launched, and a schedule snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from uuid import UUID

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker, WorkReport
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from domain.runs import Run
from domain.schedules import Schedule
from tests.release_stores import facts, store_written_by
from tests.support import Api, FakeClock
from web import create_app

NAME = "release-0.10.0"
FACTS = facts(NAME)
SCHEDULES = FACTS["schedules"]
PATH = "/api/workflows/schedules"


@pytest.fixture
def upgraded(store_url: str, tmp_path: Path) -> Iterator[Services]:
    """Today's release on the store release 0.10.0 wrote, at that store's last instant."""
    clock = FakeClock(datetime.fromisoformat(FACTS["clock"]))
    url = store_written_by(NAME, store_url, tmp_path, clock)
    services = open_services(Settings(database_url=url), clock)
    services.projector.catch_up()
    yield services
    services.close()


def api_of(services: Services) -> Api:
    return Api(
        create_app({"SERVICES": services, "TESTING": True}).test_client(), FACTS["tokens"]["acme"]
    )


def stored_bytes(services: Services) -> list[bytes]:
    end = services.ledger.recorder.max_notification_id() or 0
    return [n.state for n in services.ledger.recorder.select_notifications(start=1, limit=end)]


def test_schedules_saved_with_skip_read_as_skip_while_open_everywhere(upgraded: Services) -> None:
    daily = upgraded.ledger.repository.get(UUID(SCHEDULES["daily"]))
    assert isinstance(daily, Schedule)
    assert daily.version > 50  # read from its snapshot, written with `skip` too
    assert daily.settings.overlap_policy == "skip_while_open"
    acme = api_of(upgraded)
    for schedule_id in SCHEDULES.values():
        assert acme.get(f"{PATH}/{schedule_id}").json["overlap_policy"] == "skip_while_open"
    for asked in ("skip", "skip_while_open"):
        listed = acme.get(f"{PATH}?overlap_policy={asked}").json
        assert {s["id"] for s in listed["items"]} == set(SCHEDULES.values())
    assert acme.get(f"{PATH}?overlap_policy=skip_while_launching").json["total"] == 0
    rows = upgraded.store.query("SELECT overlap_policy, settings FROM schedules")
    assert {policy for policy, _ in rows} == {"skip_while_open"}
    assert all('"skip"' not in settings for _, settings in rows)
    timeline = acme.get(f"{PATH}/{SCHEDULES['edited']}/timeline").json["items"]
    assert timeline[1]["data"]["changes"] == [
        {"field": "overlap_policy", "old": "allow", "new": "skip_while_open"}
    ]
    pending = upgraded.ledger.repository.get(UUID(FACTS["runs"]["pending"]))
    assert isinstance(pending, Run)
    assert pending.overlap_policy == "skip_while_open"


def test_they_skip_as_before_until_moved_to_the_default(upgraded: Services) -> None:
    before = stored_bytes(upgraded)
    acme = api_of(upgraded)
    daily = SCHEDULES["daily"]
    old_skip = acme.get(f"{PATH}/{daily}/runs/{FACTS['runs']['skipped']}").json["skip_reason"]
    assert (old_skip["blocking_run_id"], old_skip["blocking_status"]) == (
        FACTS["runs"]["skipped_blocked_by"],
        None,  # release 0.10.0 did not record what blocked it
    )
    assert Worker.of(upgraded).poll().skipped == 2  # each schedule's registered cycle
    upgraded.projector.catch_up()  # as the projections loop does after the worker's writes
    skipped = acme.get(f"{PATH}/{daily}/runs/{FACTS['runs']['pending']}").json["skip_reason"]
    assert (skipped["blocking_status"], skipped["blocking_instance_id"]) == (
        "SUCCEEDED",
        FACTS["waiting_instance_of_daily"],
    )

    moved = acme.post(f"{PATH}/move-overlap-policy", {"schedule_ids": [*SCHEDULES.values()]})
    assert moved.status_code == 200, moved.json
    assert [(m["outcome"], m["overlap_policy"]) for m in moved.json["items"]] == [
        ("MOVED", "skip_while_launching"),
        ("MOVED", "skip_while_launching"),
    ]
    edit = acme.get(f"{PATH}/{daily}/timeline").json["items"][-1]
    assert (edit["type"], edit["data"]["changes"]) == (
        "Schedule.Updated",
        [{"field": "overlap_policy", "old": "skip_while_open", "new": "skip_while_launching"}],
    )
    clock = upgraded.ledger.clock
    assert isinstance(clock, FakeClock)
    clock.advance(60)
    assert Ticker.of(upgraded).scan().registered == 2
    assert Worker.of(upgraded).poll() == WorkReport(claimed=2, succeeded=2)
    upgraded.projector.catch_up()  # as the next poll would
    waiting = acme.get("/api/approvals?state=WAITING_REVIEW").json["items"]
    assert len(waiting) == 4  # the two that waited, and one more of each schedule
    assert stored_bytes(upgraded)[: len(before)] == before


def test_the_upgraded_log_verifies_and_replays(upgraded: Services) -> None:
    assert upgraded.audit.verify(lambda _: None).found is None
    assert upgraded.audit.replay(lambda _: None) == []


def test_its_runs_keep_their_own_trace_and_a_new_run_takes_its_requests(
    upgraded: Services,
) -> None:
    """Run.Registered before version 4 (and every Run snapshot before 7) read with no trace of
    a caller's: each run's trace is its own id, on its record and its launches, as before; a
    run started now under a request's `traceparent` keeps that trace; no stored byte moves."""
    before = stored_bytes(upgraded)
    acme = api_of(upgraded)
    daily = SCHEDULES["daily"]
    for name in ("pending", "launched", "skipped"):
        run = upgraded.ledger.repository.get(UUID(FACTS["runs"][name]))
        assert isinstance(run, Run)
        assert (run.traceparent, run.trace_id) == (None, run.id.hex)
        answer = acme.get(f"{PATH}/{daily}/runs/{run.id}").json
        assert answer["trace_id"] == run.id.hex
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    started = acme.post(
        f"{PATH}/{daily}/run",
        {"request_id": "after-the-upgrade"},
        headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"},
    )
    assert started.status_code == 202, started.json
    assert started.json["trace_id"] == trace_id
    assert stored_bytes(upgraded)[: len(before)] == before


def test_its_definition_reads_with_its_review_window_as_the_deadline_rule(
    upgraded: Services,
) -> None:
    """Definition.Registered before version 5 holds no deadline rule: the review window, in
    plain seconds, is it, in the API and the read model; an instance submitted now gets that
    window, counted as before; a PUT of an older client, which sends only the window,
    changes nothing else; no stored byte moves."""
    before = stored_bytes(upgraded)
    acme = api_of(upgraded)
    window = FACTS["review_window_seconds"]
    (definition,) = acme.get("/api/definitions").json["items"]
    assert definition["deadline_rule"] == {"kind": "seconds", "seconds": window}
    stored = upgraded.ledger.store.query("SELECT deadline_rule FROM definitions")
    assert [json.loads(row[0]) for row in stored] == [{"kind": "seconds", "seconds": window}]
    submitted = acme.post(
        "/api/approvals",
        {
            "command_id": "after-the-upgrade",
            "definition_id": definition["id"],
            "title": "After the upgrade",
            "material_version": 1,
        },
    )
    assert submitted.status_code == 201, submitted.json
    assert submitted.json["deadline_policy"]["source"] == "definition"
    assert submitted.json["deadline_policy"]["review_window_seconds"] == window
    fields = ("name", "external", "review_window_seconds", "allow_self_approval")
    older_client = {k: definition[k] for k in fields}
    put = acme.put(
        f"/api/definitions/{definition['id']}",
        {**older_client, "schedule_presets": [], "version": definition["version"]},
    )
    assert put.status_code == 200, put.json["errors"]
    assert put.json["deadline_rule"] == {"kind": "seconds", "seconds": window}
    assert stored_bytes(upgraded)[: len(before)] == before
