"""deploy/alerts.yml: valid Prometheus rules, each with its runbook entry in docs/operations.md
(tests/e2e/test_metrics_scrape.py checks that every metric they use is exported)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support import needed

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy" / "alerts.yml"
RUNBOOK = ROOT / "docs" / "operations.md"


def alert_rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"]]


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^a-z0-9 -]", "", heading.strip().lower()).replace(" ", "-")


def test_promtool_accepts_the_rules() -> None:
    promtool = shutil.which("promtool")
    needed(None if promtool else "promtool is not installed (Debian's `prometheus` package)")
    assert promtool is not None
    checked = subprocess.run(
        [promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_alert_points_at_its_runbook_entry() -> None:
    headings = {
        anchor(line.lstrip("#"))
        for line in RUNBOOK.read_text(encoding="utf-8").splitlines()
        if line.startswith("### ")
    }
    rules = alert_rules()
    assert rules
    for rule in rules:
        path, _, entry = rule["annotations"]["runbook_url"].partition("#")
        assert (path, entry) == ("docs/operations.md", rule["alert"].lower())
        assert entry in headings, f"docs/operations.md has no runbook entry for {rule['alert']}"
        assert rule["annotations"]["summary"]
