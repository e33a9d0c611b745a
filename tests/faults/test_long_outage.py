"""A 30-second outage (issue 20, item 2): PostgreSQL frozen under the separate processes
`cronledger web`, `tick`, `worker`, `projections` and `sweeper` for 30 s.

While it is away, every process's `/healthz` answers 503 and the web process answers API
requests with a 503 problem document within a limit (never a hang); a command refused so is
recorded nowhere. When it comes back, each process (the same one: none exits or is restarted)
works again by itself: the cycles that fell due meanwhile are registered by their misfire
policy, each planned instant once, each run launched at most once; the instances whose deadline
passed in the outage are expired by the deadline rule at or after their deadline, and an approve
sent afterwards is refused; the reminder that fell due meanwhile is recorded once; the lists show
it all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest

from cronledger.persistence.store import Store
from tests.e2e.helpers import request
from tests.faults.conftest import Proxied, through
from tests.faults.proxy import proxy_to
from tests.faults.test_database_away import (
    DEFINITION,
    answer,
    assert_each_instant_once,
    assert_unavailable,
    bootstrap,
    planned,
    take_away,
)
from tests.processes import Child, free_port, started
from tests.support import WAIT_SECONDS, wait_until

T = TypeVar("T")
OUTAGE = timedelta(seconds=30)
DEADLINE_IN = timedelta(seconds=10)  # from submission to deadline: inside the outage
REMINDER_BEFORE = 100  # seconds before a deadline 120 s away: due inside the outage
REMINDED_DEADLINE_IN = timedelta(seconds=120)
EVERY_FIVE_SECONDS = timedelta(seconds=5)
BACKGROUND = ("tick", "worker", "projections", "sweeper")
UNFINISHED = ("PENDING", "RUNNING", "RETRY_WAIT")


@dataclass(frozen=True)
class Cluster:
    """The processes under test and where each answers its probes (`web` on its API port)."""

    children: dict[str, Child]
    probes: dict[str, str]

    @property
    def base(self) -> str:
        return self.probes["web"]

    def assert_running(self) -> None:
        """The test fails, with what it logged, if a process has exited."""
        for child in self.children.values():
            if child.process.poll() is not None:
                child.reader.join(5)
                pytest.fail(
                    f"{child.command} exited with {child.process.returncode}\n{child.stderr}"
                )

    def describe(self) -> str:
        return "\n".join(child.describe() for child in self.children.values())

    def wait_for(self, condition: Callable[[], T], what: str, timeout: float = WAIT_SECONDS) -> T:
        """`condition`'s first truthy value while every process runs."""

        def met_while_running() -> T:
            self.assert_running()
            return condition()

        return wait_until(met_while_running, what, timeout, 0.2, self.describe)


@pytest.fixture
def background(proxied: Proxied) -> Iterator[Proxied]:
    """The same store behind a second proxy, for the processes besides web: the web process can
    be given the store back before them."""
    parts = urlsplit(proxied.direct_url)
    with proxy_to(parts.hostname or "127.0.0.1", parts.port or 5432) as proxy:
        yield Proxied(proxy, through(proxied.direct_url, proxy.port), proxied.direct_url)


@contextmanager
def cluster(web_url: str, background_url: str) -> Iterator[Cluster]:
    """web on `web_url`; tick, worker, projections and sweeper on `background_url`; each its
    own process, with its probes."""
    with ExitStack() as stack:
        web_port = free_port()
        web = started(web_url, "web", "--port", str(web_port))
        children = {"web": stack.enter_context(web)}
        probes = {"web": f"http://127.0.0.1:{web_port}"}
        for command in BACKGROUND:
            port = free_port()
            alone = started(background_url, command, "--metrics-port", str(port))
            children[command] = stack.enter_context(alone)
            probes[command] = f"http://127.0.0.1:{port}"
        yield Cluster(children, probes)


