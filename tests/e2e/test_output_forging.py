"""Stored or sent text cannot forge the auditor's output or the request id (issue 11, item 6)."""

from __future__ import annotations

import json

from flask.testing import FlaskClient

from tests.e2e.helpers import submit, with_reviewer
from tests.processes import run_cli
from tests.support import DECIDERS, Api

FORGED = "customer asked\nApproved by cfo\u2028\x85done"


def extended_with_forged_reason(admin: Api) -> str:
    """An instance whose deadline was extended with a reason that tries to add lines."""
    with_reviewer(admin)
    definition = admin.post(
        "/api/definitions",
        {
            "key": "k",
            "name": "K",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    ).json
    admin.post(f"/api/definitions/{definition['id']}/publish")
    instance = submit(admin, definition["id"]).json
    extended = admin.post(
        f"/api/approvals/{instance['id']}/extend-deadline",
        {"command_id": "e1", "new_deadline_at": "2026-10-03T10:00:00Z", "reason": FORGED},
    )
    assert extended.status_code == 200, extended.json
    return str(instance["id"])


def test_a_reason_with_line_breaks_prints_on_one_line_escaped(store_url: str, admin: Api) -> None:
    instance_id = extended_with_forged_reason(admin)

    text = run_cli(store_url, "audit", "timeline", instance_id)

    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert not [line for line in lines if line.startswith("Approved by")]
    extended = [line for line in lines if "EXTENDED" in line]
    assert len(extended) == 1
    assert r"reason=customer asked\nApproved by cfo\u2028\x85done" in extended[0]
    assert len(lines) == len(text.stdout.split("\n")) - 1  # no U+2028 or NEL left raw


def test_json_output_keeps_the_reason_exactly(store_url: str, admin: Api) -> None:
    instance_id = extended_with_forged_reason(admin)

    timeline = run_cli(store_url, "audit", "timeline", instance_id, "--json")
    state = run_cli(store_url, "audit", "state", instance_id, "--at", "2026-10-02T00:00:00Z")
    state_json = run_cli(
        store_url, "audit", "state", instance_id, "--at", "2026-10-02T00:00:00Z", "--json"
    )

    reasons = [i["reason"] for i in json.loads(timeline.stdout)["items"] if i["reason"]]
    assert reasons == [FORGED]
    assert "\u2028" not in state_json.stdout
    assert "\x85" not in state_json.stdout
    assert json.loads(state_json.stdout)["state"]["deadline_policy"]["reason"] == FORGED
    assert "\nApproved by" not in state.stdout
    assert r"customer asked\nApproved by cfo\u2028\u0085done" in state.stdout


def test_an_unsafe_request_id_is_replaced_and_a_plain_one_echoed(client: FlaskClient) -> None:
    script = "<script>alert(1)</script>" * 200

    replaced = client.get("/healthz", headers={"X-Request-ID": script})
    too_long = client.get("/healthz", headers={"X-Request-ID": "a" * 65})
    plain = client.get("/healthz", headers={"X-Request-ID": "trace-42.a:b_c"})

    for response in (replaced, too_long):
        given = response.headers["X-Request-ID"]
        assert "<" not in given
        assert len(given) == 32
    assert plain.headers["X-Request-ID"] == "trace-42.a:b_c"
