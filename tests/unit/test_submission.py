"""One submission rule: the instance factory and the fingerprint a repeat is compared with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest

from domain.approvals import DEADLINE_RULES_VERSION, ApprovalInstance, Command, Submission
from domain.errors import ValidationFailed
from domain.launch import LaunchFailed, checked_launch, definition_problem, initiator_problem
from domain.policy import RunPolicy
from domain.schedules import Schedule, ScheduleSettings
from domain.values import FormData
from tests.unit.helpers import account, definition

T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
FORMS: list[dict[str, Any]] = [
    {},
    {"n": 1, "tags": ["a", "b"], "nested": {"z": None, "a": 1.5}},
    {"名前": "値", "quote": '"{{date}}"', "big": 10**30, "neg": -0.0},
    {"_type_": "decimal_str", "_data_": "1"},
]
DEADLINES = [None, T0 + timedelta(days=2), datetime(2026, 10, 3, 17, 0, tzinfo=UTC)]


def http_fingerprint_before(fields: dict[str, Any]) -> str:
    """How `cronledger.application.approvals.Submission.fingerprint` computed it until now."""
    payload = {k: v for k, v in fields.items() if k != "command_id"}
    return Command("submit", None, payload).fingerprint


def run_fingerprint_before(definition_id: str, title: str, form_data: Any) -> str:
    """How `Run.approval` computed it until now."""
    payload = {
        "definition_id": definition_id,
        "title": title,
        "form_data": form_data,
        "material_version": 1,
        "review_deadline_at": None,
    }
    return Command("submit", None, payload).fingerprint


@pytest.mark.parametrize("form_data", FORMS)
@pytest.mark.parametrize("deadline", DEADLINES)
def test_an_http_submission_keeps_its_fingerprint(
    form_data: dict[str, Any], deadline: datetime | None
) -> None:
    fields = {
        "command_id": "c1",
        "definition_id": "d1",
        "title": "T",
        "form_data": form_data,
        "material_version": 3,
        "review_deadline_at": deadline,
    }
    before = http_fingerprint_before(fields)
    assert Submission(**fields).fingerprint == before
    assert Submission(**{**fields, "form_data": FormData(form_data)}).fingerprint == before


@pytest.mark.parametrize("offset", [None, 480, -300, 0])
def test_the_given_offset_of_a_deadline_leaves_the_fingerprint_as_it_was(
    offset: int | None,
) -> None:
    fields = {
        "command_id": "c1",
        "definition_id": "d1",
        "title": "T",
        "form_data": {"a": 1},
        "material_version": 3,
        "review_deadline_at": T0 + timedelta(days=2),
    }
    submission = Submission(**fields, review_deadline_offset_minutes=offset)
    assert submission.fingerprint == http_fingerprint_before(fields)
    assert http_fingerprint_before(fields) == (
        "8086405f5f3d80beb70a80556ad0155c42554eb9447a18bae39726f68b17c595"  # as 0.1.0 computed it
    )


@pytest.mark.parametrize("form_data", FORMS)
def test_a_launched_submission_keeps_its_fingerprint(form_data: dict[str, Any]) -> None:
    settings = ScheduleSettings(
        name="Daily",
        definition_id="d1",
        trigger={"kind": "cron", "expression": "0 9 * * *"},
        timezone="UTC",
        initiator_id="ann",
        title_template="Daily {{date}}",
        form_data=form_data,
    )
    schedule = Schedule.create(uuid4(), settings, True, T0 - timedelta(hours=1), "ops")
    run = schedule.manual_run("r1", T0, "ops", RunPolicy(timedelta(seconds=6), 5))
    instance = run.approval(definition(), T0)
    before = run_fingerprint_before("d1", "Daily 2026-10-01", run.frozen["form_data"])
    assert instance.submission_fingerprint == before
    assert before == run_fingerprint_before("d1", "Daily 2026-10-01", form_data)


def test_the_fingerprint_of_a_known_submission_never_changes() -> None:
    """sha256 of `["submit", {...}]` as sorted JSON, the deadline as `str(datetime)`."""
    submission = Submission("c1", "d1", "T", {"b": [1, 2], "a": "x"}, 1, T0)
    assert submission.fingerprint == (
        "75876bb6fe01dd79aeebfdec041e17ec684d5065572af86fc322532298f59e19"
    )


def test_the_factory_sets_the_deadline_from_the_request_or_the_definition() -> None:
    target = definition()
    asked = Submission("c1", "d1", "T", {}, 1, T0 + timedelta(hours=2))
    explicit = ApprovalInstance.submit(uuid4(), "ann", asked, target, None, T0)
    assert (explicit.review_deadline_at, explicit.deadline_policy) == (
        T0 + timedelta(hours=2),
        {"source": "explicit", "rule_version": DEADLINE_RULES_VERSION},
    )
    windowed = ApprovalInstance.submit(
        uuid4(), "ann", Submission("c2", "d1", "T", {}, 1, None), target, None, T0
    )
    assert (windowed.review_deadline_at, windowed.deadline_policy) == (
        T0 + timedelta(seconds=60),
        {
            "source": "definition",
            "review_window_seconds": 60,
            "definition_revision": target.revision,
            "rule_version": DEADLINE_RULES_VERSION,
        },
    )
    assert target.revision == 1
    assert (windowed.applicant_id, windowed.origin) == ("ann", None)


@pytest.mark.parametrize("deadline", [T0, T0 + timedelta(days=367)])
def test_a_callers_deadline_lies_within_366_days(deadline: datetime) -> None:
    with pytest.raises(ValidationFailed) as caught:
        Submission("c1", "d1", "T", {}, 1, deadline).check(T0)
    assert list(caught.value.errors) == ["review_deadline_at"]


def test_a_schedule_save_and_a_launch_ask_the_same_checks() -> None:
    inactive, unpublished = account(active=False), definition(published=False)
    problems = [initiator_problem(inactive), definition_problem(unpublished)]
    assert [p.reason for p in problems if p] == [
        "account ann is deactivated",
        "definition daily is not published",
    ]
    for initiator, target in [(inactive, definition()), (account(), unpublished)]:
        with pytest.raises(LaunchFailed) as caught:
            checked_launch(initiator, target, account())
        assert str(caught.value) in {"initiator ann is inactive", "definition daily is unpublished"}


def test_only_a_direct_submission_may_start_an_external_definition() -> None:
    external = definition(external=True)
    assert definition_problem(external, allow_external=True) is None
    problem = definition_problem(external)
    assert problem is not None
    assert problem.reason == "definition daily is external: its business system starts it"
