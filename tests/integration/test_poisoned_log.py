"""A log that one request poisoned, and events nobody can decode: every tenant is still served.

`tests/fixtures/release-0.1.0.sqlite` was written by release 0.1.0 (see the script beside it):
a requester's approval, a definition preset and a schedule hold form data shaped like an
encoded value, and that release could then decode nothing after them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import StoredEvent
from flask.testing import FlaskClient

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services, open_services
from cronledger.application.stream import EventStream, StreamedEvent
from cronledger.config import Settings
from tests.e2e.helpers import with_reviewer
from tests.release_stores import facts, store_written_by
from tests.support import DECIDERS, Api, FakeClock, FakeTime, principal_of
from web import create_app

FACTS = facts("release-0.1.0")
POISON = {"x": {"_type_": "no_such_type", "_data_": 1}, "kept": "as given"}
KNOWN_TYPE = {"y": {"_type_": "uuid_hex", "_data_": "0123456789abcdef0123456789abcdef"}}
BAD_DATA = {"z": {"_type_": "datetime_iso", "_data_": 5}}


@pytest.fixture
def poisoned(store_url: str, tmp_path: Path, clock: FakeClock) -> Iterator[Services]:
    """Today's release on release 0.1.0's poisoned store: the file itself, or its events."""
    store_url = store_written_by("release-0.1.0", store_url, tmp_path, clock)
    services = open_services(Settings(database_url=store_url), clock)
    services.projector.catch_up()  # as its projections loop does (a log copied in is not yet)
    yield services
    services.close()


def as_user(client: FlaskClient, who: str) -> Api:
    return Api(client, FACTS["tokens"][who])


def test_every_tenant_is_served_after_the_upgrade(poisoned: Services) -> None:
    client = create_app({"SERVICES": poisoned, "TESTING": True}).test_client()
    acme, globex = as_user(client, "acme"), as_user(client, "globex")
    listed = acme.get("/api/approvals?page_size=50")
    assert listed.status_code == 200
    forms = {item["title"]: item["form_data"] for item in listed.json["items"]}
    assert forms["attack"] == POISON
    assert forms["known-type"] == KNOWN_TYPE
    assert forms["bad-data"] == BAD_DATA
    assert [i["title"] for i in globex.get("/api/approvals").json["items"]] == ["g-1"]
    attack = next(i for i in listed.json["items"] if i["title"] == "attack")
    timeline = acme.get(f"/api/approvals/{attack['id']}/timeline")
    assert timeline.status_code == 200
    assert client.get("/metrics").status_code == 200
    assert poisoned.projector.lag() == 0


def test_old_instances_schedules_and_presets_keep_their_form_data(poisoned: Services) -> None:
    client = create_app({"SERVICES": poisoned, "TESTING": True}).test_client()
    acme = as_user(client, "acme")
    ids = FACTS["ids"]
    run = acme.get(f"/api/workflows/schedules/{ids['schedule']}/runs/{ids['run']}").json
    assert run["form_data"] == {"region": "east"}
    launched = acme.get(f"/api/approvals/{ids['launched_instance']}").json
    assert launched["form_data"] == {"region": "east"}
    schedules = acme.get("/api/workflows/schedules").json["items"]
    poisoned = next(s for s in schedules if s["name"] == "poisoned")
    assert acme.get(f"/api/workflows/schedules/{poisoned['id']}").json["form_data"] == POISON
    definitions = acme.get("/api/definitions").json["items"]
    presets = {d["key"]: d["schedule_presets"][0]["form_data"] for d in definitions}
    assert presets == {"daily": {"shift": "early"}, "poisoned": POISON}


def test_commands_repeated_after_the_upgrade_are_recognised(poisoned: Services) -> None:
    """Fingerprints stored by release 0.1.0 still match the same body."""
    client = create_app({"SERVICES": poisoned, "TESTING": True}).test_client()
    again = as_user(client, "rita").post(
        "/api/approvals",
        {
            "command_id": "attack",
            "definition_id": FACTS["ids"]["definition_daily"],
            "title": "attack",
            "form_data": POISON,
            "material_version": 1,
        },
    )
    assert (again.status_code, again.headers.get("Idempotent-Replayed")) == (201, "true")
    assert again.json["form_data"] == POISON


def test_the_loops_run_on_the_upgraded_store(poisoned: Services, clock: FakeClock) -> None:
    clock.advance(86400)
    Ticker.of(poisoned).scan()
    Worker.of(poisoned).poll()
    poisoned.approvals.sweep()
    assert poisoned.projector.lag() == 0


def garbage(aggregate_id: UUID, version: int, topic: str, state: bytes) -> StoredEvent:
    return StoredEvent(aggregate_id, version, topic, state)


def test_an_event_no_reader_can_decode_is_recorded_skipped_and_alerted(
    services: Services, client: FlaskClient, admin: Api
) -> None:
    """Written by hand (a bad restore, a buggy tool): every reader records or skips it."""
    lost = uuid4()
    services.ledger.recorder.insert_events(
        [
            garbage(lost, 1, "domain.approvals:NoSuchEvent", b"{}"),
            garbage(lost, 2, "domain.approvals:ApprovalInstance.Submitted", b"{not json"),
        ]
    )
    created = admin.post("/api/accounts", {"id": "ann", "name": "Ann", "roles": ["requester"]})
    assert created.status_code == 201
    assert admin.get("/api/accounts").status_code == 200
    metrics = client.get("/metrics").get_data(as_text=True)
    assert "cronledger_undecodable_events 2.0" in metrics
    assert services.projector.lag() == 0
    timeline = services.ledger.timeline(lost)
    assert [(e.type, e.data["topic"]) for e in timeline] == [
        ("Undecodable", "domain.approvals:NoSuchEvent"),
        ("Undecodable", "domain.approvals:ApprovalInstance.Submitted"),
    ]
    assert services.ledger.get_many([lost]) == {}
    Ticker.of(services).scan()
    Worker.of(services).poll()
    services.approvals.sweep()
    assert services.audit.replay(lambda _: None) == []


def test_the_event_stream_skips_what_it_cannot_decode(services: Services, admin: Api) -> None:
    services.ledger.recorder.insert_events([garbage(uuid4(), 1, "no.such:Topic", b"{}")])
    admin.post("/api/accounts", {"id": "ann", "name": "Ann", "roles": []})
    fake = FakeTime()
    stream = EventStream(
        services.ledger,
        principal_of(services, admin),
        0,
        sleep=fake.sleep,
        should_stop=lambda: fake.sleeps > 0,
        clock=fake,
    )
    streamed = [i.entry for i in stream if isinstance(i, StreamedEvent)]
    registered = [e.data["account_id"] for e in streamed if e.type == "Account.Registered"]
    assert registered == ["root", "ann"]


def test_an_instance_with_an_unreadable_event_fails_alone(
    services: Services, client: FlaskClient, admin: Api
) -> None:
    with_reviewer(admin)
    definition = admin.post(
        "/api/definitions",
        {
            "key": "d",
            "name": "D",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    ).json
    admin.post(f"/api/definitions/{definition['id']}/publish")
    submitted = [
        admin.post(
            "/api/approvals",
            {
                "command_id": f"c{n}",
                "definition_id": definition["id"],
                "title": f"t{n}",
                "form_data": {},
                "material_version": 1,
            },
        ).json
        for n in (1, 2)
    ]
    broken = UUID(submitted[0]["id"])
    services.ledger.recorder.insert_events(
        [garbage(broken, 2, "domain.approvals:ApprovalInstance.Gone", b"{}")]
    )
    unreadable = admin.get(f"/api/approvals/{broken}/timeline")  # its history, from the log
    assert (unreadable.status_code, unreadable.json["code"]) == (500, "INTERNAL")
    assert "cannot be read from the log" in unreadable.json["detail"]
    assert admin.get(f"/api/approvals/{submitted[1]['id']}/timeline").status_code == 200
    assert admin.get(f"/api/approvals/{broken}").status_code == 200  # its row
    assert admin.get("/api/approvals").status_code == 200
