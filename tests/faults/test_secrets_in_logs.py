"""No token, secret, session cookie or form data in any log line, nor a raw token in the store;
secrets compared in constant time (issue 20, item 8).

A representative session runs against a real `cronledger serve` logging at DEBUG: a token issued,
a definition and a schedule created, a run started now, an approval submitted with form data and
approved, a webhook and a callback source created (their `whsec_` secrets shown once), the console
signed in to and a console form posted. Then every line the process logged (and what the CLI
commands wrote on standard error) is searched for each secret, and every table of the store is
read as text for the raw tokens and secrets. The SQLite file's owner-only mode is checked by
tests/e2e/test_secrets_and_admins.py.
"""

from __future__ import annotations

import ast
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests

from cronledger.persistence.store import Store
from tests.e2e.helpers import answers
from tests.log_scan import note_secret
from tests.processes import Child, free_port, run_cli, started
from tests.support import DECIDERS, add_reviewer, wait_until

ROOT = Path(__file__).resolve().parents[2]
SECRET_KEY = "logs-test-master-key-0123456789abcdef-xyz"
FORM_MARK = "FormSecret7731"  # form data of an approval and of a console form
# Comparisons the name check flags that hold no secret: a digest of the read models' settings.
NOT_SECRETS = ["projections/operations.py: digest != before.settings_digest"]
CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)">')


class Session:
    """`cronledger serve` at DEBUG on a store, with its admin's token; calls as that admin."""

    def __init__(self, child: Child, base: str, token: str) -> None:
        self.child, self.base, self.token = child, base, token
        self.http = requests.Session()

    def call(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        answer = requests.request(
            method,
            self.base + path,
            json=body,
            headers={"Authorization": f"Bearer {token or self.token}"},
            timeout=10,
        )
        assert answer.status_code < 300, (path, answer.status_code, answer.text)
        return answer.json() if answer.content else None


@pytest.fixture
def session(store_url: str) -> Iterator[tuple[Session, list[str]]]:
    """The served session and the standard error of the CLI commands run for it."""
    bootstrapped = run_cli(store_url, "bootstrap", "--tenant", "demo", "--admin", "admin")
    assert bootstrapped.returncode == 0, bootstrapped.stderr
    token = bootstrapped.stdout.strip().splitlines()[-1]
    add_reviewer(store_url, token)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        "CRONLEDGER_LOG_LEVEL": "DEBUG",
        "CRONLEDGER_SECRET_KEY": SECRET_KEY,
        "CRONLEDGER_WEBHOOK_ALLOW_PRIVATE": "true",
        "CRONLEDGER_WEBHOOK_ALLOW_HTTP": "true",
    }
    with started(store_url, "serve", "--port", str(port), **env) as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "answering /healthz")
        yield Session(child, base, token), [bootstrapped.stderr]


def representative(session: Session) -> list[str]:
    """Use the service as a team would; every secret it handed out or was given."""
    secrets = [session.token, SECRET_KEY, FORM_MARK]
    session.call("POST", "/api/accounts", {"id": "ann", "name": "Ann", "roles": ["requester"]})
    issued = session.call("POST", "/api/accounts/ann/tokens")
    secrets.append(issued["token"])
    definition = session.call(
        "POST",
        "/api/definitions",
        {
            "key": "k",
            "name": "K",
            "external": False,
            "review_window_seconds": 600,
            "reviewers": DECIDERS,
        },
    )
    session.call("POST", f"/api/definitions/{definition['id']}/publish", {})
    schedule = session.call(
        "POST",
        "/api/workflows/schedules",
        {
            "name": "nightly",
            "definition_id": definition["id"],
            "trigger": {"kind": "cron", "expression": "0 3 * * *"},
            "initiator_id": "ann",
            "enabled": True,
        },
    )
    run = session.call(
        "POST", f"/api/workflows/schedules/{schedule['id']}/run", {"request_id": "now-1"}
    )
    launched = wait_until(
        lambda: (
            found := session.call("GET", f"/api/workflows/runs/{run['id']}"),
            found if found["status"] == "SUCCEEDED" else None,
        )[1],
        "the run launched by the served worker",
    )
    assert launched["instance_id"]
    instance = session.call(
        "POST",
        "/api/approvals",
        {
            "command_id": "submit-1",
            "definition_id": definition["id"],
            "title": "Open account",
            "form_data": {"customer": FORM_MARK},
            "material_version": 1,
        },
        token=issued["token"],
    )
    session.call(
        "POST",
        f"/api/approvals/{instance['id']}/approve",
        {"command_id": "ok", "material_version": 1},
    )
    webhook = session.call(
        "POST",
        "/api/webhooks",
        {"url": "http://127.0.0.1:9/hook", "event_types": ["ping"], "description": "x"},
    )
    rotated = session.call("POST", f"/api/webhooks/{webhook['id']}/rotate-secret", {})
    source = session.call("POST", "/api/callback-sources", {"name": "esign"})
    secrets += [webhook["secret"], rotated["secret"], source["secret"]]
    assert all(s.startswith("whsec_") for s in secrets[-3:])
    secrets += sign_in_to_the_console(session)
    return secrets


