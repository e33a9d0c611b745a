"""Shapes of approval instances and their commands (docs/approvals.md)."""

from __future__ import annotations

from typing import Any

from marshmallow import (
    Schema,
    ValidationError,
    fields,
    validates_schema,
)

from domain.calendars import MAX_RULE_DAYS
from domain.messages import Message
from projections.approvals import APPROVAL_LISTING
from web.schemas import validate
from web.schemas.base import (
    OMITTED_WHEN,
    Choice,
    Described,
    KeyedBody,
    LocalDateTime,
    OffsetDateTime,
    OutSchema,
    PageQuery,
    ProblemOut,
    Tagged,
    UtcDateTime,
    command_id_field,
    form_data_field,
    id_filter,
    instant_text,
    name_field,
    reason_code_field,
    reason_params_field,
    search_field,
    server_uuid,
    sort_choices,
    sort_field,
    strict_int,
)
from web.schemas.calendars import DayOut, libraries_field
from web.schemas.directory import EscalationOut, ReminderOut, ReminderSentOut, ReviewersOut
from web.schemas.enums import (
    APPROVAL_STATE,
    CANCELLATION_STATE,
    DECIDING_COMMAND,
    DECISION_OUTCOME,
    PAUSE_KIND_CHOICE,
    RETURN_TO_CHOICE,
    RUN_TRIGGER,
    TASK_PRIORITY,
    TASK_STATE,
    TRIGGER_KIND,
)
from web.schemas.schedules import calendar_finding


class ApprovalSubmit(KeyedBody):
    command_id = command_id_field()
    definition_id = fields.String(required=True, validate=validate.Length(1, 64))
    title = name_field(required=True)
    form_data = form_data_field(load_default=dict)
    material_version = strict_int(0, 2**31, required=True)
    review_deadline_at = OffsetDateTime(
        load_default=None,
        metadata={
            "description": "default: now + the review window; its offset is kept beside the "
            "UTC value (`review_deadline_at_local`)"
        },
    )


def comment_field(**kwargs: Any) -> fields.String:
    return fields.String(
        validate=validate.Length(1, 2000),
        metadata={"description": "1-2,000 characters, kept on the instance (`comments`)"},
        **kwargs,
    )


def task_id_field() -> fields.String:
    return fields.String(
        validate=validate.Length(1, 64),
        metadata={"description": "which of the instance's tasks; default: its one task, `1`"},
    )


class ApproveIn(KeyedBody):
    command_id = command_id_field()
    material_version = strict_int(0, 2**31, required=True)
    comment = comment_field()


class RejectIn(KeyedBody):
    command_id = command_id_field()
    material_version = strict_int(0, 2**31, required=True)
    comment = comment_field(required=True)


class ReviseIn(KeyedBody):
    command_id = command_id_field()
    material_version = strict_int(
        0,
        2**31,
        required=True,
        metadata={"description": "the new version: greater than the current one"},
    )
    form_data = form_data_field(load_default=None, allow_none=True)  # null: kept
    reason = fields.String(required=True, validate=validate.Length(1, 500))


class CommentIn(KeyedBody):
    command_id = command_id_field()
    comment = comment_field(required=True)


class ClaimIn(KeyedBody):
    command_id = command_id_field()
    task_id = task_id_field()


class ReassignIn(KeyedBody):
    command_id = command_id_field()
    assignee_id = fields.String(
        required=True,
        validate=validate.Length(1, 64),
        metadata={"description": "an account that may approve the instance"},
    )
    reason = fields.String(required=True, validate=validate.Length(1, 500))
    task_id = task_id_field()


class WithdrawIn(KeyedBody):
    command_id = command_id_field()
    material_version = strict_int(
        0,
        2**31,
        metadata={"description": "optional: a version other than the current is STALE_MATERIAL"},
    )


class ResubmitIn(KeyedBody):
    command_id = command_id_field()
    reason = fields.String(required=True, validate=validate.Length(1, 500))
    material_version = strict_int(
        0, 2**31, required=True, metadata={"description": "the new instance's material version"}
    )
    form_data = form_data_field(load_default=None)  # left out: the original's
    title = name_field(
        load_default=None, metadata={"description": "the new instance's; left out: the original's"}
    )


