"""Callback sources: registering, rotating and deleting them, and verifying their deliveries.

A delivery is a signing callback posted with Standard Webhooks headers (`webhook-id`,
`webhook-timestamp`, `webhook-signature`) and signed with its source's secret; the body's
`source` names the source, so the signature covers it (docs/webhooks.md#verified-callbacks).
A delivery that is not verified is refused before it reaches the instance, and counted here
by reason for `/metrics`.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from prometheus_client import Counter
from standardwebhooks import Webhook

from cronledger.application.directory import Page
from cronledger.application.idempotency import check_key, key_record
from cronledger.application.secrets import SecretKeyMissing, derived_secret
from cronledger.persistence.ledger import Ledger
from domain.approvals import ApprovalInstance
from domain.callback_sources import (
    KIND,
    SOURCE_NAME,
    CallbackSource,
    callback_source_uuid,
    check_source_name,
    source_actor,
    timestamp_problem,
)
from domain.directory import Principal, check_expected_version
from domain.errors import DomainError, NotFound, ValidationFailed
from domain.idempotency import KEY, KEY_RULE, KeyedRequest
from domain.messages import Message
from domain.permissions import APPROVAL_CALLBACK
from projections.callback_sources import (
    CallbackSourceRow,
    callback_source_page,
    callback_source_row,
)
from projections.keyset import Window

SECRET_KIND = "callback-source"  # noqa: S105 (what sources' secrets are derived for)
HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")
# Why a callback was refused (the reason label of `cronledger_callbacks_refused_total`).
UNSIGNED = "unsigned"  # neither signed nor sent with a bearer token
TIMESTAMP = "timestamp"  # webhook-timestamp unreadable, or more than 5 minutes off
SOURCE = "source"  # the body names no live source of the instance's tenant
SIGNATURE = "signature"  # no signature of the source's current secret matches
REASONS = (UNSIGNED, TIMESTAMP, SOURCE, SIGNATURE)
NOT_VERIFIED = Message(
    "no registered callback source of the instance's tenant signed this delivery"
)


class CallbackRefused(DomainError):
    """A callback that is not verified: 401, and nothing reaches the instance."""

    code = "UNAUTHENTICATED"

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True)
class SourceWithSecret:
    """A source and its current secret: answered once, when the secret is made."""

    source: CallbackSourceRow
    secret: str | None  # None: a replay, which never shows it again


class CallbackSources:
    def __init__(self, ledger: Ledger, secret_key: str) -> None:
        self.ledger = ledger
        self.secret_key = secret_key
        self.refusals = Counter(
            "cronledger_callbacks_refused",
            "Signing callbacks refused as not verified (401, not recorded), by reason",
            ["reason"],
            registry=None,
        )
        for reason in REASONS:
            self.refusals.labels(reason)

    # -- the sources -------------------------------------------------------------------------

    def create(
        self,
        actor: Principal,
        name: str,
        description: str,
        request: KeyedRequest | None = None,
    ) -> SourceWithSecret:
        """A new source, or a deleted one's name registered again; its secret, shown once.

        A repeat of a keyed `request` stops with `AlreadyCreated`."""
        return self.ledger.retrying(lambda: self._create(actor, name, description, request))

    def check_new(self, tenant_id: UUID, name: str) -> None:
        """A new source's name: of the right form, and no live source of the tenant has it."""
        check_source_name(name)
        source_id = callback_source_uuid(tenant_id, name)
        if self.ledger.exists(source_id):
            source = self.ledger.find(CallbackSource, source_id, KIND, name)
            if not source.deleted:
                raise ValidationFailed.of(
                    "name", Message("a callback source named {name} exists", name=name)
                )

    def _create(
        self, actor: Principal, name: str, description: str, request: KeyedRequest | None
    ) -> SourceWithSecret:
        check_key(self.ledger, request)
        check_source_name(name)
        source_id = callback_source_uuid(actor.tenant_id, name)
        at = self.ledger.clock()
        if self.ledger.exists(source_id):
            check_key(self.ledger, request)  # made by a request racing with the same key?
            source = self.ledger.find(CallbackSource, source_id, KIND, name)
            source.register_again(description, at, actor.account_id)
        else:
            source = CallbackSource(
                tenant_id=actor.tenant_id,
                name=name,
                description=description,
                generation=1,
                at=at,
                actor=actor.account_id,
            )
        secret = self._secret(source)  # before saving: without a key, nothing is registered
        self.ledger.save(source, key_record(request, KIND, str(source.id), at))
        return SourceWithSecret(CallbackSourceRow.of_aggregate(source), secret)

    def rotate_secret(
        self, actor: Principal, source_id: str, version: int | None, reason: str | None
    ) -> SourceWithSecret:
        """The source's next secret, shown once; the one before stops working at once."""
        source = self.aggregate(actor.tenant_id, source_id)
        check_expected_version(KIND, source.version, version)
        source.rotate_secret(self.ledger.clock(), actor.account_id, reason)
        secret = self._secret(source)
        self.ledger.save(source)
        return SourceWithSecret(CallbackSourceRow.of_aggregate(source), secret)

    def delete(
        self, actor: Principal, source_id: str, version: int | None, reason: str | None
    ) -> None:
        """Delete the source: its deliveries are refused from now on."""
        source = self.aggregate(actor.tenant_id, source_id)
        check_expected_version(KIND, source.version, version)
        source.delete(self.ledger.clock(), actor.account_id, reason)
        self.ledger.save(source)

    def source(self, tenant_id: UUID, source_id: str) -> CallbackSourceRow:
        """A live source of this tenant, from its row; another tenant's, a deleted one, or an
        id that is none, is not found."""
        try:
            wanted = UUID(source_id)
        except ValueError:
            raise NotFound(KIND, source_id) from None
        row = callback_source_row(self.ledger.store, tenant_id, wanted)
        if row is None:
            raise NotFound(KIND, source_id)
        return row

    def current(self, tenant_id: UUID, source_id: str) -> CallbackSourceRow:
        """A live source of this tenant as its log holds it now, never behind it as its row
        may be: what a write checks If-Match against and a repeated create answers."""
        return CallbackSourceRow.of_aggregate(self.aggregate(tenant_id, source_id))

    def sources(self, tenant_id: UUID, window: Window) -> Page[CallbackSourceRow]:
        """The tenant's live sources, oldest first, from their `callback_sources` rows."""
        found = callback_source_page(self.ledger.store, tenant_id, window)
        return Page.of(found.rows, window, found)

    def aggregate(self, tenant_id: UUID, source_id: str) -> CallbackSource:
        """A live source of this tenant; another tenant's, or a deleted one, is not found."""
        source = self.ledger.find_in_tenant(CallbackSource, source_id, KIND, tenant_id)
        source.check_live()
        return source

    def _secret(self, source: CallbackSource) -> str:
        return derived_secret(self.secret_key, SECRET_KIND, str(source.id), source.generation)

    # -- deliveries --------------------------------------------------------------------------

    def verify(
        self, instance_id: str, source_name: str, headers: Mapping[str, str], body: bytes
    ) -> Principal:
        """Who a signed delivery to the instance acts as: the live source of the instance's
        tenant that `source_name` names, if the delivery is signed with its current secret at
        a time within 5 minutes of the server's. Else CallbackRefused, counted by reason."""
        try:
            source = self._verified_source(instance_id, source_name, headers, body)
        except CallbackRefused as refused:
            self.refused(refused.reason)
            raise
        if not KEY.fullmatch(headers["webhook-id"]):
            raise ValidationFailed.of("webhook-id", KEY_RULE)
        return Principal(source.tenant_id, source_actor(source.id), frozenset({APPROVAL_CALLBACK}))

    def refused(self, reason: str) -> None:
        """Count a callback refused as not verified."""
        self.refusals.labels(reason).inc()

    def _verified_source(
        self, instance_id: str, source_name: str, headers: Mapping[str, str], body: bytes
    ) -> CallbackSource:
        if not all(headers.get(name) for name in HEADERS):
            raise CallbackRefused(
                SIGNATURE,
                Message("a signed delivery sends {headers}", headers=", ".join(HEADERS)),
            )
        sent_at = _instant(headers["webhook-timestamp"])
        if sent_at is None:
            raise CallbackRefused(
                TIMESTAMP, Message("webhook-timestamp is not whole seconds since 1970")
            )
        untimely = timestamp_problem(sent_at, self.ledger.clock())
        if untimely is not None:
            raise CallbackRefused(TIMESTAMP, untimely)
        source = self._named_source(instance_id, source_name)
        if source is None:
            raise CallbackRefused(SOURCE, NOT_VERIFIED)
        if not self._signed_by(source, headers, sent_at, body):
            raise CallbackRefused(SIGNATURE, NOT_VERIFIED)
        return source

    def _named_source(self, instance_id: str, name: str) -> CallbackSource | None:
        """The live source called `name` in the tenant of the instance, if both exist."""
        if not SOURCE_NAME.fullmatch(name):
            return None
        try:
            instance = self.ledger.find(
                ApprovalInstance, UUID(instance_id), "approval", instance_id
            )
            source_id = callback_source_uuid(instance.tenant_id, name)
            source = self.ledger.find(CallbackSource, source_id, KIND, name)
        except (ValueError, NotFound):
            return None
        return None if source.deleted else source

    def _signed_by(
        self, source: CallbackSource, headers: Mapping[str, str], sent_at: datetime, body: bytes
    ) -> bool:
        """Whether a `v1` signature of the header is the source's own over the delivery.

        The signature is made by `standardwebhooks` itself; its `verify` is not used because
        it checks the timestamp against the machine's clock, not the service's."""
        try:
            webhook = Webhook(self._secret(source))
            expected = webhook.sign(headers["webhook-id"], sent_at, body.decode("utf-8"))
        except (SecretKeyMissing, UnicodeDecodeError):
            return False
        given = headers["webhook-signature"].split(" ")
        return any(hmac.compare_digest(expected.encode(), sig.encode()) for sig in given)


def _instant(seconds: str) -> datetime | None:
    """A `webhook-timestamp` (whole seconds since 1970, UTC) as an instant; None if it is not."""
    if not seconds.isascii() or not seconds.isdigit() or len(seconds) > 11:  # 11: year 5138
        return None
    return datetime.fromtimestamp(int(seconds), UTC)
