"""Real answers of every resource match the document's schema for their operation and status:
every field they must carry, of the documented type, format and enum, and no field the document
does not name (checked against a copy of it whose answers refuse unknown fields)."""

from __future__ import annotations

import copy
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from openapi_schema_validator import OAS30ReadValidator, oas30_format_checker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4
from werkzeug.test import TestResponse

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.helpers import lists_show_what_reads_show, with_reviewer
from tests.release_stores import WORKING, facts, store_written_by
from tests.sent_shapes import closed
from tests.support import DECIDERS, Api, FakeClock
from web import create_app

DOCUMENT_URI = "urn:cronledger:openapi:closed"
SCHEDULES = "/api/workflows/schedules"
SCHEDULE = f"{SCHEDULES}/{{schedule_id}}"
APPROVAL = "/api/approvals/{instance_id}"
EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}
WINDOWS = {
    "kind": "window-interval",
    "weekdays": [1, 2, 3, 4, 5],
    "windows": [{"start": "09:30", "end": "11:30"}, {"start": "13:00", "end": "15:00"}],
    "interval_minutes": 5,
}


def pointer(*parts: str) -> str:
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


class Answers:
    """Checks answers against the document's schema of their operation and status."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        strict = {**document, "components": closed(copy.deepcopy(document["components"]))}
        strict["paths"] = closed(copy.deepcopy(document["paths"]))
        self.registry: Registry[Any] = Registry().with_resource(
            DOCUMENT_URI, Resource(contents=strict, specification=DRAFT4)
        )

    def check(self, template: str, answer: TestResponse) -> Any:
        """The answer's JSON, once it matched the document; the test fails otherwise."""
        method = answer.request.method.lower()
        responses = self.document["paths"][template][method]["responses"]
        status = str(answer.status_code)
        assert status in responses, f"{method} {template}: {status} is undeclared: {answer.json}"
        where: tuple[str, ...] = ("paths", template, method, "responses", status)
        declared = responses[status]
        if "$ref" in declared:
            where = ("components", "responses", declared["$ref"].rpartition("/")[2])
            declared = self.document["components"]["responses"][where[-1]]
        assert answer.mimetype in declared["content"], f"{method} {template} {status}"
        schema = {"$ref": f"{DOCUMENT_URI}#{pointer(*where, 'content', answer.mimetype, 'schema')}"}
        validator = OAS30ReadValidator(
            schema, registry=self.registry, format_checker=oas30_format_checker
        )
        errors = [
            f"/{'/'.join(map(str, error.absolute_path))}: {error.message}"
            for error in validator.iter_errors(answer.json)
        ]
        assert errors == [], f"{method} {template} {status}"
        return answer.json


@pytest.fixture
def answers(openapi_document: dict[str, Any]) -> Answers:
    return Answers(openapi_document)


def test_every_resource_answers_as_documented(
    admin: Api, services: Services, clock: FakeClock, answers: Answers
) -> None:
    check = answers.check
    ann = people(admin, answers)
    with_reviewer(admin)
    definition = check(
        "/api/definitions",
        admin.post(
            "/api/definitions",
            {
                "key": "daily",
                "name": "Daily",
                "external": False,
                "review_window_seconds": 3600,
                "reviewers": DECIDERS,
                "schedule_presets": [
                    {"id": "morning", "title": "Morning {{date}}", "trigger": EVERY_MINUTE},
                    {"id": "office", "title": "Office hours", "trigger": WINDOWS},
                ],
            },
        ),
    )
    definition_path = f"/api/definitions/{definition['id']}"
    check("/api/definitions/{definition_id}/publish", admin.post(f"{definition_path}/publish"))
    check("/api/definitions/by-key/{key}", admin.get("/api/definitions/by-key/daily"))
    check("/api/definitions", admin.get("/api/definitions"))
    schedule_path = schedules(admin, answers, definition["id"])
    runs(admin, answers, services, clock, schedule_path)
    approvals(admin, ann, answers, definition["id"], schedule_path)
    for template, path in (
        (f"{SCHEDULE}/timeline", f"{schedule_path}/timeline"),
        ("/api/definitions/{definition_id}/timeline", f"{definition_path}/timeline"),
        ("/api/accounts/{account_id}/timeline", "/api/accounts/ann/timeline"),
        ("/api/audit/timeline/{aggregate_id}", f"/api/audit/timeline/{definition['id']}"),
        ("/api/audit/operations", "/api/audit/operations"),
        ("/api/backlog", "/api/backlog"),
        ("/healthz", "/healthz"),
        (SCHEDULE, f"{SCHEDULES}/no-such-schedule"),
    ):
        check(template, admin.get(path))
    invalid = check("/api/accounts", admin.post("/api/accounts", {"name": "", "roles": ["x"]}))
    assert set(invalid["errors"]) == {"name", "roles.0"}
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    lists_show_what_reads_show(admin)