class RequestCancellationIn(KeyedBody):
    command_id = command_id_field()
    reason = fields.String(required=True, validate=validate.Length(1, 500))
    form_data = form_data_field(load_default=None)  # left out: the original's


class ExtendDeadlineIn(KeyedBody):
    command_id = command_id_field()
    new_deadline_at = OffsetDateTime(
        metadata={
            "description": "its offset is kept beside the UTC value; give this or `working_days`"
        },
    )
    working_days = strict_int(
        1,
        MAX_RULE_DAYS,
        metadata={
            "description": "instead of `new_deadline_at`, for a deadline counted in working "
            "time: the same local time on the Nth working day after the current deadline, on "
            "the current revision of its calendar (docs/calendars.md#extensions-in-working-days)"
        },
    )
    reason = fields.String(required=True, validate=validate.Length(1, 500))


class ClockIn(KeyedBody):
    """A pause or a resume of the review clock (docs/approvals.md#pausing-the-clock)."""

    command_id = command_id_field()
    reason = fields.String(required=True, validate=validate.Length(1, 500))


class ReturnIn(KeyedBody):
    """A return (退回) to the applicant for changes: what to change, kept as a comment."""

    command_id = command_id_field()
    comment = comment_field(required=True)
    task_id = task_id_field()


class SignCallbackIn(KeyedBody):
    command_id = command_id_field()
    contract_id = fields.String(required=True, validate=validate.Length(1, 128))
    material_version = strict_int(0, 2**31, required=True)
    occurred_at = UtcDateTime(required=True, metadata={"description": "the caller's claim"})
    source = fields.String(required=True, validate=validate.Length(1, 128))


class OriginOut(OutSchema):
    """The fire that launched an instance (requirement 001: workflow schedules)."""

    source = Choice(RUN_TRIGGER, metadata={"description": "what registered the run"})
    schedule_id = server_uuid()
    schedule_name = fields.String()
    fire_id = server_uuid(metadata={"description": "the run's id"})
    run_id = server_uuid(metadata={"description": "the same as fire_id (earlier releases)"})
    scheduled_for = instant_text(metadata={"description": "the run's planned instant"})
    moved_to = instant_text(
        allow_none=True,
        dump_default=None,
        metadata={
            "description": "set only when the schedule's calendar (`next_working_day`) moved "
            "the cycle: the instant it was launched at instead; `scheduled_for` stays the "
            "planned one"
        },
    )
    calendar = calendar_finding("set only with `moved_to`: what the calendar found")
    trigger_kind = Choice(TRIGGER_KIND)
    trigger = Described("TriggerOut", metadata={"description": "the schedule's trigger, frozen"})
    definition_revision = fields.Integer(
        allow_none=True,
        dump_default=None,
        metadata={"description": "the definition's revision launched; null before 0.2.0"},
    )
    definition_name = fields.String(
        allow_none=True,
        dump_default=None,
        metadata={"description": "that revision's name; null before 0.2.0"},
    )
    saved_by = fields.String(
        allow_none=True,
        dump_default=None,
        metadata={
            "description": "who last saved the schedule; null if the launch did not record it"
        },
    )


APPROVAL_SORT = sort_choices("ApprovalSort", APPROVAL_LISTING)


class ApprovalListQuery(PageQuery):
    q = search_field("title")
    sort = sort_field(APPROVAL_SORT)
    state = Choice(APPROVAL_STATE, load_default=None, metadata={"description": "its state"})
    applicant_id = id_filter("the applicant's account id")
    definition_id = id_filter("the definition's id")
    schedule_id = fields.UUID(
        load_default=None, metadata={"description": "the schedule that launched it"}
    )
    deadline_from = UtcDateTime(
        load_default=None, metadata={"description": "review deadline, inclusive"}
    )
    deadline_to = UtcDateTime(
        load_default=None, metadata={"description": "review deadline, exclusive"}
    )

    @validates_schema
    def _check_window(self, data: dict[str, Any], **kwargs: Any) -> None:
        start, end = data.get("deadline_from"), data.get("deadline_to")
        if start is not None and end is not None and end < start:
            raise ValidationError(
                Message("must not be before {field}", field="deadline_from"), "deadline_to"
            )


