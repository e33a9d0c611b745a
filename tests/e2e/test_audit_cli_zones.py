"""`cronledger audit timeline|state --tz ZONE`: instants in that zone, in text and JSON."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result

from cronledger.application.services import Services
from cronledger.cli import main
from tests.e2e.helpers import submit
from tests.support import Api


@pytest.fixture
def instance_id(services: Services, admin: Api, definition_id: str) -> str:
    """An instance submitted at 09:00Z, due 10:00Z (given as 18:00+08:00)."""
    created = submit(admin, definition_id, review_deadline_at="2026-10-01T18:00:00+08:00")
    return str(created.json["id"])


def audit(store_url: str, *arguments: str) -> Result:
    return CliRunner().invoke(
        main, ["audit", *arguments], env={"CRONLEDGER_DATABASE_URL": store_url}
    )


def test_a_timeline_prints_its_instants_in_the_zone_asked(store_url: str, instance_id: str) -> None:
    as_json = audit(store_url, "timeline", instance_id, "--json", "--tz", "Asia/Shanghai")
    as_text = audit(store_url, "timeline", instance_id, "--tz", "Asia/Shanghai")
    in_utc = audit(store_url, "timeline", instance_id)

    submitted = json.loads(as_json.output)["items"][0]
    assert submitted["at"] == "2026-10-01T17:00:00+08:00"
    assert submitted["data"]["review_deadline_at"] == "2026-10-01T18:00:00+08:00"
    assert "2026-10-01T17:00:00+08:00" in as_text.output
    assert "2026-10-01T09:00:00Z" in in_utc.output


def test_a_past_state_prints_its_instants_in_the_zone_asked(
    store_url: str, instance_id: str
) -> None:
    at = ("--at", "2026-10-01T09:30:00Z")
    as_json = audit(store_url, "state", instance_id, *at, "--json", "--tz", "America/New_York")
    as_text = audit(store_url, "state", instance_id, *at, "--tz", "America/New_York")

    found = json.loads(as_json.output)
    assert found["as_of"] == "2026-10-01T05:30:00-04:00"
    assert found["state"]["review_deadline_at"] == "2026-10-01T06:00:00-04:00"
    assert "as of 2026-10-01T05:30:00-04:00" in as_text.output


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../etc/passwd", ""])
def test_an_unknown_zone_is_a_usage_error(store_url: str, zone: str) -> None:
    refused = audit(store_url, "timeline", "anything", "--tz", zone)

    assert refused.exit_code == 2
    assert "Invalid value for '--tz'" in refused.output
