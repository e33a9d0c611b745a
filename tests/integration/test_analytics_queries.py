"""Every example query of docs/analytics.md, run on both stores against a known data set.

The data set is built once per store through the application services and a fake clock, then
each `### Qn.` query of the guide runs with known parameters and must return exactly the rows
worked out by hand below. The guide's data dictionary must also name every column of every
projection table, in order.

The data set (tenant `acme`; all instants UTC, October 2026):

- definitions `payments` (D1, review window 1 h) and `vendors` (D2, 2 h);
- schedule S1 "Payments check": D1, initiator ann, `0 9 * * *`, title "Payments {{date}}";
  S2 "Vendor review": D2, initiator bob, `0 10 * * *`, title "Vendors {{date}}";
  S3 "Ad hoc payments": D1, initiator ann, disabled, manual runs only; all three saved by the
  operator olga, so that root may approve what they launch;
- day 1: S1 registered 2 s late, launched (I1), approved after 1800 s. S2 registered 4 s late,
  launched (I2); a stale approve is rejected, an approve after 3600 s wins, bob's late withdraw
  is rejected (CONFLICT);
- day 2: S1 registered 30 s late; its first attempt's worker dies, the attempt is INTERRUPTED
  after the 60 s lease and the second launches I3 at 09:01:30; I3 is swept at 10:02:30
  (60 s after its deadline: 3660 s after submission). S2 registered on time, launched (I5);
  an approve exactly at I5's deadline gets EXPIRED (rejected; 7200 s);
- day 3: S1 registered 120 s late; attempt 1 fails (ann inactive), attempt 2 launches I4; ann
  withdraws it after 600 s; root's later approve is rejected (CONFLICT). D2 is unpublished;
  S2 registered 10 s late fails twice (DEFINITION_UNPUBLISHED) and is dead-lettered at
  10:00:11. S3 runs by hand at 14:00 (launches I7, left waiting; deadline 15:00) and at 15:00
  with ann inactive again: two failures, dead-lettered at 15:00:01.

A second tenant, `globex`, has a schedule of the same name firing at 09:00 every day; no
figure of `acme` may include it.
"""

from __future__ import annotations

import csv
import io
import os
import re
import sqlite3
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.directory import DefinitionFields
from cronledger.application.launches import Worker, WorkReport
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from cronledger.persistence.store import as_instant
from domain.approvals import Command, Submission, approval_uuid
from domain.calendars import CalendarFields
from domain.directory import Principal
from domain.permissions import ROLES
from domain.runs import run_uuid
from projections.catalog import all_projections
from tests.support import DECIDERS, REVIEWER, FakeClock, fresh_postgres_url
from tests.two_commits import TwoCommitWorker

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "analytics.md"
QUERY = re.compile(
    r"^### Q(?P<number>\d+)\. (?P<title>[^\n]+)\n(?P<prose>(?:(?!^#{1,3} |^```)[^\n]*\n)*)"
    r"```sql\n(?P<sql>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)
TABLE_START = re.compile(r"^(?:### `(\w+)`$|`(\w+)`, primary key)")
COLUMN_ROW = re.compile(r"^\| `(\w+)` \|")
INSTANT_TEXT = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d(:\d\d)?)?")
NOT_PORTABLE = (
    "::",
    "date_trunc",
    "strftime",
    "julianday",
    "percentile",
    "filter (",
    "ilike",
    "string_agg",
    "group_concat",
    "interval",
    "now()",
    "%",
)