def status_of(url: str) -> int | None:
    """The status `url` answers, or None while nothing listens there."""
    try:
        return request(url)[0]
    except OSError:
        return None


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def created(base: str, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, document = request(f"{base}{path}", token, body)
    assert status == 201, document
    return dict(document)


def published_definition(base: str, token: str, **fields: Any) -> str:
    definition = created(base, token, "/api/definitions", {**DEFINITION, **fields})
    status, document = request(f"{base}/api/definitions/{definition['id']}/publish", token, {})
    assert status == 200, document
    return str(definition["id"])


def schedule(base: str, token: str, definition_id: str, expression: str, **policies: str) -> str:
    body = {
        "name": expression,
        "definition_id": definition_id,
        "trigger": {"kind": "cron", "expression": expression},
        "initiator_id": "admin",
        "enabled": True,
        **policies,
    }
    return str(created(base, token, "/api/workflows/schedules", body)["id"])


def reviewer_token(base: str, token: str) -> str:
    """A token of a new operator `reviewer`, who may decide what the admin submits."""
    account = {"id": "reviewer", "name": "Reviewer", "roles": ["operator"]}
    created(base, token, "/api/accounts", account)
    return str(created(base, token, "/api/accounts/reviewer/tokens", {})["token"])


def submit(
    base: str, token: str, name: str, definition_id: str, deadline: datetime
) -> dict[str, Any]:
    """A new instance, submitted by the admin with its `name` as command id."""
    body = {
        "command_id": name,
        "definition_id": definition_id,
        "title": "Contract",
        "form_data": {},
        "material_version": 1,
        "review_deadline_at": deadline.isoformat(),
    }
    return created(base, token, "/api/approvals", body)


def approve(base: str, token: str, instance_id: str) -> tuple[int, Any]:
    body = {"command_id": "late-approve", "material_version": 1}
    return answer(f"{base}/api/approvals/{instance_id}/approve", token, body)


def runs_of(direct: Store, schedule_id: str) -> list[dict[str, Any]]:
    """The schedule's runs as the read model holds them, in planned order."""
    rows = direct.query(
        "SELECT id, planned_at, status, skipped_count, missed_until, instance_id FROM runs "
        "WHERE schedule_id = ? ORDER BY planned_at, registered_at",
        (schedule_id,),
    )
    names = ("id", "planned_at", "status", "skipped_count", "missed_until", "instance_id")
    return [dict(zip(names, row, strict=True)) for row in rows]


def settled_through(direct: Store, schedule_id: str, moment: datetime) -> bool:
    """Whether cycles are registered past `moment` and none up to it is left unfinished."""
    runs = runs_of(direct, schedule_id)
    return (
        bool(runs)
        and max(r["planned_at"] for r in runs) > moment
        and not any(r["status"] in UNFINISHED for r in runs if r["planned_at"] <= moment)
    )


def statuses(direct: Store, schedule_id: str, through: datetime) -> Counter[str]:
    """How many of the schedule's runs planned up to `through` end in each status."""
    runs = runs_of(direct, schedule_id)
    return Counter(run["status"] for run in runs if run["planned_at"] <= through)


def assert_launched_once(direct: Store, *schedule_ids: str) -> None:
    """Each run that succeeded made exactly one instance, and no other run made any."""
    rows = direct.query(
        "SELECT run_id, COUNT(*) FROM approvals WHERE run_id IS NOT NULL GROUP BY run_id", ()
    )
    instances = {str(row[0]): int(row[1]) for row in rows}
    succeeded = {
        run["id"]
        for schedule_id in schedule_ids
        for run in runs_of(direct, schedule_id)
        if run["status"] == "SUCCEEDED"
    }
    assert instances == dict.fromkeys(succeeded, 1)


def instance_of(base: str, token: str, instance_id: str) -> dict[str, Any]:
    """An instance as the API answers it."""
    status, instance = request(f"{base}/api/approvals/{instance_id}", token)
    assert status == 200, instance
    return dict(instance)


def launched_any(direct: Store, schedule_id: str) -> bool:
    return any(run["instance_id"] for run in runs_of(direct, schedule_id))


def healthy(probe: str) -> bool:
    return status_of(f"{probe}/healthz") == 200


def assert_reminded_once(instance: dict[str, Any], due: datetime) -> None:
    """One reminder, for the instant it was due, recorded no earlier."""
    [sent] = instance["reminders_sent"]
    assert instant(sent["due_at"]) == due, sent
    assert instant(sent["at"]) >= due, sent
    assert instance["state"] == "WAITING_REVIEW", instance


def listed(base: str, token: str, state: str) -> set[str]:
    status, page = request(f"{base}/api/approvals?state={state}&page_size=200", token)
    assert status == 200, page
    return {item["id"] for item in page["items"]}


def timeline(base: str, token: str, instance_id: str) -> list[dict[str, Any]]:
    status, document = request(f"{base}/api/approvals/{instance_id}/timeline", token)
    assert status == 200, document
    return list(document["items"])


def assert_each_instant_once_by_policy(runs: list[dict[str, Any]], through: datetime) -> None:
    """Every five-second instant from the first run to `through` is either a run or counted
    in a `SKIPPED_MISSED` summary, and only once; the summary stands for the outage, and the
    newest cycle it missed (`once`) is a run of its own."""
    covered: Counter[datetime] = Counter()
    summaries = [r for r in runs if r["status"] == "SKIPPED_MISSED"]
    for run in runs:
        if run["status"] != "SKIPPED_MISSED":
            covered[run["planned_at"]] += 1
            continue
        span = run["missed_until"] - run["planned_at"]
        instants = [
            run["planned_at"] + EVERY_FIVE_SECONDS * i
            for i in range(span // EVERY_FIVE_SECONDS + 1)
        ]
        assert len(instants) == run["skipped_count"], run
        covered.update(instants)
    doubled = {moment: n for moment, n in covered.items() if n > 1}
    assert not doubled, f"cycles registered twice: {doubled}"
    first = min(covered)
    expected = [
        first + EVERY_FIVE_SECONDS * i for i in range((through - first) // EVERY_FIVE_SECONDS)
    ]
    assert [moment for moment in expected if moment not in covered] == [], "cycles lost"
    assert len(summaries) == 1, runs
    newest_missed = summaries[0]["missed_until"] + EVERY_FIVE_SECONDS
    assert any(r["planned_at"] == newest_missed and r["instance_id"] for r in runs), runs


def assert_away(processes: Cluster, token: str, reviewer: str, instance_id: str) -> None:
    """Every probe, and the web process's API, answers 503 within the limit."""
    for probe in processes.probes.values():
        assert_unavailable(*answer(f"{probe}/healthz", token))
    assert_unavailable(*answer(f"{processes.base}/api/approvals?state=EXPIRED", token))
    assert_unavailable(*answer(f"{processes.base}/api/approvals/{instance_id}", token))
    assert_unavailable(*approve(processes.base, reviewer, instance_id))


def assert_refused_as_expired(entries: list[dict[str, Any]], deadline: datetime) -> None:
    """The deadline rule's expiry, then the approve refused as `EXPIRED`, recorded once (the
    same approve answered 503 while the store was away is recorded nowhere)."""
    assert_expired_by_the_rule(entries, deadline)
    [late] = [entry for entry in entries if entry["command_id"] == "late-approve"]
    assert late["type"] == "ApprovalInstance.CommandRejected", late
    assert late["outcome"] == "EXPIRED", late
    assert entries[-2:] == [next(e for e in entries if e["type"].endswith(".Expired")), late]


def assert_expired_by_the_rule(entries: list[dict[str, Any]], deadline: datetime) -> None:
    """One expiry, by the deadline rule, at or after the deadline; no approval."""
    kinds = Counter(entry["type"].rpartition(".")[2] for entry in entries)
    assert kinds["Expired"] == 1, kinds
    assert kinds["Approved"] == 0, kinds
    expiry = next(entry for entry in entries if entry["type"].endswith(".Expired"))
    assert expiry["actor"] == "system:sweeper", expiry
    assert instant(expiry["at"]) >= deadline, expiry


def until(processes: Cluster, moment: datetime, what: str) -> None:
    """Wait for `moment` (an outage's end), failing if a process exits meanwhile."""
    processes.wait_for(lambda: datetime.now(UTC) > moment, what, OUTAGE.total_seconds() * 2)


def back_to_health(processes: Cluster, *names: str) -> None:
    for name in names:
        processes.wait_for(partial(healthy, processes.probes[name]), f"{name} healthy")


@pytest.mark.slow
def test_every_process_comes_back_by_itself_after_30_seconds_frozen(
    proxied: Proxied, background: Proxied
) -> None:
    token = bootstrap(proxied.direct_url)
    direct = Store.from_url(proxied.direct_url)
    with cluster(proxied.url, background.url) as processes:
        back_to_health(processes, *processes.probes)
        base = processes.base
        reviewer = reviewer_token(base, token)
        plain = published_definition(base, token, key="plain", review_window_seconds=3600)
        every_second = schedule(
            base,
            token,
            plain,
            "* * * * * *",
            misfire_policy="catch_up",
            overlap_policy="skip_while_open",
        )
        every_five = schedule(
            base, token, plain, "*/5 * * * * *", misfire_policy="once", overlap_policy="allow"
        )
        for schedule_id in (every_second, every_five):
            processes.wait_for(partial(launched_any, direct, schedule_id), "a cycle launched")
        reminded = published_definition(
            base,
            token,
            key="reminded",
            review_window_seconds=3600,
            reminders=[{"before_seconds": REMINDER_BEFORE}],
        )
        now = datetime.now(UTC)
        swept = submit(base, token, "swept", plain, now + DEADLINE_IN)  # left to the sweeper
        approved = submit(base, token, "approved", plain, now + DEADLINE_IN)  # approved later
        waiting = submit(base, token, "waiting", reminded, now + REMINDED_DEADLINE_IN)
        deadline = instant(swept["review_deadline_at"])
        reminder_due = instant(waiting["review_deadline_at"]) - timedelta(seconds=REMINDER_BEFORE)

        went = take_away(proxied.proxy, "frozen")
        take_away(background.proxy, "frozen")
        assert went < deadline < reminder_due < went + OUTAGE, "the set-up took too long"
        assert_away(processes, token, reviewer, approved["id"])
        until(processes, went + OUTAGE * 2 / 3, "20 s of outage")
        assert_away(processes, token, reviewer, approved["id"])
        until(processes, went + OUTAGE, "30 s of outage")

        proxied.proxy.restore()  # web first: no sweeper can expire the instance before the approve
        back_to_health(processes, "web")
        status, refused = approve(base, reviewer, approved["id"])
        assert (status, refused["code"], refused["outcome"]) == (409, "COMMAND_REJECTED", "EXPIRED")
        assert refused["approval"]["state"] == "EXPIRED", refused
        background.proxy.restore()
        back = datetime.now(UTC)
        back_to_health(processes, *BACKGROUND)
        processes.wait_for(
            lambda: {swept["id"], approved["id"]} <= listed(base, token, "EXPIRED"),
            "both instances listed as expired",
        )
        settled = back + timedelta(seconds=6)
        for schedule_id in (every_second, every_five):
            processes.wait_for(
                partial(settled_through, direct, schedule_id, settled),
                "the cycles after the outage registered, projected and launched",
            )
        processes.wait_for(
            lambda: instance_of(base, token, waiting["id"])["reminders_sent"],
            "the reminder due in the outage recorded",
        )
        assert_reminded_once(instance_of(base, token, waiting["id"]), reminder_due)
        assert listed(base, token, "EXPIRED") == {swept["id"], approved["id"]}
        swept_timeline = timeline(base, token, swept["id"])
        assert_expired_by_the_rule(swept_timeline, deadline)
        assert [e["type"] for e in swept_timeline][-1] == "ApprovalInstance.Expired"
        assert_refused_as_expired(timeline(base, token, approved["id"]), deadline)
        processes.assert_running()  # the processes started: none exited, none restarted
        # overlap `skip_while_open`: the first cycle's instance waits, so every later one skips
        assert statuses(direct, every_second, settled).keys() == {"SUCCEEDED", "SKIPPED_OVERLAP"}
        assert statuses(direct, every_second, settled)["SUCCEEDED"] == 1
        # overlap `allow`: every cycle not summarised as missed is launched
        assert statuses(direct, every_five, settled).keys() == {"SUCCEEDED", "SKIPPED_MISSED"}

    assert_each_instant_once(planned(direct, every_second), back)
    assert_each_instant_once_by_policy(runs_of(direct, every_five), back)
    assert_launched_once(direct, every_second, every_five)
    direct.close()
