"""docs/audit.md claims a third party can check a bundle from the page alone. This verifier is
written from that page only (hashlib and cryptography; nothing of cronledger verifies): it
accepts a real bundle, on both stores, and rejects altered ones."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from cronledger.persistence.signing_key import create_signing_key
from domain.approvals import Command, Submission
from tests.support import FakeClock, World

# -- the verifier, from docs/audit.md ("Checking without cronledger") -------------------------


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def node(left: bytes, right: bytes) -> bytes:
    return sha(b"\x01" + left + right)


def check_signature(checkpoint: dict[str, Any], pem: bytes) -> None:
    key = serialization.load_pem_public_key(pem)
    assert isinstance(key, Ed25519PublicKey)
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    if hashlib.sha256(raw).hexdigest()[:16] != checkpoint["key_id"]:
        raise ValueError("another key")
    message = (
        f"cronledger-checkpoint/1\n{checkpoint['tree_size']}\n{checkpoint['root_hash']}\n"
        f"{checkpoint['signed_at']}\n{checkpoint['key_id']}\n"
    ).encode()
    try:
        key.verify(base64.b64decode(checkpoint["signature"]), message)
    except InvalidSignature:
        raise ValueError("bad signature") from None


def leaf_of(event: dict[str, Any]) -> bytes:
    topic = event["topic"].encode()
    data = (
        struct.pack(">Q", event["position"])
        + uuid.UUID(event["aggregate_id"]).bytes
        + struct.pack(">Q", event["version"])
        + struct.pack(">H", len(topic))
        + topic
        + base64.b64decode(event["state"])
    )
    return sha(b"\x00" + data)


def root_from_path(leaf: bytes, index: int, size: int, path: list[str]) -> bytes | None:
    fn, sn, r = index, size - 1, leaf
    for hexed in path:
        p = bytes.fromhex(hexed)
        if sn == 0:
            return None
        if fn % 2 == 1 or fn == sn:
            r = node(p, r)
            while fn % 2 == 0 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node(r, p)
        fn, sn = fn >> 1, sn >> 1
    return r if sn == 0 else None


def consistent(m: int, a: bytes, n: int, b: bytes, proof: list[str]) -> bool:
    hashes = [bytes.fromhex(h) for h in proof]
    if m == n:
        return not hashes and a == b
    if not (0 < m < n and hashes):
        return False
    if m & (m - 1) == 0:
        hashes = [a, *hashes]
    fn, sn = m - 1, n - 1
    while fn % 2 == 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = hashes[0]
    for c in hashes[1:]:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            fr, sr = node(c, fr), node(c, sr)
            while fn % 2 == 0 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and fr == a and sr == b


def plain(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"_type_", "_data_"}:
            return plain(value["_data_"])
        return {k: plain(v) for k, v in value.items()}
    return [plain(v) for v in value] if isinstance(value, list) else value


def verify(bundle: dict[str, Any], pem: bytes, saved: dict[str, Any] | None) -> list[str]:
    """The problems found (none: verified)."""
    if bundle["format"] != "cronledger-evidence-bundle/1":
        return ["not a bundle"]
    checkpoint = bundle["checkpoint"]
    try:
        check_signature(checkpoint, pem)
    except ValueError as error:
        return [str(error)]
    root, size = bytes.fromhex(checkpoint["root_hash"]), checkpoint["tree_size"]
    problems = [f"deleted {d['position']}" for d in bundle["deleted"]]
    problems += [f"inserted {i['position']}" for i in bundle["inserted"]]
    for event in bundle["events"]:
        if event["aggregate_id"] != bundle["aggregate_id"]:
            problems.append(f"foreign {event['position']}")
        found = root_from_path(leaf_of(event), event["leaf_index"], size, event["inclusion_proof"])
        if found != root:
            problems.append(f"altered {event['position']}")
    versions = sorted({e["version"] for k in ("events", "deleted", "later") for e in bundle[k]})
    if versions != list(range(1, len(versions) + 1)):
        problems.append("versions left out")
    if saved is not None:
        proofs = [c["proof"] for c in bundle["consistency"] if c["from_size"] == saved["tree_size"]]
        old_root = bytes.fromhex(saved["root_hash"])
        if not consistent(saved["tree_size"], old_root, size, root, proofs[0] if proofs else []):
            problems.append("rewritten")
    return problems


DOCS = Path(__file__).parents[2] / "docs" / "audit.md"


def documented_keys() -> set[str]:
    """The keys docs/audit.md's tables describe (a row's first cell)."""
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    return {line.split("`")[1] for line in lines if line.startswith("| `")}


# -- a real bundle -----------------------------------------------------------------------------


@pytest.fixture
def world(store_url: str, tmp_path: Path) -> Iterator[World]:
    create_signing_key(tmp_path / "key.pem")
    clock = FakeClock()
    settings = Settings(database_url=store_url, signing_key_file=str(tmp_path / "key.pem"))
    opened = open_services(settings, clock)
    yield World(opened, clock)
    opened.close()


def an_instance(services: Services, world: World) -> tuple[str, dict[str, Any]]:
    """An approved instance's bundle, with a consistency proof from the checkpoint signed before
    its approval (returned too)."""
    token = services.directory.issue_token(world.root, "ann").token
    ann = services.directory.authenticate(token)
    assert ann is not None
    asked, _ = services.approvals.submit(ann, Submission("k", world.definition, "T", {}, 1, None))
    services.projector.catch_up()
    saved = services.evidence.checkpoint(force=True)
    assert saved is not None
    approve = Command("approve", "a1", {"material_version": 1})
    services.approvals.command(world.root, asked.id, approve)
    return asked.id, saved.as_json()


def test_a_verifier_written_from_the_docs_accepts_a_real_bundle_and_rejects_altered_ones(
    world: World,
) -> None:
    services = world.services
    key = services.evidence.key
    assert key is not None
    pem = key.public_pem().encode()
    instance, saved = an_instance(services, world)
    bundle = json.loads(
        json.dumps(services.evidence.bundle(uuid.UUID(instance), [saved["tree_size"]]))
    )

    assert verify(bundle, pem, saved) == []
    keys = {*bundle, *bundle["checkpoint"], *bundle["consistency"][0]}
    keys |= {k for name in ("events", "later") for item in bundle[name] for k in item}
    assert keys - documented_keys() == set()  # every key the bundle has is described
    states = [plain(json.loads(base64.b64decode(e["state"]))) for e in bundle["events"]]
    assert states[-1]["outcome"] == "APPROVED"
    assert states[-1]["command_id"] == "a1"

    altered = copy.deepcopy(bundle)
    state = bytearray(base64.b64decode(altered["events"][-1]["state"]))
    state[state.index(b"APPROVED")] ^= 1
    altered["events"][-1]["state"] = base64.b64encode(bytes(state)).decode()
    assert verify(altered, pem, saved) == [f"altered {bundle['events'][-1]['position']}"]

    left_out = copy.deepcopy(bundle)
    del left_out["events"][0]
    assert verify(left_out, pem, saved) == ["versions left out"]

    forged = copy.deepcopy(bundle)
    forged["checkpoint"]["signed_at"] = "2020-01-01T00:00:00.000000+00:00"
    assert verify(forged, pem, saved) == ["bad signature"]

    other = copy.deepcopy(saved)
    other["root_hash"] = "00" * 32  # a saved checkpoint of another history
    assert verify(bundle, pem, other) == ["rewritten"]
