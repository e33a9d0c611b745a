"""A checkpoint's signature checks with OpenSSL alone, as docs/audit.md tells an auditor."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from domain.evidence import Checkpoint, key_id_of
from tests.support import needed

OPENSSL = shutil.which("openssl")
RECIPE = ("-in", "message", "-sigfile", "signature.bin")


def signed(key: Ed25519PrivateKey) -> Checkpoint:
    root, at, key_id = (
        bytes(range(32)),
        "2026-12-03T15:51:40.275867+00:00",
        key_id_of(key.public_key()),
    )
    unsigned = Checkpoint(13, root, 13, at, key_id)
    return Checkpoint(13, root, 13, at, key_id, key.sign(unsigned.message()))


def openssl_verifies(checkpoint: dict[str, object], folder: Path, public_pem: bytes) -> bool:
    """The documented recipe: the five lines, the decoded signature, `openssl pkeyutl`."""
    lines = [checkpoint[k] for k in ("format", "tree_size", "root_hash", "signed_at", "key_id")]
    (folder / "message").write_text("".join(f"{line}\n" for line in lines))
    (folder / "signature.bin").write_bytes(base64.b64decode(str(checkpoint["signature"])))
    (folder / "service.pem").write_bytes(public_pem)
    assert OPENSSL is not None
    done = subprocess.run(
        [OPENSSL, "pkeyutl", "-verify", "-pubin", "-inkey", "service.pem", "-rawin", *RECIPE],
        cwd=folder,
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def test_openssl_checks_an_exported_checkpoint_and_refuses_an_altered_one(tmp_path: Path) -> None:
    needed(None if OPENSSL else "openssl is not installed")
    key = Ed25519PrivateKey.generate()
    pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    exported = signed(key).as_json()
    assert openssl_verifies(exported, tmp_path, pem)
    assert not openssl_verifies({**exported, "tree_size": 14}, tmp_path, pem)