class ObservationOut(OutSchema):
    """A signing callback as kept, matched against the instance when it was recorded."""

    command_id = fields.String()
    contract_id = fields.String()
    material_version = fields.Integer()
    occurred_at = instant_text(metadata={"description": "the claim"})
    source = fields.String()
    outcome = Choice(
        DECISION_OUTCOME, metadata={"description": "OBSERVED, or what a late callback got"}
    )
    recorded_at = instant_text()
    material_matches = fields.Boolean(
        metadata={"description": "its material_version was the instance's current one"}
    )
    contract_matches = fields.Boolean(
        metadata={"description": "its contract_id was the instance's (the first one binds it)"}
    )


class ExtensionOut(OutSchema):
    old_deadline_at = instant_text()
    new_deadline_at = instant_text()
    reason = fields.String()
    actor = fields.String()
    at = instant_text()
    rule_version = fields.Integer(metadata={"description": "the deadline rules' version"})


class WinningCommandOut(OutSchema):
    """The command that decided an instance."""

    command_id = fields.String(allow_none=True, metadata={"description": "null for a sweep"})
    kind = Choice(DECIDING_COMMAND)
    actor = fields.String()


def rule_version_field() -> fields.Integer:
    return fields.Integer(
        allow_none=True,
        dump_default=None,
        metadata={"description": "the deadline rules' version; null before 0.2.0 (version 1)"},
    )


def deadline_source(source: str) -> fields.String:
    return fields.String(metadata={"enum": [source]})


class ExplicitDeadlineOut(OutSchema):
    """The deadline the submission asked for."""

    source = deadline_source("explicit")
    rule_version = rule_version_field()


class WindowDeadlineOut(OutSchema):
    """The deadline the definition's review window set, from the submission's time."""

    source = deadline_source("definition")
    review_window_seconds = fields.Integer()
    definition_revision = fields.Integer(
        allow_none=True,
        dump_default=None,
        metadata={
            "description": "the definition's revision whose window it was; null when a "
            "schedule launched it (the run's `definition_revision`) or before 0.2.0"
        },
    )
    rule_version = rule_version_field()


class WorkingTimeNoticesOut(OutSchema):
    """When the reminders and the escalation fall due, counted in working time at submission."""

    reminders = fields.Dict(
        keys=fields.String(),
        values=fields.String(),
        metadata={
            "description": "each reminder's `before_seconds` (as text) -> the instant it is due "
            "(ISO 8601)",
            OMITTED_WHEN: "after an extension: the reminders count back from the new deadline",
        },
    )
    escalation_due_at = instant_text(
        metadata={
            "description": "when the escalation is due",
            OMITTED_WHEN: "the definition has no escalation",
        }
    )


class DeadlineInputsOut(OutSchema):
    submitted_at = instant_text(metadata={"description": "the submission's instant"})
    timezone = fields.String(metadata={"description": "the calendar's zone"})


class WorkingTimeDeadlineOut(OutSchema):
    """The deadline the definition's rule in working time counted on its calendar
    (docs/calendars.md#deadlines-in-working-time)."""

    source = deadline_source("working_time")
    rule = Described("DeadlineRuleOut", metadata={"description": "the definition's rule"})
    calendar = fields.String(metadata={"description": "the calendar's key"})
    calendar_revision = fields.Integer(metadata={"description": "the revision counted on"})
    region = fields.String(allow_none=True)
    libraries = libraries_field(
        description="the holiday libraries and versions the revision came from ({} when "
        "written by hand)"
    )
    inputs = fields.Nested(DeadlineInputsOut)
    business_day = fields.String(
        allow_none=True, metadata={"description": "YYYY-MM-DD (working_days); null otherwise"}
    )
    counted_days = fields.List(fields.String(), metadata={"description": "YYYY-MM-DD each"})
    skipped_days = fields.List(
        fields.Nested(DayOut), metadata={"description": "each day passed over, and why"}
    )
    assumed = fields.Boolean(
        metadata={"description": "counted on weekdays only: the calendar lacks the year"}
    )
    assumed_told = fields.List(
        fields.String(),
        metadata={
            "description": "the accounts told of the assumption",
            OMITTED_WHEN: "assumed is false",
        },
    )
    working_time_notices = fields.Nested(WorkingTimeNoticesOut)
    definition_revision = fields.Integer(allow_none=True, dump_default=None)
    rule_version = rule_version_field()


