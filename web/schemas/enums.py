"""Every named set of values (an enum component of the OpenAPI document), in one place."""

from __future__ import annotations

from cronledger.application.schedules import MOVE_OUTCOMES
from domain.approvals import (
    APPROVE,
    APPROVED,
    CONFLICT,
    EXPIRED,
    EXTENDED,
    LATE_OR_CONFLICT,
    OBSERVED,
    SELF_APPROVAL,
    STALE_MATERIAL,
    SWEEP,
    WAITING_REVIEW,
    WITHDRAW,
    WITHDRAWN,
)
from domain.overlap import LEGACY_SKIP, OVERLAP_POLICIES
from domain.permissions import ROLES
from domain.runs import (
    ATTEMPT_FAILED,
    ATTEMPT_SUCCEEDED,
    INTERRUPTED,
    RUN_STATUSES,
    SKIP_MISSED,
    SKIP_OVERLAP,
)
from domain.schedules import MISFIRE_POLICIES
from projections.operations import APPROVAL, DEFINITION, KINDS, RUN, SCHEDULE, TENANT
from web.schemas.base import Choices

RUN_STATUS = Choices("RunStatus", RUN_STATUSES, "a run's status (docs/api.md#runs)")

RUN_TRIGGER = Choices(
    "RunTrigger",
    ("schedule", "manual"),
    "what registered a run: the tick (`schedule`) or a caller's run now (`manual`)",
)

APPROVAL_STATE = Choices(
    "ApprovalState", (WAITING_REVIEW, APPROVED, WITHDRAWN, EXPIRED), "an instance's state"
)

DECISION_OUTCOME = Choices(
    "DecisionOutcome",
    (
        APPROVED,
        WITHDRAWN,
        EXPIRED,
        EXTENDED,
        OBSERVED,
        STALE_MATERIAL,
        SELF_APPROVAL,
        CONFLICT,
        LATE_OR_CONFLICT,
    ),
    "what a command got (docs/approvals.md): the first five are accepted (200) but `EXPIRED`, "
    "which a late command gets (409) as the rest do",
)

DECIDING_COMMAND = Choices(
    "DecidingCommand",
    (APPROVE, WITHDRAW, SWEEP),
    "the kind of command that decided an instance (`sweep`: the deadline's expiry)",
)

SKIP_REASON_CODE = Choices(
    "SkipReasonCode",
    (SKIP_OVERLAP, SKIP_MISSED),
    "why a cycle was skipped: an earlier run was unfinished (`OVERLAP`), or cycles were missed "
    "(`MISSED`, one run standing for them)",
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

MISFIRE_POLICY = Choices(
    "MisfirePolicy",
    MISFIRE_POLICIES,
    "cycles missed while the service was down: each registered, all skipped, or one for all "
    "(docs/time.md)",
)

TRIGGER_KIND = Choices("TriggerKind", ("cron", "window-interval"), "a trigger's kind")

ROLE = Choices("Role", tuple(sorted(ROLES)), "a role, granting permissions (docs/api.md)")

OPERATION_KIND = Choices("OperationKind", KINDS, "the kind of an operation in the audit")

AGGREGATE_TYPE = Choices(
    "AggregateType",
    ("account", DEFINITION, SCHEDULE, RUN, APPROVAL, TENANT),
    "the kind of resource an event belongs to",
)

STORE = Choices("Store", ("sqlite", "postgresql"), "the kind of store the service runs on")

ATTEMPT_OUTCOME = Choices(
    "AttemptOutcome",
    (ATTEMPT_SUCCEEDED, ATTEMPT_FAILED, INTERRUPTED),
    "how an attempt ended (`INTERRUPTED`: its worker's lease ran out)",
)
