"""A whole flow written only against the client generated from cronledger's OpenAPI document.

tests/e2e/test_generated_client.py generates the package `cronledger_client`, type-checks this
script with mypy --strict (every field used must be typed as present) and runs it against a
served store:

    python generated_client_flow.py BASE_URL ADMIN_TOKEN

It exits 0 when every step got the answer the document promises, and fails on the first that
did not.
"""

from __future__ import annotations

import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from cronledger_client import AuthenticatedClient
from cronledger_client.api.accounts import create_account, issue_token
from cronledger_client.api.approvals import approve, get_approval
from cronledger_client.api.definitions import create_definition, publish_definition
from cronledger_client.api.runs import get_run_by_id, list_run_log, run_now
from cronledger_client.api.schedules import (
    create_schedule,
    get_schedule,
    patch_schedule,
    preview_trigger,
)
from cronledger_client.models import (
    AccountCreate,
    AccountOut,
    ApprovalOut,
    ApprovalState,
    ApproveIn,
    CommandOut,
    CommandRejectedOut,
    CronTriggerIn,
    CronTriggerInKind,
    CronTriggerOut,
    DecisionOutcome,
    DefinitionCreate,
    DefinitionOut,
    PresetIn,
    PreviewIn,
    PreviewOut,
    Problem,
    ReviewersIn,
    Role,
    RunDetailOut,
    RunPage,
    RunStatus,
    RunTrigger,
    ScheduleFieldsIn,
    ScheduleFromPresetIn,
    ScheduleOut,
    SchedulePatch,
    TokenOut,
    TriggerPatch,
    TriggerWindowIn,
    WindowIntervalTriggerIn,
    WindowIntervalTriggerInKind,
    WindowIntervalTriggerOut,
)
from cronledger_client.types import UNSET

T = TypeVar("T")
WAIT_SECONDS = 30.0  # for the served worker to launch a run
POLL_SECONDS = 0.1
ADMIN = "admin"  # the bootstrap admin: the runs' initiator
REVIEWER = "reviewer"
PRESET = "office-hours"
DAILY_9AM = "0 9 * * *"
ZONE = "Asia/Shanghai"


def expect(answer: object, kind: type[T]) -> T:
    """`answer`, which must be a `kind`: the typed answer a step expects."""
    assert isinstance(answer, kind), f"expected {kind.__name__}, got {answer!r}"
    return answer


def daily_at_nine() -> CronTriggerIn:
    return CronTriggerIn(kind=CronTriggerInKind.CRON, expression=DAILY_9AM)


def reviewer_token(admin: AuthenticatedClient) -> str:
    """A new operator account's freshly issued token."""
    body = AccountCreate(id=REVIEWER, name="Reviewer", roles=[Role.OPERATOR])
    account = expect(create_account.sync(client=admin, body=body), AccountOut)
    assert account.active
    assert account.roles == [Role.OPERATOR]
    issued = expect(issue_token.sync(client=admin, account_id=REVIEWER), TokenOut)
    assert issued.token is not None
    return issued.token


def published_definition(admin: AuthenticatedClient) -> DefinitionOut:
    """A definition with a window-interval preset, published."""
    office_hours = WindowIntervalTriggerIn(
        kind=WindowIntervalTriggerInKind.WINDOW_INTERVAL,
        weekdays=[1, 2, 3, 4, 5],
        windows=[TriggerWindowIn(start="09:00", end="17:00")],
        interval_minutes=60,
    )
    preset = PresetIn(id=PRESET, title="Hourly check {{date}}", trigger=office_hours)
    body = DefinitionCreate(
        key="onboarding",
        name="Onboarding",
        external=False,
        review_window_seconds=3600,
        schedule_presets=[preset],
        reviewers=ReviewersIn(accounts=[REVIEWER]),
    )
    definition = expect(create_definition.sync(client=admin, body=body), DefinitionOut)
    assert not definition.published
    answer = publish_definition.sync(client=admin, definition_id=definition.id)
    published = expect(answer, DefinitionOut)
    assert (published.published, published.revision) == (True, 1)
    return published


