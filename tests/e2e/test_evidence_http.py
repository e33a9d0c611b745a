"""Evidence for third parties over HTTP (docs/api.md#evidence-for-third-parties): the signed
checkpoints, a tenant's evidence bundles, confined to the tenant, and consistency proofs."""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application.services import Services
from cronledger.persistence.signing_key import SigningKey, create_signing_key
from domain.evidence import Checkpoint, public_key_from_pem, verify_bundle
from domain.merkle import verify_consistency
from tests.e2e.helpers import (
    DEFINITION,
    account,
    assert_problem,
    other_tenant,
    submit,
    with_reviewer,
)
from tests.support import Api

CHECKPOINTS = "/api/audit/checkpoints"
BUNDLES = "/api/audit/bundles"
CONSISTENCY = "/api/audit/consistency"
THEIR_TITLE = "Globex merger 合并"


@pytest.fixture
def key(services: Services, tmp_path: Path) -> SigningKey:
    """The services' signing key (the in-process services are opened without one)."""
    services.evidence.key = create_signing_key(tmp_path / "k.pem")
    return services.evidence.key


@pytest.fixture
def auditor(admin: Api) -> Api:
    return account(admin, "audrey", ["auditor"])


@pytest.fixture
def instance_id(admin: Api, definition: dict[str, Any]) -> str:
    """An approval instance of tenant `acme`, with a few events."""
    submitted = submit(admin, definition["id"])
    assert submitted.status_code == 201, submitted.json
    instance = submitted.json
    extended = admin.post(
        f"/api/approvals/{instance['id']}/extend-deadline",
        {"command_id": "extend-1", "new_deadline_at": "2026-10-02T09:00:00Z", "reason": "leave"},
    )
    assert extended.status_code == 200, extended.json
    return str(instance["id"])


@dataclass(frozen=True)
class Theirs:
    """Tenant `globex`'s admin, and what identifies its data."""

    api: Api
    names: tuple[str, ...]


@pytest.fixture
def theirs(services: Services, client: FlaskClient) -> Theirs:
    """Another tenant with an instance of its own."""
    boss = other_tenant(services, client)
    with_reviewer(boss)
    created = boss.post("/api/definitions", {**DEFINITION, "key": "globex-daily"}).json
    boss.post(f"/api/definitions/{created['id']}/publish")
    instance = submit(boss, created["id"], "globex-1", title=THEIR_TITLE).json
    tenant_id = boss.get("/api/tenant").json["id"]
    names = ("globex", "boss", "globex-daily", THEIR_TITLE, created["id"], instance["id"])
    return Theirs(boss, (*names, tenant_id))


def signed(services: Services) -> Checkpoint:
    """A checkpoint of the whole log as it is now."""
    services.projector.catch_up()
    checkpoint = services.evidence.checkpoint(force=True)
    assert checkpoint is not None
    return checkpoint


def ok(answer: Any) -> Any:
    assert answer.status_code == 200, answer.json
    return answer.json


def public_key(key: SigningKey) -> Any:
    return public_key_from_pem(key.public_pem().encode())


def test_the_signed_checkpoints_are_listed_oldest_first(
    services: Services, key: SigningKey, auditor: Api, instance_id: str, admin: Api
) -> None:
    assert ok(auditor.get(CHECKPOINTS)) == {"items": []}
    first = signed(services)
    account(admin, "ann", ["requester"])
    second = signed(services)

    items = ok(auditor.get(CHECKPOINTS))["items"]

    assert items == [first.as_json(), second.as_json()]
    assert first.tree_size < second.tree_size
    for item in items:
        Checkpoint.from_json(item).check_signature(public_key(key))
    assert ok(auditor.get(f"{CHECKPOINTS}?since={first.tree_size}"))["items"] == [items[1]]
    assert ok(auditor.get(f"{CHECKPOINTS}?limit=1"))["items"] == [items[0]]


def test_an_instance_s_bundle_verifies_with_the_public_key(
    services: Services, key: SigningKey, auditor: Api, instance_id: str, admin: Api
) -> None:
    saved = signed(services)
    account(admin, "ann", ["requester"])
    signed(services)  # the bundle's checkpoint: the log grew since the one saved
    timeline = ok(auditor.get(f"/api/approvals/{instance_id}/timeline"))["items"]

    bundle = ok(auditor.get(f"{BUNDLES}/{instance_id}?since={saved.tree_size}"))
    report = verify_bundle(bundle, public_key(key), saved)

    assert report.problems == []
    assert [e.version for e in report.proven] == [e["log_version"] for e in timeline]
    assert report.aggregate_id == instance_id
    assert report.checkpoint is not None
    assert report.checkpoint.tree_size > saved.tree_size
    assert any("only grew" in note for note in report.notes)


def test_the_tenant_s_own_bundle_verifies_too(
    services: Services, key: SigningKey, auditor: Api
) -> None:
    tenant_id = ok(auditor.get("/api/tenant"))["id"]

    report = verify_bundle(ok(auditor.get(f"{BUNDLES}/{tenant_id}")), public_key(key))

    assert report.problems == []
    assert report.proven  # its accounts added, ...


def test_another_tenant_s_auditor_gets_404_never_the_bundle(
    key: SigningKey, instance_id: str, theirs: Theirs
) -> None:
    for unknown in (instance_id, str(uuid.uuid4()), "anything"):
        assert_problem(theirs.api.get(f"{BUNDLES}/{unknown}"), 404, "NOT_FOUND")