def people(admin: Api, answers: Answers) -> Api:
    """The requester `ann` and the integration `hook`; `ann` answered."""
    check = answers.check
    for account_id, role in (("ann", "requester"), ("hook", "integration")):
        body = {"id": account_id, "name": account_id, "roles": [role]}
        check("/api/accounts", admin.post("/api/accounts", body))
    token = check("/api/accounts/{account_id}/tokens", admin.post("/api/accounts/ann/tokens"))
    check("/api/accounts/{account_id}", admin.get("/api/accounts/ann"))
    check("/api/accounts", admin.get("/api/accounts"))
    return Api(admin.client, token["token"])


def schedules(admin: Api, answers: Answers, definition_id: str) -> str:
    """A cron schedule every minute, enabled; one of window intervals from a preset."""
    check = answers.check
    body = {
        "name": "每分钟",
        "definition_id": definition_id,
        "trigger": EVERY_MINUTE,
        "timezone": "Asia/Shanghai",
        "initiator_id": "ann",
        "form_data": {"region": "east", "nested": {"list": [1, None, "x"]}},
        "enabled": True,
        "misfire_policy": "skip",
    }
    schedule = check(SCHEDULES, admin.post(SCHEDULES, body))
    preset = {"definition_id": definition_id, "preset_id": "office", "initiator_id": "ann"}
    office = check(SCHEDULES, admin.post(SCHEDULES, preset))
    office_path = f"{SCHEDULES}/{office['id']}"
    patched = check(SCHEDULE, admin.patch(office_path, {"trigger": {"interval_minutes": 15}}))
    assert patched["trigger"] == {**WINDOWS, "interval_minutes": 15}
    check(f"{SCHEDULE}/enable", admin.post(f"{office_path}/enable"))
    check(f"{SCHEDULE}/preview", admin.get(f"{office_path}/preview?count=3"))
    preview = {"trigger": WINDOWS, "timezone": "Europe/London", "count": 3}
    check(f"{SCHEDULES}/preview", admin.post(f"{SCHEDULES}/preview", preview))
    check(SCHEDULES, admin.get(SCHEDULES))
    return f"{SCHEDULES}/{schedule['id']}"


def runs(admin: Api, answers: Answers, services: Services, clock: FakeClock, path: str) -> None:
    """A manual run that fails, then succeeds on retry; missed cycles; a cancelled run."""
    check = answers.check
    run = check(f"{SCHEDULE}/run", admin.post(f"{path}/run", {"request_id": "ops-1"}))
    check("/api/accounts/{account_id}/deactivate", admin.post("/api/accounts/ann/deactivate"))
    Worker.of(services).poll()
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    failed = check(f"{SCHEDULE}/runs/{{run_id}}", admin.get(f"{path}/runs/{run['id']}"))
    assert failed["last_error"] is not None
    check("/api/accounts/{account_id}/activate", admin.post("/api/accounts/ann/activate"))
    clock.advance(600.5)
    Ticker.of(services).scan()
    Worker.of(services).poll()
    services.projector.catch_up()
    shown = check(SCHEDULE, admin.get(path))
    assert shown["last_run"] is not None
    assert shown["last_skip"] is not None
    check(f"{SCHEDULE}/runs", admin.get(f"{path}/runs"))
    log = check("/api/workflows/runs", admin.get("/api/workflows/runs?status=SKIPPED_MISSED"))
    assert log["items"][0]["skip_reason"]["code"] == "MISSED"
    detail = check("/api/workflows/runs/{run_id}", admin.get(f"/api/workflows/runs/{run['id']}"))
    assert [attempt["outcome"] for attempt in detail["attempts"]] == ["FAILED", "SUCCEEDED"]
    check(
        "/api/workflows/runs/{run_id}/timeline",
        admin.get(f"/api/workflows/runs/{run['id']}/timeline"),
    )
    waiting = check(f"{SCHEDULE}/run", admin.post(f"{path}/run", {"request_id": "ops-2"}))
    cancel = f"{path}/runs/{waiting['id']}/cancel"
    check(f"{SCHEDULE}/runs/{{run_id}}/cancel", admin.post(cancel, {"reason": "not today"}))