def schedules(
    admin: AuthenticatedClient, definition: DefinitionOut
) -> tuple[ScheduleOut, ScheduleOut]:
    """An enabled daily schedule, and a disabled one from the definition's preset."""
    daily = ScheduleFieldsIn(
        name="Daily check",
        definition_id=str(definition.id),
        trigger=daily_at_nine(),
        timezone=ZONE,
        initiator_id=ADMIN,
        enabled=True,
    )
    from_preset = ScheduleFromPresetIn(
        definition_id=str(definition.id), preset_id=PRESET, initiator_id=ADMIN
    )
    enabled = expect(create_schedule.sync(client=admin, body=daily), ScheduleOut)
    assert enabled.enabled
    assert enabled.next_fire_at is not None
    disabled = expect(create_schedule.sync(client=admin, body=from_preset), ScheduleOut)
    assert not disabled.enabled
    assert disabled.preset_id == PRESET
    assert isinstance(disabled.trigger, WindowIntervalTriggerOut)
    assert disabled.trigger.interval_minutes == 60
    return enabled, disabled


def check_preview(admin: AuthenticatedClient) -> None:
    """The next three 9 o'clocks in Shanghai, in UTC and local time."""
    after = datetime(2026, 10, 1, tzinfo=UTC)
    body = PreviewIn(trigger=daily_at_nine(), timezone=ZONE, count=3, after=after)
    times = expect(preview_trigger.sync(client=admin, body=body), PreviewOut)
    assert times.fire_times == [datetime(2026, 10, day, 1, tzinfo=UTC) for day in (1, 2, 3)]
    assert [local.utcoffset() for local in times.local_times] == [timedelta(hours=8)] * 3


def run_once(admin: AuthenticatedClient, schedule: ScheduleOut) -> RunDetailOut:
    """Run now, then the same request again: one run, the second answer a replay."""
    key = f"run-{uuid.uuid4()}"
    schedule_id = schedule.id
    first = run_now.sync_detailed(client=admin, schedule_id=schedule_id, idempotency_key=key)
    again = run_now.sync_detailed(client=admin, schedule_id=schedule_id, idempotency_key=key)
    run, replayed = expect(first.parsed, RunDetailOut), expect(again.parsed, RunDetailOut)
    assert (first.status_code, again.status_code) == (202, 202)
    assert "Idempotent-Replayed" not in first.headers
    assert again.headers["Idempotent-Replayed"] == "true"
    assert replayed.id == run.id
    assert run.trigger == RunTrigger.MANUAL
    return run