def test_a_bundle_holds_nothing_of_other_aggregates_or_tenants(
    services: Services, key: SigningKey, auditor: Api, instance_id: str, theirs: Theirs
) -> None:
    signed(services)  # the checkpoint covers the other tenant's events too
    theirs.api.post("/api/accounts", {"id": "later", "name": "later", "roles": ["auditor"]})

    bundle = ok(auditor.get(f"{BUNDLES}/{instance_id}"))

    assert bundle["events"]
    assert {event["aggregate_id"] for event in bundle["events"]} == {instance_id}
    states = [base64.b64decode(event["state"]).decode() for event in bundle["events"]]
    text = json.dumps(bundle, ensure_ascii=False) + "\n".join(states)
    assert [name for name in theirs.names if name in text] == []


def test_evidence_needs_audit_read(
    key: SigningKey, admin: Api, services: Services, instance_id: str
) -> None:
    requester = account(admin, "ann", ["requester"])
    size = signed(services).tree_size
    for path in (
        CHECKPOINTS,
        f"{BUNDLES}/{instance_id}",
        f"{CONSISTENCY}?from_size={size}&to_size={size}",
    ):
        assert_problem(requester.get(path), 403, "FORBIDDEN")


def test_without_a_signing_key_a_bundle_is_503(
    services: Services, auditor: Api, instance_id: str
) -> None:
    assert services.evidence.key is None

    answer = auditor.get(f"{BUNDLES}/{instance_id}")

    refused = assert_problem(answer, 503, "UNAVAILABLE")
    assert "signing key" in refused["detail"]
    assert answer.headers["Retry-After"]


def test_consistency_between_two_checkpoints_verifies(
    services: Services, key: SigningKey, auditor: Api, instance_id: str, admin: Api
) -> None:
    old = signed(services)
    account(admin, "ann", ["requester"])
    new = signed(services)

    answer = ok(auditor.get(f"{CONSISTENCY}?from_size={old.tree_size}&to_size={new.tree_size}"))

    older = Checkpoint.from_json(answer["from_checkpoint"])
    newer = Checkpoint.from_json(answer["to_checkpoint"])
    assert (older, newer) == (old, new)
    proof = [bytes.fromhex(h) for h in answer["proof"]]
    assert proof
    verify_consistency(old.tree_size, new.tree_size, older.root, newer.root, proof)


def test_sizes_without_a_checkpoint_are_404(
    services: Services, key: SigningKey, auditor: Api, instance_id: str
) -> None:
    size = signed(services).tree_size
    for query in (f"from_size={size - 1}&to_size={size}", f"from_size={size}&to_size={size + 1}"):
        assert_problem(auditor.get(f"{CONSISTENCY}?{query}"), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("path", "field"),
    [
        (f"{CHECKPOINTS}?after=3", "after"),
        (f"{CHECKPOINTS}?limit=1001", "limit"),
        (f"{CHECKPOINTS}?since=-1", "since"),
        ("{bundles}?since=2&from=1", "from"),
        ("{bundles}?since=0", "since"),
        ("{bundles}?since=1000000", "since"),  # beyond the bundle's checkpoint
        (f"{CONSISTENCY}?from_size=2&to_size=1", "to_size"),
        (f"{CONSISTENCY}?from=1&to=2", "from"),
    ],
)
def test_bad_queries_are_refused(
    key: SigningKey, auditor: Api, instance_id: str, path: str, field: str
) -> None:
    answer = auditor.get(path.format(bundles=f"{BUNDLES}/{instance_id}"))

    refused = assert_problem(answer, 422, "VALIDATION_FAILED")
    assert field in refused["errors"]


def test_an_instance_s_bundle_holds_its_linked_instances_proofs(
    key: SigningKey, auditor: Api, admin: Api, definition: dict[str, Any]
) -> None:
    requester = account(admin, "ann", ["requester"])
    original = submit(requester, definition["id"], "linked-1").json
    requester.post(f"/api/approvals/{original['id']}/withdraw", {"command_id": "w"})
    body = {"command_id": "again", "reason": "补充材料", "material_version": 3}
    new = requester.post(f"/api/approvals/{original['id']}/resubmit", body).json

    alone = ok(auditor.get(f"{BUNDLES}/{original['id']}"))
    bundle = ok(auditor.get(f"{BUNDLES}/{original['id']}?linked=true"))
    report = verify_bundle(bundle, public_key(key))

    assert "linked" not in alone
    assert report.problems == []
    ((relation, linked),) = [(r.relation, r) for r in report.linked]
    assert (relation, linked.aggregate_id) == ("resubmitted_as", new["id"])
    assert [e.type for e in linked.proven] == ["ApprovalInstance.Submitted"]
    back = verify_bundle(ok(auditor.get(f"{BUNDLES}/{new['id']}?linked=true")), public_key(key))
    assert [(r.relation, r.aggregate_id) for r in back.linked] == [("resubmits", original["id"])]
    forged = json.loads(json.dumps(bundle))
    forged["linked"][0]["events"][0]["state"] = base64.b64encode(b"{}").decode()
    broken = verify_bundle(forged, public_key(key))
    assert any(p.startswith(f"linked instance {new['id']}") for p in broken.problems)