class ExtendedDeadlineOut(OutSchema):
    """The deadline the last extend-deadline command set."""

    source = deadline_source("extended")
    reason = fields.String()
    rule_version = rule_version_field()
    rule = Described(
        "DeadlineRuleOut",
        metadata={
            "description": "the rule in working time the deadline was first counted by",
            OMITTED_WHEN: "the deadline was not counted in working time",
        },
    )
    calendar = fields.String(
        metadata={
            "description": "the calendar's key",
            OMITTED_WHEN: "the deadline was not counted in working time",
        }
    )
    working_days = fields.Integer(
        metadata={
            "description": "the working days the extension gave",
            OMITTED_WHEN: "the extension gave `new_deadline_at`",
        }
    )
    calendar_revision = fields.Integer(
        metadata={
            "description": "the calendar revision the working days were counted on",
            OMITTED_WHEN: "the extension gave `new_deadline_at`",
        }
    )
    working_time_notices = fields.Nested(
        WorkingTimeNoticesOut,
        metadata={
            "description": "an escalation counted in working time, kept",
            OMITTED_WHEN: "the deadline was not in working time, or there is no escalation",
        },
    )


class InstanceTaskOut(OutSchema):
    """An instance's review work (docs/approvals.md#who-reviews)."""

    id = fields.String()
    candidates = fields.List(
        fields.String(),
        allow_none=True,
        metadata={
            "description": "who may claim it, fixed at submission; null: anyone who may "
            "decide (an instance from before reviewers)"
        },
    )
    assignee_id = fields.String(allow_none=True, metadata={"description": "null: claimable"})
    claimed_at = instant_text(allow_none=True)
    priority = Choice(TASK_PRIORITY)
    state = Choice(TASK_STATE)
    level = fields.Integer(metadata={"description": "the review level it belongs to"})


class VoteOut(OutSchema):
    """A reviewer's approve or reject on a level, on the material version it was given on."""

    level = fields.Integer()
    task_id = fields.String()
    vote = fields.String(metadata={"description": "approve or reject"})
    actor = fields.String()
    at = instant_text()
    material_version = fields.Integer()
    lapsed = fields.Boolean(
        metadata={"description": "given on earlier material: a revise lapsed it; never counts"}
    )
    command_id = fields.String(allow_none=True)


class LevelStateOut(OutSchema):
    """A review level of the instance and where it stands (docs/approvals.md#levels)."""

    number = fields.Integer()
    name = fields.String(allow_none=True)
    state = fields.String(metadata={"description": "waiting, open, completed or failed"})
    approvals_required = fields.Integer(metadata={"description": "1: 或签; N: 会签"})
    any_reject_rejects = fields.Boolean()
    approvals = fields.Integer(metadata={"description": "approvals counted (not lapsed)"})
    reviewers = fields.Nested(ReviewersOut)
    candidates = fields.List(fields.String(), allow_none=True)
    opened_at = instant_text(allow_none=True)
    completed_at = instant_text(allow_none=True)
    votes = fields.List(fields.Nested(VoteOut), metadata={"description": "lapsed ones too"})
    tasks = fields.List(fields.String(), metadata={"description": "the ids of its tasks"})


class BlockedLevelOut(OutSchema):
    level = fields.Integer()
    approvals_required = fields.Integer()
    possible = fields.Integer(metadata={"description": "approvals still possible then"})
    at = instant_text()


class CommentOut(OutSchema):
    author = fields.String()
    text = fields.String()
    at = instant_text()
    command = fields.String(metadata={"description": "approve, reject or comment"})


