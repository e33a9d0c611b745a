"""Shapes of what the service sends on its own: the webhook messages, one per event type
(docs/webhooks.md#event-types), and the event stream's frames (docs/api.md#the-event-stream).

The document lists each message under `x-webhooks` and the frames under the stream's
`x-sse-frames` (web/openapi.py). Like every answer they stay open to fields added later.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields

from domain.webhooks import (
    APPROVAL_CANCELLATION_REFUSED,
    APPROVAL_CANCELLATION_REQUESTED,
    APPROVAL_CANCELLED,
    APPROVAL_CLAIMED,
    APPROVAL_COMMENTED,
    APPROVAL_DEADLINE_PAUSED,
    APPROVAL_DEADLINE_RESUMED,
    APPROVAL_DECIDED,
    APPROVAL_ESCALATED,
    APPROVAL_EXPIRED,
    APPROVAL_LEVEL_COMPLETED,
    APPROVAL_REASSIGNED,
    APPROVAL_REJECTED,
    APPROVAL_REMINDER_DUE,
    APPROVAL_RESUBMITTED,
    APPROVAL_RETURNED,
    APPROVAL_REVISED,
    APPROVAL_SUBMITTED,
    CALLBACK_LATE,
    CALLBACK_MISMATCHED,
    CHECKPOINT_SIGNED,
    PING,
    RUN_DEAD_LETTERED,
    RUN_FAILED,
    RUN_SKIPPED,
    SCHEDULE_AUTO_PAUSED,
)
from web.schemas import validate
from web.schemas.approvals import InstanceTaskOut
from web.schemas.audit import CheckpointOut, TimelineEntryOut
from web.schemas.base import OMITTED_WHEN, Choice, OutSchema, instant_text, server_uuid
from web.schemas.enums import (
    APPROVAL_STATE,
    DECISION_OUTCOME,
    ESCALATION_MODE,
    RUN_STATUS,
)
from web.schemas.schedules import FailedCycleOut, SkipReasonOut


def nullable_text(description: str | None = None) -> fields.String:
    return fields.String(
        allow_none=True, metadata={"description": description} if description else {}
    )


class MessageData(OutSchema):
    tenant_id = server_uuid(metadata={"description": "the subscription's tenant"})


class RunEndedData(MessageData):
    run_id = server_uuid()
    schedule_id = server_uuid()
    planned_at = instant_text()
    status = Choice(RUN_STATUS)
    attempt = fields.Integer(metadata={"description": "the attempt that failed"})
    error = fields.Nested(
        OutSchema.from_dict(
            {"code": fields.String(), "message": fields.String()}, name="RunErrorOut"
        )
    )


class RunSkippedData(MessageData):
    run_id = server_uuid()
    schedule_id = server_uuid()
    planned_at = instant_text()
    status = Choice(RUN_STATUS)
    skip_reason = fields.Nested(SkipReasonOut)


class ScheduleAutoPausedData(MessageData):
    schedule_id = server_uuid()
    name = nullable_text("the schedule's name when the message is made")
    runs = fields.List(fields.Nested(FailedCycleOut), metadata={"description": "oldest first"})
    reason = fields.String(metadata={"description": "in English, naming the runs"})


class InstanceData(MessageData):
    instance_id = server_uuid()


class ApprovalSubmittedData(InstanceData):
    state = Choice(APPROVAL_STATE)
    definition_id = server_uuid()
    applicant_id = fields.String()
    title = fields.String()
    review_deadline_at = instant_text()
    run_id = server_uuid(allow_none=True, metadata={"description": "null unless launched"})


class ApprovalDecidedData(InstanceData):
    state = Choice(APPROVAL_STATE)
    decided_by = fields.String(metadata={"description": "`system:sweeper` when it expired"})
    command_id = nullable_text("null when it expired")
    reason = nullable_text()


class ApprovalRejectedData(ApprovalDecidedData):
    comment = fields.String(metadata={"description": "the reviewer's"})


class TaskWorkData(InstanceData):
    task_id = fields.String()
    actor = fields.String()


class ApprovalClaimedData(TaskWorkData):
    assignee_id = fields.String(metadata={"description": "the actor"})
    command_id = fields.String()


class ApprovalReassignedData(TaskWorkData):
    assignee_id = fields.String()
    reason = fields.String()


class ApprovalCommentedData(TaskWorkData):
    comment = fields.String()


class ClockData(InstanceData):
    actor = fields.String()
    command_id = nullable_text("null when the sweeper resumed the clock by itself")
    reason = nullable_text()


def pause_ended(when_omitted: str | None) -> dict[str, fields.Field[Any]]:
    """The pause a resume (or a return) ended: when it ran, and the deadline before and after."""
    metadata = {OMITTED_WHEN: when_omitted} if when_omitted else {}
    return {
        key: instant_text(metadata=metadata)
        for key in ("paused_from", "paused_to", "old_deadline_at", "new_deadline_at")
    }


ApprovalDeadlinePausedData = type("ApprovalDeadlinePausedData", (ClockData,), {})
ApprovalDeadlineResumedData = type(
    "ApprovalDeadlineResumedData", (ClockData,), pause_ended(when_omitted=None)
)
ApprovalReturnedData = type(
    "ApprovalReturnedData",
    (ClockData,),
    {
        "task_id": fields.String(),
        "state": Choice(APPROVAL_STATE),
        **pause_ended(when_omitted="no pause of the clock ended with the return"),
    },
)


class ApprovalLevelCompletedData(InstanceData):
    level = fields.Integer()
    next_level = fields.Integer(allow_none=True, metadata={"description": "null: the last"})
    opened_tasks = fields.List(fields.Nested(InstanceTaskOut))
    material_version = fields.Integer()


class ApprovalRevisedData(InstanceData):
    actor = fields.String()
    command_id = fields.String()
    material_version = fields.Integer()
    reason = fields.String()
    lapsed_votes = fields.Integer()
    back_to_level = fields.Integer(allow_none=True)
    old_deadline_at = instant_text(
        allow_none=True, metadata={"description": "null unless the revise restarted it"}
    )
    new_deadline_at = instant_text(
        allow_none=True, metadata={"description": "null unless the revise restarted it"}
    )


class ApprovalLinkedData(InstanceData):
    linked_id = server_uuid(metadata={"description": "the instance it started"})
    actor = fields.String()
    command_id = fields.String()
    reason = fields.String()


class CancellationSettledData(InstanceData):
    linked_id = server_uuid(metadata={"description": "the cancellation instance"})
    outcome = Choice(APPROVAL_STATE, metadata={"description": "the cancellation's end"})


class ApprovalReminderDueData(InstanceData):
    before_seconds = fields.Integer()
    due_at = instant_text()
    review_deadline_at = instant_text()


class ApprovalEscalatedData(InstanceData):
    account_id = nullable_text("null: the group it names has no leader up to the top")
    after_seconds = fields.Integer()
    due_at = instant_text()
    task_id = fields.String()
    mode = Choice(ESCALATION_MODE, allow_none=True)
    from_assignee = nullable_text()
    to_assignee = nullable_text()
    reason_code = nullable_text()


class CallbackData(InstanceData):
    outcome = Choice(DECISION_OUTCOME)
    reason = nullable_text()
    command_id = fields.String()
    contract_id = nullable_text()
    material_version = fields.Integer(allow_none=True)
    source = nullable_text()


class CheckpointSignedData(MessageData):
    checkpoint = fields.Nested(CheckpointOut)
    public_key = nullable_text("PEM of the notifier's key, or null")


class PingData(MessageData):
    webhook_id = server_uuid()


# The `data` of each event type's message.
DATA_OF_TYPE: dict[str, type[Schema]] = {
    RUN_DEAD_LETTERED: RunEndedData,
    RUN_FAILED: RunEndedData,
    RUN_SKIPPED: RunSkippedData,
    SCHEDULE_AUTO_PAUSED: ScheduleAutoPausedData,
    APPROVAL_SUBMITTED: ApprovalSubmittedData,
    APPROVAL_DECIDED: ApprovalDecidedData,
    APPROVAL_REJECTED: ApprovalRejectedData,
    APPROVAL_CLAIMED: ApprovalClaimedData,
    APPROVAL_REASSIGNED: ApprovalReassignedData,
    APPROVAL_COMMENTED: ApprovalCommentedData,
    APPROVAL_RETURNED: ApprovalReturnedData,
    APPROVAL_DEADLINE_PAUSED: ApprovalDeadlinePausedData,
    APPROVAL_DEADLINE_RESUMED: ApprovalDeadlineResumedData,
    APPROVAL_LEVEL_COMPLETED: ApprovalLevelCompletedData,
    APPROVAL_REVISED: ApprovalRevisedData,
    APPROVAL_RESUBMITTED: ApprovalLinkedData,
    APPROVAL_CANCELLATION_REQUESTED: ApprovalLinkedData,
    APPROVAL_CANCELLED: CancellationSettledData,
    APPROVAL_CANCELLATION_REFUSED: CancellationSettledData,
    APPROVAL_EXPIRED: ApprovalDecidedData,
    APPROVAL_REMINDER_DUE: ApprovalReminderDueData,
    APPROVAL_ESCALATED: ApprovalEscalatedData,
    CALLBACK_LATE: CallbackData,
    CALLBACK_MISMATCHED: CallbackData,
    CHECKPOINT_SIGNED: CheckpointSignedData,
    PING: PingData,
}


def message_name(event_type: str) -> str:
    """The component of an event type's message: `run.dead_lettered` is `RunDeadLetteredMessage`."""
    words = event_type.replace(".", "_").split("_")
    return "".join(word.capitalize() for word in words) + "Message"


