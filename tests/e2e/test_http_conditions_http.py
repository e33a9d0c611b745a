"""HTTP done right: ETag and If-Match (412), 405 with Allow, no redirects for `//` or a trailing
slash, problem documents that name the request, and the API-Version header."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application.services import Services
from cronledger.version import installed_version
from tests.e2e.helpers import account, assert_problem, log_end, submit
from tests.support import Api, principal_of


def if_match(tags: str) -> dict[str, Any]:
    return {"headers": {"If-Match": tags}}


def assert_tagged(response: Any, status: int = 200) -> int:
    """The answer's status, and its ETag: the strong tag of the `version` it shows."""
    assert response.status_code == status, response.json
    version: int = response.json["version"]
    assert response.headers["ETag"] == f'"{version}"'
    return version


def assert_stale(response: Any) -> dict[str, Any]:
    return assert_problem(response, 412, "PRECONDITION_FAILED")


@pytest.fixture
def schedule(admin: Api, body: dict[str, Any]) -> dict[str, Any]:
    created = admin.post("/api/workflows/schedules", body)
    assert_tagged(created, 201)
    return created.json  # type: ignore[no-any-return]


def test_every_versioned_resource_answers_its_etag(
    admin: Api, definition: dict[str, Any], schedule: dict[str, Any], definition_id: str
) -> None:
    requester = account(admin, "sales", ["requester"])
    path = f"/api/workflows/schedules/{schedule['id']}"
    assert_tagged(admin.get(path))
    run = admin.post(f"{path}/run", {"request_id": "r1"})
    assert_tagged(run, 202)
    assert_tagged(admin.get(f"{path}/runs/{run.json['id']}"))
    assert_tagged(admin.get(f"/api/workflows/runs/{run.json['id']}"))
    assert_tagged(admin.get("/api/accounts/sales"))
    assert_tagged(admin.get(f"/api/definitions/{definition['id']}"))
    assert_tagged(admin.get("/api/definitions/by-key/daily"))
    instance = submit(requester, definition_id)
    assert_tagged(instance, 201)
    assert_tagged(admin.get(f"/api/approvals/{instance.json['id']}"))
    listed = admin.get("/api/accounts").headers["ETag"]  # a list's: a digest, not a version
    assert not listed.strip('"').isdigit()


def test_a_current_if_match_writes_and_a_stale_one_is_412_writing_nothing(
    admin: Api, services: Services, schedule: dict[str, Any], body: dict[str, Any]
) -> None:
    path = f"/api/workflows/schedules/{schedule['id']}"
    saved = admin.put(path, {**body, "name": "renamed", "version": 1}, **if_match('"1"'))
    assert assert_tagged(saved) == 2
    end = log_end(services)
    stale = admin.put(path, {**body, "name": "lost", "version": 1}, **if_match('"1"'))
    assert 'ETag is "2"' in assert_stale(stale)["detail"]
    assert_stale(admin.patch(path, {"name": "lost"}, **if_match('"1"')))
    assert_stale(admin.post(f"{path}/enable", **if_match('"1"')))
    assert_stale(admin.delete(path, **if_match('"1"')))
    assert log_end(services) == end
    assert admin.get(path).json["name"] == "renamed"
    patched = admin.patch(path, {"name": "patched"}, **if_match('"2"'))  # no version in the body
    assert (assert_tagged(patched), patched.json["name"]) == (3, "patched")


def test_if_match_takes_a_list_or_any_but_never_a_weak_tag(admin: Api) -> None:
    account(admin, "ann", ["operator"])
    path = "/api/accounts/ann"
    n = assert_tagged(admin.get(path))
    assert_stale(admin.post(f"{path}/deactivate", **if_match(f'W/"{n}"')))
    assert_stale(admin.post(f"{path}/deactivate", **if_match(f'"7", W/"{n}"')))
    assert assert_tagged(admin.post(f"{path}/deactivate", **if_match(f'"7", "{n}"'))) == n + 1
    assert assert_tagged(admin.post(f"{path}/activate", **if_match("*"))) == n + 2
    renamed = admin.put(path, {"name": "Ann", "roles": ["operator"]}, **if_match(f'"{n + 2}"'))
    assert (assert_tagged(renamed), renamed.json["name"]) == (n + 3, "Ann")  # If-Match as version


