"""The directory over HTTP: auth matrix, tenant confinement, bad input, versions."""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem, log_end, other_tenant
from tests.support import DECIDERS, Api

DEFINITION = {
    "key": "daily",
    "name": "Daily check",
    "external": False,
    "review_window_seconds": 3600,
    "reviewers": DECIDERS,
}


def test_account_lifecycle(admin: Api) -> None:
    created = admin.post("/api/accounts", {"id": "ann", "name": "Ann", "roles": ["operator"]})
    assert created.status_code == 201
    assert created.json == {
        "id": "ann",
        "name": "Ann",
        "roles": ["operator"],
        "active": True,
        "version": 1,
        "created_at": "2026-10-01T09:00:00Z",
    }
    updated = admin.put("/api/accounts/ann", {"name": "Ann B", "roles": ["auditor"], "version": 1})
    assert (updated.json["name"], updated.json["roles"], updated.json["version"]) == (
        "Ann B",
        ["auditor"],
        3,
    )
    deactivated = admin.post("/api/accounts/ann/deactivate")
    assert (deactivated.status_code, deactivated.json["active"]) == (200, False)
    assert admin.post("/api/accounts/ann/activate", {"version": 4}).json["active"] is True
    assert admin.get("/api/accounts/ann").json["version"] == 5


def test_generated_account_ids_are_returned(admin: Api) -> None:
    created = admin.post("/api/accounts", {"name": "No id", "roles": []})
    assert created.status_code == 201
    assert admin.get(f"/api/accounts/{created.json['id']}").json["name"] == "No id"


def test_no_token_is_401(client: FlaskClient, admin: Api) -> None:
    assert_problem(client.get("/api/accounts"), 401, "UNAUTHENTICATED")
    assert_problem(Api(client, "clt_forged").get("/api/accounts"), 401, "UNAUTHENTICATED")
    basic = client.get("/api/accounts", headers={"Authorization": "Basic cm9vdDpwdw=="})
    assert_problem(basic, 401, "UNAUTHENTICATED")


def test_revoked_token_is_401(admin: Api) -> None:
    admin.post("/api/accounts", {"id": "ops", "name": "Ops", "roles": ["admin"]})
    issued = admin.post("/api/accounts/ops/tokens").json
    ops = Api(admin.client, issued["token"])
    assert ops.get("/api/accounts").status_code == 200
    assert admin.delete(f"/api/accounts/ops/tokens/{issued['token_id']}").status_code == 204
    assert_problem(ops.get("/api/accounts"), 401, "UNAUTHENTICATED")
    assert_problem(admin.delete("/api/accounts/ops/tokens/unknown"), 404, "NOT_FOUND")


def test_deactivated_accounts_token_is_401(admin: Api) -> None:
    ops = account(admin, "ops", ["admin"])
    admin.post("/api/accounts/ops/deactivate")
    assert_problem(ops.get("/api/accounts"), 401, "UNAUTHENTICATED")
    assert_problem(admin.post("/api/accounts/ops/tokens"), 409, "INVALID_STATE")


def test_missing_permission_is_403(admin: Api) -> None:
    operator = account(admin, "op", ["operator"])
    body = assert_problem(operator.get("/api/accounts"), 403, "FORBIDDEN")
    assert "directory:manage" in body["detail"]
    assert_problem(operator.post("/api/definitions", DEFINITION), 403, "FORBIDDEN")


def test_another_tenants_resources_are_404_and_never_listed(
    admin: Api, services: Services, client: FlaskClient
) -> None:
    admin.post("/api/accounts", {"id": "ann", "name": "Ann", "roles": ["operator"]})
    definition = admin.post("/api/definitions", DEFINITION).json
    globex = other_tenant(services, client)
    assert_problem(globex.get("/api/accounts/ann"), 404, "NOT_FOUND")
    assert_problem(globex.get(f"/api/definitions/{definition['id']}"), 404, "NOT_FOUND")
    assert_problem(globex.post(f"/api/definitions/{definition['id']}/publish"), 404, "NOT_FOUND")
    assert_problem(globex.post("/api/accounts/ann/deactivate"), 404, "NOT_FOUND")
    assert [a["id"] for a in globex.get("/api/accounts").json["items"]] == ["boss"]
    assert globex.get("/api/definitions").json["total"] == 0
    assert admin.get("/api/accounts/ann").json["active"] is True