def succeeded(admin: AuthenticatedClient, run: RunDetailOut) -> RunDetailOut:
    """The run, read until the served worker has launched it."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        read = expect(get_run_by_id.sync(client=admin, run_id=run.id), RunDetailOut)
        if read.status == RunStatus.SUCCEEDED:
            return read
        assert time.monotonic() < deadline, f"run {run.id} is {read.status} after {WAIT_SECONDS}s"
        time.sleep(POLL_SECONDS)


def launched_instance(admin: AuthenticatedClient, run: RunDetailOut) -> ApprovalOut:
    """The approval instance the run launched, which names the run as its origin."""
    assert run.instance_id is not None
    answer = get_approval.sync(client=admin, instance_id=run.instance_id)
    instance = expect(answer, ApprovalOut)
    assert instance.state == ApprovalState.WAITING_REVIEW
    assert instance.origin is not None
    assert (instance.origin.run_id, instance.origin.source) == (run.id, RunTrigger.MANUAL)
    return instance


def decide(reviewer: AuthenticatedClient, instance: ApprovalOut) -> None:
    """The reviewer approves; a second decision loses, and its 409 says why."""
    instance_id = instance.id
    first = ApproveIn(command_id="approve-1", material_version=instance.material_version)
    won = expect(approve.sync(client=reviewer, instance_id=instance_id, body=first), CommandOut)
    assert (won.outcome, won.instance.state) == (DecisionOutcome.APPROVED, ApprovalState.APPROVED)
    second = ApproveIn(command_id="approve-2", material_version=instance.material_version)
    lost = approve.sync(client=reviewer, instance_id=instance_id, body=second)
    rejected = expect(lost, CommandRejectedOut)
    assert (rejected.status, rejected.outcome) == (409, DecisionOutcome.CONFLICT)
    assert rejected.approval.state == ApprovalState.APPROVED


def rename_if_unchanged(admin: AuthenticatedClient, schedule: ScheduleOut) -> None:
    """A PATCH with the ETag as read applies; the same, now stale, ETag again is 412."""
    schedule_id = schedule.id
    read = get_schedule.sync_detailed(client=admin, schedule_id=schedule_id)
    etag = read.headers["ETag"]
    current = expect(read.parsed, ScheduleOut)
    renamed = patch_schedule.sync_detailed(
        client=admin, schedule_id=schedule_id, body=SchedulePatch(name="Daily 9am"), if_match=etag
    )
    changed = expect(renamed.parsed, ScheduleOut)
    assert (changed.name, changed.version) == ("Daily 9am", current.version + 1)
    assert renamed.headers["ETag"] != etag
    stale = patch_schedule.sync_detailed(
        client=admin, schedule_id=schedule_id, body=SchedulePatch(name="Lost"), if_match=etag
    )
    refused = expect(stale.parsed, Problem)
    assert (stale.status_code, refused.code) == (412, "PRECONDITION_FAILED")


def retime(admin: AuthenticatedClient, schedule: ScheduleOut) -> None:
    """A PATCH of the trigger's expression alone, as the server merges it: the kind is kept."""
    patch = SchedulePatch(trigger=TriggerPatch(expression="0 10 * * *"))
    answer = patch_schedule.sync(client=admin, schedule_id=schedule.id, body=patch)
    retimed = expect(answer, ScheduleOut)
    trigger = expect(retimed.trigger, CronTriggerOut)
    assert trigger.expression == "0 10 * * *"


def logged_run_ids(admin: AuthenticatedClient) -> list[str]:
    """Every run in the execution log, a page of one at a time, following the cursor (which
    the Link header offers too)."""
    ids: list[str] = []
    cursor: str | None = None
    while True:
        answer = list_run_log.sync_detailed(client=admin, page_size=1, cursor=cursor or UNSET)
        page = expect(answer.parsed, RunPage)
        ids.extend(str(run.id) for run in page.items)
        if page.next_cursor is None:
            assert 'rel="next"' not in answer.headers.get("Link", "")
            return ids
        assert f"cursor={page.next_cursor}" in answer.headers["Link"]
        cursor = page.next_cursor


def check_missing_schedule(admin: AuthenticatedClient) -> None:
    """A schedule that does not exist is a problem document with the code NOT_FOUND."""
    answer = get_schedule.sync(client=admin, schedule_id=uuid.uuid4())
    problem = expect(answer, Problem)
    assert (problem.status, problem.code) == (404, "NOT_FOUND")


def main(base_url: str, admin_token: str) -> None:
    def client(token: str) -> AuthenticatedClient:
        return AuthenticatedClient(base_url=base_url, token=token, raise_on_unexpected_status=True)

    admin = client(admin_token)
    reviewer = client(reviewer_token(admin))
    daily, from_preset = schedules(admin, published_definition(admin))
    check_preview(admin)
    manual, other = run_once(admin, daily), run_once(admin, from_preset)
    decide(reviewer, launched_instance(admin, succeeded(admin, manual)))
    rename_if_unchanged(admin, daily)
    retime(admin, daily)
    logged = logged_run_ids(admin)
    assert len(logged) == len(set(logged)), f"a run listed twice: {logged}"
    assert {str(manual.id), str(other.id)} <= set(logged)
    check_missing_schedule(admin)


if __name__ == "__main__":
    main(*sys.argv[1:])
