"""Every named set of values (an enum component of the OpenAPI document), in one place."""

from __future__ import annotations

from cronledger.application.bulk import BULK_OUTCOMES, RUN_ACTIONS, SCHEDULE_ACTIONS
from cronledger.application.schedules import MOVE_OUTCOMES
from cronledger.health import PHASES
from domain.approvals import (
    ALREADY_VOTED,
    APPROVE,
    APPROVED,
    CANCELLATION_REQUESTED,
    CANCELLED,
    CLAIMED,
    COMMENTED,
    CONFLICT,
    ESCALATION_MODES,
    EXPIRED,
    EXTENDED,
    LATE_OR_CONFLICT,
    OBSERVED,
    PAUSE_KIND,
    PAUSED,
    REASSIGNED,
    REFUSED,
    REJECT,
    REJECTED,
    REQUESTED,
    RESUBMITTED,
    RESUMED,
    RETURN_KIND,
    RETURNED,
    REVISED,
    SELF_APPROVAL,
    STALE_MATERIAL,
    SWEEP,
    TAKEN,
    UNCLAIMED,
    VOTED,
    WAITING_REVIEW,
    WITHDRAW,
    WITHDRAWN,
)
from domain.calendar_cycles import CALENDAR_RULES
from domain.credentials import PASSWORD_KINDS
from domain.directory import RETURN_TO
from domain.exports import FORMATS
from domain.jobs import TARGET_KINDS
from domain.notices import LANGUAGES
from domain.overlap import LEGACY_SKIP, OVERLAP_POLICIES
from domain.permissions import ROLES
from domain.reviewers import ASSIGNED, CLOSED, HIGH, NORMAL, OPEN
from domain.runs import (
    ATTEMPT_FAILED,
    ATTEMPT_SUCCEEDED,
    INTERRUPTED,
    RUN_STATUSES,
    SKIP_CALENDAR,
    SKIP_MISSED,
    SKIP_OVERLAP,
)
from domain.schedules import MISFIRE_POLICIES
from domain.working_time import RULE_KINDS
from projections.operations import APPROVAL, DEFINITION, KINDS, RUN, SCHEDULE, TENANT
from projections.tasks import SCOPES
from web.schemas.base import Choices

RUN_STATUS = Choices("RunStatus", RUN_STATUSES, "a run's status (docs/api.md#runs)")

RUN_TRIGGER = Choices(
    "RunTrigger",
    ("schedule", "manual"),
    "what registered a run: the tick (`schedule`) or a caller's run now (`manual`)",
)

APPROVAL_STATE = Choices(
    "ApprovalState",
    (WAITING_REVIEW, RETURNED, APPROVED, REJECTED, WITHDRAWN, EXPIRED),
    "an instance's state (`RETURNED`: sent back to its applicant for changes, not final)",
)

RETURN_TO_CHOICE = Choices(
    "ReturnTo",
    RETURN_TO,
    "where a revise after a return (退回) takes the review: the first level, or the level "
    "that returned it",
)

PAUSE_KIND_CHOICE = Choices(
    "PauseKind",
    (PAUSE_KIND, RETURN_KIND),
    "why an instance's review clock stood: a pause (pause-deadline) or a return (退回)",
)

TASK_STATE = Choices(
    "TaskState",
    (OPEN, ASSIGNED, CLOSED),
    "a review task's state: claimable, held by its assignee, or closed with the instance",
)

ESCALATION_MODE = Choices(
    "EscalationMode",
    ESCALATION_MODES,
    "what an escalation does: take the task to its account (`reassign`), or raise the task's "
    "priority and tell the account (`notify`)",
)

TASK_PRIORITY = Choices("TaskPriority", (NORMAL, HIGH), "a review task's priority")

TASK_SCOPE = Choices(
    "TaskScope",
    SCOPES,
    "a reviewer's lists: assigned to them (我的待办), claimable by them (待领取), decided by "
    "them (我已处理)",
)

DECISION_OUTCOME = Choices(
    "DecisionOutcome",
    (
        APPROVED,
        WITHDRAWN,
        EXPIRED,
        EXTENDED,
        OBSERVED,
        REJECTED,
        CLAIMED,
        UNCLAIMED,
        REASSIGNED,
        COMMENTED,
        PAUSED,
        RESUMED,
        RETURNED,
        VOTED,
        REVISED,
        RESUBMITTED,
        CANCELLATION_REQUESTED,
        STALE_MATERIAL,
        SELF_APPROVAL,
        CONFLICT,
        LATE_OR_CONFLICT,
        TAKEN,
        ALREADY_VOTED,
    ),
    "what a command got (docs/approvals.md): those up to `CANCELLATION_REQUESTED` are "
    "accepted (200, or 201 with the new instance) but `EXPIRED`, which a late command gets "
    "(409) as the rest do",
)

CANCELLATION_STATE = Choices(
    "CancellationState",
    (REQUESTED, CANCELLED, REFUSED),
    "an approved instance's cancellation: requested, then cancelled (its instance was "
    "approved) or refused (rejected, withdrawn or expired)",
)

DECIDING_COMMAND = Choices(
    "DecidingCommand",
    (APPROVE, REJECT, WITHDRAW, SWEEP),
    "the kind of command that decided an instance (`sweep`: the deadline's expiry)",
)

