"""Tenant B with valid ids of tenant A's resources finds and changes nothing (issue 20, item 8).

Every operation of the OpenAPI document and every console route of the Flask url_map is called
as tenant B's admin, each path parameter filled with the id of one of tenant A's resources
(schedule, run, approval, definition, account, webhook, delivery, callback source, token) and
each body naming them: reads answer 404 or 403 and writes never succeed, no answer carries
A's ids or names, and A's log is unchanged after every call. The event stream is left to
tests/e2e/test_event_stream.py (each tenant sees its own events only): it never ends by itself.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.helpers import account, other_tenant, submit
from tests.support import DECIDERS, Api, FakeClock

SECRET_KEY = "isolation-test-key-of-at-least-32-characters"
MARK = "Alphacorp"  # in the names and titles of tenant A's resources
CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)">')
STREAMS = {"/api/events/stream", "/console/live"}  # never end: see the module's docstring
OPEN = {"/api/openapi.json", "/api/docs", "/healthz", "/livez", "/readyz", "/metrics"}


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    settings = Settings(
        database_url=store_url,
        secret_key=SECRET_KEY,
        webhook_allow_private=True,
        webhook_allow_http=True,
        refusals_per_minute=10_000,  # tenant B is refused on purpose, hundreds of times
    )
    opened = open_services(settings, clock)
    yield opened
    opened.close()


class Tenant:
    """Tenant A (`acme`) with one of each kind of resource; `ids` by path parameter name."""

    def __init__(self, admin: Api) -> None:
        self.admin = admin
        ann = account(admin, "ann", ["requester"])
        issued = admin.post("/api/accounts/ann/tokens")
        assert issued.status_code == 201, issued.json
        definition = admin.post(
            "/api/definitions",
            {
                "key": "alpha-key",
                "name": f"{MARK} review",
                "external": False,
                "review_window_seconds": 600,
                "reviewers": DECIDERS,
            },
        ).json
        admin.post(f"/api/definitions/{definition['id']}/publish", {})
        schedule = admin.post(
            "/api/workflows/schedules",
            {
                "name": f"{MARK} nightly",
                "definition_id": definition["id"],
                "trigger": {"kind": "cron", "expression": "0 3 * * *"},
                "initiator_id": "ann",
                "enabled": True,
            },
        ).json
        assert "id" in schedule, schedule
        run = admin.post(f"/api/workflows/schedules/{schedule['id']}/run", {"request_id": "r-1"})
        assert run.status_code in (201, 202), run.json
        instance = submit(ann, definition["id"], title=f"{MARK} account")
        assert instance.status_code == 201, instance.json
        webhook = admin.post(
            "/api/webhooks",
            {"url": "http://127.0.0.1:9/hook", "event_types": ["ping"], "description": MARK},
        ).json
        delivery = admin.post(f"/api/webhooks/{webhook['id']}/ping")
        assert delivery.status_code == 202, delivery.json
        source = admin.post("/api/callback-sources", {"name": "alpha-esign", "description": MARK})
        assert source.status_code == 201, source.json
        group = admin.post("/api/groups", {"key": "alpha-group", "name": MARK, "members": ["ann"]})
        assert group.status_code == 201, group.json
        calendar = admin.post(
            "/api/calendars", {"key": "alpha-calendar", "name": MARK, "timezone": "UTC"}
        )
        assert calendar.status_code == 201, calendar.json
        decided = submit(ann, definition["id"], title=f"{MARK} decided", command_id="decided")
        approved = admin.post(
            f"/api/approvals/{decided.json['id']}/approve",
            {"command_id": "a-1", "material_version": 2},
        )
        assert approved.status_code == 200, approved.json
        (notice,) = ann.get("/api/notifications").json["items"]  # ann's: her instance decided
        self.ids: dict[str, str] = {
            "account_id": "ann",
            "token_id": str(issued.json["token_id"]),
            "definition_id": str(definition["id"]),
            "key": "alpha-key",
            "schedule_id": str(schedule["id"]),
            "run_id": str(run.json["id"]),
            "instance_id": str(instance.json["id"]),
            "webhook_id": str(webhook["id"]),
            "delivery_id": str(delivery.json["id"]),
            "source_id": str(source.json["id"]),
            "group_id": str(group.json["id"]),
            "notification_id": str(notice["id"]),
            "calendar_id": str(calendar.json["id"]),
            "revision": "1",
        }
        self.aggregates = [
            self.ids[name]
            for name in (
                "definition_id",
                "schedule_id",
                "run_id",
                "instance_id",
                "webhook_id",
                "source_id",
                "group_id",
                "calendar_id",
            )
        ]

    def secrets(self) -> list[str]:
        """What must never show in tenant B's answers: A's generated ids and its mark."""
        kept = ("account_id", "key", "revision")  # words B may use for its own resources
        return [MARK, *(value for name, value in self.ids.items() if name not in kept)]

    def state(self, services: Services) -> list[int]:
        """How many events each of A's aggregates (and account) has: A's log, in brief."""
        tenant = services.directory.tenants()["acme"]
        keys = [*self.aggregates, "ann", "root"]
        return [len(services.audit.timeline(key, "acme")) for key in keys] + [
            len(services.directory.tokens(tenant, "ann")),
        ]


def body_naming(ids: dict[str, str]) -> dict[str, Any]:
    """A request body that refers to A's resources wherever a field may name one."""
    return {
        "definition_id": ids["definition_id"],
        "schedule_id": ids["schedule_id"],
        "instance_id": ids["instance_id"],
        "initiator_id": "ann",
        "command_id": "isolation-1",
        "request_id": "isolation-1",
        "title": "B",
        "name": "B",
        "reason": "B",
        "material_version": 1,
        "trigger": {"kind": "cron", "expression": "0 3 * * *"},
    }


