"""The document's examples: on every body, valid against their schemas, a problem document for
every code, and the only bodies README.md and docs/api.md show."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import g
from flask.testing import FlaskClient
from marshmallow import Schema, ValidationError
from openapi_schema_validator import (
    OAS30ReadValidator,
    OAS30Validator,
    OAS30WriteValidator,
    oas30_format_checker,
)
from referencing import Registry
from referencing.jsonschema import DRAFT4

import web.schemas
from web.examples import EXAMPLES
from web.problems import STATUS_OF_CODE, problem

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT_URI = "urn:cronledger:openapi"
JSON_TYPES = ("application/json", "application/problem+json", "application/merge-patch+json")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
CURL_BODY = re.compile(r"(?:-d|--data(?:-raw)?) '([^']*)'")
SELF = ("responses", "200", "content")  # of GET /api/openapi.json, the document itself
ANSWER_COMMENT = re.compile(r"#\s*(\{.*\})\s*$", re.MULTILINE)
# A value a snippet splices into its single-quoted body from the shell ('"$SCHEDULE_ID"', an id
# an earlier answer gave; '"$(date ...)"'): it stands for any example's value at that place.
SHELL_VALUE = re.compile(r""""?'"\$(?:\w+|\([^)]*\))"'"?""")
SPLICED = "<from the shell>"


def pointer(*parts: str) -> str:
    """A JSON pointer into the document (RFC 6901)."""
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def bodies(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(`request` or the answer's status, pointer, media type object) of every JSON body; an
    answer shared under `components/responses` comes once for each operation giving it."""
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            for kind, media_type in content.items():
                if kind in JSON_TYPES:
                    where = pointer("paths", path, method, "requestBody", "content", kind)
                    yield "request", where, media_type
            for status, answer in operation["responses"].items():
                place: tuple[str, ...] = ("paths", path, method, "responses", status)
                if "$ref" in answer:
                    place = ("components", "responses", answer["$ref"].rpartition("/")[2])
                    answer = resolve(document, answer)
                for kind, media_type in answer.get("content", {}).items():
                    if kind in JSON_TYPES:
                        yield status, pointer(*place, "content", kind), media_type


def resolve(document: dict[str, Any], reference: dict[str, Any]) -> dict[str, Any]:
    found: Any = document
    for part in reference["$ref"].removeprefix("#/").split("/"):
        found = found[part.replace("~1", "/").replace("~0", "~")]
    return found  # type: ignore[no-any-return]


def examples_of(media_type: dict[str, Any]) -> dict[str, Any]:
    named = {name: example["value"] for name, example in media_type.get("examples", {}).items()}
    return named | ({"example": media_type["example"]} if "example" in media_type else {})


Validator = type[OAS30Validator]


def every_example(document: dict[str, Any]) -> Iterator[tuple[Validator, str, str, Any]]:
    """(validator, schema's pointer, example's name, value) of every example of the document:
    request bodies are checked as written (no readOnly field), answers as read."""
    for name, schema in document["components"]["schemas"].items():
        if "example" in schema:
            yield (
                OAS30Validator,
                pointer("components", "schemas", name),
                "example",
                schema["example"],
            )
    for direction, where, media_type in bodies(document):
        validator = OAS30WriteValidator if direction == "request" else OAS30ReadValidator
        for name, value in examples_of(media_type).items():
            yield validator, where + "/schema", name, value


def canonical(value: Any) -> str:
    """JSON text that tells `1`, `1.0` and `true` apart and ignores key order."""
    return json.dumps(value, sort_keys=True)


def test_every_request_and_response_body_has_examples(openapi_document: dict[str, Any]) -> None:
    """All but the document's own answer, which is the document."""
    bare = [
        where for _, where, media_type in bodies(openapi_document) if not examples_of(media_type)
    ]
    assert bare == [pointer("paths", "/api/openapi.json", "get", *SELF, "application/json")]


def test_an_answer_s_examples_have_its_status(openapi_document: dict[str, Any]) -> None:
    """A 404 shows a problem document of status 404, not one of another status."""
    misplaced = {
        f"{where} ({name}: {value['status']})"
        for status, where, media_type in bodies(openapi_document)
        if status.isdigit()
        for name, value in examples_of(media_type).items()
        if isinstance(value, dict)
        and isinstance(value.get("status"), int)  # a problem's (a run's status is a word)
        and value["status"] != int(status)
    }
    assert sorted(misplaced) == []


def test_the_examples_are_of_the_documents_body_schemas(openapi_document: dict[str, Any]) -> None:
    """Each body schema has examples here, and no name here is stale."""
    schemas = openapi_document["components"]["schemas"]
    used = {
        found.rpartition("/")[2]
        for _, _, media_type in bodies(openapi_document)
        for found in re.findall(r'"\$ref": "([^"]+)"', json.dumps(media_type.get("schema", {})))
        if _is_body(media_type.get("schema", {}), found)
    }
    assert set(EXAMPLES) - set(schemas) == set()
    assert used - set(EXAMPLES) == set()


def _is_body(schema: dict[str, Any], reference: str) -> bool:
    """Whether `reference` is the body schema itself, or one of its `oneOf` alternatives."""
    alternatives = [schema, *schema.get("oneOf", [])]
    return any(alternative.get("$ref") == reference for alternative in alternatives)