def at(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    """An instant of October 2026, UTC."""
    return datetime(2026, 10, day, hour, minute, second, tzinfo=UTC)


WHOLE = (at(1, 0), at(4, 0))  # the data set's three days
DAY_1 = (at(1, 0), at(2, 0))
DAY_3 = (at(3, 0), at(4, 0))


# -- the guide ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    number: int
    title: str
    prose: str
    sql: str


def examples() -> dict[int, Example]:
    found: dict[int, Example] = {}
    for match in QUERY.finditer(GUIDE.read_text(encoding="utf-8")):
        number = int(match["number"])
        assert number not in found, f"Q{number} appears twice in {GUIDE.name}"
        found[number] = Example(number, match["title"], match["prose"].strip(), match["sql"])
    return found


def documented_columns() -> dict[str, list[str]]:
    """Each table of the data dictionary and its column names, in the guide's order.

    A table starts at a heading "### `name`" or a line "`name`, primary key ...".
    """
    text = GUIDE.read_text(encoding="utf-8")
    dictionary = text.split("\n## Data dictionary\n", 1)[1].split("\n## Example queries\n", 1)[0]
    columns: dict[str, list[str]] = {}
    table: str | None = None
    for line in dictionary.splitlines():
        if line.startswith("### "):
            table = None
        start = TABLE_START.match(line)
        if start:
            table = start[1] or start[2]
            assert table not in columns, f"{table} is described twice"
            columns[table] = []
        elif (column := COLUMN_ROW.match(line)) and table:
            columns[table].append(column[1])
    return columns


# -- the data set ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataSet:
    services: Services
    tenant: str
    d1: str
    d2: str
    s1: str
    s2: str
    s3: str
    s2_day3_run: str
    s3_dead_run: str
    i2: str
    i3: str
    i4: str
    i5: str
    i7: str
    skipping_tenant: str

    def query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self.services.store.query(sql, params)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """conftest's `store_url`, once per module: the data set is built once per store."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('analytics')}/cronledger.sqlite"
        return
    request.getfixturevalue("postgres_ready")
    yield from fresh_postgres_url()


@pytest.fixture(scope="module")
def data(store_url: str) -> Iterator[DataSet]:
    clock = FakeClock(at(1, 8))
    services = open_services(
        Settings(database_url=store_url, max_attempts=2, retry_base_seconds=1), clock
    )
    try:
        yield build(services, clock)
    finally:
        services.close()


def build(services: Services, clock: FakeClock) -> DataSet:
    directory, approvals, worker = (
        services.directory,
        services.approvals,
        TwoCommitWorker.of(services),
    )
    root = directory.authenticate(directory.bootstrap("acme", "root").token)
    assert root is not None
    tenant = root.tenant_id
    ann = Principal(tenant, "ann", ROLES["requester"])
    bob = Principal(tenant, "bob", ROLES["requester"])
    olga = Principal(tenant, "olga", ROLES["operator"])  # saves the schedules: root approves
    directory.create_account(root, "ann", "Ann", ["requester"])
    directory.create_account(root, "bob", "Bob", ["requester"])
    directory.create_account(root, "olga", "Olga", ["operator"])
    d1 = directory.create_definition(
        root,
        "payments",
        DefinitionFields("Payments", False, 3600, [], reviewers=DECIDERS),
    ).id
    d2 = directory.create_definition(
        root,
        "vendors",
        DefinitionFields("Vendors", False, 7200, [], reviewers=DECIDERS),
    ).id
    for definition in (d1, d2):
        directory.set_published(root, definition, True, None)
    cn = services.calendars.create(root, "cn", CalendarFields("中国大陆", None, "Asia/Shanghai"))
    services.calendars.import_years(root, cn.id, "CN", [2026], None)
    services.calendars.choose_default(root, "cn")

    def schedule(
        actor: Principal,
        name: str,
        definition: str,
        initiator: str,
        cron: str,
        title: str,
        enabled: bool = True,
    ) -> str:
        body = {
            "name": name,
            "definition_id": definition,
            "trigger": {"kind": "cron", "expression": cron},
            "timezone": "UTC",
            "initiator_id": initiator,
            "title_template": title,
            "overlap_policy": "allow",  # S3's second manual run launches while I7 waits
        }
        settings = services.schedules.settings_from(body)
        return services.schedules.create(actor, settings, enabled).id

    s1 = schedule(olga, "Payments check", d1, "ann", "0 9 * * *", "Payments {{date}}")
    s2 = schedule(olga, "Vendor review", d2, "bob", "0 10 * * *", "Vendors {{date}}")
    s3 = schedule(olga, "Ad hoc payments", d1, "ann", "0 0 1 1 *", "Ad hoc {{datetime}}", False)
    other = directory.authenticate(directory.bootstrap("globex", "boss").token)
    assert other is not None
    directory.create_account(other, REVIEWER, "Vera", ["operator"])
    payments = directory.create_definition(
        other,
        "payments",
        DefinitionFields("Payments", False, 3600, [], reviewers=DECIDERS),
    ).id
    directory.set_published(other, payments, True, None)
    schedule(other, "Payments check", payments, "boss", "0 9 * * *", "Payments {{date}}")

    def instance(initiator: str, run_id: str) -> str:
        return str(approval_uuid(tenant, initiator, f"run:{run_id}"))

    def scheduled(schedule_id: str, planned_at: datetime) -> str:
        return str(run_uuid(UUID(schedule_id), planned_at))

    def command(actor: Principal, instance_id: str, kind: str, key: str, **payload: Any) -> str:
        return approvals.command(actor, instance_id, Command(kind, key, payload)).outcome

    def tick(now: datetime, registered: int) -> None:
        clock.now = now
        assert Ticker.of(services).scan().registered == registered

    def poll(now: datetime, **expected: int) -> None:
        clock.now = now
        assert worker.poll() == WorkReport(**expected)

    def set_ann_active(active: bool) -> None:
        directory.set_active(root, "ann", active, None)

    # day 1
    tick(at(1, 9, 0, 2), registered=2)  # S1 and globex's schedule
    poll(at(1, 9, 0, 2), claimed=2, succeeded=2)
    i1 = instance("ann", scheduled(s1, at(1, 9)))
    clock.now = at(1, 9, 10, 2)
    assert command(root, i1, "claim", "c-1") == "CLAIMED"
    clock.now = at(1, 9, 30, 2)
    assert command(root, i1, "approve", "a-1", material_version=1) == "APPROVED"
    tick(at(1, 10, 0, 4), registered=1)
    poll(at(1, 10, 0, 4), claimed=1, succeeded=1)
    i2 = instance("bob", scheduled(s2, at(1, 10)))
    clock.now = at(1, 10, 5, 4)
    assert command(root, i2, "claim", "c-1") == "CLAIMED"
    clock.now = at(1, 10, 10, 4)
    assert command(root, i2, "approve", "a-1", material_version=2) == "STALE_MATERIAL"
    clock.now = at(1, 11, 0, 4)
    assert command(root, i2, "approve", "a-2", material_version=1) == "APPROVED"
    clock.now = at(1, 11, 5, 4)
    assert command(bob, i2, "withdraw", "w-1") == "CONFLICT"

    # day 2
    tick(at(2, 9, 0, 30), registered=2)
    services.projector.catch_up()
    assert len(worker.claim()) == 2  # then the worker dies
    poll(at(2, 9, 1, 30), claimed=2, succeeded=2)  # lease over: INTERRUPTED, then launched
    i3 = instance("ann", scheduled(s1, at(2, 9)))
    tick(at(2, 10), registered=1)
    poll(at(2, 10), claimed=1, succeeded=1)
    i5 = instance("bob", scheduled(s2, at(2, 10)))
    clock.now = at(2, 10, 2, 30)
    assert approvals.sweep() == 3  # I3, and globex's instances of days 1 and 2
    clock.now = at(2, 12)
    assert command(root, i5, "approve", "a-1", material_version=1) == "EXPIRED"

    # day 3
    clock.now = at(3, 9, 2)
    set_ann_active(False)
    tick(at(3, 9, 2), registered=2)
    poll(at(3, 9, 2), claimed=2, succeeded=1, failed=1)
    set_ann_active(True)
    poll(at(3, 9, 2, 1), claimed=1, succeeded=1)
    i4 = instance("ann", scheduled(s1, at(3, 9)))
    clock.now = at(3, 9, 12, 1)
    assert command(ann, i4, "withdraw", "w-1") == "WITHDRAWN"
    clock.now = at(3, 9, 20, 1)
    assert command(root, i4, "approve", "a-1", material_version=1) == "CONFLICT"
    clock.now = at(3, 9, 30)
    directory.set_published(root, d2, False, None)
    tick(at(3, 10, 0, 10), registered=1)
    poll(at(3, 10, 0, 10), claimed=1, failed=1)
    poll(at(3, 10, 0, 11), claimed=1, failed=1)
    clock.now = at(3, 14)
    adhoc = services.schedules.run_now(root, s3, "adhoc-1").id
    poll(at(3, 14), claimed=1, succeeded=1)
    i7 = instance("ann", adhoc)
    clock.now = at(3, 15)
    dead = services.schedules.run_now(root, s3, "adhoc-2").id
    set_ann_active(False)
    poll(at(3, 15), claimed=1, failed=1)
    poll(at(3, 15, 0, 1), claimed=1, failed=1)

    clock.now = at(3, 16)
    skipping_tenant = skips(services, clock)
    attention(services, clock)
    levels(services, clock)
    resubmissions(services, clock)
    services.projector.catch_up()
    return DataSet(
        services=services,
        tenant=str(tenant),
        d1=d1,
        d2=d2,
        s1=s1,
        s2=s2,
        s3=s3,
        s2_day3_run=scheduled(s2, at(3, 10)),
        s3_dead_run=dead,
        i2=i2,
        i3=i3,
        i4=i4,
        i5=i5,
        i7=i7,
        skipping_tenant=skipping_tenant,
    )


def skips(services: Services, clock: FakeClock) -> str:
    """Tenant `initech`: "Reports" (every 10 minutes, misfire `skip`, overlap by default
    `skip_while_launching`) enabled at 16:00 on day 3 and first scanned at 16:30:01, so 16:10
    and 16:20 are missed and 16:30 is on time; a manual run at 16:30:01 is skipped while 16:30
    is pending."""
    directory = services.directory
    boss = directory.authenticate(directory.bootstrap("initech", "ines").token)
    assert boss is not None
    directory.create_account(boss, "ian", "Ian", ["requester"])
    directory.create_account(boss, REVIEWER, "Vera", ["operator"])
    reports = directory.create_definition(
        boss,
        "reports",
        DefinitionFields("Reports", False, 3600, [], reviewers=DECIDERS),
    ).id
    directory.set_published(boss, reports, True, None)
    body = {
        "name": "Reports",
        "definition_id": reports,
        "trigger": {"kind": "cron", "expression": "*/10 * * * *"},
        "timezone": "UTC",
        "initiator_id": "ian",
        "misfire_policy": "skip",
    }
    schedule = services.schedules.create(boss, services.schedules.settings_from(body), True).id
    clock.now = at(3, 16, 30, 1)
    assert Ticker.of(services).scan().registered == 2  # the summary and 16:30
    services.schedules.run_now(boss, schedule, "now-1")
    assert Worker.of(services).poll() == WorkReport(claimed=1, succeeded=1, skipped=1)
    return str(boss.tenant_id)


def attention(services: Services, clock: FakeClock) -> None:
    """Tenant `umbrella`, whose initiator uma is inactive: "Sync" (every minute, misfire
    `skip`) dead-letters its 16:32 cycle, then misses 16:33 to 16:35 (scanned at 16:35:30: one
    summary, its newest run); "Manual export" runs by hand at 16:36 and waits to retry."""
    directory = services.directory
    clock.now = at(3, 16, 31)
    boss = directory.authenticate(directory.bootstrap("umbrella", "uwe").token)
    assert boss is not None
    directory.create_account(boss, "uma", "Uma", ["requester"])
    exports = directory.create_definition(
        boss, "exports", DefinitionFields("Exports", False, 3600, [], reviewers=DECIDERS)
    ).id
    directory.set_published(boss, exports, True, None)

    def schedule(name: str, enabled: bool) -> str:
        body = {
            "name": name,
            "definition_id": exports,
            "trigger": {"kind": "cron", "expression": "* * * * *"},
            "timezone": "UTC",
            "initiator_id": "uma",
            "misfire_policy": "skip",
        }
        settings = services.schedules.settings_from(body)
        return services.schedules.create(boss, settings, enabled).id

    schedule("Sync", True)
    manual = schedule("Manual export", False)
    directory.set_active(boss, "uma", False, None)
    worker = Worker.of(services)
    clock.now = at(3, 16, 32)
    assert Ticker.of(services).scan().registered == 1
    assert worker.poll() == WorkReport(claimed=1, failed=1)
    clock.now = at(3, 16, 32, 1)
    assert worker.poll() == WorkReport(claimed=1, failed=1)  # dead-lettered
    clock.now = at(3, 16, 35, 30)
    assert Ticker.of(services).scan().registered == 1  # the summary of 16:33 to 16:35
    clock.now = at(3, 16, 36)
    directory.set_active(boss, "uma", True, None)  # run-now refuses an inactive initiator
    services.schedules.run_now(boss, manual, "export-1")
    directory.set_active(boss, "uma", False, None)
    assert worker.poll() == WorkReport(claimed=1, failed=1)  # waits to retry


def levels(services: Services, clock: FakeClock) -> None:
    """Tenant `wonka`, definition `payment`: level 1 主管 (hal), level 2 财务 (two of fay, fen,
    fox). P1 submitted at 17:00 on day 3: hal approves at 17:10 (600 s), fay at 17:20, then hu
    revises at 17:30 (both approvals lapse: back to level 1); hal approves v2 at 17:40 (600 s
    again), fay and fen at 18:00 (level 2: 1200 s) and it is approved. P2 submitted at 18:00:
    hal approves at 18:30 (1800 s); level 2 still waits."""
    directory, approvals = services.directory, services.approvals
    clock.now = at(3, 17)
    boss = directory.authenticate(directory.bootstrap("wonka", "willy").token)
    assert boss is not None
    directory.create_account(boss, "hu", "Hu", ["requester"])
    for reviewer in ("hal", "fay", "fen", "fox"):
        directory.create_account(boss, reviewer, reviewer.title(), ["operator"])
    finance = {"accounts": ["fay", "fen", "fox"]}
    payment = directory.create_definition(
        boss,
        "payment",
        DefinitionFields(
            "Payment",
            False,
            86400,
            [],
            levels=[
                {"name": "主管", "reviewers": {"accounts": ["hal"]}},
                {"name": "财务", "reviewers": finance, "approvals_required": 2},
            ],
        ),
    ).id
    directory.set_published(boss, payment, True, None)
    hu = Principal(boss.tenant_id, "hu", ROLES["requester"])

    def by(name: str) -> Principal:
        return Principal(boss.tenant_id, name, ROLES["operator"])

    def command(actor: Principal, instance_id: str, kind: str, key: str, **payload: Any) -> str:
        return approvals.command(actor, instance_id, Command(kind, key, payload)).outcome

    p1, _ = approvals.submit(hu, Submission("p-1", payment, "P1", {}, 1, None))
    clock.now = at(3, 17, 10)
    assert command(by("hal"), p1.id, "approve", "a-1", material_version=1) == "VOTED"
    clock.now = at(3, 17, 20)
    assert command(by("fay"), p1.id, "approve", "a-2", material_version=1) == "VOTED"
    clock.now = at(3, 17, 30)
    revised = {"material_version": 2, "reason": "金额更正", "form_data": None}
    assert command(hu, p1.id, "revise", "v-1", **revised) == "REVISED"
    clock.now = at(3, 17, 40)
    assert command(by("hal"), p1.id, "approve", "a-3", material_version=2) == "VOTED"
    clock.now = at(3, 18)
    assert command(by("fay"), p1.id, "approve", "a-4", material_version=2) == "VOTED"
    assert command(by("fen"), p1.id, "approve", "a-5", material_version=2) == "APPROVED"
    p2, _ = approvals.submit(hu, Submission("p-2", payment, "P2", {}, 1, None))
    clock.now = at(3, 18, 30)
    assert command(by("hal"), p2.id, "approve", "a-1", material_version=1) == "VOTED"


def resubmissions(services: Services, clock: FakeClock) -> None:
    """Tenant `hooli`: hal's "Laptop" is withdrawn, resubmitted, rejected, resubmitted and
    approved (a chain of three); his "Monitor" is withdrawn and left so (a chain of one)."""
    directory, approvals = services.directory, services.approvals
    clock.now = at(3, 17)
    boss = directory.authenticate(directory.bootstrap("hooli", "hank").token)
    assert boss is not None
    directory.create_account(boss, "hal", "Hal", ["requester"])
    hal = directory.authenticate(directory.issue_token(boss, "hal").token)
    assert hal is not None
    kit = directory.create_definition(
        boss, "kit", DefinitionFields("Kit", False, 3600, [], reviewers=DECIDERS)
    ).id
    directory.set_published(boss, kit, True, None)

    def submitted(title: str) -> str:
        return approvals.submit(hal, Submission(title, kit, title, {}, 1, None))[0].id

    def resubmitted(instance_id: str, command_id: str) -> str:
        asked = {"reason": "again", "material_version": 1, "form_data": None, "title": None}
        linked = approvals.link(hal, instance_id, Command("resubmit", command_id, asked)).linked
        assert linked is not None
        return linked.id

    laptop, monitor = submitted("Laptop"), submitted("Monitor")
    for withdrawn in (laptop, monitor):
        approvals.command(hal, withdrawn, Command("withdraw", "w-1", {}))
    second = resubmitted(laptop, "r-1")
    no = {"material_version": 1, "comment": "too dear"}
    approvals.command(boss, second, Command("reject", "n-1", no))
    third = resubmitted(second, "r-2")
    approvals.command(boss, third, Command("approve", "a-1", {"material_version": 1}))


# -- the expected figures, worked out by hand from the data set above ---------------------------

Row = tuple[Any, ...]
Case = tuple[tuple[Any, ...], list[Row]]  # parameters, expected rows
CASES: dict[int, Callable[[DataSet], list[Case]]] = {}


def case(
    number: int,
) -> Callable[[Callable[[DataSet], list[Case]]], Callable[[DataSet], list[Case]]]:
    def register(cases: Callable[[DataSet], list[Case]]) -> Callable[[DataSet], list[Case]]:
        CASES[number] = cases
        return cases

    return register


@case(1)
def success_rate_per_schedule_per_day(d: DataSet) -> list[Case]:
    return [
        (
            (),
            [
                ("2026-10-01", "Payments check", 1, 1, 0, 1.0),
                ("2026-10-01", "Vendor review", 1, 1, 0, 1.0),
                ("2026-10-02", "Payments check", 1, 1, 0, 1.0),
                ("2026-10-02", "Vendor review", 1, 1, 0, 1.0),
                ("2026-10-03", "Ad hoc payments", 2, 1, 1, 0.5),
                ("2026-10-03", "Payments check", 1, 1, 0, 1.0),
                ("2026-10-03", "Vendor review", 1, 0, 1, 0.0),
            ],
        ),
    ]


@case(2)
def dead_letters_in_a_window(d: DataSet) -> list[Case]:
    s2_dead = (
        d.s2_day3_run,
        "Vendor review",
        "schedule",
        at(3, 10),
        2,
        "DEFINITION_UNPUBLISHED",
        at(3, 10, 0, 11),
    )
    s3_dead = (
        d.s3_dead_run,
        "Ad hoc payments",
        "manual",
        at(3, 15),
        2,
        "INITIATOR_INACTIVE",
        at(3, 15, 0, 1),
    )
    return [
        ((), [s2_dead, s3_dead]),
    ]


@case(3)
def registration_lag_percentiles(d: DataSet) -> list[Case]:
    # scheduled lags 2, 4 (day 1), 30, 0 (day 2), 120, 10 (day 3); manual runs left out
    return [
        ((), [(6, 166 / 6, 4.0, 120.0, 120.0)]),
    ]


@case(4)
def mean_time_to_decision_per_definition(d: DataSet) -> list[Case]:
    # D1: I1 approved after 1800 s, I4 withdrawn after 600 s; D2: I2 approved after 3600 s
    return [
        ((), [(d.d1, 2, 1, 1, 1200.0, 1800.0), (d.d2, 1, 1, 0, 3600.0, 3600.0)]),
    ]


@case(14)
def decisions_by_definition_name_and_reviewer(d: DataSet) -> list[Case]:
    # I1 and I2 approved by root; I4 withdrawn by ann (its applicant)
    return [
        (
            (),
            [
                ("Payments", "Ann", "WITHDRAWN", 1),
                ("Payments", "root", "APPROVED", 1),
                ("Vendors", "root", "APPROVED", 1),
            ],
        ),
    ]


@case(15)
def operations_per_actor_and_kind(d: DataSet) -> list[Case]:
    # bootstrap, accounts, definitions and schedules on day 1 at 08:00; ann switched off and on
    # at 09:02 and off at 15:00 on day 3, D2 unpublished at 09:30, S3 run by hand at 14:00, 15:00
    day_3 = [
        ("root", "account.activated", 1, at(3, 9, 2)),
        ("root", "account.deactivated", 2, at(3, 15)),
        ("root", "definition.unpublished", 1, at(3, 9, 30)),
        ("root", "run.manual", 2, at(3, 15)),
    ]
    return [
        (
            (),
            [
                ("olga", "schedule.created", 3, at(1, 8)),
                *day_3[:2],
                ("root", "account.registered", 3, at(1, 8)),
                ("root", "definition.published", 2, at(1, 8)),
                ("root", "definition.registered", 2, at(1, 8)),
                *day_3[2:],
                ("system", "account.registered", 1, at(1, 8)),
                ("system", "account.token_issued", 1, at(1, 8)),
            ],
        ),
    ]


@case(5)
def expiry_rate_by_definition(d: DataSet) -> list[Case]:
    # D1: I1 approved, I3 expired (60 s late), I4 withdrawn, I7 waiting; D2: I2 approved,
    # I5 expired (recorded at its deadline)
    return [
        ((), [(d.d1, 4, 1, 1, 1 / 3, 60.0), (d.d2, 2, 0, 1, 0.5, 0.0)]),
    ]


@case(6)
def attempts_by_outcome_and_error_code(d: DataSet) -> list[Case]:
    return [
        (
            (),
            [
                ("SUCCEEDED", "", 6, 6),
                ("FAILED", "INITIATOR_INACTIVE", 3, 2),
                ("FAILED", "DEFINITION_UNPUBLISHED", 2, 1),
                ("INTERRUPTED", "INTERRUPTED", 1, 1),
            ],
        ),
    ]


@case(7)
def schedules_whose_last_launch_went_wrong(d: DataSet) -> list[Case]:
    # umbrella: the manual export's newest run waits to retry; Sync's newest run is a skip,
    # and the one before it lies in the dead letters
    waiting = ("Manual export", "RETRY_WAIT", at(3, 16, 36), 1, "INITIATOR_INACTIVE", None)
    dead = ("Sync", "DEAD_LETTER", at(3, 16, 32), 2, "INITIATOR_INACTIVE", at(3, 16, 32, 1))
    return [((), [(*waiting, "RETRY_WAIT"), (*dead, "SKIPPED_MISSED")])]


@case(22)
def approval_time_per_definition_per_business_week(d: DataSet) -> list[Case]:
    # approved by a reviewer: I1 after 1800 s, I2 after 3600 s, both in ISO week 40 of 2026
    return [
        ((), [("Payments", 2026, 40, 1, 1800.0, 1800.0), ("Vendors", 2026, 40, 1, 3600.0, 3600.0)])
    ]


@case(23)
def expiry_rate_per_definition_per_business_week(d: DataSet) -> list[Case]:
    # Payments: I1 approved, I3 expired, I4 withdrawn, I7 waiting; Vendors: I2 approved, I5 expired
    return [((), [("Payments", 2026, 40, 4, 3, 1, 1 / 3), ("Vendors", 2026, 40, 2, 2, 1, 0.5)])]


@case(24)
def runs_per_schedule_per_business_day(d: DataSet) -> list[Case]:
    return [
        (
            (),
            [
                ("2026-10-01", "Payments check", 1, 1, 0),
                ("2026-10-01", "Vendor review", 1, 1, 0),
                ("2026-10-02", "Payments check", 1, 1, 0),
                ("2026-10-02", "Vendor review", 1, 1, 0),
                ("2026-10-03", "Ad hoc payments", 2, 1, 0),
                ("2026-10-03", "Payments check", 1, 1, 0),
                ("2026-10-03", "Vendor review", 1, 0, 0),
            ],
        )
    ]


@case(25)
def deadline_met_or_missed_per_definition_per_business_week(d: DataSet) -> list[Case]:
    # met: I1 and I2, approved before their deadlines; missed: I3 and I5, expired; I7 waits;
    # I4 was withdrawn by its applicant (neither)
    return [((), [("Payments", 2026, 40, 4, 1, 1, 1, 0.5), ("Vendors", 2026, 40, 2, 1, 1, 0, 0.5)])]


@case(27)
def runs_per_business_day_and_why_it_was_or_was_not_worked(d: DataSet) -> list[Case]:
    # acme's default calendar is China's 2026: 10-01 to 10-03 are National Day holidays
    holiday = "HOLIDAY", "国庆节"
    return [
        (
            (),
            [
                ("2026-10-01", 0, *holiday, 2),
                ("2026-10-02", 0, *holiday, 2),
                ("2026-10-03", 0, *holiday, 4),
            ],
        )
    ]


@case(8)
def rejected_commands_per_instance(d: DataSet) -> list[Case]:
    i2 = (d.i2, "Vendors 2026-10-01", "APPROVED", 2, 1, 1, 0, at(1, 10, 10, 4), at(1, 11, 5, 4))
    i4 = (d.i4, "Payments 2026-10-03", "WITHDRAWN", 1, 0, 1, 0, at(3, 9, 20, 1), at(3, 9, 20, 1))
    i5 = (d.i5, "Vendors 2026-10-02", "EXPIRED", 1, 0, 0, 1, at(2, 12), at(2, 12))
    return [
        ((), [i2, i4, i5]),
    ]


@case(9)
def daily_rollup_of_one_schedule(d: DataSet) -> list[Case]:
    return [
        (
            (),  # S2
            [
                ("2026-10-01", 1, 1, 0, 4.0, 1, 3600.0),
                ("2026-10-02", 1, 1, 0, 0.0, 1, 7200.0),
                ("2026-10-03", 1, 0, 1, 10.0, 0, None),
            ],
        ),
    ]


@case(10)
def window_totals_per_schedule(d: DataSet) -> list[Case]:
    return [
        (
            (),
            [
                ("Ad hoc payments", 2, 1, 1, 0.5, 0.0, 0, None),
                # lags 2 + 30 + 120; decisions 1800 + 3660 + 600
                ("Payments check", 3, 3, 0, 1.0, 152 / 3, 3, 2020.0),
                # lags 4 + 0 + 10; decisions 3600 + 7200
                ("Vendor review", 3, 2, 1, 2 / 3, 14 / 3, 2, 5400.0),
            ],
        ),
    ]


@case(11)
def every_command_of_one_instance(d: DataSet) -> list[Case]:
    return [
        (
            (),  # I2
            [
                (1, "submit", "SUBMITTED", 1, "bob", at(1, 10, 0, 4), "submitted"),
                (2, "claim", "CLAIMED", 1, "root", at(1, 10, 5, 4), "the task was claimed"),
                (
                    3,
                    "approve",
                    "STALE_MATERIAL",
                    0,
                    "root",
                    at(1, 10, 10, 4),
                    "material version 2 is not the current 1",
                ),
                (
                    4,
                    "approve",
                    "APPROVED",
                    1,
                    "root",
                    at(1, 11, 0, 4),
                    "approved before the deadline",
                ),
                (
                    5,
                    "withdraw",
                    "CONFLICT",
                    0,
                    "bob",
                    at(1, 11, 5, 4),
                    "the instance is already APPROVED",
                ),
            ],
        ),
    ]


@case(12)
def instances_waiting_past_their_deadline(d: DataSet) -> list[Case]:
    return [
        ((), [(d.i7, "Ad hoc 2026-10-03 14:00", d.d1, at(3, 15))]),
    ]


@case(16)
def skipped_runs_per_schedule_and_reason(d: DataSet) -> list[Case]:
    skipped_at = at(3, 16, 30, 1)
    return [
        (
            (),  # tenant initech
            [("Reports", "MISSED", 1, 2, skipped_at), ("Reports", "OVERLAP", 1, 1, skipped_at)],
        ),
    ]


@case(17)
def activity_per_hour(d: DataSet) -> list[Case]:
    # 08:00: the bootstrap (system: root registered, its token issued), root's 3 accounts,
    # 2 definitions registered and 2 published, olga's 3 schedules; the tick's registrations
    # and the worker's attempts are no one's commands. I1 submitted 09:00:02, approved
    # 09:30:02; I2 submitted 10:00:04, a stale approve at 10:10:04, approved 11:00:04, bob's
    # withdraw rejected at 11:05:04
    return [
        (
            (),
            [
                ("2026-10-01 08:00", 12, 12, 0, 3),
                ("2026-10-01 09:00", 2, 2, 0, 2),
                ("2026-10-01 10:00", 2, 1, 1, 2),
                ("2026-10-01 11:00", 2, 1, 1, 2),
            ],
        )
    ]


@case(18)
def median_and_percentile_per_group(d: DataSet) -> list[Case]:
    # Payments: I4 600, I1 1800, I3 3660 s; Vendors: I2 3600, I5 7200 s
    return [((), [("Payments", 3, 1800.0, 3660.0), ("Vendors", 2, 3600.0, 7200.0)])]


@case(19)
def rounded_decision_times_per_definition(d: DataSet) -> list[Case]:
    # Payments: I4 600, I1 1800, I3 3660 s (60 s late); Vendors: I2 3600, I5 7200 s (on time)
    return [((), [("Payments", 3, 0.56, 1.02, 60.0, 1), ("Vendors", 2, 1.5, 2.0, 0.0, 1)])]


@case(20)
def time_to_claim_per_definition(d: DataSet) -> list[Case]:
    # Payments: I1 claimed 600 s after its submission, I3, I4 and I7 never; Vendors: I2 300 s
    return [((), [("Payments", 4, 1, 600.0, 600.0), ("Vendors", 2, 1, 300.0, 300.0)])]


@case(21)
def claim_to_decision_per_reviewer(d: DataSet) -> list[Case]:
    # root held I1 1,200 s (9:10 to 9:30) and I2 3,300 s (10:05 to 11:00), then approved each
    return [((), [("root", 2, 2250.0, 3300.0)])]


@case(26)
def time_to_claim_per_business_week(d: DataSet) -> list[Case]:
    # all six tasks of acme were submitted in ISO week 40 of 2026; I1 claimed after 600 s,
    # I2 after 300 s, I3, I4, I5 and I7 never
    return [((), [(2026, 40, 6, 2, 450.0, 600.0)])]


@case(28)
def time_per_review_level_per_definition(d: DataSet) -> list[Case]:
    # level 1: P1's latest opening 600 s (17:30 to 17:40), P2's 1800 s; level 2: P1's 1200 s
    return [
        (
            (),
            [
                ("payment", 1, "主管", 2, 2, 1200.0, 1800.0),
                ("payment", 2, "财务", 2, 1, 1200.0, 1200.0),
            ],
        )
    ]


@case(29)
def lapsed_approvals_per_definition(d: DataSet) -> list[Case]:
    # P1: hal and fay on v1 (lapsed), hal, fay and fen on v2; P2: hal
    return [((), [("payment", 6, 2, 1)])]


@case(30)
def paused_review_time_per_definition(d: DataSet) -> list[Case]:
    # no instance of acme was paused nor returned: every clock ran
    return [((), [("Payments", 4, 0, 0.0, 0.0), ("Vendors", 2, 0, 0.0, 0.0)])]


@case(31)
def resubmission_chains(d: DataSet) -> list[Case]:
    # hooli: Laptop withdrawn, resubmitted, rejected, resubmitted, approved; Monitor withdrawn
    return [((), [("Laptop", 3, "APPROVED"), ("Monitor", 1, "WITHDRAWN")])]


@case(13)
def projection_positions(d: DataSet) -> list[Case]:
    end = d.services.ledger.recorder.max_notification_id()
    return [
        (
            (),
            [
                (name, end)
                for name in (
                    "activity",
                    "approvals",
                    "audit_chain",
                    "calendars",
                    "callback_sources",
                    "directory",
                    "groups",
                    "levels",
                    "merkle_tree",
                    "notifications",
                    "operations",
                    "pauses",
                    "runs",
                    "schedule_daily",
                    "schedules",
                    "tasks",
                    "webhooks",
                )
            ],
        )
    ]


# -- the tests ---------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """A value as both stores should mean it: numerics as floats, instants as datetimes."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, str) and INSTANT_TEXT.fullmatch(value):
        return as_instant(value)
    return value


def approximately(rows: list[Row]) -> list[Row]:
    return [
        tuple(pytest.approx(v, abs=1e-6) if isinstance(v, float) else v for v in row)
        for row in rows
    ]


def test_the_guide_has_at_least_nine_numbered_example_queries() -> None:
    found = examples()
    assert len(found) >= 9, f"{GUIDE.name} has {len(found)} example queries"
    assert sorted(found) == list(range(1, len(found) + 1))
    for example in found.values():
        assert example.prose, f"Q{example.number} has no sentence saying what it answers"
        assert example.sql.strip(), f"Q{example.number} has an empty query"


def test_every_example_query_has_its_expected_figures() -> None:
    assert sorted(examples()) == sorted(CASES)


@pytest.mark.parametrize("number", sorted(CASES), ids=lambda n: f"Q{n}")
def test_example_queries_avoid_dialect_specific_sql(number: int) -> None:
    sql = examples()[number].sql.lower()
    assert [token for token in NOT_PORTABLE if token in sql] == []
    assert '"' not in sql, "quoted identifiers or strings: use single quotes for text"


@pytest.mark.parametrize("number", sorted(CASES), ids=lambda n: f"Q{n}")
def test_example_query_returns_the_expected_figures(data: DataSet, number: int) -> None:
    """Each query as written, pasted into psql or run by the sqlite3 module: no parameters."""
    example = examples()[number]
    assert "?" not in example.sql, "placeholders: write literal example values"
    for _, expected in CASES[number](data):
        if data.services.store.kind == "sqlite":
            rows = [tuple(plain(value) for value in row) for row in sqlite_rows(data, example.sql)]
        else:
            printed = psql_rows(data, example.sql)
            assert len(printed) == len(expected), f"Q{number}. {example.title}: {printed}"
            rows = [
                tuple(map(from_psql, row, want))
                for row, want in zip(printed, expected, strict=True)
            ]
        assert rows == approximately(expected), f"Q{number}. {example.title}"


def sqlite_rows(data: DataSet, sql: str) -> list[Row]:
    """The rows Python's sqlite3 module answers, on the store's file, as the sqlite3 shell."""
    connection = sqlite3.connect(data.services.store.sqlite_path)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


PSQL_NULL = "<null>"


def psql_rows(data: DataSet, sql: str) -> list[list[str]]:
    """The rows `psql` prints for the statement as written (CSV, NULL as PSQL_NULL)."""
    store = data.services.store
    pg = store.postgres
    url = f"postgresql://{pg['user']}@{pg['host']}:{pg['port']}/{pg['dbname']}"
    environment = {
        **os.environ,
        "PGPASSWORD": pg["password"],
        "PGOPTIONS": f"-c search_path={store.schema} -c TimeZone=UTC",
    }
    command = ["psql", "-X", "-v", "ON_ERROR_STOP=1", "--csv", "-t", "-P", f"null={PSQL_NULL}"]
    done = subprocess.run(
        [*command, "-d", url],
        input=sql,
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return list(csv.reader(io.StringIO(done.stdout)))


def from_psql(text: str, expected: Any) -> Any:
    """A value psql printed, read as the type the expected value has."""
    if text == PSQL_NULL:
        return None
    if isinstance(expected, bool):
        return text == "t"
    if isinstance(expected, int):
        return int(text)
    if isinstance(expected, float):
        return float(text)
    if isinstance(expected, datetime):
        return as_instant(text)
    return text


def test_the_dictionary_lists_every_column_of_every_table(data: DataSet) -> None:
    documented = documented_columns()
    tables = ["projection_positions", "undecodable_events", "signed_checkpoints"]
    tables += ["notification_reads", "account_contacts", "notice_emails"]
    tables += ["account_credentials", "sign_in_failures"]
    tables += [t for p in all_projections("UTC") for t in p.tables]
    assert sorted(documented) == sorted(tables)
    with data.services.store.connect() as connection:
        for table in tables:
            cursor = connection.execute(f"SELECT * FROM {table} WHERE 1 = 0")
            actual = [column[0] for column in cursor.description]
            assert documented.get(table) == actual, f"the guide's columns of {table}"


def test_instants_come_back_as_the_guide_says(data: DataSet) -> None:
    (row,) = data.query("SELECT finished_at FROM runs WHERE id = ?", (data.s2_day3_run,))
    if data.services.store.kind == "sqlite":
        assert row[0] == "2026-10-03 10:00:11.000000"
    else:
        assert row[0] == at(3, 10, 0, 11)


# One window (the second S2's day-3 run was dead-lettered in, 10:00:11 UTC) written with each
# offset a query may name: through `Store.query`, every form finds the same run on both stores.
WINDOW_FORMS = {
    "Z": ("2026-10-03 10:00:11Z", "2026-10-03 10:00:12Z"),
    "+00": ("2026-10-03 10:00:11+00", "2026-10-03 10:00:12+00"),
    "+08": ("2026-10-03 18:00:11+08", "2026-10-03 18:00:12+08"),
    "T+08:00": ("2026-10-03T18:00:11+08:00", "2026-10-03T18:00:12+08:00"),
    "-05:30": ("2026-10-03 04:30:11-05:30", "2026-10-03 04:30:12-05:30"),
}


@pytest.mark.parametrize("form", sorted(WINDOW_FORMS))
def test_a_window_finds_the_same_rows_whatever_offset_its_literals_name(
    data: DataSet, form: str
) -> None:
    since, until = WINDOW_FORMS[form]
    window = f"SELECT id FROM runs WHERE finished_at >= '{since}' AND finished_at < '{until}'"
    assert data.query(window, ()) == [(data.s2_day3_run,)]
    exactly = f"SELECT id FROM runs WHERE finished_at <= '{since}' AND finished_at >= '{since}'"
    assert data.query(exactly, ()) == [(data.s2_day3_run,)]


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)  # PostgreSQL has TIMESTAMPTZ
def test_sqlite_instants_compare_with_literals_and_date_functions(data: DataSet) -> None:
    """On SQLite, a literal bounds a window to the second and `datetime('now')` reads them."""
    ((total,),) = sqlite_rows(data, "SELECT COUNT(*) FROM runs")
    assert sqlite_rows(
        data, "SELECT COUNT(*) FROM runs WHERE registered_at <= datetime('now')"
    ) == [(total,)]
    window = (
        "SELECT id FROM runs WHERE finished_at >= '2026-10-03 10:00:11+00' "
        "AND finished_at < '2026-10-03 10:00:12+00'"
    )
    assert sqlite_rows(data, window) == [(data.s2_day3_run,)]
