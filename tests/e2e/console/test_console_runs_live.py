"""The console's live stream and runs pages through Flask's test client (both stores): who may
open the stream and what it shows, and who may act on a run.

Every stream a test opens ends by itself after `SECONDS`, so a missing frame fails the test
instead of hanging it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flask.testing import FlaskClient

from tests.e2e.console.conftest import CSRF_META, Console
from tests.e2e.helpers import account, other_tenant
from tests.support import DECIDERS, Api
from web.console.shell import LANGUAGE_COOKIE

SECONDS = 5


def signed_in(client: FlaskClient, api: Api) -> FlaskClient:
    """`client` signed in to the console with `api`'s token, through the sign-in form, reading
    it in English."""
    client.set_cookie(LANGUAGE_COOKIE, "en")
    answer = Console(client).sign_in(api.token)
    assert answer.status_code == 302, answer.get_data(as_text=True)
    return client


def csrf_of(page: str) -> str:
    found = CSRF_META.search(page)
    assert found is not None
    return found.group(1)


@contextmanager
def frames(client: FlaskClient) -> Iterator[Iterator[dict[str, str]]]:
    """The frames of a live stream, each as its fields (`id`, `event`, `data`)."""
    response = client.get(f"/console/live?max_seconds={SECONDS}", buffered=False)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "text/event-stream"

    def parsed() -> Iterator[dict[str, str]]:
        pending = ""
        for chunk in response.iter_encoded():
            pending += chunk.decode()
            while "\n\n" in pending:
                text, pending = pending.split("\n\n", 1)
                yield dict(line.partition(": ")[::2] for line in text.split("\n"))

    try:
        yield parsed()
    finally:
        response.close()


def new_definition(api: Api, key: str) -> str:
    created = api.post(
        "/api/definitions",
        {
            "key": key,
            "name": key,
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    )
    assert created.status_code == 201, created.json
    return str(created.json["id"])


def test_the_live_stream_needs_a_session_and_a_readable_kind(
    client: FlaskClient, admin: Api
) -> None:
    refused = client.get("/console/live")
    assert refused.status_code == 401
    assert refused.mimetype == "text/plain"
    integration = account(admin, "hook", ["integration"])  # reads no kind of event
    assert signed_in(client, integration).get("/console/live").status_code == 403
    assert signed_in(client, admin).get("/console/live?after=-1").status_code == 400


def test_the_live_stream_names_the_viewer_s_tenant_s_events_only(
    client: FlaskClient, admin: Api, services: Any
) -> None:
    other = other_tenant(services, client)
    with frames(signed_in(client, admin)) as stream:
        opening = next(stream)
        assert opening[""] == "keep-alive"
        assert opening["id"].isdigit()
        theirs = new_definition(other, "theirs")
        ours = new_definition(admin, "ours")
        seen: list[dict[str, str]] = []
        deadline = time.monotonic() + SECONDS
        for frame in stream:
            seen.append(frame)
            if frame.get("event") == f"definition-{ours}" or time.monotonic() > deadline:
                break
    names = [frame["event"] for frame in seen if "event" in frame]
    assert names == ["definition", f"definition-{ours}"]
    assert all(theirs not in str(frame) for frame in seen)
    assert f'"id":"{ours}"' in seen[-1]["data"]


def test_a_run_offers_what_its_state_allows_to_whoever_may(
    client: FlaskClient, admin: Api, body: dict[str, Any]
) -> None:
    created = admin.post("/api/workflows/schedules", body).json
    run = admin.post(f"/api/workflows/schedules/{created['id']}/run", {"request_id": "r-1"}).json
    page_path = f"/console/runs/{run['id']}"
    auditor = account(admin, "audrey", ["auditor"])
    seen = signed_in(client, auditor).get(page_path).get_data(as_text=True)
    assert 'data-status="PENDING"' in seen
    assert "Cancel the run" not in seen
    assert "/cancel" not in seen
    refused = client.post(f"{page_path}/cancel", data={"csrf_token": csrf_of(seen)})
    assert refused.status_code == 403

    page = signed_in(client, admin).get(page_path).get_data(as_text=True)
    assert "Cancel the run" in page
    assert "/retry" not in page
    token = csrf_of(page)
    too_long = client.post(f"{page_path}/cancel", data={"csrf_token": token, "reason": "x" * 501})
    assert too_long.status_code == 422
    assert 'id="cancel-reason-error"' in too_long.get_data(as_text=True)
    stale = client.post(
        f"{page_path}/cancel", data={"csrf_token": token, "version": run["version"] + 1}
    )
    assert stale.status_code == 409
    assert "Refused" in stale.get_data(as_text=True)
    cancelled = client.post(
        f"{page_path}/cancel",
        data={"csrf_token": token, "version": run["version"], "reason": "not today"},
    )
    assert cancelled.status_code == 302
    assert admin.get(f"/api/workflows/runs/{run['id']}").json["status"] == "CANCELLED"
    after = client.get(cancelled.headers["Location"]).get_data(as_text=True)
    assert "Cancelled: the run will not be attempted again." in after
    assert "/retry" in after
    assert "Cancel the run" not in after


def test_bad_filters_are_shown_next_to_their_field_and_other_tenants_runs_are_not_found(
    client: FlaskClient, admin: Api, services: Any, body: dict[str, Any]
) -> None:
    signed_in(client, admin)
    for query, field in (
        ("planned_from=yesterday", "planned_from"),
        ("status=NOPE", "status"),
        ("schedule_id=not-an-id", "schedule_id"),
        ("schedule_id=8d0f0e5e-4a1c-4a7e-9a63-0d6b3b1c2f10", "schedule_id"),
    ):
        answer = client.get(f"/console/runs/?{query}")
        assert answer.status_code == 200, query
        assert f'id="{field}-error"' in answer.get_data(as_text=True), query
    assert client.get("/console/runs/?page=0").status_code == 200
    assert client.get("/console/runs/rows?page=x").status_code == 200

    other = other_tenant(services, client)
    theirs_definition = new_definition(other, "elsewhere")
    other.post(f"/api/definitions/{theirs_definition}/publish")
    theirs = other.post(
        "/api/workflows/schedules",
        {**body, "definition_id": theirs_definition, "initiator_id": "boss"},
    ).json
    run = other.post(f"/api/workflows/schedules/{theirs['id']}/run", {"request_id": "x"}).json
    assert client.get(f"/console/runs/{run['id']}").status_code == 404
    assert client.get(f"/console/runs/{run['id']}/panel").status_code == 404
    listed = client.get(f"/console/runs/?schedule_id={theirs['id']}").get_data(as_text=True)
    assert run["id"] not in listed
    assert 'id="schedule_id-error"' in listed