def test_stale_version_is_409_and_changes_nothing(admin: Api) -> None:
    admin.post("/api/accounts", {"id": "ann", "name": "Ann", "roles": ["operator"]})
    admin.put("/api/accounts/ann", {"name": "Ann 2", "roles": ["operator"], "version": 1})
    stale = admin.put("/api/accounts/ann", {"name": "Ann 3", "roles": ["admin"], "version": 1})
    assert_problem(stale, 409, "VERSION_CONFLICT")
    assert_problem(
        admin.post("/api/accounts/ann/deactivate", {"version": 1}), 409, "VERSION_CONFLICT"
    )
    current = admin.get("/api/accounts/ann").json
    assert (current["name"], current["roles"], current["active"]) == ("Ann 2", ["operator"], True)


def test_definition_lifecycle(admin: Api) -> None:
    created = admin.post("/api/definitions", DEFINITION)
    assert created.status_code == 201
    body = created.json
    assert (body["published"], body["schedule_presets"], body["version"]) == (False, [], 1)
    published = admin.post(f"/api/definitions/{body['id']}/publish", {"version": 1})
    assert (published.json["published"], published.json["version"]) == (True, 2)
    updated = admin.put(
        f"/api/definitions/{body['id']}",
        {
            "name": "Daily",
            "external": True,
            "review_window_seconds": 60,
            "reviewers": DECIDERS,
            "schedule_presets": [],
            "allow_self_approval": False,
            "version": 2,
        },
    )
    assert (updated.json["external"], updated.json["review_window_seconds"]) == (True, 60)
    assert admin.post(f"/api/definitions/{body['id']}/unpublish").json["published"] is False
    listed = admin.get("/api/definitions").json
    assert [d["key"] for d in listed["items"]] == ["daily"]
    assert_problem(admin.post("/api/definitions", DEFINITION), 422, "VALIDATION_FAILED")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"id": "x", "name": 5, "roles": []}, "name"),
        ({"id": "x", "name": "X", "roles": "admin"}, "roles"),
        ({"id": "x", "name": "X", "roles": ["wizard"]}, "roles.0"),
        ({"id": "x", "name": "X" * 201, "roles": []}, "name"),
        ({"id": "bad id!", "name": "X", "roles": []}, "id"),
        ({"id": "x" * 65, "name": "X", "roles": []}, "id"),
        ({"id": "x", "roles": []}, "name"),
        ({"id": "x", "name": "X", "roles": [], "admin": True}, "admin"),
    ],
)
def test_bad_account_fields_are_422_naming_the_field_and_nothing_is_written(
    admin: Api, services: Services, body: dict[str, Any], field: str
) -> None:
    before = log_end(services)
    problem = assert_problem(admin.post("/api/accounts", body), 422, "VALIDATION_FAILED")
    assert field in problem["errors"]
    assert log_end(services) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**DEFINITION, "external": "no"}, "external"),
        (
            {
                **DEFINITION,
                "review_window_seconds": 0,
                "reviewers": DECIDERS,
            },
            "review_window_seconds",
        ),
        (
            {
                **DEFINITION,
                "review_window_seconds": 1.5,
                "reviewers": DECIDERS,
            },
            "review_window_seconds",
        ),
        (
            {
                **DEFINITION,
                "review_window_seconds": True,
                "reviewers": DECIDERS,
            },
            "review_window_seconds",
        ),
        ({**DEFINITION, "key": "has space"}, "key"),
        (
            {**DEFINITION, "schedule_presets": [{"id": "Bad", "title": "t", "trigger": {}}]},
            "schedule_presets.0.id",
        ),
        (
            {
                **DEFINITION,
                "schedule_presets": [
                    {"id": "a", "title": "t", "trigger": {}},
                    {"id": "a", "title": "u", "trigger": {}},
                ],
            },
            "schedule_presets",
        ),
    ],
)
def test_bad_definition_fields_are_422(
    admin: Api, services: Services, body: dict[str, Any], field: str
) -> None:
    before = log_end(services)
    problem = assert_problem(admin.post("/api/definitions", body), 422, "VALIDATION_FAILED")
    assert field in problem["errors"], problem["errors"]
    assert log_end(services) == before


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b'"text"', b"\xff\xfe"])
def test_a_body_that_is_not_a_json_object_is_400(
    admin: Api, services: Services, raw: bytes
) -> None:
    before = log_end(services)
    response = admin.post("/api/accounts", data=raw, content_type="application/json")
    assert_problem(response, 400, "BAD_REQUEST")
    assert log_end(services) == before


