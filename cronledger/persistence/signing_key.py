"""The service's Ed25519 signing key, kept in a PEM file only its owner can read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from cronledger.persistence.secret_files import create_once
from cronledger.persistence.store import Store
from domain.evidence import key_id_of

DEFAULT_POSTGRESQL_KEY = "var/cronledger-signing-key.pem"


class SigningKeyError(Exception):
    """A key file that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class SigningKey:
    private: Ed25519PrivateKey
    path: Path

    @property
    def key_id(self) -> str:
        return key_id_of(self.private.public_key())

    def sign(self, message: bytes) -> bytes:
        return self.private.sign(message)

    def public_pem(self) -> str:
        return (
            self.private.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )


def signing_key_path(configured: str, store: Store) -> Path:
    """CRONLEDGER_SIGNING_KEY_FILE, else beside a SQLite file, else var/ under the working
    directory."""
    if configured:
        return Path(configured)
    if store.kind == "sqlite":
        return Path(f"{store.sqlite_path}.signing-key.pem")
    return Path(DEFAULT_POSTGRESQL_KEY)


def load_signing_key(path: Path) -> SigningKey | None:
    """The key in `path`; None when there is no file; SigningKeyError when it is unusable."""
    try:
        pem = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise SigningKeyError(f"cannot read the signing key {path}: {error}") from None
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except ValueError as error:
        raise SigningKeyError(f"{path} holds no PEM private key: {error}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{path} holds a private key that is not Ed25519")
    return SigningKey(key, path)


def create_signing_key(path: Path) -> SigningKey:
    """A new key in a new file (owner read and write only); one made meanwhile by another
    process is loaded instead."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    if not create_once(path, pem):
        found = load_signing_key(path)
        if found is None:
            raise SigningKeyError(f"{path} vanished while it was being created")
        return found
    return SigningKey(key, path)
