"""Signing secrets of webhook subscriptions and callback sources, derived, never stored.

A secret is the HMAC of the service's `CRONLEDGER_SECRET_KEY` over what it belongs to and its
generation (which rotation made it). Events hold only the generation: the secret itself is
shown once, when it is made, and is in no event, log line or table. Every process with the same
key derives the same secret; changing the key changes every secret (docs/webhooks.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from domain.errors import InvalidState

PREFIX = "whsec_"  # the Standard Webhooks form: `whsec_` and the key in base64


class SecretKeyMissing(InvalidState):
    """Signing secrets need a fixed `CRONLEDGER_SECRET_KEY` shared by every process."""

    def __init__(self) -> None:
        super().__init__("set CRONLEDGER_SECRET_KEY (the same in every process) to sign messages")


def derived_secret(master_key: str, kind: str, owner_id: str, generation: int) -> str:
    """The secret of `owner_id` (a subscription or a source, by `kind`) at `generation`."""
    if not master_key:
        raise SecretKeyMissing()
    message = f"cronledger/{kind}/{owner_id}/{generation}".encode()
    digest = hmac.new(master_key.encode(), message, hashlib.sha256).digest()
    return PREFIX + base64.b64encode(digest).decode()