def approvals(admin: Api, ann: Api, answers: Answers, definition_id: str, path: str) -> None:
    """A launched instance, extended; one submitted with a deadline, observed, approved; a
    command that loses."""
    check = answers.check
    launched_id = admin.get(f"{path}/runs?status=SUCCEEDED").json["items"][0]["instance_id"]
    launched = check(APPROVAL, admin.get(f"/api/approvals/{launched_id}"))
    assert launched["origin"]["trigger"] == EVERY_MINUTE
    assert launched["deadline_policy"]["source"] == "definition"
    extend = {
        "command_id": "extend-1",
        "new_deadline_at": "2026-10-02T09:00:00+08:00",
        "reason": "asked for more time",
    }
    extended = check(
        f"{APPROVAL}/extend-deadline",
        admin.post(f"/api/approvals/{launched_id}/extend-deadline", extend),
    )
    assert extended["instance"]["deadline_policy"]["source"] == "extended"
    body = {
        "command_id": "submit-1",
        "definition_id": definition_id,
        "title": "Open account",
        "form_data": {"customer": "Xinghe"},
        "material_version": 2,
        "review_deadline_at": "2026-10-01T18:00:00+08:00",
    }
    submitted = check("/api/approvals", ann.post("/api/approvals", body))
    assert submitted["deadline_policy"]["source"] == "explicit"
    instance = f"/api/approvals/{submitted['id']}"
    hook = Api(admin.client, admin.post("/api/accounts/hook/tokens").json["token"])
    callback = {
        "command_id": "sign-1",
        "contract_id": "C-1",
        "material_version": 2,
        "occurred_at": "2026-10-01T09:05:00Z",
        "source": "esign",
    }
    signed = check(f"{APPROVAL}/callbacks/sign", hook.post(f"{instance}/callbacks/sign", callback))
    assert signed["instance"]["observations"] != []
    approve = {"command_id": "approve-1", "material_version": 2}
    check(f"{APPROVAL}/approve", admin.post(f"{instance}/approve", approve))
    lost = check(f"{APPROVAL}/withdraw", ann.post(f"{instance}/withdraw", {"command_id": "w-1"}))
    assert lost["code"] == "COMMAND_REJECTED"
    check(f"{APPROVAL}/timeline", admin.get(f"{instance}/timeline"))
    check("/api/approvals", admin.get("/api/approvals"))


def test_what_release_0_1_0_recorded_answers_as_documented(
    store_url: str, tmp_path: Path, answers: Answers
) -> None:
    """Launches of 0.1.0 knew no revision, name or saver: null, not left out."""
    old = facts(WORKING)
    clock = FakeClock(datetime.fromisoformat(old["clock"]))
    url = store_written_by(WORKING, store_url, tmp_path, clock)
    services = open_services(Settings(database_url=url), clock)
    try:
        services.projector.catch_up()  # as the projections loop does with a log copied in
        api = Api(create_app({"SERVICES": services, "TESTING": True}).test_client(), "")
        api.token = old["tokens"]["acme"]
        for instance_id in old["instances"].values():
            answers.check(APPROVAL, api.get(f"/api/approvals/{instance_id}"))
        page = answers.check("/api/approvals", api.get("/api/approvals?page_size=200"))
        origins = [item["origin"] for item in page["items"] if item["origin"]]
        assert origins
        assert {origin["definition_revision"] for origin in origins} == {None}
        schedule = f"{SCHEDULES}/{old['schedules']['acme']}"
        answers.check(SCHEDULE, api.get(schedule))
        runs = answers.check(f"{SCHEDULE}/runs", api.get(f"{schedule}/runs?page_size=200"))
        assert runs["items"]
        for run in runs["items"]:
            path = f"/api/workflows/runs/{run['id']}"
            answers.check("/api/workflows/runs/{run_id}", api.get(path))
        answers.check(f"{SCHEDULE}/timeline", api.get(f"{schedule}/timeline"))
        lists_show_what_reads_show(api)
    finally:
        services.close()