def test_a_write_another_beats_after_the_check_is_412_too(
    admin: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    account(admin, "ann", ["operator"])
    path = "/api/accounts/ann"
    seen = services.directory.account(principal_of(services, admin).tenant_id, "ann")
    first = admin.put(path, {"name": "first", "roles": ["operator"], "version": seen.version})
    assert first.status_code == 200
    monkeypatch.setattr(services.directory, "current_account", lambda *_: seen)  # checked before it
    late = admin.put(path, {"name": "late", "roles": ["operator"]}, **if_match(f'"{seen.version}"'))
    assert "reload it" in assert_stale(late)["detail"]
    monkeypatch.undo()
    assert admin.get(path).json["name"] == "first"


def test_if_match_and_a_version_that_disagree_are_412(
    admin: Api, services: Services, definition: dict[str, Any]
) -> None:
    path = f"/api/definitions/{definition['id']}"
    current = assert_tagged(admin.get(path))
    end = log_end(services)
    both = admin.post(f"{path}/unpublish", {"version": current - 1}, **if_match(f'"{current}"'))
    assert "`version` is" in assert_stale(both)["detail"]
    assert log_end(services) == end
    agreed = admin.post(f"{path}/unpublish", {"version": current}, **if_match(f'"{current}"'))
    assert agreed.json["published"] is False


def test_run_commands_honour_if_match(admin: Api, schedule: dict[str, Any]) -> None:
    path = f"/api/workflows/schedules/{schedule['id']}"
    assert_stale(admin.post(f"{path}/run", {"request_id": "r1"}, **if_match('"9"')))
    run = admin.post(f"{path}/run", {"request_id": "r1"}, **if_match('"1"'))  # the schedule's
    version = assert_tagged(run, 202)  # the run's
    runs = f"{path}/runs/{run.json['id']}"
    assert_stale(admin.post(f"{runs}/cancel", **if_match(f'"{version + 1}"')))
    cancelled = admin.post(f"{runs}/cancel", **if_match(f'"{version}"'))
    assert cancelled.json["status"] == "CANCELLED"
    assert_stale(admin.post(f"{runs}/retry", **if_match(f'"{version}"')))
    retried = admin.post(f"{runs}/retry", **if_match(f'"{assert_tagged(cancelled, 202)}"'))
    assert retried.json["status"] == "PENDING"


def test_deleting_a_schedule_takes_if_match_instead_of_a_version(
    admin: Api, schedule: dict[str, Any]
) -> None:
    path = f"/api/workflows/schedules/{schedule['id']}"
    assert_problem(admin.delete(path), 422, "VALIDATION_FAILED")
    assert admin.delete(path, **if_match('"1"')).status_code == 204
    assert_problem(admin.get(path), 404, "NOT_FOUND")


def test_a_resource_without_an_etag_matches_only_any(admin: Api) -> None:
    account(admin, "ann", ["operator"])
    token = admin.post("/api/accounts/ann/tokens").json["token_id"]
    path = f"/api/accounts/ann/tokens/{token}"
    assert_stale(admin.delete(path, **if_match('"1"')))
    assert admin.delete(path, **if_match("*")).status_code == 204


def test_approval_commands_check_if_match_and_a_lost_one_is_a_problem_document(
    admin: Api, services: Services, definition_id: str
) -> None:
    requester = account(admin, "sales", ["requester"])
    instance = submit(requester, definition_id).json
    path = f"/api/approvals/{instance['id']}"
    command = {"command_id": "a1", "material_version": 2}
    submitted = if_match(f'"{instance["version"]}"')
    end = log_end(services)
    assert_stale(admin.post(f"{path}/approve", command, **if_match('"9"')))
    assert log_end(services) == end  # not recorded: a precondition is not a decision
    approved = admin.post(f"{path}/approve", command, **submitted)
    assert approved.status_code == 200
    assert approved.headers["ETag"] == f'"{approved.json["instance"]["version"]}"'
    repeat = admin.post(f"{path}/approve", command, **submitted)
    assert (repeat.status_code, repeat.json["replayed"]) == (200, True)  # applied already

    lost = requester.post(f"{path}/withdraw", {"command_id": "w1"})
    problem = assert_problem(lost, 409, "COMMAND_REJECTED")
    assert problem["instance"] == f"{path}/withdraw"
    assert (problem["outcome"], problem["state"], problem["replayed"]) == (
        "CONFLICT",
        "APPROVED",
        False,
    )
    assert problem["detail"] == problem["reason"] == "the instance is already APPROVED"
    assert problem["winning_command"] == {"command_id": "a1", "kind": "approve", "actor": "root"}
    assert problem["approval"]["id"] == instance["id"]
    assert lost.headers["ETag"] == f'"{problem["approval"]["version"]}"'


def test_405_names_the_allowed_methods(admin: Api) -> None:
    refused = admin.delete("/api/accounts")
    assert_problem(refused, 405, "METHOD_NOT_ALLOWED")
    assert {"GET", "POST"} <= {m.strip() for m in refused.headers["Allow"].split(",")}


@pytest.mark.parametrize(
    ("path", "meant"),
    [
        ("/api/accounts/", "/api/accounts"),
        ("/api//accounts", "/api/accounts"),
        ("//api/accounts", "/api/accounts"),
        ("/api/accounts/root/", "/api/accounts/root"),
        ("/healthz/", "/healthz"),
    ],
)
def test_doubled_and_trailing_slashes_are_404_naming_the_path_meant(
    admin: Api, path: str, meant: str
) -> None:
    answer = admin.get("/", environ_overrides={"PATH_INFO": path})
    assert (answer.status_code, answer.mimetype) == (404, "application/problem+json")
    assert "Location" not in answer.headers
    assert answer.json["code"] == "NOT_FOUND"
    assert f"did you mean {meant}?" in answer.json["detail"]
    assert answer.json["instance"].endswith(path)


def test_problems_name_the_request_and_its_id(client: FlaskClient) -> None:
    answer = client.get("/api/events/stream", headers={"X-Request-ID": "trace-1"})
    problem = assert_problem(answer, 401, "UNAUTHENTICATED")
    assert (problem["instance"], problem["request_id"]) == ("/api/events/stream", "trace-1")
    assert client.get("/api/accounts/%C3%A4").json["instance"] == "/api/accounts/%C3%A4"


def test_every_answer_names_the_api_version(admin: Api, client: FlaskClient) -> None:
    release = installed_version()
    assert client.get("/api/openapi.json").json["info"]["version"] == release
    assert admin.get("/api/accounts").headers["API-Version"] == release
    assert client.get("/healthz").headers["API-Version"] == release
    assert client.get("/api/nothing").headers["API-Version"] == release