class ClockPauseOut(OutSchema):
    """One time the review clock stood, oldest first (docs/approvals.md#pausing-the-clock)."""

    kind = Choice(PAUSE_KIND_CHOICE)
    from_ = instant_text(
        attribute="from", data_key="from", metadata={"description": "when the clock stopped"}
    )
    to = instant_text(
        allow_none=True, metadata={"description": "when it ran again; null: it still stands"}
    )
    reason = fields.String(
        allow_none=True, metadata={"description": "the pause's reason, or the return's comment"}
    )
    actor = fields.String(metadata={"description": "who paused or returned it"})
    old_deadline_at = instant_text(metadata={"description": "the deadline before it ran again"})
    new_deadline_at = instant_text(
        allow_none=True,
        metadata={"description": "the deadline once it ran again, moved by the time it stood"},
    )


class CancellationOut(OutSchema):
    state = Choice(CANCELLATION_STATE)
    instance_id = fields.String(metadata={"description": "the cancellation instance"})
    requested_at = instant_text()
    reason = fields.String(metadata={"description": "the applicant's reason"})
    actor = fields.String(metadata={"description": "who requested it"})
    settled_at = instant_text(
        allow_none=True, metadata={"description": "when its instance ended; null until then"}
    )
    outcome = fields.String(
        allow_none=True,
        metadata={"description": "the state its instance ended in; null until then"},
    )


class ApprovalOut(OutSchema):
    id = server_uuid()
    definition_id = server_uuid()
    title = fields.String()
    form_data = form_data_field()
    applicant_id = fields.String()
    state = Choice(APPROVAL_STATE)
    material_version = fields.Integer()
    review_deadline_at = UtcDateTime()
    review_deadline_at_local = LocalDateTime(
        metadata={
            "description": "`review_deadline_at` at the offset it was given with; UTC "
            "(+00:00) when none was given, e.g. a deadline from the review window"
        }
    )
    deadline_policy = Tagged(
        "DeadlinePolicyOut",
        "source",
        {
            "explicit": ExplicitDeadlineOut,
            "definition": WindowDeadlineOut,
            "working_time": WorkingTimeDeadlineOut,
            "extended": ExtendedDeadlineOut,
        },
        metadata={"description": "how the review deadline was set"},
    )
    origin = fields.Nested(
        OriginOut, allow_none=True, metadata={"description": "null unless a schedule launched it"}
    )
    allow_self_approval = fields.Boolean()
    submitted_at = UtcDateTime()
    decided_at = UtcDateTime(allow_none=True)
    decided_by = fields.String(
        allow_none=True,
        metadata={"description": "who decided it (`system:sweeper`: an expiry); null if waiting"},
    )
    winning_command = fields.Nested(
        WinningCommandOut, allow_none=True, metadata={"description": "null while waiting"}
    )
    version = fields.Integer()
    observations = fields.List(fields.Nested(ObservationOut))
    contract_id = fields.String(
        allow_none=True,
        metadata={"description": "bound by the first signing callback; null before it"},
    )
    extensions = fields.List(fields.Nested(ExtensionOut))
    reminders = fields.List(
        fields.Nested(ReminderOut), metadata={"description": "from the definition at submission"}
    )
    escalation = fields.Nested(
        EscalationOut,
        allow_none=True,
        metadata={"description": "from the definition at submission; null: none"},
    )
    reminders_sent = fields.List(
        fields.Nested(ReminderSentOut),
        metadata={"description": "the reminders recorded so far, each once, oldest first"},
    )
    escalated_account_id = fields.String(
        allow_none=True, metadata={"description": "who it was escalated to; null until then"}
    )
    escalated_at = UtcDateTime(
        allow_none=True, metadata={"description": "when the escalation was recorded"}
    )
    next_notice_at = UtcDateTime(
        allow_none=True,
        metadata={
            "description": "when the next reminder or the escalation is due; null when none "
            "is left before the deadline, or once decided"
        },
    )
    reviewers = fields.Nested(
        ReviewersOut,
        allow_none=True,
        metadata={"description": "from the definition at submission; null: anyone who may decide"},
    )
    tasks = fields.List(fields.Nested(InstanceTaskOut))
    comments = fields.List(fields.Nested(CommentOut), metadata={"description": "oldest first"})
    paused_since = UtcDateTime(
        allow_none=True,
        metadata={
            "description": "since when the review clock stands (paused, or returned): the "
            "instance does not expire nor owe notices; null while it runs"
        },
    )
    paused_seconds = fields.Float(
        metadata={"description": "how long the clock stood in all, the open pause left out"}
    )
    pauses = fields.List(fields.Nested(ClockPauseOut), metadata={"description": "oldest first"})
    pause_ends_at = UtcDateTime(
        allow_none=True,
        metadata={
            "description": "when a pause reaches the definition's `max_pause_seconds` and the "
            "clock runs again by itself; null: no pause, or no limit"
        },
    )
    max_pause_seconds = fields.Integer(
        allow_none=True, metadata={"description": "from the definition at submission"}
    )
    return_to = Choice(RETURN_TO_CHOICE, metadata={"description": "from the definition"})
    current_level = fields.Integer(metadata={"description": "the level whose tasks are open"})
    levels = fields.List(
        fields.Nested(LevelStateOut),
        attribute="review_levels",
        metadata={
            "description": "the review, level by level (one for a definition without "
            "levels): state, approvals required and counted, votes, tasks"
        },
    )
    votes = fields.List(
        fields.Nested(VoteOut),
        metadata={"description": "every approve and reject, oldest first; lapsed ones kept"},
    )
    blocked_levels = fields.List(
        fields.Nested(BlockedLevelOut),
        metadata={
            "description": "levels that can no longer reach their approvals (candidates "
            "deactivated), as the sweeper found them; empty: none"
        },
    )
    resubmits = fields.String(
        allow_none=True, metadata={"description": "the instance this one resubmits; null: none"}
    )
    resubmitted_as = fields.String(
        allow_none=True,
        metadata={"description": "the instance that resubmitted this one; null: none yet"},
    )
    cancellation_of = fields.String(
        allow_none=True,
        metadata={"description": "the approved instance this one would cancel; null: none"},
    )
    cancellation = fields.Nested(
        CancellationOut,
        allow_none=True,
        metadata={"description": "this approved instance's cancellation; null: none requested"},
    )


