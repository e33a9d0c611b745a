"""The soak (issue 20, item 10): a whole deployment under random kills, cut connections and HTTP
traffic, then an audit of what it left on the log.

Two `tick`s, two `worker`s, a `projections` runner, a `sweeper` and a `web` process run against
a fresh PostgreSQL schema, each reaching the server through a proxy of its own. Eight schedules
fire every few seconds (each overlap policy in turn); clients read lists,
approve, withdraw and ask for runs now, some with repeated request ids. Every few seconds a
random process is killed with SIGKILL and restarted, or has its database connections ended by
`pg_terminate_backend`. When the time is up every process runs again, the schedules are
disabled once registration is current, the work settles, and the checks run:

- no schedule has two runs for one planned instant, nor one `request_id` two runs;
- no planned instant is missing between a schedule's first fire and its last registered one;
- each launched run has exactly one approval instance, and no instance has no run;
- no run is left unfinished, and every acknowledged command is on the log with its effect;
- `cronledger audit verify` (the hash chain) and `cronledger audit replay` (every projection
  equal to a rebuild) pass;
- no answer was a 500.

`make soak` runs it for an hour (`SOAK_MINUTES`); `tests/faults/test_soak.py` runs a short one.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg
import requests
from croniter import croniter

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from domain.overlap import OVERLAP_POLICIES
from tests.e2e.helpers import answers
from tests.faults.conftest import through
from tests.faults.proxy import Proxy, proxy_to
from tests.processes import Child, environment, free_port, run_cli
from tests.support import (
    DECIDERS,
    POSTGRES_URL,
    REVIEWER,
    event_keys_file,
    fresh_postgres_url,
    signing_key_file,
    wait_until,
)

EXPRESSIONS = ["*/3 * * * * *", "*/4 * * * * *", "*/5 * * * * *", "*/7 * * * * *"]
REVIEW_SECONDS = 20  # long enough for some approvals, short enough for the sweeper
SETTLE_SECONDS = 300  # for the work left at the end to finish
HTTP_SECONDS = 10
UNREACHABLE_PAUSE = 0.2
# Short leases and retries, so that what a kill leaves behind is taken up within the run.
PROCESS_ENV = {
    "CRONLEDGER_LEASE_SECONDS": "10",
    "CRONLEDGER_RETRY_BASE_SECONDS": "2",
    "CRONLEDGER_LOG_LEVEL": "WARNING",
    "CRONLEDGER_REFUSALS_PER_MINUTE": "100000",
}
READS = ["/api/workflows/schedules", "/api/approvals?state=WAITING_REVIEW", "/api/approvals"]


@dataclass
class Role:
    """One process of the deployment, restarted as often as it is killed."""

    name: str
    args: list[str]
    proxy: Proxy
    url: str
    keys_of: str  # the store's URL without the proxy, whose migration made its keys
    child: Child | None = None
    starts: int = 0

    def start(self) -> None:
        keys = {
            "CRONLEDGER_EVENT_KEYS_FILE": str(event_keys_file(self.keys_of)),
            "CRONLEDGER_SIGNING_KEY_FILE": str(signing_key_file(self.keys_of)),
        }
        self.child = Child(self.args, environment(self.url, **PROCESS_ENV, **keys))
        self.starts += 1

    def kill(self) -> None:
        if self.child is not None and self.child.process.poll() is None:
            self.child.kill()

    def end(self) -> None:
        if self.child is not None:
            self.child.end()


@dataclass
class Tally:
    """What the clients were told, and what the chaos did."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: Counter[str] = field(default_factory=Counter)
    unreachable: int = 0
    server_errors: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)  # of the soak's own threads
    decided: dict[str, str] = field(default_factory=dict)  # instance id: acknowledged state
    manual_runs: dict[tuple[str, str], str] = field(
        default_factory=dict
    )  # (schedule, request): run
    kills: Counter[str] = field(default_factory=Counter)
    cuts: Counter[str] = field(default_factory=Counter)

    def answered(self, what: str, response: requests.Response) -> None:
        with self.lock:
            self.statuses[answer_kind(response)] += 1
            if response.status_code >= 500 and response.status_code != 503:
                self.server_errors.append(f"{what}: {response.status_code} {response.text[:300]}")