def filled(path: str, ids: dict[str, str]) -> str:
    """`path` with each `{name}` or `<name>` parameter replaced by A's id of that name."""

    def one(found: re.Match[str]) -> str:
        name = found.group(1).rpartition(":")[2]
        if name == "filename":
            return "console.css"
        if name == "kind":
            return "schedule"
        if name == "preset_id":
            return "daily"
        if name == "action":
            return "approve"
        if name == "unknown":
            return "nowhere"
        return ids["schedule_id" if name == "aggregate_id" else name]

    return re.sub(r"[{<]([^}>]+)[}>]", one, path)


def leaks(answer: TestResponse, secrets: list[str], sent: str) -> list[str]:
    """Which of A's `secrets` the answer shows, beyond what the request `sent` itself."""
    text = answer.get_data(as_text=True)
    return [secret for secret in secrets if secret in text and secret not in sent]


def unknown_ids() -> dict[str, str]:
    """Ids of the same forms that name nothing in any tenant."""
    return {
        "account_id": "nobody",
        "key": "no-such-key",
        "revision": "1",
        **{
            name: str(uuid.uuid4())
            for name in (
                "token_id",
                "definition_id",
                "schedule_id",
                "run_id",
                "instance_id",
                "webhook_id",
                "delivery_id",
                "source_id",
                "group_id",
                "notification_id",
                "calendar_id",
            )
        },
    }


@pytest.fixture
def world(admin: Api) -> Tenant:
    return Tenant(admin)


def test_no_api_operation_finds_or_changes_another_tenants_resources(
    services: Services, client: FlaskClient, world: Tenant
) -> None:
    globex = other_tenant(services, client)
    document = client.get("/api/openapi.json").json
    before = world.state(services)
    found: list[str] = []
    called = 0
    for template, operations in document["paths"].items():
        if template in STREAMS | OPEN:
            continue
        for method in ("get", "post", "put", "patch", "delete"):
            if method not in operations:
                continue
            bodies: list[Any] = [None]
            if method not in ("get", "delete"):
                bodies = [body_naming(world.ids), {}]
            for body in bodies:
                path = filled(template, world.ids)
                answer = globex.call(method.upper(), path, body)
                called += 1
                name = f"{method.upper()} {template} {body and 'naming A'}: {answer.status_code}"
                if "{" in template:
                    unknown = unknown_ids()
                    other_body = body and body_naming(unknown)
                    nowhere = globex.call(method.upper(), filled(template, unknown), other_body)
                    if answer.status_code != nowhere.status_code:
                        found.append(f"{name}, but {nowhere.status_code} for unknown ids")
                    if answer.status_code < 400 or (
                        method == "get" and answer.status_code not in (403, 404)
                    ):
                        found.append(f"{name} (expected 404 or 403)")
                assert answer.status_code < 500, name
                if leaked := leaks(answer, world.secrets(), f"{path} {body}"):
                    found.append(f"{name} shows {leaked}")
                if world.state(services) != before:
                    found.append(f"{name} changed tenant A's log")
                    before = world.state(services)
    assert called > 60
    assert found == [], "\n".join(found)


class Console:
    """Flask's test client signed in to the console, posting forms with their CSRF token."""

    def __init__(self, client: FlaskClient, token: str) -> None:
        self.client = client
        answer = self.post("/console/sign-in", {"token": token})
        assert answer.status_code == 302, answer.get_data(as_text=True)

    def csrf(self) -> str:
        page = self.client.get("/console/sign-in").get_data(as_text=True)
        found = CSRF_META.search(page)
        assert found
        return found.group(1)

    def post(self, path: str, data: dict[str, Any]) -> TestResponse:
        return self.client.post(path, data={"csrf_token": self.csrf(), **data})


def console_routes(app: Flask) -> Iterator[tuple[str, str]]:
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/console/") or rule.rule in STREAMS:
            continue
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            yield rule.rule, method


def console_call(browser: Console, method: str, rule: str, ids: dict[str, str]) -> TestResponse:
    path = filled(rule, ids)
    if method == "GET":
        return browser.client.get(path)
    form = {key: str(value) for key, value in body_naming(ids).items()}
    return browser.client.open(path, method=method, data={"csrf_token": browser.csrf(), **form})


def test_no_console_page_or_form_finds_or_changes_another_tenants_resources(
    app: Flask, services: Services, world: Tenant
) -> None:
    globex = other_tenant(services, app.test_client())
    browser = Console(app.test_client(), globex.token)
    before = world.state(services)
    found: list[str] = []
    called = 0
    for rule, method in console_routes(app):
        if rule in ("/console/sign-out", "/console/sign-in"):
            continue
        answer = console_call(browser, method, rule, world.ids)
        called += 1
        name = f"{method} {rule}: {answer.status_code}"
        if "<" in rule and "filename" not in rule:
            nowhere = console_call(browser, method, rule, unknown_ids())
            if answer.status_code != nowhere.status_code:
                found.append(f"{name}, but {nowhere.status_code} for unknown ids")
            if method == "GET" and answer.status_code == 302:
                followed = browser.client.get(answer.headers["Location"])
                if followed.status_code not in (403, 404):
                    found.append(f"{name} leads to {followed.status_code}")
            elif answer.status_code not in (403, 404):
                found.append(f"{name} (expected 404 or 403)")
        assert answer.status_code < 500, name
        if leaked := leaks(answer, world.secrets(), f"{filled(rule, world.ids)} {world.ids}"):
            found.append(f"{name} shows {leaked}")
        if world.state(services) != before:
            found.append(f"{name} changed tenant A's log")
            before = world.state(services)
    assert called > 50
    assert found == [], "\n".join(found)
