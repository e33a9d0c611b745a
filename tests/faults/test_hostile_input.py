"""Input written to break things, on both stores: each refusal is a clear 4xx problem document,
never a 5xx, and a refused request writes nothing (the log ends where it ended).

Most requests go through the Flask test client; what only a real server sees (bytes a client
library will not send, such as CR or LF inside a header) goes to a running `cronledger serve`.
schemathesis's generated requests to a served process are in test_served_conformance.py.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application.services import Services
from tests.e2e.helpers import answers, log_end, with_reviewer
from tests.processes import free_port, run_cli, started
from tests.support import DECIDERS, Api
from web import MAX_BODY_BYTES

SCHEDULES = "/api/workflows/schedules"
STREAM = "/api/events/stream"
PROBLEM = "application/problem+json"
SOCKET_SECONDS = 30
FIELDS = 10_000  # of a hostile form
HOSTILE_TEXT = ("{{7*7}}", "'; DROP TABLE runs;--", "<script>alert(1)</script>", "${7*7} %s %n")
OUT_OF_RANGE = ("-1", str(2**64), "abc", "1e3", "", "0x10", "١٢")  # the last: Arabic digits


@pytest.fixture
def definition_id(admin: Api) -> str:
    with_reviewer(admin)
    created = admin.post(
        "/api/definitions",
        {
            "key": "hostile",
            "name": "Hostile",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    ).json
    admin.post(f"/api/definitions/{created['id']}/publish")
    return str(created["id"])


def schedule(definition_id: str, **changes: Any) -> dict[str, Any]:
    return {
        "name": "hostile",
        "definition_id": definition_id,
        "trigger": {"kind": "cron", "expression": "0 9 * * *"},
        "timezone": "UTC",
        "initiator_id": "root",
        "title_template": "Hostile {{date}}",
        "enabled": False,
        **changes,
    }


def refused(services: Services, response: Any, *statuses: int) -> dict[str, Any]:
    """`response` is a problem document with one of `statuses` (4xx)."""
    assert response.status_code in statuses, (response.status_code, response.get_data()[:500])
    assert response.mimetype == PROBLEM, response.get_data()[:500]
    body: dict[str, Any] = response.json
    assert body["status"] == response.status_code
    assert body["title"]
    assert body["detail"]
    assert body["code"]
    return body


class Unchanged:
    """Checks that what happens inside the block writes nothing to the log."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def __enter__(self) -> None:
        self.before = log_end(self.services)

    def __exit__(self, *_: object) -> None:
        assert log_end(self.services) == self.before


def test_a_body_over_the_limit_is_413(services: Services, admin: Api, definition_id: str) -> None:
    huge = b'{"name": "' + b"x" * (MAX_BODY_BYTES + 10) + b'"}'
    with Unchanged(services):
        answer = admin.call(
            "POST", SCHEDULES, data=huge, headers={"Content-Type": "application/json"}
        )
        refused(services, answer, 413)


def test_deeply_nested_json_is_refused(services: Services, admin: Api, definition_id: str) -> None:
    for depth in (200, 10_000, 200_000):
        for nested in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
            text = nested.encode()
            with Unchanged(services):
                answer = admin.call(
                    "POST", SCHEDULES, data=text, headers={"Content-Type": "application/json"}
                )
                refused(services, answer, 400, 413, 422)
            # Nested in a free-form field of a valid body as well.
            raw = (
                b'{"name":"n","definition_id":"' + definition_id.encode() + b'",'
                b'"trigger":{"kind":"cron","expression":"0 9 * * *"},"timezone":"UTC",'
                b'"initiator_id":"root","title_template":"t","enabled":false,"form_data":{"x":'
                + text
                + b"}}"
            )
            with Unchanged(services):
                answer = admin.call(
                    "POST", SCHEDULES, data=raw, headers={"Content-Type": "application/json"}
                )
                if answer.status_code != 201:
                    refused(services, answer, 400, 413, 422)


def test_invalid_utf8_is_400(services: Services, admin: Api, definition_id: str) -> None:
    for raw in (b'{"name": "\xff\xfe"}', b"\xc3\x28", b'{"name": "\xed\xa0\x80"}', b"\x00\x00"):
        with Unchanged(services):
            answer = admin.call(
                "POST", SCHEDULES, data=raw, headers={"Content-Type": "application/json"}
            )
            refused(services, answer, 400, 422)


