"""The secret keys events are authenticated with when written (HMAC-SHA256, docs/audit.md), kept
in a file only its owner can read: the newest key writes, the older ones still verify."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cronledger.persistence.secret_files import create_once, replace_whole

if TYPE_CHECKING:
    from cronledger.persistence.store import Store

DEFAULT_POSTGRESQL_KEYS = "var/cronledger-event-keys"
KEYS_FORMAT = "cronledger-event-keys/1"
SECRET_BYTES = 32
KEYS_VARIABLE = "CRONLEDGER_EVENT_KEYS_FILE"


class EventKeyError(Exception):
    """A key file that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class EventKey:
    secret: bytes = field(repr=False)
    created_at: str

    @property
    def key_id(self) -> str:
        """Derived from the secret (which it does not reveal): a SHA-256 prefix."""
        return hashlib.sha256(b"cronledger-event-key-id\x00" + self.secret).hexdigest()[:16]


@dataclass(frozen=True)
class EventKeys:
    """The keys of a file, oldest first; the newest writes."""

    keys: tuple[EventKey, ...]
    path: Path

    @property
    def writer(self) -> EventKey:
        return self.keys[-1]

    def by_id(self, key_id: str) -> EventKey | None:
        return next((key for key in self.keys if key.key_id == key_id), None)


def event_keys_path(configured: str, store: Store) -> Path:
    """CRONLEDGER_EVENT_KEYS_FILE, else beside a SQLite file, else var/ under the working
    directory."""
    if configured:
        return Path(configured)
    if store.kind == "sqlite":
        return Path(f"{store.sqlite_path}.event-keys")
    return Path(DEFAULT_POSTGRESQL_KEYS)


def load_event_keys(path: Path) -> EventKeys | None:
    """The keys in `path`; None when there is no file; EventKeyError when it is unusable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise EventKeyError(f"cannot read the event keys {path}: {error}") from None
    try:
        document = json.loads(text)
        if document["format"] != KEYS_FORMAT or not document["keys"]:
            raise ValueError(f"not a {KEYS_FORMAT} file with at least one key")
        keys = tuple(_key(entry) for entry in document["keys"])
    except (ValueError, KeyError, TypeError, binascii.Error) as error:
        raise EventKeyError(f"{path} holds no usable event keys: {error}") from None
    return EventKeys(keys, path)


def _key(entry: dict[str, Any]) -> EventKey:
    secret = base64.b64decode(entry["secret"], validate=True)
    if len(secret) < SECRET_BYTES:
        raise ValueError(f"a key of {len(secret)} bytes, fewer than {SECRET_BYTES}")
    return EventKey(secret, str(entry["created_at"]))


def create_event_keys(path: Path, now: datetime) -> EventKeys:
    """A new file holding one new key (owner read and write only); a file made meanwhile by
    another process is loaded instead."""
    keys = (_new_key(now),)
    if not create_once(path, _document(keys)):
        found = load_event_keys(path)
        if found is None:
            raise EventKeyError(f"{path} vanished while it was being created")
        return found
    return EventKeys(keys, path)


def rotate_event_keys(path: Path, now: datetime) -> EventKeys:
    """The file with one more key, the new writer; the older keys stay to verify."""
    found = load_event_keys(path)
    if found is None:
        raise EventKeyError(
            f"there are no event keys at {path} to rotate: run `cronledger migrate`"
        )
    keys = (*found.keys, _new_key(now))
    replace_whole(path, _document(keys))
    return EventKeys(keys, path)


def _new_key(now: datetime) -> EventKey:
    created_at = now.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return EventKey(secrets.token_bytes(SECRET_BYTES), created_at)


def _document(keys: Sequence[EventKey]) -> bytes:
    """The file's text holding `keys`."""
    document = {
        "format": KEYS_FORMAT,
        "keys": [
            {
                "key_id": key.key_id,
                "created_at": key.created_at,
                "secret": base64.b64encode(key.secret).decode(),
            }
            for key in keys
        ],
    }
    return (json.dumps(document, indent=2) + "\n").encode()