def answer_kind(response: requests.Response) -> str:
    """The status, and a refusal's problem code (`409 CONFLICT`)."""
    if response.status_code < 400:
        return str(response.status_code)
    with suppress(ValueError, AttributeError):
        return f"{response.status_code} {response.json().get('code')}"
    return str(response.status_code)


class Client:
    """An account's calls to the web process."""

    def __init__(self, base: str, token: str, tally: Tally) -> None:
        self.base, self.tally = base, tally
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, body: Any = None) -> requests.Response | None:
        """The answer, or None when the web process was not there to give one."""
        try:
            response = self.http.request(method, self.base + path, json=body, timeout=HTTP_SECONDS)
        except requests.RequestException:
            with self.tally.lock:
                self.tally.unreachable += 1
            time.sleep(UNREACHABLE_PAUSE)  # the web process is being restarted
            return None
        self.tally.answered(f"{method} {path}", response)
        return response


def bootstrap(url: str) -> str:
    result = run_cli(url, "migrate")
    assert result.returncode == 0, result.stderr
    result = run_cli(url, "bootstrap", "--tenant", "demo", "--admin", "admin")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def checked(response: requests.Response | None, status: int) -> Any:
    assert response is not None, "the web process did not answer"
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


def set_up(admin: Client, tally: Tally) -> tuple[Client, list[str]]:
    """The requester `ann` (as a client) and the ids of the enabled schedules (with an operator
    who may review what they launch)."""
    checked(
        admin.call("POST", "/api/accounts", {"id": "ann", "name": "Ann", "roles": ["requester"]}),
        201,
    )
    reviewer = {"id": REVIEWER, "name": "Vera", "roles": ["operator"]}
    checked(admin.call("POST", "/api/accounts", reviewer), 201)  # whom launches are for
    ann = Client(
        admin.base, checked(admin.call("POST", "/api/accounts/ann/tokens"), 201)["token"], tally
    )
    definition = checked(
        admin.call(
            "POST",
            "/api/definitions",
            {
                "key": "soak",
                "name": "Soak",
                "external": False,
                "review_window_seconds": REVIEW_SECONDS,
                "reviewers": DECIDERS,
            },
        ),
        201,
    )["id"]
    checked(admin.call("POST", f"/api/definitions/{definition}/publish", {}), 200)
    schedules = []
    for number in range(8):
        body = {
            "name": f"soak {number}",
            "definition_id": definition,
            "trigger": {"kind": "cron", "expression": EXPRESSIONS[number % len(EXPRESSIONS)]},
            "timezone": "UTC",
            "initiator_id": "ann",
            "enabled": True,
            "overlap_policy": OVERLAP_POLICIES[number % len(OVERLAP_POLICIES)],
        }
        schedules.append(checked(admin.call("POST", "/api/workflows/schedules", body), 201)["id"])
    return ann, schedules


def traffic(admin: Client, ann: Client, schedules: list[str], stop: threading.Event) -> None:
    """Reads, decisions and runs asked for now, until `stop`."""
    rng = random.Random()
    while not stop.is_set():
        roll = rng.random()
        if roll < 0.4:
            path = rng.choice([*READS, f"/api/workflows/schedules/{rng.choice(schedules)}/runs"])
            admin.call("GET", path)
        elif roll < 0.8:
            decide(admin, ann, rng)
        else:
            run_now(admin, rng.choice(schedules), rng)


def decide(admin: Client, ann: Client, rng: random.Random) -> None:
    """Approve (as the admin) or withdraw (as the applicant) an instance waiting for review."""
    listed = admin.call("GET", "/api/approvals?state=WAITING_REVIEW")
    if listed is None or listed.status_code != 200 or not listed.json()["items"]:
        return
    instance = rng.choice(listed.json()["items"])
    approving = rng.random() < 0.6
    client, action = (admin, "approve") if approving else (ann, "withdraw")
    body: dict[str, Any] = {"command_id": f"soak-{rng.getrandbits(64):x}"}
    if approving:
        body["material_version"] = instance["material_version"]
    for _ in range(1 + (rng.random() < 0.2)):  # sometimes repeated, as a retrying client does
        response = client.call("POST", f"/api/approvals/{instance['id']}/{action}", body)
        if response is not None and response.status_code == 200:
            with admin.tally.lock:
                admin.tally.decided[instance["id"]] = response.json()["state"]


