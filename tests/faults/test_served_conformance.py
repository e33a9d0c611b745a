"""schemathesis against a served process, on both stores: every answer as the OpenAPI document
says, every error a problem document, and nothing written by a refused request.

`cronledger web` (the API alone: no loop of `serve` writes to the log beside the requests, so
every event is a request's) gets the requests of tests/e2e/test_openapi_conformance.py over
HTTP, on a tenant seeded over HTTP: per operation the document's examples and valid requests
on the seeded resources (deletions and endings last), a valid one on unknown ids, and invalid
ones. The test reads the store's log beside the process, and after each refused answer (4xx)
the events it added.

What is promised (docs/api.md, docs/approvals.md "Refusals are recorded too"): a refused
request writes nothing, except an approval command that reaches the instance's rule (approve,
withdraw, extend-deadline, sign callback): its loss is recorded as one
`ApprovalInstance.CommandRejected` on that instance (after the sweeper's `Expired` when the
deadline had passed) and answered 409 `COMMAND_REJECTED`, 403 `FORBIDDEN` or 422 on
`new_deadline_at` (`RULE_BROKEN`); its repeat records nothing. Bad fields, a malformed body,
no or a bad token, a missing permission, an unknown id or path, a version or precondition
conflict, a reused key: never an event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import pytest
import schemathesis

from cronledger.persistence.ledger import Ledger
from cronledger.persistence.store import Store
from tests.e2e.conformance import (
    DOCUMENT,
    SECRET_KEY,
    Document,
    Served,
    checks_of,
    failures_of,
    report,
    seed,
)
from tests.e2e.helpers import answers, request
from tests.processes import free_port, run_cli, started
from tests.support import FakeClock

# The approval commands whose losses are recorded (docs/approvals.md).
COMMANDS = tuple(
    f"/api/approvals/{{instance_id}}/{name}"
    for name in (
        "approve",
        "withdraw",
        "extend-deadline",
        "callbacks/sign",
        "reject",
        "claim",
        "unclaim",
        "reassign",
        "comments",
        "pause-deadline",
        "resume-deadline",
        "return",
        "revise",
        "resubmit",
        "request-cancellation",
    )
)
REJECTED = "ApprovalInstance.CommandRejected"
EXPIRED = "ApprovalInstance.Expired"
MANY_REFUSED = 250  # refusals at least: four invalid requests of each of 74 operations, and more
SERVER = {
    "CRONLEDGER_REFUSALS_PER_MINUTE": "1000000",  # never spent by the generated refusals
    "CRONLEDGER_WEBHOOK_ALLOW_PRIVATE": "true",  # a webhook on loopback, where nothing listens
    "CRONLEDGER_WEBHOOK_ALLOW_HTTP": "true",
    "CRONLEDGER_SECRET_KEY": SECRET_KEY,
}


@pytest.fixture
def served(store_url: str) -> Iterator[Served]:
    """`cronledger web` on the test's store, and its tenant's first admin, `root`."""
    migrated = run_cli(store_url, "migrate")  # the store and its signing key, as documented
    assert migrated.returncode == 0, migrated.stderr
    bootstrapped = run_cli(store_url, "bootstrap", "--tenant", "acme", "--admin", "root")
    assert bootstrapped.returncode == 0, bootstrapped.stderr
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with started(store_url, "web", "--port", str(port), **SERVER) as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "answering /healthz")
        yield Served(base, bootstrapped.stdout.strip().splitlines()[-1])


class Log:
    """The store's log, read beside the served process."""

    def __init__(self, store_url: str) -> None:
        self.store = Store.from_url(store_url)
        self.ledger = Ledger(self.store, FakeClock(), create_tables=False)

    def end(self) -> int:
        return self.ledger.recorder.max_notification_id() or 0

    def after(self, position: int) -> list[tuple[int, UUID, str]]:
        """The events after `position`: each one's position, aggregate and type."""
        column = self.store.position_column
        rows = self.store.query(
            f"SELECT {column}, originator_id, topic FROM {self.ledger.events_table} "
            f"WHERE {column} > ? ORDER BY {column}",
            (position,),
        )
        return [(row[0], UUID(str(row[1])), str(row[2]).partition(":")[2]) for row in rows]

    def close(self) -> None:
        self.ledger.close()
        self.store.close()


@dataclass
class RefusalWatch:
    """A check, run after each answer: the events the request added are allowed by its answer.

    Requests go one at a time and nothing else writes, so the events since the previous
    answer are this request's."""

    log: Log
    seen: int = 0
    refusals: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.seen = self.log.end()

    def check(self, ctx: Any, response: schemathesis.Response, case: Any) -> None:
        added = self.log.after(self.seen)
        self.seen = added[-1][0] if added else self.seen
        if response.status_code < 400:
            return
        self.refusals["recorded" if added else "nothing written"] += 1
        body = response.json()
        if added:
            kinds = [kind for _, _, kind in added]
            wrote = f"refused with {response.status_code} {body['code']}, yet wrote {kinds}"
            assert is_command(case), wrote
            assert may_be_recorded(body), wrote
            assert kinds in ([REJECTED], [EXPIRED, REJECTED]), kinds
            assert {aggregate for _, aggregate, _ in added} == {
                UUID(case.path_parameters["instance_id"])
            }
        elif is_command(case) and body["code"] == "COMMAND_REJECTED":
            assert body["replayed"], "a lost command was not recorded"


def is_command(case: Any) -> bool:
    return bool(case.operation.path in COMMANDS and case.method.upper() == "POST")


def may_be_recorded(body: dict[str, Any]) -> bool:
    """Whether a refusal is one a recorded loss may have: 409 COMMAND_REJECTED, 403 (not
    allowed, or not a reviewer), or 422 on a rule's field alone (the new deadline, the
    reassignment's target, the revised material's version), which a body some of whose
    fields broke their shape is never recorded with."""
    return bool(
        body["code"] in ("COMMAND_REJECTED", "FORBIDDEN", "NOT_A_REVIEWER")
        or (
            body["code"] == "VALIDATION_FAILED"
            and set(body["errors"]) in ({"new_deadline_at"}, {"assignee_id"}, {"material_version"})
        )
    )


def test_every_answer_of_a_served_process_is_as_documented(store_url: str, served: Served) -> None:
    world = seed(served)
    status, raw = request(f"{served.base}{DOCUMENT}")
    assert status == 200
    document = Document(raw)
    schema = schemathesis.openapi.from_url(f"{served.base}{DOCUMENT}")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {operation.label for operation in operations} == document.labels() - {f"GET {DOCUMENT}"}
    log = Log(store_url)
    try:
        watch = RefusalWatch(log)
        token = {"Authorization": f"Bearer {served.token}"}
        failures = failures_of(operations, world, token, checks_of(document, watch.check))
    finally:
        log.close()
    assert not failures, report(failures)
    assert watch.refusals["nothing written"] >= MANY_REFUSED, watch.refusals
    assert watch.refusals["recorded"] >= 1, watch.refusals  # a lost approval command
