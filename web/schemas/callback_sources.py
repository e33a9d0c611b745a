"""Shapes of callback sources (docs/api.md#callback-sources)."""

from __future__ import annotations

from marshmallow import (
    fields,
)

from domain.callback_sources import MAX_DESCRIPTION, SOURCE_NAME, SOURCE_NAME_RULE
from projections.callback_sources import CALLBACK_SOURCE_LISTING
from web.schemas import validate
from web.schemas.base import OutSchema, StrictSchema, UtcDateTime, list_query, server_uuid


class CallbackSourceCreate(StrictSchema):
    name = fields.String(
        required=True,
        validate=validate.Regexp(f"^{SOURCE_NAME.pattern}$", error=SOURCE_NAME_RULE),
        metadata={
            "description": "unique among the tenant's sources; a signed delivery names it in "
            "its body's `source`"
        },
    )
    description = fields.String(load_default="", validate=validate.Length(max=MAX_DESCRIPTION))


class CallbackSourceOut(OutSchema):
    id = server_uuid(metadata={"description": "signed deliveries act as `source:<id>`"})
    name = fields.String()
    description = fields.String()
    generation = fields.Integer(
        metadata={"description": "which secret is current: 1, then one more at each rotation"}
    )
    created_at = UtcDateTime()
    secret_created_at = UtcDateTime(metadata={"description": "when the current secret was made"})
    version = fields.Integer()


class CallbackSourceSecretOut(CallbackSourceOut):
    secret = fields.String(
        allow_none=True,
        metadata={
            "description": "the signing secret (Standard Webhooks, `whsec_` and base64), shown "
            "in this answer only; null on a replay of the request"
        },
    )


CallbackSourceListQuery = list_query(
    "CallbackSourceListQuery", CALLBACK_SOURCE_LISTING, "name or description"
)