def sign_in_to_the_console(session: Session) -> list[str]:
    """Sign in with the admin's token and post a console form; the session cookie's value."""
    browser = session.http

    def csrf() -> str:
        page = browser.get(f"{session.base}/console/sign-in", timeout=10).text
        found = CSRF_META.search(page)
        assert found, page
        return found.group(1)

    signed_in = browser.post(
        f"{session.base}/console/sign-in",
        data={"csrf_token": csrf(), "token": session.token},
        allow_redirects=False,
        timeout=10,
    )
    assert signed_in.status_code == 302, signed_in.text
    cookies = [cookie.value for cookie in browser.cookies if cookie.value]
    assert cookies
    home = browser.get(f"{session.base}/console/", timeout=10)
    assert home.status_code == 200
    created = browser.post(
        f"{session.base}/console/directory/accounts",
        data={"csrf_token": csrf(), "id": "bob", "name": FORM_MARK, "roles": "requester"},
        allow_redirects=False,
        timeout=10,
    )
    assert created.status_code < 500, created.text
    return cookies


def table_texts(store_url: str) -> Iterator[tuple[str, str]]:
    """Every row of every table of the store, as (table, text of the row)."""
    store = Store.from_url(store_url)
    if store.kind == "sqlite":
        with sqlite3.connect(store.sqlite_path) as conn:
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            for table in tables:
                for row in conn.execute(f'SELECT * FROM "{table}"'):
                    yield table, " ".join(as_text(value) for value in row)
        return
    with psycopg.connect(store_url.partition("?")[0]) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (store.schema,),
            )
        ]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{store.schema}"."{table}"'):
                yield table, " ".join(as_text(value) for value in row)


def as_text(value: object) -> str:
    if isinstance(value, bytes | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def test_no_secret_in_any_log_line_nor_a_raw_token_in_the_store(
    store_url: str, session: tuple[Session, list[str]]
) -> None:
    served, cli_errors = session
    secrets = representative(served)
    for secret in secrets:  # and the whole-suite scan looks for them too (tests/log_scan.py)
        note_secret("form data" if secret == FORM_MARK else "served session's secret", secret)
    assert served.child.stop() == 0
    lines = [*served.child.lines, *"".join(cli_errors).splitlines()]
    assert any("DEBUG" in line for line in lines), "the process did not log at DEBUG"
    assert any("/api/approvals" in line for line in lines), "requests were not logged"
    secret_parts = [*secrets, *(s.partition("_")[2] for s in secrets if "_" in s[:6])]
    shown = [(s, line) for line in lines for s in secret_parts if s and s in line]
    assert shown == []

    tokens = [s for s in secrets if s.startswith("clt_")]
    written = [s for s in secrets if s.startswith("whsec_")] + [SECRET_KEY]
    in_store = [
        (table, secret)
        for table, text in table_texts(store_url)
        for secret in [*tokens, *(t.partition("_")[2] for t in tokens), *written]
        if secret in text
    ]
    assert in_store == []


def secret_comparisons(tree: ast.AST) -> Iterator[str]:
    """`==`/`!=` comparisons whose operand names a secret, token, signature or digest."""
    named = re.compile(r"(secret|token|signature|digest|password)", re.IGNORECASE)
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, ast.Eq | ast.NotEq) for op in node.ops
        ):
            operands = [node.left, *node.comparators]
            if any(
                named.search(ast.unparse(o)) and not isinstance(o, ast.Constant) for o in operands
            ):
                yield ast.unparse(node)


def test_secrets_are_compared_in_constant_time_or_by_their_hash() -> None:
    """Bearer tokens are found by a hash of the secret (the token's id), never compared as
    text; signatures with hmac.compare_digest; CSRF tokens by Flask-WTF (compare_digest)."""
    found = []
    for package in ("cronledger", "web", "domain", "tick", "projections"):
        for path in (ROOT / package).rglob("*.py"):
            for comparison in secret_comparisons(ast.parse(path.read_text())):
                found.append(f"{path.relative_to(ROOT)}: {comparison}")
    assert found == NOT_SECRETS
    callbacks = (ROOT / "cronledger" / "application" / "callback_sources.py").read_text()
    assert "hmac.compare_digest" in callbacks
    directory = (ROOT / "domain" / "directory.py").read_text()
    assert "hashlib.sha256(secret.encode())" in directory
