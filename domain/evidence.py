"""Evidence anyone can check offline: leaves, signed checkpoints and bundles (docs/audit.md).

Nothing here reads a store or a clock: a bundle, a public key and optionally a checkpoint saved
earlier are all `verify_bundle` needs.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from domain.approvals import STATE_AFTER, TERMINAL
from domain.merkle import ProofError, leaf_hash, root_from_inclusion, verify_consistency
from domain.runs import SKIPPED_CALENDAR, SKIPPED_MISSED, SKIPPED_OVERLAP, SUCCEEDED

CHECKPOINT_FORMAT = "cronledger-checkpoint/1"
BUNDLE_FORMAT = "cronledger-evidence-bundle/1"
LEAF_HEAD = struct.Struct(">Q16sQH")
ENDED_RUN = frozenset(
    {SUCCEEDED, SKIPPED_OVERLAP, SKIPPED_MISSED, SKIPPED_CALENDAR}
)  # never retried


class EvidenceError(ValueError):
    """A checkpoint or bundle that cannot be read, or does not prove what it claims."""


def event_leaf(
    position: int, originator_id: object, version: int, topic: str, state: object
) -> bytes:
    """The bytes a leaf hashes: position (8 bytes, big-endian), the aggregate id (16 bytes),
    version (8 bytes), the topic (2-byte length, then UTF-8) and the state exactly as stored."""
    aggregate = originator_id if isinstance(originator_id, UUID) else UUID(str(originator_id))
    encoded_topic = topic.encode()
    head = LEAF_HEAD.pack(position, aggregate.bytes, version, len(encoded_topic))
    return head + encoded_topic + _stored_bytes(state)


def _stored_bytes(state: object) -> bytes:
    """Bytes as they are; anything else (only an edit of the database stores it) as its type
    and text, so it never hashes like the bytes that were signed."""
    if isinstance(state, bytes | bytearray | memoryview):
        return bytes(state)
    return f"\x00{type(state).__name__}:{state!r}".encode()


def key_id_of(public_key: Ed25519PublicKey) -> str:
    """A short name for a public key: the first 8 bytes of SHA-256 of its raw form, in hex."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def public_key_from_pem(pem: bytes) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(pem)
    except ValueError as error:
        raise EvidenceError(f"not a PEM public key: {error}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise EvidenceError("the public key is not an Ed25519 key")
    return key


@dataclass(frozen=True)
class Checkpoint:
    """A signed tree head: the tree of the log's first `tree_size` events had `root`."""

    tree_size: int
    root: bytes
    position: int  # the log position of the tree's last event
    signed_at: str  # ISO 8601, UTC
    key_id: str
    signature: bytes = b""

    def message(self) -> bytes:
        """What the signature covers (the position is not: each leaf holds its own)."""
        return (
            f"{CHECKPOINT_FORMAT}\n{self.tree_size}\n{self.root.hex()}\n"
            f"{self.signed_at}\n{self.key_id}\n"
        ).encode()

    def as_json(self) -> dict[str, Any]:
        return {
            "format": CHECKPOINT_FORMAT,
            "tree_size": self.tree_size,
            "root_hash": self.root.hex(),
            "position": self.position,
            "signed_at": self.signed_at,
            "key_id": self.key_id,
            "signature": base64.b64encode(self.signature).decode(),
        }

    @classmethod
    def from_json(cls, data: object) -> Checkpoint:
        if not isinstance(data, Mapping) or data.get("format") != CHECKPOINT_FORMAT:
            raise EvidenceError(f'not a checkpoint: it needs "format": "{CHECKPOINT_FORMAT}"')
        try:
            return cls(
                tree_size=_count(data["tree_size"]),
                root=_hash(data["root_hash"]),
                position=_count(data["position"]),
                signed_at=str(data["signed_at"]),
                key_id=str(data["key_id"]),
                signature=base64.b64decode(str(data["signature"]), validate=True),
            )
        except (KeyError, TypeError, ValueError, binascii.Error) as error:
            raise EvidenceError(f"the checkpoint cannot be read: {error!r}") from None

    def check_signature(self, public_key: Ed25519PublicKey) -> None:
        """Raise EvidenceError unless `public_key` signed this checkpoint."""
        given = key_id_of(public_key)
        if given != self.key_id:
            raise EvidenceError(
                f"the checkpoint of tree size {self.tree_size} was signed by key {self.key_id}, "
                f"not by the public key given ({given})"
            )
        try:
            public_key.verify(self.signature, self.message())
        except InvalidSignature:
            raise EvidenceError(
                f"the signature of the checkpoint of tree size {self.tree_size} is not valid: "
                "the checkpoint was altered after it was signed"
            ) from None


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{value!r} is not a count")
    return value


def _hash(value: object) -> bytes:
    hashed = bytes.fromhex(str(value))  # a public hash: its length is no secret
    if len(hashed) != 32:
        raise ValueError(f"{value!r} is not a SHA-256 hash")
    return hashed


HEADLINE = ("outcome", "reason_code", "reason", "command_id")  # told first, when an event has them


@dataclass(frozen=True)
class ProvenEvent:
    """One event a bundle proves was in the signed log, as a reader sees it: `fields` is its
    state decoded (each `{"_type_", "_data_"}` value as its `_data_`)."""

    position: int
    version: int
    type: str
    at: datetime | None
    actor: str | None
    fields: dict[str, Any] = field(default_factory=dict)

    def told(self) -> list[tuple[str, Any]]:
        """Its fields, the headline ones (outcome, reason, command id) first, then the others
        as stored; the instant and actor are told apart."""
        rest = [k for k in self.fields if k not in (*HEADLINE, "at", "actor", "timestamp")]
        return [(k, self.fields[k]) for k in (*HEADLINE, *rest) if self.fields.get(k) is not None]

    @property
    def final(self) -> bool:
        """Whether the aggregate is over after it: an instance decided, withdrawn or expired, a
        run that ended for good, or anything deleted. Others may have later events."""
        outcome = self.fields.get("outcome")
        status = self.fields.get("status")
        return (
            self.type.endswith(".Deleted")
            or (isinstance(outcome, str) and STATE_AFTER.get(outcome) in TERMINAL)
            or status in ENDED_RUN
        )


@dataclass
class BundleReport:
    """What a bundle proved, and each way it failed (empty `problems`: all of it holds)."""

    aggregate_id: str
    checkpoint: Checkpoint | None = None
    proven: list[ProvenEvent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what it cannot prove: never a failure
    relation: str | None = None  # how a linked instance's bundle is linked to the one holding it
    linked: list[BundleReport] = field(default_factory=list)  # each checked as a bundle alone


def verify_bundle(
    bundle: object, public_key: Ed25519PublicKey, saved: Checkpoint | None = None
) -> BundleReport:
    """Check every proof in a bundle, its checkpoint's signature and, given a checkpoint saved
    earlier, that the log only grew since; nothing is taken on trust from the bundle."""
    if not isinstance(bundle, Mapping) or bundle.get("format") != BUNDLE_FORMAT:
        raise EvidenceError(f'not an evidence bundle: it needs "format": "{BUNDLE_FORMAT}"')
    report = BundleReport(str(bundle.get("aggregate_id", "")))
    checkpoint = Checkpoint.from_json(bundle.get("checkpoint"))
    checkpoint.check_signature(public_key)
    report.checkpoint = checkpoint
    for entry in _entries(bundle, "events"):
        _check_event(entry, checkpoint, report)
    for entry in _entries(bundle, "deleted"):
        report.problems.append(
            f"position {entry.get('position')} (version {entry.get('version')}): deleted: the "
            "signed tree holds this event, the log no longer does"
        )
    for entry in _entries(bundle, "inserted"):
        report.problems.append(
            f"position {entry.get('position')} (version {entry.get('version')}): inserted: the "
            "log holds this event, the signed tree it should be in does not"
        )
    for entry in _entries(bundle, "later"):
        report.notes.append(
            f"position {entry.get('position')} (version {entry.get('version')}) came after the "
            "checkpoint: not proven by this bundle"
        )
    _check_versions(report, _versions(bundle))
    if saved is not None:
        _check_grew(bundle, saved, checkpoint, public_key, report)
        _warn_past_saved(saved, report)
    _warn_later(bundle, checkpoint, report)
    for linked in _entries(bundle, "linked"):
        _check_linked(linked, public_key, saved, report)
    return report


def _check_linked(
    linked: Mapping[str, Any],
    public_key: Ed25519PublicKey,
    saved: Checkpoint | None,
    report: BundleReport,
) -> None:
    """A linked instance's bundle, checked as a bundle alone; its problems are the holder's."""
    found = verify_bundle({**linked, "linked": []}, public_key, saved)
    found.relation = str(linked.get("relation", ""))
    report.linked.append(found)
    report.problems.extend(
        f"linked instance {found.aggregate_id} ({found.relation}): {problem}"
        for problem in found.problems
    )


def _warn_past_saved(saved: Checkpoint, report: BundleReport) -> None:
    """Events after the saved checkpoint's last position: no checkpoint the auditor kept holds
    them, so they were written after it was signed, whatever instant they carry."""
    past = [e.position for e in report.proven if e.position > saved.position]
    if past:
        report.warnings.append(
            f"positions {past[0]} to {past[-1]} come after your saved checkpoint (tree size "
            f"{saved.tree_size}, last position {saved.position}, signed {saved.signed_at}): "
            "only the bundle's checkpoint holds them, so they were written after yours was "
            "signed, whatever instant they carry; save a newer checkpoint to hold them"
        )


def _warn_later(bundle: Mapping[str, Any], checkpoint: Checkpoint, report: BundleReport) -> None:
    """The aggregate may have events this bundle does not hold: it lists some, or its last
    event does not end the aggregate."""
    later = _entries(bundle, "later")
    last = report.proven[-1] if report.proven else None
    if later:
        report.warnings.append(
            f"the aggregate has {len(later)} later event(s) than the bundle's checkpoint (tree "
            f"size {checkpoint.tree_size}) proves: ask for a newer bundle to prove them"
        )
    elif last is not None and not last.final:
        report.warnings.append(
            f"the aggregate may have later events than this bundle holds: its last one here "
            f"(position {last.position}, version {last.version}, {last.type}) does not end it, "
            f"and the bundle tells nothing after its checkpoint (tree size "
            f"{checkpoint.tree_size}, signed {checkpoint.signed_at}); ask for a newer bundle"
        )


def _entries(bundle: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    entries = bundle.get(key, [])
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise EvidenceError(f"the bundle's {key!r} is not a list of objects")
    return entries


def _check_event(entry: Mapping[str, Any], checkpoint: Checkpoint, report: BundleReport) -> None:
    position = entry.get("position")
    try:
        state = base64.b64decode(str(entry["state"]), validate=True)
        leaf = leaf_hash(
            event_leaf(
                _count(position),
                str(entry["aggregate_id"]),
                _count(entry["version"]),
                str(entry["topic"]),
                state,
            )
        )
        path = [_hash(h) for h in entry["inclusion_proof"]]
        index = _count(entry["leaf_index"])
        proven = root_from_inclusion(leaf, index, checkpoint.tree_size, path) == checkpoint.root
    except ProofError as error:
        report.problems.append(f"position {position}: {error}")
        return
    except (KeyError, TypeError, ValueError, binascii.Error) as error:
        report.problems.append(f"position {position}: the entry cannot be read: {error!r}")
        return
    if str(entry["aggregate_id"]) != report.aggregate_id:
        report.problems.append(f"position {position}: an event of another aggregate")
    elif not proven:
        report.problems.append(
            f"position {position} (version {entry['version']}): altered: this event, as the log "
            f"holds it now, is not leaf {index} of the signed tree of {checkpoint.tree_size}"
        )
    else:
        report.proven.append(_proven(_count(position), _count(entry["version"]), entry, state))


def _proven(position: int, version: int, entry: Mapping[str, Any], state: bytes) -> ProvenEvent:
    """The event as a reader sees it: its type, instant and actor, read from its state (the
    instant its command was accepted, `at`, as timelines show it; else its `timestamp`)."""
    try:
        fields = json.loads(state)
    except ValueError:
        fields = {}
    stamp = (fields.get("at") or fields.get("timestamp")) if isinstance(fields, dict) else None
    text = stamp.get("_data_") if isinstance(stamp, dict) else stamp
    at = None
    if isinstance(text, str):
        try:
            at = datetime.fromisoformat(text).astimezone(UTC)
        except ValueError:
            at = None
    actor = fields.get("actor") if isinstance(fields, dict) else None
    return ProvenEvent(
        position,
        version,
        str(entry["topic"]).rpartition(":")[2] or str(entry["topic"]),
        at,
        actor if isinstance(actor, str) else None,
        plain(fields) if isinstance(fields, dict) else {},
    )


def plain(value: Any) -> Any:
    """Stored JSON as a reader reads it: an encoded value (exactly the keys `_type_` and
    `_data_`: an instant, a UUID, a caller's form as its text...) as its `_data_`."""
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        if set(value) == {"_type_", "_data_"}:
            return plain(value["_data_"])
        return {key: plain(item) for key, item in value.items()}
    return value


def _versions(bundle: Mapping[str, Any]) -> list[int]:
    """The versions of the aggregate's own history: proven or not, deleted, or later (an
    inserted event's version is the forger's choice)."""
    entries = [e for key in ("events", "deleted", "later") for e in _entries(bundle, key)]
    return [v for e in entries if isinstance(v := e.get("version"), int)]


def _check_versions(report: BundleReport, versions: list[int]) -> None:
    """An aggregate's versions run 1, 2, 3...: a gap is an event the bundle leaves out."""
    expected = 1
    for version in sorted(set(versions)):
        if version > expected:
            report.problems.append(
                f"versions {expected} to {version - 1} are missing: events were left out"
            )
        expected = version + 1


def _check_grew(
    bundle: Mapping[str, Any],
    saved: Checkpoint,
    checkpoint: Checkpoint,
    public_key: Ed25519PublicKey,
    report: BundleReport,
) -> None:
    saved.check_signature(public_key)
    if saved.tree_size > checkpoint.tree_size:
        report.problems.append(
            f"the saved checkpoint (tree size {saved.tree_size}) is newer than the bundle's "
            f"({checkpoint.tree_size}): ask for a newer bundle"
        )
        return
    proofs = [p for p in _entries(bundle, "consistency") if p.get("from_size") == saved.tree_size]
    if not proofs and saved.tree_size < checkpoint.tree_size:
        report.problems.append(
            f"the bundle holds no consistency proof from tree size {saved.tree_size}: ask for "
            f"one (`cronledger audit bundle ID --since {saved.tree_size}`)"
        )
        return
    try:
        path = [_hash(h) for h in proofs[0].get("proof", [])] if proofs else []
        verify_consistency(saved.tree_size, checkpoint.tree_size, saved.root, checkpoint.root, path)
    except (TypeError, ValueError) as error:
        report.problems.append(
            f"the log was rewritten since the saved checkpoint (tree size {saved.tree_size}, "
            f"signed {saved.signed_at}): {error}"
        )
        return
    report.notes.append(
        f"the log only grew since the saved checkpoint (tree size {saved.tree_size}, signed "
        f"{saved.signed_at})"
    )


def consistency_problem(
    old: Checkpoint, new: Checkpoint, proof: Sequence[bytes], public_key: Ed25519PublicKey
) -> str | None:
    """Why `new` does not extend `old`, or None when the proof shows it does."""
    try:
        old.check_signature(public_key)
        new.check_signature(public_key)
        verify_consistency(old.tree_size, new.tree_size, old.root, new.root, proof)
    except EvidenceError as error:
        return str(error)
    except ProofError as error:
        return (
            f"the log was rewritten between the checkpoint of tree size {old.tree_size} "
            f"(signed {old.signed_at}) and that of {new.tree_size}: {error}"
        )
    return None