def test_nul_bytes_in_strings_are_422(services: Services, admin: Api, definition_id: str) -> None:
    """PostgreSQL keeps no U+0000 in text: it was a 500 there after the schedule was saved, and
    stored on SQLite. Now every body field, key or value, nested or not, refuses it alike."""
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": "a\u0000b"}, "name"),
        ({"title_template": "t\u0000"}, "title_template"),
        ({"timezone": "UTC\u0000"}, "timezone"),
        ({"initiator_id": "\u0000root"}, "initiator_id"),
        ({"form_data": {"k": "v\u0000"}}, "form_data.k"),
        ({"form_data": {"k\u0000": "v"}}, "form_data.k\u0000"),
        ({"form_data": {"list": ["ok", "\u0000"]}}, "form_data.list.1"),
        ({"trigger": {"kind": "cron", "expression": "0 9 * * *\u0000"}}, "trigger.expression"),
    ]
    for changes, field in cases:
        with Unchanged(services):
            answer = admin.post(SCHEDULES, schedule(definition_id, **changes))
            body = refused(services, answer, 422)
            assert field in body["errors"], body
    submission = {
        "command_id": "nul",
        "definition_id": definition_id,
        "title": "NUL \u0000",
        "form_data": {},
        "material_version": 1,
    }
    with Unchanged(services):
        assert "title" in refused(services, admin.post("/api/approvals", submission), 422)["errors"]
    for path in (f"{SCHEDULES}?name=a%00b", f"{SCHEDULES}/a%00b", "/api/approvals/%00"):
        with Unchanged(services):
            answer = admin.get(path)
            if answer.status_code != 200:
                refused(services, answer, 400, 404, 422)


def test_lone_surrogates_in_strings_are_422(
    services: Services, admin: Api, definition_id: str
) -> None:
    """JSON's `\\ud800` escape reads into a lone surrogate, which no UTF-8 encoder writes: every
    write was a 500 when its event was encoded. Now every field, key or value, refuses it."""
    raw_bodies = {
        "/api/accounts": ('{"id": "s1", "name": "a\\ud800b", "roles": []}', "name"),
        SCHEDULES: ('{"name": "x", "form_data": {"k\\udfff": "v"}}', "form_data.k\\udfff"),
    }
    for path, (raw, field) in raw_bodies.items():
        with Unchanged(services):
            answer = admin.call(
                "POST", path, data=raw, headers={"Content-Type": "application/json"}
            )
            body = refused(services, answer, 422)
            assert "lone surrogate" in body["errors"][field][0], body
    for path in (f"{SCHEDULES}?name=%ED%A0%80", "/api/approvals/%ED%A0%80"):
        with Unchanged(services):
            answer = admin.get(path)
            if answer.status_code != 200:
                refused(services, answer, 400, 404, 422)


def test_ten_thousand_fields_of_form_data(
    services: Services, admin: Api, client: FlaskClient
) -> None:
    form = {f"f{i}": "v" for i in range(FIELDS)}
    with Unchanged(services):
        answer = admin.call("POST", SCHEDULES, data=form)
        refused(services, answer, 400, 413, 415, 422)
    with Unchanged(services):
        signed_in = client.post("/console/sign-in", data=form)
        assert 400 <= signed_in.status_code < 500, signed_in.status_code


@pytest.mark.parametrize(
    "zone", ["../../etc/passwd", "Europe/../UTC", "/etc/localtime", "UTC/", "Europe\\London", "."]
)
def test_time_zones_with_path_segments_are_422(
    services: Services, admin: Api, definition_id: str, zone: str
) -> None:
    with Unchanged(services):
        body = refused(services, admin.post(SCHEDULES, schedule(definition_id, timezone=zone)), 422)
        assert "timezone" in body["errors"], body
    preview = admin.post(f"{SCHEDULES}/preview", {**schedule(definition_id, timezone=zone)})
    assert preview.status_code < 500


def test_sql_and_template_syntax_are_stored_and_echoed_verbatim(
    services: Services, admin: Api, definition_id: str
) -> None:
    for n, text in enumerate(HOSTILE_TEXT):
        created = admin.post(SCHEDULES, schedule(definition_id, name=text))
        assert created.status_code == 201, created.json
        read = admin.get(f"{SCHEDULES}/{created.json['id']}").json
        assert read["name"] == text
        submitted = admin.post(
            "/api/approvals",
            {
                "command_id": f"c-{n}",
                "definition_id": definition_id,
                "title": text,
                "form_data": {text: text},
                "material_version": 1,
            },
        )
        assert submitted.status_code == 201, submitted.json
        instance = admin.get(f"/api/approvals/{submitted.json['id']}").json
        assert (instance["title"], instance["form_data"]) == (text, {text: text})
    names = {item["name"] for item in admin.get(f"{SCHEDULES}?page_size=200").json["items"]}
    assert set(HOSTILE_TEXT) <= names
    # A title template takes only its own placeholders: an expression is refused, not run.
    with Unchanged(services):
        answer = admin.post(SCHEDULES, schedule(definition_id, title_template="{{7*7}}"))
        assert "title_template" in refused(services, answer, 422)["errors"]


