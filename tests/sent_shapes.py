"""What the service sends on its own, checked against the OpenAPI document's schemas for it:
each webhook message against its event type's under `x-webhooks`, each frame of the event
stream against the one its `event:` names under `x-sse-frames`. The schemas are closed for the
check, so a field the document does not declare fails, and so does a required one missing."""

from __future__ import annotations

import copy
import functools
import tempfile
from typing import Any

from openapi_schema_validator import OAS30ReadValidator, oas30_format_checker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from cronledger.application.services import open_services
from cronledger.config import Settings
from tests.support import FakeClock
from web import create_app

DOCUMENT_URI = "urn:cronledger:openapi:sent"
STREAM = "/api/events/stream"
ANY_EVENT = "*"  # the frames of the log's events, named by their type


def closed(schema: Any) -> Any:
    """The schema with every object of named properties refusing any other."""
    if isinstance(schema, dict):
        schema = {key: closed(value) for key, value in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
    elif isinstance(schema, list):
        schema = [closed(value) for value in schema]
    return schema


class SentShapes:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        strict = {"components": closed(copy.deepcopy(document["components"]))}
        self.registry: Registry[Any] = Registry().with_resource(
            DOCUMENT_URI, Resource(contents=strict, specification=DRAFT4)
        )

    def check_message(self, message: dict[str, Any]) -> None:
        """A webhook message's body, which must match its type's schema."""
        hook = self.document["x-webhooks"].get(message.get("type"))
        assert hook is not None, f"no webhook of type {message.get('type')} in the document"
        schema = hook["post"]["requestBody"]["content"]["application/json"]["schema"]
        self._check(schema["$ref"], message)

    def check_frame(self, event: str, data: Any) -> None:
        """A frame's `data`, which must match the schema of its `event:` name."""
        stream = self.document["paths"][STREAM]["get"]["responses"]["200"]
        frames = stream["content"]["text/event-stream"]["x-sse-frames"]
        self._check(frames.get(event, frames[ANY_EVENT])["$ref"], data)

    def _check(self, reference: str, value: Any) -> None:
        schema = {"$ref": DOCUMENT_URI + reference}
        validator = OAS30ReadValidator(
            schema, registry=self.registry, format_checker=oas30_format_checker
        )
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(value)]
        assert not errors, f"{reference} does not match {value}: {errors}"


@functools.cache
def sent_shapes() -> SentShapes:
    """The shapes as the document gives them, read once from an app on a store of its own (the
    document does not depend on the store)."""
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(database_url=f"sqlite:///{folder}/document.sqlite")
        services = open_services(settings, FakeClock())
        try:
            client = create_app({"SERVICES": services, "TESTING": True}).test_client()
            document = client.get("/api/openapi.json").json
        finally:
            services.close()
    return SentShapes(document)
