"""Requests that race, over HTTP, against a real `cronledger serve` on both stores.

Each race fires one request many times at once from a thread pool: one result is made, every
other answer is that result replayed or a refusal by the rules (a 409 problem), no answer is a
5xx, and every command sent is in the instance's timeline.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.e2e.helpers import answers
from tests.processes import free_port, started
from tests.support import DECIDERS, wait_until

COPIES = 100  # identical requests per race
WORKERS = 24  # threads firing them
HTTP_SECONDS = 60  # one request, on a busy machine with the pool queued behind it
THREADS = "32"  # the server's API threads
DEADLINE_AHEAD = timedelta(seconds=6)  # of the instance the sweeper races for
# The burst starts this long before that deadline and goes on as long after it: on a loaded
# machine a wave's first command may be recorded most of a second after it was sent.
STRADDLE = timedelta(seconds=1)


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: Any) -> None:
        self.status, self.headers, self.body = status, headers, body


class Http:
    """JSON requests to a served process as one account."""

    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token

    def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> Answer:
        sent = {"Authorization": f"Bearer {self.token}", **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, headers=sent, method=method)
        try:
            with urllib.request.urlopen(req, timeout=HTTP_SECONDS) as response:
                return Answer(response.status, dict(response.headers), _json(response.read()))
        except urllib.error.HTTPError as error:
            return Answer(error.code, dict(error.headers), _json(error.read()))

    def post(self, path: str, body: Any = None, **headers: str) -> Answer:
        return self.call("POST", path, body, headers)

    def get(self, path: str) -> Answer:
        return self.call("GET", path)

    def timeline(self, path: str) -> list[dict[str, Any]]:
        """Every event of the resource at `path` (timelines are not paged)."""
        answer = self.get(f"{path}/timeline")
        assert answer.status == 200, answer.body
        return list(answer.body["items"])


def _json(data: bytes) -> Any:
    return json.loads(data) if data else None


def at_once(count: int, request: Callable[[int], Answer]) -> list[Answer]:
    """`request(i)` for each i, from `WORKERS` threads released together."""
    gate = threading.Barrier(min(count, WORKERS))

    def fire(i: int) -> Answer:
        if i < WORKERS:
            gate.wait(HTTP_SECONDS)
        return request(i)

    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(fire, range(count)))


def no_server_error(answers_: list[Answer]) -> Counter[int]:
    statuses = Counter(a.status for a in answers_)
    assert all(s < 500 for s in statuses), (statuses, [a.body for a in answers_ if a.status >= 500])
    for answer in answers_:
        if answer.status >= 400:
            assert answer.headers["Content-Type"] == "application/problem+json", answer.body
    return statuses


@pytest.fixture
def server(store_url: str, token: str) -> Iterator[str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"CRONLEDGER_REFUSALS_PER_MINUTE": "1000000"}  # the races' 409s spend no budget
    with started(store_url, "serve", "--port", str(port), "--threads", THREADS, **env) as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "answering /healthz")
        yield base


@pytest.fixture
def admin(server: str, token: str) -> Http:
    return Http(server, token)


@pytest.fixture
def definition_id(admin: Http) -> str:
    created = admin.post(
        "/api/definitions",
        {
            "key": "race",
            "name": "Race",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    )
    assert created.status == 201, created.body
    published = admin.post(f"/api/definitions/{created.body['id']}/publish")
    assert published.status == 200, published.body
    return str(created.body["id"])


def account(admin: Http, account_id: str, roles: list[str]) -> Http:
    created = admin.post("/api/accounts", {"id": account_id, "name": account_id, "roles": roles})
    assert created.status == 201, created.body
    issued = admin.post(f"/api/accounts/{account_id}/tokens")
    assert issued.status == 201, issued.body
    return Http(admin.base, issued.body["token"])


def schedule_body(definition_id: str) -> dict[str, Any]:
    return {
        "name": "race",
        "definition_id": definition_id,
        "trigger": {"kind": "cron", "expression": "0 9 * * *"},
        "timezone": "UTC",
        "initiator_id": "admin",
        "title_template": "Race {{date}}",
        "enabled": False,
    }


def submission(definition_id: str, command_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "command_id": command_id,
        "definition_id": definition_id,
        "title": "Race",
        "form_data": {},
        "material_version": 1,
        **extra,
    }


def test_schedules_made_at_once_with_one_key_and_without(admin: Http, definition_id: str) -> None:
    body = schedule_body(definition_id)
    key = {"Idempotency-Key": "race-key-1"}
    answers_ = at_once(COPIES, lambda _: admin.post("/api/workflows/schedules", body, **key))
    assert no_server_error(answers_) == {201: COPIES}
    ids = {a.body["id"] for a in answers_}
    assert len(ids) == 1
    replayed = [a.headers.get("Idempotent-Replayed") == "true" for a in answers_]
    assert replayed.count(False) == 1
    (schedule_id,) = ids
    read = admin.get(f"/api/workflows/schedules/{schedule_id}")
    assert read.status == 200
    created = list(admin.timeline(f"/api/workflows/schedules/{schedule_id}"))
    assert [i["type"] for i in created] == ["Schedule.Created"]
    # Without the header POST is not idempotent (docs/api.md): 100 posts, 100 schedules.
    answers_ = at_once(COPIES, lambda _: admin.post("/api/workflows/schedules", body))
    assert no_server_error(answers_) == {201: COPIES}
    ids = {a.body["id"] for a in answers_}
    assert len(ids) == COPIES
    for schedule_id in ids:
        assert admin.get(f"/api/workflows/schedules/{schedule_id}").status == 200


def test_one_run_for_one_request_id_one_instance_for_one_command_id(
    admin: Http, definition_id: str
) -> None:
    created = admin.post("/api/workflows/schedules", schedule_body(definition_id))
    schedule = f"/api/workflows/schedules/{created.body['id']}"
    answers_ = at_once(COPIES, lambda _: admin.post(f"{schedule}/run", {"request_id": "now-1"}))
    assert no_server_error(answers_) == {202: COPIES}
    runs = {a.body["id"] for a in answers_}
    assert len(runs) == 1
    (run_id,) = runs
    registered = [
        i for i in admin.timeline(f"/api/workflows/runs/{run_id}") if i["type"] == "Run.Registered"
    ]
    assert len(registered) == 1
    # And one approval instance for one command id.
    body = submission(definition_id, "submit-race")
    answers_ = at_once(COPIES, lambda _: admin.post("/api/approvals", body))
    assert no_server_error(answers_) == {201: COPIES}
    ids = {a.body["id"] for a in answers_}
    assert len(ids) == 1
    replayed = [a.headers.get("Idempotent-Replayed") == "true" for a in answers_]
    assert replayed.count(False) == 1
    (instance_id,) = ids
    types = [i["type"] for i in admin.timeline(f"/api/approvals/{instance_id}")]
    assert types.count("ApprovalInstance.Submitted") == 1


DECIDED = {"APPROVED", "WITHDRAWN", "EXPIRED"}


def test_approve_withdraw_extend_and_the_sweeper_at_once(
    admin: Http, definition_id: str, store_url: str
) -> None:
    """Approvals from a reviewer, withdrawals from the applicant and extensions, each with its
    own command id, fired in waves from before the deadline until after it while two sweepers
    (the server's and a fast one) run: commands are recorded on both sides of the deadline, one
    decision is made, every command is answered and recorded, nothing after the decision
    changes it, and a decision by a command is answered so to that command alone."""
    applicant = account(admin, "applicant", ["requester"])
    deadline = datetime.now(UTC).replace(microsecond=0) + DEADLINE_AHEAD
    submitted = applicant.post(
        "/api/approvals",
        submission(definition_id, "s-1", review_deadline_at=deadline.isoformat()),
    )
    assert submitted.status == 201, submitted.body
    instance = f"/api/approvals/{submitted.body['id']}"
    later = (deadline + timedelta(hours=1)).isoformat()

    def command(i: int) -> Answer:
        match i % 3:
            case 0:
                return admin.post(
                    f"{instance}/approve", {"command_id": f"a-{i}", "material_version": 1}
                )
            case 1:
                return applicant.post(f"{instance}/withdraw", {"command_id": f"w-{i}"})
            case _:
                return admin.post(
                    f"{instance}/extend-deadline",
                    {"command_id": f"e-{i}", "new_deadline_at": later, "reason": "race"},
                )

    answers_: list[Answer] = []
    with started(store_url, "sweeper", "--interval", "0.05") as sweeper:
        wait_until(
            lambda: datetime.now(UTC) >= deadline - STRADDLE,
            "the first wave to start before the deadline",
        )
        while len(answers_) < COPIES or datetime.now(UTC) < deadline + STRADDLE:
            sent = len(answers_)
            answers_ += at_once(WORKERS, lambda i, sent=sent: command(sent + i))
        assert sweeper.process.poll() is None, sweeper.stderr
    statuses = no_server_error(answers_)
    assert set(statuses) <= {200, 409, 422}, statuses
    for answer in answers_:
        if answer.status == 409:
            assert answer.body["code"] == "COMMAND_REJECTED", answer.body
    final = wait_until(
        lambda: (read := admin.get(instance).body)["state"] in DECIDED and read,
        "the instance decided (the sweeper expires it at the latest)",
    )
    timeline = admin.timeline(instance)
    commands = [i for i in timeline if i.get("command_id") not in (None, "s-1")]
    accepted_at = [datetime.fromisoformat(i["at"].replace("Z", "+00:00")) for i in commands]
    assert min(accepted_at) < deadline <= max(accepted_at), "the waves did not straddle it"
    recorded = Counter(i.get("command_id") for i in timeline)
    for i in range(len(answers_)):
        sent_id = ("a", "w", "e")[i % 3] + f"-{i}"
        assert recorded[sent_id] >= 1, (sent_id, statuses)
    decided = [i for i in timeline if i["type"].split(".")[-1] in DECIDED_EVENTS]
    assert len(decided) == 1, [i["type"] for i in decided]
    decisions = [a for a in answers_ if a.status == 200 and a.body.get("outcome") in DECIDED]
    if final["state"] == "EXPIRED":  # by the sweeper, or a command at or after the deadline
        assert decisions == [], [a.body for a in decisions]
    else:  # one command won before the deadline (or an extended one), and its answer says so
        assert [a.body["outcome"] for a in decisions] == [final["state"]]


DECIDED_EVENTS = {"Approved", "Withdrawn", "Expired"}