def run_now(admin: Client, schedule: str, rng: random.Random) -> None:
    """A run asked for now, under a request id that is sometimes one used before."""
    with admin.tally.lock:
        used = [request for (asked_of, request) in admin.tally.manual_runs if asked_of == schedule]
    request_id: str = (
        rng.choice(used) if used and rng.random() < 0.3 else f"soak-{rng.getrandbits(64):x}"
    )
    response = admin.call(
        "POST", f"/api/workflows/schedules/{schedule}/run", {"request_id": request_id}
    )
    if response is not None and response.status_code == 202:
        run_id = response.json()["id"]
        with admin.tally.lock:
            known = admin.tally.manual_runs.setdefault((schedule, request_id), run_id)
        assert known == run_id, f"request {request_id} answered run {run_id}, before {known}"


def backends_behind(proxy: Proxy) -> list[int]:
    """The PostgreSQL server processes of the connections that pass through `proxy`."""
    ports = proxy.server_ports()
    if not ports:
        return []
    try:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE client_port = ANY(%s)"
                " AND application_name LIKE 'cronledger-%%'",
                (list(ports),),
            ).fetchall()
            for (pid,) in rows:
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    except psycopg.OperationalError:  # the server full of other clients: no cut this time
        return []
    return [row[0] for row in rows]


def chaos(
    roles: list[Role], tally: Tally, stop: threading.Event, pause: tuple[float, float]
) -> None:
    """Until `stop`: every few seconds a random process killed and restarted, or its database
    connections ended."""
    rng = random.Random()
    while not stop.wait(rng.uniform(*pause)):
        role = rng.choice(roles)
        if rng.random() < 0.7:
            role.kill()
            tally.kills[role.name] += 1
            if stop.wait(rng.uniform(0, 3)):
                role.start()
                return
            role.start()
        elif backends_behind(role.proxy):
            tally.cuts[role.name] += 1


def everything_running(roles: list[Role]) -> None:
    for role in roles:
        if role.child is None or role.child.process.poll() is not None:
            role.start()


@dataclass
class Log:
    """The events of the log, decoded, with the latest state of each run and instance."""

    events: list[Any]
    services: Services

    @classmethod
    def read(cls, services: Services) -> Log:
        recorder, events, start = services.ledger.recorder, [], 1
        while page := recorder.select_notifications(start=start, limit=10_000):
            events += [services.ledger.decode(notification) for notification in page]
            start = page[-1].id + 1
        return cls(events, services)

    def of(self, name: str) -> list[Any]:
        return [event for event in self.events if type(event).__qualname__ == name]

    def latest(self, ids: list[UUID]) -> dict[UUID, Any]:
        found: dict[UUID, Any] = {}
        for start in range(0, len(ids), 1000):
            found |= self.services.ledger.get_many(ids[start : start + 1000])
        return found


def registration_current(log_of: Any, schedules: list[str]) -> bool:
    """Whether every schedule's newest registered instant is at most a few seconds old."""
    log = log_of()
    newest: dict[str, datetime] = {}
    for event in log.of("Run.Registered"):
        if event.request_id is None:
            key = str(event.schedule_id)
            newest[key] = max(newest.get(key, event.planned_at), event.planned_at)
    now = datetime.now(UTC)
    return all(key in newest and (now - newest[key]) < timedelta(seconds=8) for key in schedules)


def unfinished(log: Log) -> int:
    runs = log.latest([event.originator_id for event in log.of("Run.Registered")])
    return sum(run.status in {"PENDING", "RUNNING", "RETRY_WAIT"} for run in runs.values())