SKIP_REASON_CODE = Choices(
    "SkipReasonCode",
    (SKIP_OVERLAP, SKIP_MISSED, SKIP_CALENDAR),
    "why a cycle was skipped: an earlier run was unfinished (`OVERLAP`), cycles were missed "
    "(`MISSED`, one run standing for them), or the schedule's calendar does not work that day "
    "(`CALENDAR`)",
)

FIRE_OUTCOME = Choices(
    "FireOutcome",
    ("FIRES", "MOVED", "SKIPPED"),
    "what a schedule's calendar does to a fire of its trigger: nothing (`FIRES`), launches it "
    "on the next working day (`MOVED`), or skips it (`SKIPPED`)",
)

CALENDAR_RULE = Choices(
    "CalendarRule",
    CALENDAR_RULES,
    "what a schedule's calendar does to a cycle on a day it does not work: skip it "
    "(`working_days_only`) or launch it at the same local time on the next working day "
    "(`next_working_day`); it never adds a fire (docs/calendars.md#schedules-on-a-calendar)",
)

TARGET_KIND = Choices(
    "TargetKind",
    TARGET_KINDS,
    "what a schedule's cycle does: launch an approval instance (`approval`, the default), or "
    "run a built-in job: check the store and the loops (`system.health_check`), verify the "
    "log since the last verified position or in full (`audit.verify`), sign a checkpoint now "
    "(`audit.checkpoint`), ping a webhook subscription (`webhook.ping`) (docs/jobs.md)",
)

OVERLAP_POLICY = Choices(
    "OverlapPolicy",
    OVERLAP_POLICIES,
    "a cycle due while an earlier cycle of the schedule is unfinished: started anyway "
    "(`allow`), skipped while that cycle is still being launched (`skip_while_launching`, the "
    "default), or also while its approval waits for review before its deadline "
    "(`skip_while_open`) (docs/time.md)",
)

OVERLAP_POLICY_IN = Choices(
    "OverlapPolicyIn",
    (*OVERLAP_POLICIES, LEGACY_SKIP),
    "an `OverlapPolicy`; `skip`, the name of `skip_while_open` before release 0.11.0, is "
    "deprecated: accepted and saved as `skip_while_open`",
)

OVERLAP_MOVE_OUTCOME = Choices(
    "OverlapMoveOutcome",
    MOVE_OUTCOMES,
    "what a bulk move of overlap policies did to a schedule: saved with the policy (`MOVED`), on "
    "it already (`UNCHANGED`), or no live schedule of the tenant has the id (`NOT_FOUND`)",
)

SCHEDULE_BULK_ACTION = Choices(
    "ScheduleBulkAction",
    SCHEDULE_ACTIONS,
    "what a bulk action does to each schedule, as its single action: `enable`, `disable`, `run` "
    "(run now) or `delete`",
)

RUN_BULK_ACTION = Choices(
    "RunBulkAction", RUN_ACTIONS, "what a bulk action does to each run: `retry` or `cancel`"
)

BULK_OUTCOME = Choices(
    "BulkOutcome",
    BULK_OUTCOMES,
    "what a bulk action's command did to one item: `DONE`; `UNCHANGED` (it was so already, or "
    "run now's repeat answered the run it registered before: nothing recorded); or `REFUSED`, "
    "as the single action would be refused (`code`, `detail`, `errors`)",
)

MISFIRE_POLICY = Choices(
    "MisfirePolicy",
    MISFIRE_POLICIES,
    "cycles missed while the service was down: each registered, all skipped, or one for all "
    "(docs/time.md)",
)

TRIGGER_KIND = Choices("TriggerKind", ("cron", "window-interval"), "a trigger's kind")

DEADLINE_RULE_KIND = Choices(
    "DeadlineRuleKind",
    RULE_KINDS,
    "how a deadline rule counts: plain seconds, working days or working hours "
    "(docs/calendars.md#deadlines-in-working-time)",
)

ROLE = Choices("Role", tuple(sorted(ROLES)), "a role, granting permissions (docs/api.md)")

OPERATION_KIND = Choices("OperationKind", KINDS, "the kind of an operation in the audit")

EXPORT_FORMAT = Choices(
    "ExportFormat",
    FORMATS,
    "an export's file: `csv` (UTF-8 with a byte order mark, comma-separated, a header row) or "
    "`xlsx` (one worksheet, a header row)",
)

AGGREGATE_TYPE = Choices(
    "AggregateType",
    ("account", DEFINITION, SCHEDULE, RUN, APPROVAL, TENANT),
    "the kind of resource an event belongs to",
)

STORE = Choices("Store", ("sqlite", "postgresql"), "the kind of store the service runs on")
PHASE = Choices(
    "ProcessPhase", PHASES, "where a process is, from its start to its exit (docs/operations.md)"
)

ATTEMPT_OUTCOME = Choices(
    "AttemptOutcome",
    (ATTEMPT_SUCCEEDED, ATTEMPT_FAILED, INTERRUPTED),
    "how an attempt ended (`INTERRUPTED`: its worker's lease ran out)",
)

PASSWORD_KIND = Choices(
    "PasswordKind",
    PASSWORD_KINDS,
    "`set`: the account had none; `changed`: by the account itself; `reset`: by a directory "
    "manager",
)

LANGUAGE = Choices(
    "Language",
    LANGUAGES,
    "the language a person's notices are emailed in: `zh-CN` (the default) or `en`",
)
