"""deploy/alerts.yml: valid Prometheus rules, each with its absolute runbook link to its entry in
docs/operations.md, and the symptoms an on-call must hear of, played through `promtool test
rules`: cycles no longer registered, registered or launched late against the objectives, a kind
of loop gone (tests/e2e/test_metrics_scrape.py checks that every metric they use is exported)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.utils import floatToGoString

from cronledger.application.meters import REGISTRATION_LAG_BUCKETS
from tests.support import needed

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy" / "alerts.yml"
RUNBOOK = ROOT / "docs" / "operations.md"
MAKEFILE = ROOT / "Makefile"
LOOPS = ("tick", "worker", "sweeper", "projections", "notifier")
DAY = 24 * 60  # minutes
# A minute of good service: 7,500 cycles registered within a second of their planned instant,
# and as many runs launched within 10 s of it.
ON_TIME = {1.0: 7500}
LAUNCHED = {10.0: 7500}
# The launch lag histogram's buckets (cronledger_run_launch_lag_seconds, added beside these
# rules): what the launch objective needs of them is a bound at 60 s.
LAUNCH_LAG_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 3600.0)


def alert_rules() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"]]


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^a-z0-9 -]", "", heading.strip().lower()).replace(" ", "-")


def promtool() -> str:
    found = shutil.which("promtool")
    needed(None if found else "promtool is not installed (Debian's `prometheus` package)")
    assert found is not None
    return found


def runbook_placeholder() -> str:
    """The one base every runbook link of deploy/alerts.yml starts with (the Makefile's)."""
    (base,) = re.findall(r"(?m)^RUNBOOK_PLACEHOLDER := (\S+)$", MAKEFILE.read_text())
    return base


def test_promtool_accepts_the_rules() -> None:
    checked = subprocess.run(
        [promtool(), "check", "rules", str(ALERTS)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_alert_points_at_its_runbook_entry_by_an_absolute_link() -> None:
    headings = {
        anchor(line.lstrip("#"))
        for line in RUNBOOK.read_text(encoding="utf-8").splitlines()
        if line.startswith("### ")
    }
    base = runbook_placeholder()
    assert re.fullmatch(r"https://[^/]+\.invalid/\S+", base), "a placeholder that resolves nowhere"
    rules = alert_rules()
    assert rules
    for rule in rules:
        url, _, entry = rule["annotations"]["runbook_url"].partition("#")
        assert (url, entry) == (base, rule["alert"].lower())
        assert entry in headings, f"docs/operations.md has no runbook entry for {rule['alert']}"
        assert rule["annotations"]["summary"]


def test_make_alerts_puts_the_runbook_links_at_the_base_given(tmp_path: Path) -> None:
    written = tmp_path / "alerts.yml"
    base = "https://wiki.example.com/ops/cronledger/operations.md"
    make = ["make", "--no-print-directory", "-C", str(ROOT), "alerts", f"ALERTS_OUT={written}"]

    refused = subprocess.run([*make, "RUNBOOK_BASE=docs/x.md"], capture_output=True, check=False)
    made = subprocess.run([*make, f"RUNBOOK_BASE={base}"], capture_output=True, check=False)

    assert refused.returncode != 0, "a relative base is refused"
    assert made.returncode == 0, made.stderr
    document = yaml.safe_load(written.read_text())
    links = [
        r["annotations"]["runbook_url"]
        for g in document["groups"]
        for r in g["rules"]
        if "alert" in r
    ]
    assert links == [f"{base}#{rule['alert'].lower()}" for rule in alert_rules()]
    checked = subprocess.run([promtool(), "check", "rules", str(written)], capture_output=True)
    assert checked.returncode == 0, checked.stdout


# Scenarios for `promtool test rules`: series sampled once a minute, from good service into an
# incident, and the alerts firing when it has lasted as long as it says.

Minute = Mapping[float, int]  # observations of a histogram in one minute, by their value


def counter(pieces: list[tuple[float, int]]) -> str:
    """promtool's notation of a counter sampled every minute: each piece (increase a minute,
    minutes), the first from 0 (one sample more: its start)."""
    parts, last = [], 0.0
    for index, (step, minutes) in enumerate(pieces):
        start, count = (0.0, minutes) if index == 0 else (last + step, minutes - 1)
        parts.append(f"{number(start)}+{number(step)}x{count}")
        last = start + step * count
    return " ".join(parts)


def gauge(pieces: list[tuple[float, int]]) -> str:
    """A gauge's samples: each piece (value, minutes), the first with one sample more."""
    return " ".join(
        f"{number(value)}x{minutes if index == 0 else minutes - 1}"
        for index, (value, minutes) in enumerate(pieces)
    )


def number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def histogram(
    name: str, bounds: tuple[float, ...], pieces: list[tuple[Minute, int]]
) -> dict[str, str]:
    """A histogram's `_bucket` and `_count` series, as prometheus_client writes its `le`."""
    labels = 'instance="cronledger-1:9464"'
    found = {}
    for bound in (*bounds, float("inf")):
        per_bucket = [
            (sum(n for value, n in minute.items() if value <= bound), minutes)
            for minute, minutes in pieces
        ]
        found[f'{name}_bucket{{{labels}, le="{floatToGoString(bound)}"}}'] = counter(per_bucket)
    totals = [(sum(minute.values()), minutes) for minute, minutes in pieces]
    found[f"{name}_count{{{labels}}}"] = counter(totals)
    return found


@dataclass
class Incident:
    """What changes after `history` minutes of good service, and for how long before the alerts
    are read. Rules are evaluated every `evaluation` minutes: each evaluation of the objectives'
    windows reads up to 3 days of samples, so the long incidents are evaluated every 5 minutes
    (promtool takes about 10 ms an evaluation); an alert's `for` is never longer."""

    minutes: int
    history: int = 60
    evaluation: int = 1
    registrations: Minute = field(default_factory=lambda: ON_TIME)
    launches: Minute = field(default_factory=lambda: LAUNCHED)
    oldest_due_lag: float = 0.0
    loops: tuple[str, ...] = LOOPS  # the kinds of loop still scraped

    def series(self) -> dict[str, str]:
        found = {
            f'cronledger_loop_up{{instance="cronledger-{loop}:9464", loop="{loop}"}}': gauge(
                [(1, self.history), *([(1, self.minutes)] if loop in self.loops else [])]
            )
            for loop in LOOPS
        }
        found['cronledger_oldest_due_lag_seconds{instance="cronledger-1:9464"}'] = gauge(
            [(0, self.history), (self.oldest_due_lag, self.minutes)]
        )
        found |= histogram(
            "cronledger_registration_lag_seconds",
            REGISTRATION_LAG_BUCKETS,
            [(ON_TIME, self.history), (self.registrations, self.minutes)],
        )
        found |= histogram(
            "cronledger_run_launch_lag_seconds",
            LAUNCH_LAG_BUCKETS,
            [(LAUNCHED, self.history), (self.launches, self.minutes)],
        )
        return found


def firing(*alerts: str | tuple[str, dict[str, str]]) -> list[dict[str, Any]]:
    """The `ALERTS` samples of these alerts firing, with their rule's labels."""
    severity = {rule["alert"]: rule["labels"]["severity"] for rule in alert_rules()}
    samples = []
    for alert in alerts:
        name, extra = (alert, {}) if isinstance(alert, str) else alert
        labels = {"alertname": name, "alertstate": "firing", "severity": severity[name], **extra}
        inside = ", ".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
        samples.append({"labels": f"ALERTS{{{inside}}}", "value": 1})
    return samples


def play(
    tmp_path: Path, incident: Incident, alerts: list[dict[str, Any]], *checks: dict[str, Any]
) -> None:
    """`promtool test rules`: exactly `alerts` fire once the incident has lasted its minutes,
    and each further PromQL check holds then."""
    at = f"{incident.history + incident.minutes}m"
    assert (incident.history + incident.minutes) % incident.evaluation == 0, "read at an evaluation"
    test = {
        "rule_files": [str(ALERTS)],
        "evaluation_interval": f"{incident.evaluation}m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": name, "values": values} for name, values in incident.series().items()
                ],
                "promql_expr_test": [
                    {"expr": 'ALERTS{alertstate="firing"}', "eval_time": at, "exp_samples": alerts},
                    *({**check, "eval_time": at} for check in checks),
                ],
            }
        ],
    }
    path = tmp_path / "alerts_test.yml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    result = subprocess.run(
        [promtool(), "test", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def late(share: float, lag: float, on_time: float = 1.0, per_minute: int = 7500) -> Minute:
    """A minute's observations: `share` of them `lag` late, the rest at `on_time`."""
    late_ones = round(per_minute * share)
    return {on_time: per_minute - late_ones, lag: late_ones}


def p99(metric: str, compared: str) -> dict[str, Any]:
    """A check that the incident is what it says: the hour's 99th percentile of `metric`
    compared with a value (e.g. `== 120`) holds."""
    quantile = f"histogram_quantile(0.99, sum by (le) (rate({metric}_bucket[1h])))"
    expr = f"round({quantile}, 0.1) {compared.replace(' ', ' bool ', 1)}"
    return {"expr": expr, "exp_samples": [{"labels": "{}", "value": 1}]}


def test_good_service_fires_nothing(tmp_path: Path) -> None:
    """Two days of it, every loop scraped, every cycle registered and launched on time."""
    play(tmp_path, Incident(minutes=DAY, history=DAY, evaluation=5), firing())


def test_cycles_no_longer_registered_for_an_hour_fire(tmp_path: Path) -> None:
    """The tick registers nothing (so no lag is observed at all): the most overdue schedule has
    waited an hour, for an hour."""
    stopped = Incident(minutes=60, registrations={}, launches={}, oldest_due_lag=3600)

    play(tmp_path, stopped, firing("CronledgerCyclesNotRegistered"))


def test_registration_p99_at_120_s_for_an_hour_burns_the_budget(tmp_path: Path) -> None:
    """After two days on time, the fewest late cycles that make the 99th percentile 120 s: 1 in
    75, all past a minute, every other one on time. 1.3% late against a budget of 0.05%: 27
    times too fast, a page; the slow windows still see mostly good service."""
    slow = Incident(minutes=60, history=2 * DAY, evaluation=5, registrations=late(1 / 75, 200))

    play(
        tmp_path,
        slow,
        firing("CronledgerRegistrationBudgetBurning"),
        p99("cronledger_registration_lag_seconds", "== 120"),
    )


def test_registration_late_a_little_for_a_day_drains_the_budget(tmp_path: Path) -> None:
    """0.25% of cycles 8 s late for a day: 5 times the budget, too slow to page, a ticket."""
    slow = Incident(minutes=DAY, history=DAY, evaluation=5, registrations=late(0.0025, 8))

    play(tmp_path, slow, firing("CronledgerRegistrationBudgetDraining"))


def test_launch_p99_past_120_s_for_an_hour_burns_the_budget(tmp_path: Path) -> None:
    """As for registrations: 1 run in 75 launched past two minutes, the others within 10 s."""
    launches = late(1 / 75, 200, on_time=10.0)
    slow = Incident(minutes=60, history=2 * DAY, evaluation=5, launches=launches)

    play(
        tmp_path,
        slow,
        firing("CronledgerLaunchBudgetBurning"),
        p99("cronledger_run_launch_lag_seconds", ">= 120"),
    )


@pytest.mark.parametrize("loop", LOOPS)
def test_a_kind_of_loop_scaled_to_zero_fires(tmp_path: Path, loop: str) -> None:
    """Its series end (no process is scraped), so nothing of its own can alert: absent() does."""
    gone = Incident(minutes=30, loops=tuple(kind for kind in LOOPS if kind != loop))

    play(tmp_path, gone, firing(("CronledgerLoopAbsent", {"loop": loop})))
