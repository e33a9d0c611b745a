"""The operations audit over HTTP: who changed configuration or started work, newest first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote

import pytest
from flask.testing import FlaskClient

from cronledger.application.services import Services
from domain.directory import account_uuid
from projections.maintenance import replay
from projections.operations import OperationsProjection
from tests.e2e.helpers import account, assert_problem, other_tenant, submit
from tests.support import Api, FakeClock, principal_of

OPERATIONS = "/api/audit/operations"
SCHEDULES = "/api/workflows/schedules"
UTC_PLUS_8 = timezone(timedelta(hours=8))


@dataclass(frozen=True)
class Scenario:
    """An operator's day on one schedule, then an admin's changes; each a second apart."""

    schedule_id: str
    run_id: str
    olga_id: str
    times: dict[str, str]  # what was done -> when it was accepted (UTC, `Z`)


def at(clock: FakeClock) -> str:
    return clock.now.isoformat().replace("+00:00", "Z")


@pytest.fixture
def olga(admin: Api) -> Api:
    return account(admin, "olga", ["operator"])


@pytest.fixture
def scenario(
    admin: Api, olga: Api, body: dict[str, Any], clock: FakeClock, services: Services
) -> Scenario:
    times: dict[str, str] = {}

    def step(name: str, api: Api, method: str, path: str, json: Any = None) -> Any:
        clock.advance(1)
        times[name] = at(clock)
        answer = api.call(method, path, json)
        assert answer.status_code < 300, answer.json
        return answer.json

    schedule = step("create", olga, "POST", SCHEDULES, body)
    path = f"{SCHEDULES}/{schedule['id']}"
    step("enable", olga, "POST", f"{path}/enable")
    step("disable", olga, "POST", f"{path}/disable")
    run = step("run", olga, "POST", f"{path}/run", {"request_id": "by-hand-1"})
    step("cancel", olga, "POST", f"{path}/runs/{run['id']}/cancel")
    step("delete", admin, "DELETE", f"{path}?version={admin.get(path).json['version']}")
    roles = {"name": "olga", "roles": ["operator", "auditor"]}
    version = admin.get("/api/accounts/olga").json["version"]
    step("roles", admin, "PUT", "/api/accounts/olga", {**roles, "version": version})
    olga_id = str(account_uuid(principal_of(services, admin).tenant_id, "olga"))
    return Scenario(schedule["id"], run["id"], olga_id, times)


def listed(api: Api, query: str = "") -> list[dict[str, Any]]:
    answer = api.get(f"{OPERATIONS}{query}")
    assert answer.status_code == 200, answer.json
    return answer.json["items"]  # type: ignore[no-any-return]


def test_each_operation_is_listed_newest_first_with_actor_kind_and_link(
    admin: Api, scenario: Scenario
) -> None:
    s = scenario
    schedule = ("schedule", s.schedule_id, f"{SCHEDULES}/{s.schedule_id}/timeline")
    run = ("run", s.run_id, f"/api/workflows/runs/{s.run_id}/timeline")
    olga = ("account", s.olga_id, f"/api/audit/timeline/{s.olga_id}")
    expected = [
        ("root", "account.roles_changed", *olga, s.times["roles"]),
        ("root", "schedule.deleted", *schedule, s.times["delete"]),
        ("olga", "run.cancelled", *run, s.times["cancel"]),
        ("olga", "run.manual", *run, s.times["run"]),
        ("olga", "schedule.disabled", *schedule, s.times["disable"]),
        ("olga", "schedule.enabled", *schedule, s.times["enable"]),
        ("olga", "schedule.created", *schedule, s.times["create"]),
    ]
    items = listed(admin, "?page_size=7")
    fields = ("actor", "kind", "aggregate_type", "aggregate_id", "timeline", "at")
    assert [tuple(item[name] for name in fields) for item in items] == expected
    assert [i["position"] for i in items] == sorted((i["position"] for i in items), reverse=True)
    assert items[0]["summary"] == "account olga roles operator -> auditor, operator"
    assert items[3]["summary"] == f"manual run of schedule '每日检查' at {s.times['run']}"
    assert items[3]["schedule_id"] == s.schedule_id
    assert items[6]["summary"] == "schedule '每日检查' created, disabled"


def test_every_link_opens_the_aggregates_timeline(admin: Api, scenario: Scenario) -> None:
    for item in listed(admin, "?page_size=7"):
        answer = admin.get(item["timeline"])
        assert answer.status_code == 200, (item, answer.json)
        assert item["position"] in [entry["position"] for entry in answer.json["items"]]


def test_the_setup_before_is_listed_too(admin: Api, scenario: Scenario) -> None:
    page = admin.get(f"{OPERATIONS}?page=2&page_size=7").json
    kinds = [(i["actor"], i["kind"]) for i in page["items"]]
    assert kinds == [
        ("root", "definition.published"),
        ("root", "definition.registered"),
        ("root", "account.registered"),  # the reviewer
        ("root", "account.token_issued"),
        ("root", "account.registered"),
        ("system", "account.token_issued"),
        ("system", "account.registered"),
    ]
    assert page["total"] == 14
    assert (page["page"], page["page_size"]) == (2, 7)


def test_filters_by_actor_kind_and_time(admin: Api, scenario: Scenario) -> None:
    times = scenario.times
    assert [i["kind"] for i in listed(admin, "?actor=olga")] == [
        "run.cancelled",
        "run.manual",
        "schedule.disabled",
        "schedule.enabled",
        "schedule.created",
    ]
    enabled = listed(admin, "?kind=schedule.enabled")
    assert [(i["actor"], i["at"]) for i in enabled] == [("olga", times["enable"])]
    window = f"?from={times['enable']}&to={times['run']}"
    assert [i["kind"] for i in listed(admin, window)] == ["schedule.disabled", "schedule.enabled"]
    both = listed(admin, f"{window}&actor=olga&kind=schedule.disabled")
    assert [i["at"] for i in both] == [times["disable"]]
    assert listed(admin, "?actor=nobody") == []
    shanghai = datetime.fromisoformat(times["enable"]).astimezone(UTC_PLUS_8).isoformat()
    since = listed(admin, f"?actor=olga&from={quote(shanghai)}")  # the same instant
    assert since[-1]["kind"] == "schedule.enabled"


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?kind=schedule.renamed", "kind"),
        ("?from=2026-10-01T09:00:00", "from"),
        ("?from=2026-10-01T10:00:00Z&to=2026-10-01T09:00:00Z", "to"),
        ("?page_size=0", "page_size"),
        ("?actors=olga", "actors"),
    ],
)
def test_bad_filters_are_refused(admin: Api, query: str, field: str) -> None:
    refused = assert_problem(admin.get(f"{OPERATIONS}{query}"), 422, "VALIDATION_FAILED")
    assert list(refused["errors"]) == [field]


def test_it_needs_audit_read(admin: Api, olga: Api) -> None:
    requester = account(admin, "ann", ["requester"])
    for caller in (requester, olga):
        assert_problem(caller.get(OPERATIONS), 403, "FORBIDDEN")
    assert_problem(olga.get("/api/audit/timeline/anything"), 403, "FORBIDDEN")
    auditor = account(admin, "audrey", ["auditor"])
    assert listed(auditor)[0]["kind"] == "account.token_issued"


def test_another_tenants_operations_never_appear(
    admin: Api, scenario: Scenario, services: Services, client: FlaskClient
) -> None:
    boss = other_tenant(services, client)
    theirs = listed(boss)
    assert [(i["actor"], i["kind"]) for i in theirs] == [
        ("system", "account.token_issued"),
        ("system", "account.registered"),
    ]
    assert not {scenario.schedule_id, scenario.run_id} & {i["aggregate_id"] for i in theirs}
    for key in (scenario.schedule_id, scenario.run_id, scenario.olga_id):
        assert_problem(boss.get(f"/api/audit/timeline/{key}"), 404, "NOT_FOUND")
    assert "globex" not in str(listed(admin, "?page_size=200"))


def test_an_extended_deadline_is_an_operation(
    admin: Api, definition: dict[str, Any], clock: FakeClock
) -> None:
    instance = submit(account(admin, "ann", ["requester"]), definition["id"]).json
    clock.advance(60)
    extended = admin.post(
        f"/api/approvals/{instance['id']}/extend-deadline",
        {
            "command_id": "extend-1",
            "new_deadline_at": "2026-10-02T09:00:00Z",
            "reason": "customer on leave",
        },
    )
    assert extended.status_code == 200, extended.json
    (item,) = listed(admin, "?kind=approval.deadline_extended")
    assert (item["actor"], item["aggregate_id"], item["timeline"]) == (
        "root",
        instance["id"],
        f"/api/approvals/{instance['id']}/timeline",
    )
    assert item["summary"] == (
        "review deadline of 'Open account' extended to 2026-10-02T09:00:00Z: customer on leave"
    )
    assert listed(admin, "?actor=ann") == []  # a submission is not an operation


def test_a_paused_and_resumed_clock_are_operations(
    admin: Api, definition: dict[str, Any], clock: FakeClock
) -> None:
    instance = submit(account(admin, "ann", ["requester"]), definition["id"]).json
    path = f"/api/approvals/{instance['id']}"
    admin.post(f"{path}/pause-deadline", {"command_id": "p", "reason": "bank check"})
    clock.advance(600)
    admin.post(f"{path}/resume-deadline", {"command_id": "r", "reason": "bank answered"})
    (paused,) = listed(admin, "?kind=approval.deadline_paused")
    assert paused["summary"] == "review clock of 'Open account' paused: bank check"
    (resumed,) = listed(admin, "?kind=approval.deadline_resumed")
    old = instance["review_deadline_at"]
    assert resumed["summary"].startswith(
        f"review clock of 'Open account' resumed, deadline moved from {old} to "
    )
    assert resumed["summary"].endswith(": bank answered")


def test_a_revise_of_the_material_is_an_operation(
    admin: Api, definition: dict[str, Any], clock: FakeClock
) -> None:
    ann = account(admin, "ann", ["requester"])
    instance = submit(ann, definition["id"]).json
    revised = ann.post(
        f"/api/approvals/{instance['id']}/revise",
        {"command_id": "revise-1", "material_version": 3, "reason": "contract added"},
    )
    assert revised.status_code == 200, revised.json
    (item,) = listed(admin, "?kind=approval.revised")
    assert (item["actor"], item["aggregate_id"]) == ("ann", instance["id"])
    assert item["summary"] == (
        "material of 'Open account' revised to version 3 (0 vote(s) lapsed): contract added"
    )


def test_the_table_is_a_rebuildable_read_model_of_the_log(
    scenario: Scenario, services: Services
) -> None:
    assert replay(services.ledger, [OperationsProjection("UTC")], lambda _: None) == []


def test_an_edit_counts_as_enabling_when_it_moves_the_switch(
    admin: Api, body: dict[str, Any]
) -> None:
    schedule = admin.post(SCHEDULES, body).json
    path = f"{SCHEDULES}/{schedule['id']}"
    renamed = {**body, "name": "Nightly", "version": 1}
    assert admin.put(path, renamed).status_code == 200
    enabled = {**renamed, "title_template": "Nightly {{date}}", "enabled": True}
    assert admin.put(path, {**enabled, "version": 2}).status_code == 200
    assert admin.put(path, {**enabled, "version": 3}).status_code == 200
    switched = listed(admin, "?kind=schedule.enabled")
    assert [i["summary"] for i in switched] == ["schedule 'Nightly' enabled with new settings"]
    edits = listed(admin, "?kind=schedule.updated")
    assert [i["summary"] for i in edits] == [
        "schedule 'Nightly' settings saved unchanged",
        "schedule 'Nightly' settings changed",
    ]