def audit(log: Log, tally: Tally) -> tuple[dict[str, Any], list[str]]:
    """The counts of the run and the problems found."""
    problems: list[str] = []
    registered = log.of("Run.Registered")
    cycles = Counter((e.schedule_id, e.planned_at) for e in registered if e.request_id is None)
    requests_ = Counter((e.schedule_id, e.request_id) for e in registered if e.request_id)
    problems += [f"cycle registered {n} times: {key}" for key, n in cycles.items() if n > 1]
    problems += [f"request registered {n} times: {key}" for key, n in requests_.items() if n > 1]
    problems += lost_cycles(log, cycles)
    submitted = log.of("ApprovalInstance.Submitted")
    per_run = Counter(e.origin["fire_id"] for e in submitted if e.origin)
    problems += [f"run {run} has {n} instances" for run, n in per_run.items() if n > 1]
    runs = log.latest([e.originator_id for e in registered])
    launched = {str(run.id) for run in runs.values() if run.status == "SUCCEEDED"}
    problems += [f"run {run} succeeded without an instance" for run in launched - set(per_run)]
    problems += [f"instance of run {run} that did not succeed" for run in set(per_run) - launched]
    problems += [
        f"run {run.id} left {run.status}"
        for run in runs.values()
        if run.status in {"PENDING", "RUNNING", "RETRY_WAIT"}
    ]
    problems += acknowledged_missing(log, runs, tally)
    problems += tally.server_errors + tally.crashes
    statuses = Counter(run.status for run in runs.values())
    counts = {
        "events": len(log.events),
        "cycles": sum(cycles.values()),
        "manual_runs": sum(requests_.values()),
        "instances": len(submitted),
        **{f"runs_{status.lower()}": n for status, n in sorted(statuses.items())},
    }
    return counts, problems


def lost_cycles(log: Log, cycles: Counter[tuple[UUID, datetime]]) -> list[str]:
    """Each planned instant missing between a schedule's first fire and its newest cycle."""
    problems: list[str] = []
    created = {e.originator_id: e for e in log.of("Schedule.Created")}
    for schedule_id, event in created.items():
        planned = sorted(at for (sid, at) in cycles if sid == schedule_id)
        if not planned:
            problems.append(f"schedule {schedule_id} registered nothing")
            continue
        expression = event.settings["trigger"]["expression"]
        expected = croniter(expression, event.at, second_at_beginning=True)
        while (instant := expected.get_next(datetime)) <= planned[-1]:
            if (schedule_id, instant) not in cycles:
                problems.append(f"cycle lost: schedule {schedule_id} at {instant.isoformat()}")
    return problems


def acknowledged_missing(log: Log, runs: dict[UUID, Any], tally: Tally) -> list[str]:
    """Each acknowledged decision or manual run that the log does not show."""
    problems = [
        f"manual run {run_id} ({request}) acknowledged, not on the log"
        for request, run_id in tally.manual_runs.items()
        if UUID(run_id) not in runs
    ]
    instances = log.latest([UUID(instance) for instance in tally.decided])
    for instance_id, state in tally.decided.items():
        found = instances.get(UUID(instance_id))
        if found is None or found.state != state:
            problems.append(
                f"instance {instance_id} acknowledged {state}, log has {found and found.state}"
            )
    return problems


def command(url: str, *args: str) -> str | None:
    """None when `cronledger ARGS` succeeds, else what it said."""
    result = run_cli(url, *args)
    return (
        None
        if result.returncode == 0
        else f"cronledger {' '.join(args)}: {result.stdout[-2000:]}{result.stderr[-2000:]}"
    )


@contextmanager
def deployment(direct_url: str, port: int) -> Iterator[list[Role]]:
    """The processes of the deployment, each behind its own proxy; all ended at the end."""
    host = "127.0.0.1"
    names = {
        "tick-1": ["tick"],
        "tick-2": ["tick"],
        "worker-1": ["worker"],
        "worker-2": ["worker"],
        "projections": ["projections"],
        "sweeper": ["sweeper"],
        "web": ["web", "--port", str(port)],
    }
    with ExitStack() as stack:
        roles = []
        for name, args in names.items():
            proxy = stack.enter_context(proxy_to(host, 5432))
            roles.append(Role(name, args, proxy, through(direct_url, proxy.port), direct_url))
        try:
            yield roles
        finally:
            for role in roles:
                role.end()


def soak(
    minutes: float, pause: tuple[float, float] = (3.0, 15.0)
) -> tuple[dict[str, Any], list[str]]:
    """The counts and the problems of a soak of `minutes` on a fresh PostgreSQL schema, with a
    random fault every `pause` seconds (a range)."""
    for direct_url in fresh_postgres_url():
        return soak_on(direct_url, minutes, pause)
    raise AssertionError("no store")