def test_a_ten_kilobyte_cron_string_is_422(
    services: Services, admin: Api, definition_id: str
) -> None:
    for expression in ("0 9 * * *" + " " * 10_240, "1," * 5_120 + "0 9 * * *", "*" * 10_240):
        trigger = {"kind": "cron", "expression": expression}
        with Unchanged(services):
            answer = admin.post(SCHEDULES, schedule(definition_id, trigger=trigger))
            refused(services, answer, 422)


@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_paging_values_out_of_range_are_422(services: Services, admin: Api, value: str) -> None:
    for query in ("page_size", "page", "cursor"):
        answer = admin.get(f"{SCHEDULES}?{query}={value}")
        if query == "page" and value in ("",):
            assert answer.status_code < 500
            continue
        refused(services, answer, 400, 422)


@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_last_event_id_out_of_range_is_refused(services: Services, admin: Api, value: str) -> None:
    answer = admin.get(f"{STREAM}?max_seconds=1", headers={"Last-Event-ID": value})
    try:
        if value == "":  # an empty Last-Event-ID is what a fresh EventSource may send
            assert answer.status_code < 500
        else:
            refused(services, answer, 400, 422)
    finally:
        answer.close()
    after = admin.get(f"{STREAM}?max_seconds=1&after={value}")
    try:
        if value != "":
            refused(services, after, 400, 422)
    finally:
        after.close()


# What only a real server sees.


@pytest.fixture
def token(store_url: str) -> str:
    result = run_cli(store_url, "bootstrap", "--tenant", "demo", "--admin", "admin")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


@pytest.fixture
def server(store_url: str, token: str) -> Iterator[tuple[str, int]]:
    port = free_port()
    with started(store_url, "serve", "--port", str(port)) as child:
        child.wait_for(lambda: answers(f"http://127.0.0.1:{port}/healthz"), "answering /healthz")
        yield "127.0.0.1", port


def exchange(address: tuple[str, int], raw: bytes) -> bytes:
    """`raw` sent as it is; the whole answer (the server closes the connection)."""
    with socket.create_connection(address, timeout=SOCKET_SECONDS) as sock:
        sock.sendall(raw)
        chunks = []
        while chunk := sock.recv(65_536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_header_injection_in_x_request_id_is_not_echoed(
    server: tuple[str, int], token: str
) -> None:
    for injected in (b"abc\rSet-Cookie: evil=1", b"abc\nSet-Cookie: evil=1", b"abc\r\n X: y"):
        raw = (
            b"GET /api/tenant HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            b"Authorization: Bearer " + token.encode() + b"\r\n"
            b"X-Request-ID: " + injected + b"\r\n\r\n"
        )
        answer = exchange(server, raw)
        head = answer.split(b"\r\n\r\n", 1)[0]
        status = int(head.split(b" ", 2)[1])
        assert status < 500, answer[:500]
        if status >= 400:  # a bare CR or LF: waitress refuses it, as a problem document
            assert b"application/problem+json" in head, head
            assert b"evil" not in answer, answer
        assert b"evil" not in head, head
        # the id is one the server made (32 hex digits), never the caller's "abc..."
        ids = [line for line in head.split(b"\r\n") if line.lower().startswith(b"x-request-id:")]
        assert all(re.fullmatch(rb"[0-9a-f]{32}", i.split(b":", 1)[1].strip()) for i in ids), head

    # Invalid UTF-8 as a real server receives it.
    body = b'{"name": "\xff"}'
    answer = exchange(server, posted(token, len(body)) + body)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:500]
    assert b"application/problem+json" in answer.split(b"\r\n\r\n", 1)[0]
    # A body over the limit: refused from its Content-Length alone, before it is read.
    answer = exchange(server, posted(token, MAX_BODY_BYTES + 1))
    assert answer.startswith(b"HTTP/1.1 413"), answer[:500]
    assert b"application/problem+json" in answer.split(b"\r\n\r\n", 1)[0], answer[:500]


def posted(token: str, length: int) -> bytes:
    """The head of a JSON POST of `length` bytes."""
    return (
        b"POST /api/definitions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        b"Authorization: Bearer " + token.encode() + b"\r\n"
        b"Content-Type: application/json\r\n"
        b"Content-Length: " + str(length).encode() + b"\r\n\r\n"
    )