def test_every_example_is_valid_against_its_schema(openapi_document: dict[str, Any]) -> None:
    registry: Registry[Any] = Registry().with_resource(
        DOCUMENT_URI, DRAFT4.create_resource(openapi_document)
    )
    invalid = []
    for validator, where, name, value in every_example(openapi_document):
        schema = {"$ref": f"{DOCUMENT_URI}#{where}"}
        checking = validator(schema, registry=registry, format_checker=oas30_format_checker)
        invalid += [
            f"{where} ({name}) at /{'/'.join(map(str, error.absolute_path))}: {error.message}"
            for error in checking.iter_errors(value)
        ]
    assert invalid == []


def test_the_request_examples_load_as_the_server_loads_them(
    openapi_document: dict[str, Any],
) -> None:
    """Beyond the document: the marshmallow schema's own checks take each request example."""
    requests = {
        schema["$ref"].rpartition("/")[2]
        for direction, _, media_type in bodies(openapi_document)
        if direction == "request"
        for schema in [media_type["schema"], *media_type["schema"].get("oneOf", [])]
        if "$ref" in schema
    }
    refused = {
        f"{name} ({example}): {error.messages}"
        for name in sorted(requests)
        for example, value in EXAMPLES[name].items()
        for error in _load_errors(_schema_named(name)(), value)
    }
    assert sorted(refused) == []


def _schema_named(name: str) -> type[Schema]:
    """A request body's schema, from the module of web/schemas/ that declares it."""
    for module in pkgutil.iter_modules(web.schemas.__path__, "web.schemas."):
        found = getattr(importlib.import_module(module.name), name, None)
        if found is not None:
            return found  # type: ignore[no-any-return]
    raise LookupError(name)


def _load_errors(schema: Schema, value: Any) -> list[ValidationError]:
    try:
        schema.load(value)
    except ValidationError as error:
        return [error]
    return []


def test_there_is_a_problem_document_for_every_code() -> None:
    shown = {
        (value.get("code"), value.get("status"))
        for examples in EXAMPLES.values()
        for value in examples.values()
    }
    assert set(STATUS_OF_CODE.items()) - shown == set()


def test_the_problem_examples_are_as_the_server_writes_them(document_client: FlaskClient) -> None:
    """Type, title and status are the code's; instance and request_id the request's."""
    examples = [value for values in EXAMPLES.values() for value in values.values()]
    for example in (value for value in examples if "code" in value):
        with document_client.application.test_request_context(example["instance"]):
            g.request_id = example["request_id"]
            answer = problem(example["code"], example["detail"], example.get("errors"))
        written = json.loads(answer.get_data())
        assert {key: example[key] for key in written} == written


def section(text: str, heading: str) -> str:
    """`text` from `heading` to the next heading of its level."""
    start = text.index(f"\n{heading}\n")
    end = text.find(f"\n{heading.split()[0]} ", start + 1)
    return text[start : end if end != -1 else None]


def markdown_examples() -> list[tuple[str, str]]:
    """(where, JSON text) of each body given to curl and each answer shown, in README.md and
    in docs/api.md's "By example"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    api = section((ROOT / "docs" / "api.md").read_text(encoding="utf-8"), "## By example")
    found = []
    for where, text in (("README.md", readme), ("docs/api.md#by-example", api)):
        for language, shown in FENCE.findall(text):
            block = SHELL_VALUE.sub(json.dumps(SPLICED), shown)
            if language == "json":
                found.append((where, block))
                continue
            found += [(where, body) for body in CURL_BODY.findall(block)]
            answers = ANSWER_COMMENT.findall(CURL_BODY.sub("", block))
            found += [(where, answer) for answer in answers]
    return found


def test_the_markdown_shows_examples_of_the_document(openapi_document: dict[str, Any]) -> None:
    examples = [value for *_, value in every_example(openapi_document)]
    shown = markdown_examples()
    assert {where for where, _ in shown} == {"README.md", "docs/api.md#by-example"}
    assert [(where, text) for where, text in shown if not _an_example(parsed(text), examples)] == []


def _an_example(value: Any, examples: list[Any]) -> bool:
    return any(_matches(value, example) for example in examples)


def _matches(shown: Any, example: Any) -> bool:
    """`shown` is `example`, but for the values spliced from the shell, which match any."""
    if shown == SPLICED:
        return not isinstance(example, dict | list)
    if isinstance(shown, dict):
        return (
            isinstance(example, dict)
            and shown.keys() == example.keys()
            and all(_matches(shown[key], example[key]) for key in shown)
        )
    if isinstance(shown, list):
        return (
            isinstance(example, list)
            and len(shown) == len(example)
            and all(_matches(*pair) for pair in zip(shown, example, strict=True))
        )
    return canonical(shown) == canonical(example)


def parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        pytest.fail(f"not JSON ({error}):\n{text}")


def test_the_preview_examples_are_what_the_server_answers(document_client: FlaskClient) -> None:
    """The document's fire times are the engine's, daylight saving included."""
    client = document_client
    token = client.application.extensions["cronledger"].directory.bootstrap("acme", "root").token
    for name, body in EXAMPLES["PreviewIn"].items():
        answer = client.post(
            "/api/workflows/schedules/preview",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        )
        assert (answer.status_code, answer.json) == (200, EXAMPLES["PreviewOut"][name])
