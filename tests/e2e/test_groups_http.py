"""`/api/groups` on both stores: departments with members, a leader and a parent; every rule
across groups and accounts refused with its field or code (docs/api.md#groups)."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from cronledger.application.services import Services
from domain.groups import group_uuid
from tests.e2e.helpers import account, assert_problem, other_tenant
from tests.support import Api

GROUPS = "/api/groups"


def create(admin: Api, key: str, **fields: Any) -> dict[str, Any]:
    created = admin.post(GROUPS, {"key": key, "name": key.title(), **fields})
    assert created.status_code == 201, created.json
    return created.json  # type: ignore[no-any-return]


def people(admin: Api, *ids: str) -> None:
    for account_id in ids:
        made = admin.post("/api/accounts", {"id": account_id, "name": account_id, "roles": []})
        assert made.status_code == 201, made.json


def refused_field(response: Any) -> dict[str, list[str]]:
    return assert_problem(response, 422, "VALIDATION_FAILED")["errors"]  # type: ignore[no-any-return]


def test_a_group_is_created_read_listed_and_searched(services: Services, admin: Api) -> None:
    people(admin, "ann", "bob")
    company = create(admin, "company", name="总公司")
    created = admin.post(
        GROUPS,
        {
            "key": "finance",
            "name": "财务部",
            "members": ["bob", "ann"],
            "leader_id": "bob",
            "parent_key": "company",
        },
    )
    assert created.status_code == 201, created.json
    assert created.headers["ETag"] == '"1"'
    group = created.json
    tenant_id = services.directory.authenticate(admin.token).tenant_id  # type: ignore[union-attr]
    assert group["id"] == str(group_uuid(tenant_id, "finance"))
    assert {k: group[k] for k in ("key", "name", "members", "leader_id", "parent_key")} == {
        "key": "finance",
        "name": "财务部",
        "members": ["ann", "bob"],
        "leader_id": "bob",
        "parent_key": "company",
    }
    assert admin.get(f"{GROUPS}/{group['id']}").json == group
    assert admin.get(f"{GROUPS}/by-key/finance").json == group
    listed = admin.get(GROUPS).json
    assert [item["key"] for item in listed["items"]] == ["company", "finance"]
    assert listed["total"] == 2
    assert admin.get(f"{GROUPS}?q=财务").json["items"] == [group]
    assert admin.get(f"{GROUPS}?q=COMP").json["items"] == [company]


def test_reading_takes_approval_list_and_changing_takes_directory_manage(admin: Api) -> None:
    requester = account(admin, "ann", ["requester"])
    group = create(admin, "finance")
    assert requester.get(f"{GROUPS}/{group['id']}").status_code == 200
    assert requester.get(GROUPS).status_code == 200
    assert_problem(requester.post(GROUPS, {"key": "sales", "name": "Sales"}), 403, "FORBIDDEN")
    assert_problem(requester.delete(f"{GROUPS}/{group['id']}", json={}), 403, "FORBIDDEN")


def test_another_tenant_s_group_is_not_found(
    services: Services, client: FlaskClient, admin: Api
) -> None:
    group = create(admin, "finance")
    stranger = other_tenant(services, client)
    assert_problem(stranger.get(f"{GROUPS}/{group['id']}"), 404, "NOT_FOUND")
    assert_problem(stranger.get(f"{GROUPS}/not-a-uuid"), 404, "NOT_FOUND")


def test_put_replaces_and_patch_merges_with_versions(admin: Api) -> None:
    people(admin, "ann", "bob")
    group = create(admin, "finance", members=["ann"], leader_id="ann")
    path = f"{GROUPS}/{group['id']}"
    put = admin.put(
        path,
        {
            "name": "财务部",
            "members": ["ann", "bob"],
            "leader_id": "bob",
            "parent_key": None,
            "version": 1,
            "reason": "Bob leads now",
        },
    )
    assert put.status_code == 200, put.json
    assert (put.json["leader_id"], put.json["version"]) == ("bob", 2)
    patched = admin.patch(path, {"members": ["bob"]}, headers={"If-Match": '"2"'})
    assert patched.status_code == 200, patched.json
    assert (patched.json["members"], patched.json["leader_id"]) == (["bob"], "bob")
    assert patched.json["name"] == "财务部"
    assert_problem(
        admin.patch(path, {"name": "x"}, headers={"If-Match": '"2"'}), 412, "PRECONDITION_FAILED"
    )
    stale = admin.put(
        path, {"name": "x", "members": [], "leader_id": None, "parent_key": None, "version": 1}
    )
    assert_problem(stale, 409, "VERSION_CONFLICT")
    cleared = admin.patch(path, {"leader_id": None, "version": 3})
    assert cleared.status_code == 200, cleared.json
    assert cleared.json["leader_id"] is None


def test_unknown_members_and_a_leader_outside_the_group_are_refused(admin: Api) -> None:
    people(admin, "ann")
    unknown = refused_field(
        admin.post(GROUPS, {"key": "g", "name": "G", "members": ["ann", "zed"]})
    )
    assert unknown == {"members": ["the tenant has no account zed"]}
    outside = refused_field(
        admin.post(GROUPS, {"key": "g", "name": "G", "members": ["ann"], "leader_id": "bob"})
    )
    assert outside == {"leader_id": ["bob is not a member of the group"]}
    assert admin.get(GROUPS).json["total"] == 0


def test_an_unknown_or_deleted_parent_is_refused(admin: Api) -> None:
    unknown = refused_field(admin.post(GROUPS, {"key": "g", "name": "G", "parent_key": "nope"}))
    assert unknown == {"parent_key": ["the tenant has no group nope"]}
    gone = create(admin, "gone")
    assert admin.delete(f"{GROUPS}/{gone['id']}", json={}).status_code == 204
    deleted = refused_field(admin.post(GROUPS, {"key": "g", "name": "G", "parent_key": "gone"}))
    assert deleted == {"parent_key": ["the tenant has no group gone"]}


def test_a_cycle_of_parents_is_refused(admin: Api) -> None:
    company = create(admin, "company")
    create(admin, "finance", parent_key="company")
    create(admin, "payables", parent_key="finance")
    cycle = admin.patch(f"{GROUPS}/{company['id']}", {"parent_key": "payables", "version": 1})
    assert refused_field(cycle) == {
        "parent_key": ["group payables is under group company: parents would form a cycle"]
    }
    own = admin.patch(f"{GROUPS}/{company['id']}", {"parent_key": "company", "version": 1})
    assert refused_field(own) == {"parent_key": ["a group cannot be its own parent"]}


def test_a_parent_is_deleted_only_after_its_children(admin: Api) -> None:
    company = create(admin, "company")
    finance = create(admin, "finance", parent_key="company")
    body = assert_problem(
        admin.delete(f"{GROUPS}/{company['id']}", json={"reason": "closing"}),
        409,
        "GROUP_IS_PARENT",
    )
    assert "finance" in body["detail"]
    assert admin.delete(f"{GROUPS}/{finance['id']}", json={"version": 1}).status_code == 204
    assert admin.delete(f"{GROUPS}/{company['id']}", json={}).status_code == 204
    assert_problem(admin.get(f"{GROUPS}/{company['id']}"), 404, "NOT_FOUND")
    assert admin.get(GROUPS).json["total"] == 0


def test_a_deleted_key_is_created_again_as_a_new_group(admin: Api) -> None:
    first = create(admin, "finance", name="旧财务部")
    assert admin.delete(f"{GROUPS}/{first['id']}", json={}).status_code == 204
    again = create(admin, "finance", name="新财务部")
    assert again["id"] == first["id"]
    assert (again["name"], again["version"]) == ("新财务部", 3)
    taken = refused_field(admin.post(GROUPS, {"key": "finance", "name": "x"}))
    assert taken == {"key": ["a group with key finance exists"]}


def test_a_keyed_create_is_answered_once_and_replayed(admin: Api) -> None:
    headers = {"Idempotency-Key": "group-1"}
    body = {"key": "finance", "name": "财务部"}
    first = admin.post(GROUPS, body, headers=headers)
    assert first.status_code == 201, first.json
    replay = admin.post(GROUPS, body, headers=headers)
    assert replay.status_code == 201
    assert replay.json == first.json
    assert replay.headers.get("Idempotent-Replayed") == "true"
    other = admin.post(GROUPS, {"key": "sales", "name": "Sales"}, headers=headers)
    assert_problem(other, 409, "IDEMPOTENCY_KEY_REUSED")
    assert admin.get(GROUPS).json["total"] == 1


def test_groups_facts_read_the_log(services: Services, admin: Api) -> None:
    people(admin, "ann", "bob")
    create(admin, "company", members=["bob"], leader_id="bob")
    create(admin, "finance", members=["ann"], parent_key="company")
    tenant_id = services.directory.authenticate(admin.token).tenant_id  # type: ignore[union-attr]
    facts = services.groups.facts(tenant_id)
    assert sorted(facts) == ["company", "finance"]
    assert facts["finance"].members == frozenset({"ann"})
    assert facts["finance"].parent_key == "company"