def soak_on(
    direct_url: str, minutes: float, pause: tuple[float, float]
) -> tuple[dict[str, Any], list[str]]:
    token, port, tally = bootstrap(direct_url), free_port(), Tally()
    base = f"http://127.0.0.1:{port}"
    with deployment(direct_url, port) as roles:
        everything_running(roles)
        wait_until(lambda: answers(f"{base}/healthz"), "the web process serving", 60)
        admin = Client(base, token, tally)
        ann, schedules = set_up(admin, tally)
        stop = threading.Event()
        threads = [
            threading.Thread(target=traffic, args=(admin, ann, schedules, stop)) for _ in range(3)
        ]
        threads.append(threading.Thread(target=chaos, args=(roles, tally, stop, pause)))
        for thread in threads:
            thread.start()
        stop.wait(minutes * 60)
        stop.set()
        for thread in threads:
            thread.join()
        return wind_down(direct_url, roles, admin, schedules, tally)


def watched(tally: Tally, work: Callable[..., None], *args: Any) -> threading.Thread:
    """A thread doing `work(*args)`; an exception it raises is a problem of the soak."""

    def run() -> None:
        try:
            work(*args)
        except Exception as error:
            with tally.lock:
                tally.crashes.append(f"{work.__name__}: {error!r}")
            raise

    return threading.Thread(target=run, name=work.__name__)


def wind_down(
    direct_url: str, roles: list[Role], admin: Client, schedules: list[str], tally: Tally
) -> tuple[dict[str, Any], list[str]]:
    """Every process up, the schedules disabled once current, the work settled, then audited."""
    everything_running(roles)
    with closing_services(direct_url) as services:
        wait_until(
            lambda: registration_current(lambda: Log.read(services), schedules),
            "registration current",
            SETTLE_SECONDS,
            interval=1,
        )
        for schedule in schedules:
            wait_until(lambda: disabled(admin, schedule), "schedule disabled", SETTLE_SECONDS)  # noqa: B023
        wait_until(
            lambda: unfinished(Log.read(services)) == 0,
            "every run finished",
            SETTLE_SECONDS,
            interval=1,
        )
        wait_until(
            lambda: nothing_waiting(admin),
            "every instance decided or expired",
            SETTLE_SECONDS,
            interval=1,
        )
        for role in roles:
            role.end()
        log = Log.read(services)
        counts, problems = audit(log, tally)
    problems += [
        p
        for p in (command(direct_url, "audit", "verify"), command(direct_url, "audit", "replay"))
        if p
    ]
    counts |= {
        "kills": sum(tally.kills.values()),
        "connection_cuts": sum(tally.cuts.values()),
        "starts": {role.name: role.starts for role in roles},
        "answers": dict(sorted(tally.statuses.items())),
        "unreachable": tally.unreachable,
        "decisions_acknowledged": len(tally.decided),
    }
    return counts, problems


def disabled(admin: Client, schedule: str) -> bool:
    """Whether `schedule` is disabled (this call disables it if the web process answers)."""
    path = f"/api/workflows/schedules/{schedule}"
    read = admin.call("GET", path)
    if read is None or read.status_code != 200:
        return False
    body = {"version": read.json()["version"], "reason": "the soak is over"}
    done = admin.call("POST", f"{path}/disable", body)
    return done is not None and done.status_code == 200


def nothing_waiting(admin: Client) -> bool:
    listed = admin.call("GET", "/api/approvals?state=WAITING_REVIEW")
    return listed is not None and listed.status_code == 200 and not listed.json()["items"]


@contextmanager
def closing_services(url: str) -> Iterator[Services]:
    services = open_services(Settings(database_url=url), kind="soak")
    try:
        yield services
    finally:
        services.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    minutes = parser.parse_args(argv).minutes
    started = time.monotonic()
    counts, problems = soak(minutes)
    counts["seconds"] = round(time.monotonic() - started)
    print(json.dumps(counts, indent=2))
    for problem in problems:
        print("PROBLEM:", problem, file=sys.stderr)
    print("soak passed" if not problems else f"soak FAILED: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    with suppress(KeyboardInterrupt):
        sys.exit(main())