def test_a_2_mib_body_is_413(admin: Api, services: Services) -> None:
    before = log_end(services)
    body = b'{"name": "' + b"x" * (2 * 1024 * 1024) + b'", "roles": []}'
    response = admin.post("/api/accounts", data=body, content_type="application/json")
    assert_problem(response, 413, "PAYLOAD_TOO_LARGE")
    assert log_end(services) == before


@pytest.mark.parametrize("query", ["page=0", "page_size=201", "page_size=abc", "page=-1"])
def test_bad_paging_is_422(admin: Api, query: str) -> None:
    assert_problem(admin.get(f"/api/accounts?{query}"), 422, "VALIDATION_FAILED")


def test_paging_envelope(admin: Api) -> None:
    for n in range(3):
        admin.post("/api/accounts", {"id": f"u{n}", "name": f"U{n}", "roles": []})
    page = admin.get("/api/accounts?page=2&page_size=2").json
    assert ([a["id"] for a in page["items"]], page["page"], page["page_size"], page["total"]) == (
        ["u1", "u2"],
        2,
        2,
        4,
    )


def test_unknown_route_and_method_are_problems(admin: Api) -> None:
    assert_problem(admin.get("/api/nothing-here"), 404, "NOT_FOUND")
    assert_problem(admin.delete("/api/accounts"), 405, "METHOD_NOT_ALLOWED")


def test_health_names_the_store(client: FlaskClient, services: Services) -> None:
    response = client.get("/healthz")
    assert response.json == {
        "status": "ok",
        "store": services.store.kind,
        "version": metadata.version("cronledger"),
    }


def test_openapi_document_is_generated_from_the_schemas(client: FlaskClient) -> None:
    spec = client.get("/api/openapi.json").json
    assert spec["openapi"].startswith("3.")
    create = spec["paths"]["/api/accounts"]["post"]
    assert create["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/AccountOut"
    }
    assert "422" in create["responses"]
    assert create["security"] == [{"bearer": []}]
    assert set(spec["components"]["schemas"]["AccountCreate"]["properties"]) == {
        "id",
        "name",
        "roles",
    }
    assert "/api/definitions/{definition_id}/publish" in spec["paths"]
    stream = spec["paths"]["/api/events/stream"]["get"]
    assert "text/event-stream" in stream["responses"]["200"]["content"]
    assert "Last-Event-ID" in {p.get("name") for p in stream["parameters"]}
    assert "text/plain" in spec["paths"]["/metrics"]["get"]["responses"]["200"]["content"]


def test_request_id_is_echoed(client: FlaskClient) -> None:
    response = client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert response.headers["X-Request-ID"] == "abc-123"
    assert len(client.get("/healthz").headers["X-Request-ID"]) == 32


def test_internal_errors_hide_the_stack(
    admin: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*args: Any) -> None:
        raise RuntimeError("secret detail in a stack trace")

    monkeypatch.setattr(services.directory, "accounts", explode)
    body = assert_problem(admin.get("/api/accounts"), 500, "INTERNAL")
    assert "secret" not in str(body)
    assert "Traceback" not in str(body)


def test_health_is_503_when_the_store_is_unreachable(
    client: FlaskClient, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreachable(*args: object) -> None:
        raise OSError("connection refused")

    monkeypatch.setattr(services.store, "ping", unreachable)
    assert_problem(client.get("/healthz"), 503, "UNAVAILABLE")