def message_of(event_type: str) -> type[Schema]:
    """A message's body: its type, when its event was recorded, and its `data`."""
    return OutSchema.from_dict(
        {
            "type": fields.String(validate=validate.OneOf([event_type])),
            "timestamp": instant_text(
                metadata={"description": "when the event was recorded; the same on every attempt"}
            ),
            "data": fields.Nested(DATA_OF_TYPE[event_type]),
        },
        name=message_name(event_type),
    )


MESSAGES = {event_type: message_of(event_type) for event_type in DATA_OF_TYPE}


class StreamEventOut(TimelineEntryOut):
    """An event frame's `data`: the event as its resource's timeline shows it."""

    aggregate_id = fields.String(metadata={"description": "the resource whose event it is"})
    schedule_id = server_uuid(metadata={OMITTED_WHEN: "not a run's event"})
    account_id = fields.String(
        metadata={OMITTED_WHEN: "not an account's event", "description": "the public id"}
    )


class StreamReplayClippedOut(OutSchema):
    requested_after = fields.Integer(
        metadata={"description": "where the stream was asked to start"}
    )
    starts_after = fields.Integer(
        metadata={"description": "where it starts: positions between are skipped"}
    )


class StreamReconnectOut(OutSchema):
    reason = fields.String(metadata={"description": "`the server is shutting down`"})


# The `data` of each kind of frame, by its `event:` name; `*`: any other, an event's type.
FRAMES: dict[str, type[Schema]] = {
    "*": StreamEventOut,
    "replay-clipped": StreamReplayClippedOut,
    "reconnect": StreamReconnectOut,
}