class CommandOut(OutSchema):
    outcome = Choice(DECISION_OUTCOME)
    state = Choice(APPROVAL_STATE)
    instance = fields.Nested(ApprovalOut)
    replayed = fields.Boolean()
    reason = fields.String(metadata={"description": "why the command won or lost, in words"})
    reason_code = reason_code_field()
    reason_params = reason_params_field()
    winning_command = fields.Nested(
        WinningCommandOut,
        allow_none=True,
        metadata={"description": "the command that decided the instance; null while it waits"},
    )


class CommandRejection(Schema):
    """What a decision command that lost got: the members its problem document adds."""

    outcome = Choice(DECISION_OUTCOME, metadata={"description": "what it got"})
    state = Choice(APPROVAL_STATE, metadata={"description": "the instance's state now"})
    replayed = fields.Boolean(metadata={"description": "a repeat of the command, answered again"})
    reason = fields.String(metadata={"description": "why it lost; the same as `detail`"})
    reason_code = reason_code_field()
    reason_params = reason_params_field()
    winning_command = fields.Nested(
        WinningCommandOut,
        allow_none=True,
        metadata={"description": "the command that decided the instance; null while it waits"},
    )
    approval = fields.Nested(
        ApprovalOut,
        metadata={"description": "the instance as the command left it"},
    )


class CommandRejectedOut(ProblemOut, CommandRejection):
    """A decision command that lost (code COMMAND_REJECTED), recorded: a problem document with
    what the command got. Other 409s of the same operations are plain problem documents. Its
    `code` is documented as that one value, so that a TypeScript client narrows on it."""

    class Meta(OutSchema.Meta):
        exclude = ("errors",)

    code = fields.String(metadata={"enum": ["COMMAND_REJECTED"]})
