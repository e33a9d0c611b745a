"""What the end-to-end tests share besides fixtures: accounts, problems, submissions, HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from cronledger.application.services import Services
from tests.support import DECIDERS, REVIEWER, Api

HTTP_SECONDS = 10  # one request to a served process
CRON_9AM = {"kind": "cron", "expression": "0 9 * * *"}
# A definition with a schedule preset, and a schedule naming every settable field (add its
# `definition_id`).
DEFINITION = {
    "key": "daily",
    "name": "Daily",
    "external": False,
    "review_window_seconds": 3600,
    "reviewers": DECIDERS,
    "schedule_presets": [
        {
            "id": "weekday-morning",
            "title": "Morning check {{date}}",
            "timezone": "Europe/London",
            "form_data": {"shift": "early"},
            "trigger": {"kind": "cron", "expression": "0 8 * * MON-FRI"},
        }
    ],
}
SCHEDULE = {
    "name": "每日检查",
    "trigger": CRON_9AM,
    "timezone": "Asia/Shanghai",
    "initiator_id": "root",
    "title_template": "每日检查 {{date}}",
    "form_data": {"region": "east"},
    "enabled": False,
    "misfire_policy": "catch_up",
    "overlap_policy": "skip_while_open",
}


def account(admin: Api, account_id: str, roles: list[str]) -> Api:
    """A new account with its own token."""
    created = admin.post("/api/accounts", {"id": account_id, "name": account_id, "roles": roles})
    assert created.status_code == 201, created.json
    token = admin.post(f"/api/accounts/{account_id}/tokens")
    assert token.status_code == 201
    return Api(admin.client, token.json["token"])


def with_reviewer(admin: Api) -> None:
    """The tenant's operator `vera`, who may review what others submit and schedule."""
    created = admin.post("/api/accounts", {"id": REVIEWER, "name": "Vera", "roles": ["operator"]})
    assert created.status_code in (201, 422), created.json


def lists_show_what_reads_show(api: Api) -> None:
    """Each item of each list is, byte for byte, what reading it alone answers (a run's
    without its attempts): both are read from the read models' rows."""
    for path in (
        "/api/workflows/schedules",
        "/api/workflows/runs",
        "/api/approvals",
        "/api/accounts",
        "/api/definitions",
    ):
        items = api.get(f"{path}?page_size=200").json["items"]
        assert items, path
        for item in items:
            alone = api.get(f"{path}/{item['id']}").json
            alone.pop("attempts", None)
            assert json.dumps(item, ensure_ascii=False) == json.dumps(alone, ensure_ascii=False)


def other_tenant(services: Services, client: FlaskClient) -> Api:
    return Api(client, services.directory.bootstrap("globex", "boss").token)


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.json
    assert response.mimetype == "application/problem+json"
    body: dict[str, Any] = response.json
    assert (body["status"], body["code"]) == (status, code)
    assert body["request_id"] == response.headers["X-Request-ID"]
    assert body["instance"].startswith("/")
    assert body["title"]
    assert body["detail"]
    assert body["type"]
    return body


def log_end(services: Services) -> int | None:
    return services.ledger.recorder.max_notification_id()


SIGN_CALLBACK = {  # a signing callback matching what `submit` submits
    "command_id": "cb-1",
    "contract_id": "C-9",
    "material_version": 2,
    "occurred_at": "2026-10-01T09:00:00Z",
    "source": "esign",
}


def submit(api: Api, definition_id: str, command_id: str = "submit-1", **extra: Any) -> Any:
    return api.post(
        "/api/approvals",
        {
            "command_id": command_id,
            "definition_id": definition_id,
            "title": "Open account",
            "form_data": {"customer": "Xinghe"},
            "material_version": 2,
            **extra,
        },
    )


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Prometheus text as {(sample name, sorted labels): value}."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def request(url: str, token: str | None = None, body: Any = None) -> tuple[int, Any]:
    """GET (or POST `body` as JSON) to a served process: the status and the JSON answer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=HTTP_SECONDS) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def answers(url: str) -> bool:
    """Whether a served process answers at `url` yet."""
    try:
        request(url)
    except OSError:
        return False
    return True
