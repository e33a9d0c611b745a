"""Examples of approval instances and the commands on them, won, replayed and lost.

"Open account" is submitted, its deadline extended, a signing callback observed, then approved;
the applicant's withdrawal afterwards loses, and she asks for its cancellation (a `refund`
instance). "Raise limit", submitted the day before, expires when an approval comes too late,
and is resubmitted.
"""

from __future__ import annotations

from typing import Any

from domain import reason_codes as codes
from domain.reason_codes import Reason
from web.examples.calendars import AFTER_THE_CUTOFF, THREE_WORKING_DAYS
from web.examples.operations import PROBLEMS, problem_document
from web.examples.world import (
    CANCELLATION_INSTANCE_ID,
    CRON_SCHEDULE_ID,
    CRON_TRIGGER,
    DEFINITION_ID,
    EXPIRED_INSTANCE_ID,
    LAUNCHED_INSTANCE_ID,
    MANUAL_RUN_ID,
    REFUND_DEFINITION_ID,
    REMINDED_INSTANCE_ID,
    RESUBMITTED_INSTANCE_ID,
    SUBMITTED_INSTANCE_ID,
)

SUBMIT_OPEN_ACCOUNT = {
    "command_id": "submit-1",
    "definition_id": DEFINITION_ID,
    "title": "Open account",
    "form_data": {"customer": "Xinghe"},
    "material_version": 2,
    "review_deadline_at": "2026-10-01T18:00:00+08:00",
}
SUBMIT_RAISE_LIMIT = {
    "command_id": "submit-2",
    "definition_id": DEFINITION_ID,
    "title": "Raise limit",
    "form_data": {"customer": "Xinghe", "limit": 50000},
    "material_version": 1,
}
EXTEND = {
    "command_id": "e-1",
    "new_deadline_at": "2026-10-03T18:00:00+08:00",
    "reason": "customer asked",
}
SIGN = {
    "command_id": "cb-1",
    "contract_id": "C-9",
    "material_version": 2,
    "occurred_at": "2026-10-01T17:58:00+08:00",
    "source": "esign",
}

OPEN_TASK = {
    "id": "1",
    "candidates": ["olga", "pei"],
    "assignee_id": None,
    "claimed_at": None,
    "priority": "normal",
    "state": "OPEN",
    "level": 1,
}
REVIEWERS = {"accounts": [], "groups": [], "roles": ["operator"], "applicant_leader": False}
ONE_LEVEL = {
    "number": 1,
    "name": None,
    "state": "open",
    "approvals_required": 1,
    "any_reject_rejects": True,
    "approvals": 0,
    "reviewers": REVIEWERS,
    "candidates": ["olga", "pei"],
    "opened_at": "2026-10-01T09:00:00Z",
    "completed_at": None,
    "votes": [],
    "tasks": ["1"],
}
WAITING = {
    "id": SUBMITTED_INSTANCE_ID,
    "definition_id": DEFINITION_ID,
    "title": "Open account",
    "form_data": {"customer": "Xinghe"},
    "applicant_id": "ann",
    "state": "WAITING_REVIEW",
    "material_version": 2,
    "review_deadline_at": "2026-10-01T10:00:00Z",
    "review_deadline_at_local": "2026-10-01T18:00:00+08:00",
    "deadline_policy": {"source": "explicit", "rule_version": 1},
    "origin": None,
    "allow_self_approval": False,
    "submitted_at": "2026-10-01T09:00:00Z",
    "decided_at": None,
    "decided_by": None,
    "winning_command": None,
    "version": 1,
    "observations": [],
    "contract_id": None,
    "extensions": [],
    "reminders": [],
    "escalation": None,
    "reminders_sent": [],
    "escalated_account_id": None,
    "escalated_at": None,
    "next_notice_at": None,
    "reviewers": REVIEWERS,
    "tasks": [OPEN_TASK],
    "comments": [],
    "paused_since": None,
    "paused_seconds": 0.0,
    "pauses": [],
    "pause_ends_at": None,
    "max_pause_seconds": None,
    "return_to": "first",
    "current_level": 1,
    "levels": [ONE_LEVEL],
    "votes": [],
    "blocked_levels": [],
    "resubmits": None,
    "resubmitted_as": None,
    "cancellation_of": None,
    "cancellation": None,
}
PAUSE = {"command_id": "p-1", "reason": "异常款项，等待银行核实"}
RESUME = {"command_id": "p-2", "reason": "银行已核实"}
OPEN_PAUSE = {
    "kind": "pause",
    "from": "2026-10-01T09:10:00Z",
    "to": None,
    "reason": PAUSE["reason"],
    "actor": "olga",
    "old_deadline_at": "2026-10-01T10:00:00Z",
    "new_deadline_at": None,
}
PAUSED = {
    **WAITING,
    "version": 2,
    "paused_since": "2026-10-01T09:10:00Z",
    "pauses": [OPEN_PAUSE],
    "pause_ends_at": "2026-10-02T09:10:00Z",
    "max_pause_seconds": 86400,
}
RESUMED = {
    **PAUSED,
    "version": 3,
    "review_deadline_at": "2026-10-01T10:30:00Z",
    "review_deadline_at_local": "2026-10-01T18:30:00+08:00",
    "paused_since": None,
    "paused_seconds": 1800.0,
    "pauses": [
        {
            **OPEN_PAUSE,
            "to": "2026-10-01T09:40:00Z",
            "new_deadline_at": "2026-10-01T10:30:00Z",
        }
    ],
    "pause_ends_at": None,
}
RETURN = {"command_id": "b-1", "comment": "请补充营业执照副本"}
RETURNED = {
    **WAITING,
    "state": "RETURNED",
    "version": 2,
    "paused_since": "2026-10-01T09:20:00Z",
    "pauses": [
        {
            "kind": "return",
            "from": "2026-10-01T09:20:00Z",
            "to": None,
            "reason": RETURN["comment"],
            "actor": "olga",
            "old_deadline_at": "2026-10-01T10:00:00Z",
            "new_deadline_at": None,
        }
    ],
    "tasks": [{**OPEN_TASK, "state": "CLOSED"}],
    "comments": [
        {
            "author": "olga",
            "text": RETURN["comment"],
            "at": "2026-10-01T09:20:00Z",
            "command": "return",
        }
    ],
}
EXTENDED = {
    **WAITING,
    "review_deadline_at": "2026-10-03T10:00:00Z",
    "review_deadline_at_local": "2026-10-03T18:00:00+08:00",
    "deadline_policy": {"source": "extended", "reason": "customer asked", "rule_version": 1},
    "version": 2,
    "extensions": [
        {
            "old_deadline_at": "2026-10-01T10:00:00Z",
            "new_deadline_at": "2026-10-03T10:00:00Z",
            "reason": "customer asked",
            "actor": "olga",
            "at": "2026-10-01T09:20:00Z",
            "rule_version": 1,
        }
    ],
}
OBSERVED = {
    **EXTENDED,
    "version": 3,
    "observations": [
        {
            "command_id": "cb-1",
            "contract_id": "C-9",
            "material_version": 2,
            "occurred_at": "2026-10-01T09:58:00Z",
            "source": "esign",
            "outcome": "OBSERVED",
            "recorded_at": "2026-10-01T09:58:05Z",
            "material_matches": True,
            "contract_matches": True,
        }
    ],
    "contract_id": "C-9",
}
CLAIMED_TASK = {
    **OPEN_TASK,
    "assignee_id": "olga",
    "claimed_at": "2026-10-01T10:10:00Z",
    "state": "ASSIGNED",
}
CLAIMED = {**OBSERVED, "version": 4, "tasks": [CLAIMED_TASK]}
APPROVE_WON = {"command_id": "a-1", "kind": "approve", "actor": "olga"}
OLGA_APPROVES = {
    "level": 1,
    "task_id": "1",
    "vote": "approve",
    "actor": "olga",
    "at": "2026-10-01T10:15:00Z",
    "material_version": 2,
    "lapsed": False,
    "command_id": "a-1",
}
APPROVED = {
    **CLAIMED,
    "state": "APPROVED",
    "decided_at": "2026-10-01T10:15:00Z",
    "decided_by": "olga",
    "winning_command": APPROVE_WON,
    "version": 5,
    "tasks": [{**CLAIMED_TASK, "state": "CLOSED"}],
    "levels": [
        {
            **ONE_LEVEL,
            "state": "completed",
            "approvals": 1,
            "completed_at": "2026-10-01T10:15:00Z",
            "votes": [OLGA_APPROVES],
        }
    ],
    "votes": [OLGA_APPROVES],
    "comments": [
        {
            "author": "olga",
            "text": "材料齐全，同意开户",
            "at": "2026-10-01T10:15:00Z",
            "command": "approve",
        }
    ],
}
REJECTED = {
    **CLAIMED,
    "state": "REJECTED",
    "decided_at": "2026-10-01T10:15:00Z",
    "decided_by": "olga",
    "winning_command": {"command_id": "r-1", "kind": "reject", "actor": "olga"},
    "version": 5,
    "tasks": [{**CLAIMED_TASK, "state": "CLOSED"}],
    "comments": [
        {
            "author": "olga",
            "text": "缺少营业执照副本",
            "at": "2026-10-01T10:15:00Z",
            "command": "reject",
        }
    ],
}
EXPIRY = {"command_id": None, "kind": "sweep", "actor": "system:sweeper"}
EXPIRED = {
    **WAITING,
    "id": EXPIRED_INSTANCE_ID,
    "title": "Raise limit",
    "form_data": {"customer": "Xinghe", "limit": 50000},
    "state": "EXPIRED",
    "material_version": 1,
    "review_deadline_at": "2026-10-01T09:00:00Z",
    "review_deadline_at_local": "2026-10-01T09:00:00+00:00",
    "deadline_policy": {
        "source": "definition",
        "review_window_seconds": 86400,
        "definition_revision": 1,
        "rule_version": 1,
    },
    "submitted_at": "2026-09-30T09:00:00Z",
    "decided_at": "2026-10-01T09:30:00Z",
    "decided_by": "system:sweeper",
    "winning_command": EXPIRY,
    "version": 3,
}
RESUBMIT = {
    "command_id": "re-1",
    "reason": "补充了授信材料",
    "material_version": 2,
    "form_data": {"customer": "Xinghe", "limit": 30000},
}
RESUBMITTED = {
    **WAITING,
    "id": RESUBMITTED_INSTANCE_ID,
    "title": "Raise limit",
    "form_data": {"customer": "Xinghe", "limit": 30000},
    "review_deadline_at": "2026-10-02T10:00:00Z",
    "review_deadline_at_local": "2026-10-02T10:00:00+00:00",
    "deadline_policy": {
        "source": "definition",
        "review_window_seconds": 86400,
        "definition_revision": 1,
        "rule_version": 1,
    },
    "submitted_at": "2026-10-01T10:00:00Z",
    "resubmits": EXPIRED_INSTANCE_ID,
}
REQUEST_CANCELLATION = {"command_id": "x-1", "reason": "客户撤销开户申请"}
CANCELLATION = {
    **WAITING,
    "id": CANCELLATION_INSTANCE_ID,
    "definition_id": REFUND_DEFINITION_ID,
    "material_version": 1,
    "review_deadline_at": "2026-10-02T11:00:00Z",
    "review_deadline_at_local": "2026-10-02T11:00:00+00:00",
    "deadline_policy": {
        "source": "definition",
        "review_window_seconds": 86400,
        "definition_revision": 1,
        "rule_version": 1,
    },
    "submitted_at": "2026-10-01T11:00:00Z",
    "cancellation_of": SUBMITTED_INSTANCE_ID,
}
LAUNCHED = {
    **WAITING,
    "id": LAUNCHED_INSTANCE_ID,
    "title": "Daily check 2026-10-01",
    "form_data": {"region": "east"},
    "material_version": 1,
    "review_deadline_at": "2026-10-02T09:00:01Z",
    "review_deadline_at_local": "2026-10-02T09:00:01+00:00",
    "deadline_policy": EXPIRED["deadline_policy"],
    "origin": {
        "source": "manual",
        "schedule_id": CRON_SCHEDULE_ID,
        "schedule_name": "Daily check",
        "fire_id": MANUAL_RUN_ID,
        "run_id": MANUAL_RUN_ID,
        "scheduled_for": "2026-10-01T09:00:00Z",
        "trigger_kind": "cron",
        "trigger": CRON_TRIGGER,
        "definition_revision": 1,
        "definition_name": "Daily check",
        "saved_by": "root",
        "moved_to": None,
        "calendar": None,
    },
    "submitted_at": "2026-10-01T09:00:01Z",
}

# Of definition `credit-limit`, whose deadline is three working days on calendar `cn`
# (web/examples/calendars.py): submitted on 2026-09-30 at 19:00 in Shanghai, after the cut-off.
IN_WORKING_DAYS = {
    **WAITING,
    "id": "5f0c2b8e-3d51-5c8f-9a7e-2b6d1f4c8e90",
    "definition_id": "ed00c9e2-4dde-5fd3-be81-91b0cc29b10d",
    "title": "Raise limit for Xinghe",
    "material_version": 1,
    "review_deadline_at": "2026-10-12T10:00:00Z",
    "review_deadline_at_local": "2026-10-12T18:00:00+08:00",
    "deadline_policy": {
        "source": "working_time",
        "rule": THREE_WORKING_DAYS,
        "calendar": "cn",
        "calendar_revision": 2,
        "region": "CN",
        "libraries": {"holidays": "0.109", "chinesecalendar": "1.11.0"},
        "inputs": {"submitted_at": "2026-09-30T11:00:00+00:00", "timezone": "Asia/Shanghai"},
        **{key: AFTER_THE_CUTOFF[key] for key in ("business_day", "counted_days")},
        "skipped_days": AFTER_THE_CUTOFF["skipped_days"],
        "assumed": False,
        "working_time_notices": {"reminders": {}},
        "definition_revision": 1,
        "rule_version": 1,
    },
    "submitted_at": "2026-09-30T11:00:00Z",
}

# Submitted under the definition's revision 2: escalated to olga after 12 hours, reminded an
# hour before its deadline, still waiting.
REMINDED = {
    **WAITING,
    "id": REMINDED_INSTANCE_ID,
    "title": "Close account",
    "material_version": 1,
    "review_deadline_at": "2026-10-02T12:00:00Z",
    "review_deadline_at_local": "2026-10-02T12:00:00+00:00",
    "deadline_policy": {
        "source": "definition",
        "review_window_seconds": 86400,
        "definition_revision": 2,
        "rule_version": 1,
    },
    "submitted_at": "2026-10-01T12:00:00Z",
    "version": 3,
    "reminders": [{"before_seconds": 3600}],
    "escalation": {
        "after_seconds": 43200,
        "account_id": "olga",
        "group_leader_of": None,
        "mode": "reassign",
    },
    "reminders_sent": [
        {"before_seconds": 3600, "due_at": "2026-10-02T11:00:00Z", "at": "2026-10-02T11:00:01Z"}
    ],
    "escalated_account_id": "olga",
    "escalated_at": "2026-10-02T00:00:01Z",
    "next_notice_at": None,
    "tasks": [
        {
            **OPEN_TASK,
            "assignee_id": "olga",
            "claimed_at": "2026-10-02T00:00:01Z",
            "priority": "high",
            "state": "ASSIGNED",
        }
    ],
}


# Of definition `payment` (web/examples/directory.py `WITH_LEVELS`): lee, the applicant's leader,
# approved level 1 (主管), fa approved on level 2 (财务, two of three), then ann revised the
# material to version 2: both approvals lapsed and the review went back to level 1.
PAYMENT_ID = "8d2e4f61-0b3a-5c7d-9e18-4a6b2c0d8f37"
FINANCE = ["fa", "fb", "fc"]


def _vote(level: int, task_id: str, actor: str, at: str, lapsed: bool) -> dict[str, Any]:
    return {
        "level": level,
        "task_id": task_id,
        "vote": "approve",
        "actor": actor,
        "at": at,
        "material_version": 1,
        "lapsed": lapsed,
        "command_id": f"a-{actor}",
    }


LEE_LAPSED = _vote(1, "1", "lee", "2026-10-01T09:10:00Z", True)
FA_LAPSED = _vote(2, "2", "fa", "2026-10-01T09:30:00Z", True)
REVISED = {
    **WAITING,
    "id": PAYMENT_ID,
    "definition_id": "3c1f0a52-6e2d-5b7a-8f41-9d0e2c6b7a15",
    "title": "Payment to Xinghe",
    "form_data": {"amount": 90000},
    "material_version": 2,
    "reviewers": {**REVIEWERS, "roles": [], "applicant_leader": True},
    "version": 6,
    "tasks": [
        {**OPEN_TASK, "candidates": ["lee"]},
        {**OPEN_TASK, "id": "2", "candidates": FINANCE, "state": "CLOSED", "level": 2},
        {**OPEN_TASK, "id": "3", "candidates": FINANCE, "state": "CLOSED", "level": 2},
    ],
    "current_level": 1,
    "levels": [
        {
            **ONE_LEVEL,
            "name": "主管",
            "reviewers": {**REVIEWERS, "roles": [], "applicant_leader": True},
            "candidates": ["lee"],
            "opened_at": "2026-10-01T10:00:00Z",
            "votes": [LEE_LAPSED],
        },
        {
            **ONE_LEVEL,
            "number": 2,
            "name": "财务",
            "state": "waiting",
            "approvals_required": 2,
            "any_reject_rejects": False,
            "reviewers": {**REVIEWERS, "roles": [], "groups": ["finance"]},
            "candidates": FINANCE,
            "opened_at": "2026-10-01T09:10:00Z",
            "votes": [FA_LAPSED],
            "tasks": ["2", "3"],
        },
    ],
    "votes": [LEE_LAPSED, FA_LAPSED],
}


def reasoned(why: Reason) -> dict[str, Any]:
    """A reason as an answer gives it: in words, and as its code and parameters."""
    return {"reason": why.text, "reason_code": why.code, "reason_params": dict(why.params)}


def _answer(outcome: str, instance: dict[str, Any], why: Reason) -> dict[str, Any]:
    """A command's answer: what it got, the instance after it, and who decided the instance."""
    return {
        "outcome": outcome,
        "state": instance["state"],
        "instance": instance,
        "replayed": False,
        **reasoned(why),
        "winning_command": instance["winning_command"],
    }


def _lost(command: str, outcome: str, instance: dict[str, Any], why: Reason) -> dict[str, Any]:
    """A command that lost, answered 409 as a problem document with what it got."""
    path = f"/api/approvals/{instance['id']}/{command}"
    return {
        **problem_document("COMMAND_REJECTED", 409, "The command lost", why.text, path),
        "outcome": outcome,
        "state": instance["state"],
        "replayed": False,
        **reasoned(why),
        "winning_command": instance["winning_command"],
        "approval": instance,
    }


APPROVED_ANSWER = _answer("APPROVED", APPROVED, Reason(codes.APPROVED_IN_TIME))
LATE = Reason(
    codes.DEADLINE_PASSED,
    {"deadline": "2026-10-01T09:00:00+00:00", "at": "2026-10-01T09:30:00+00:00"},
)

EXAMPLES: dict[str, dict[str, Any]] = {
    "ApprovalSubmit": {
        "with-a-deadline": SUBMIT_OPEN_ACCOUNT,
        "review-window": SUBMIT_RAISE_LIMIT,
    },
    "ApproveIn": {
        "approve": {"command_id": "a-1", "material_version": 2},
        "with-a-comment": {
            "command_id": "a-1",
            "material_version": 2,
            "comment": "材料齐全，同意开户",
        },
    },
    "RejectIn": {
        "reject": {"command_id": "r-1", "material_version": 2, "comment": "缺少营业执照副本"}
    },
    "ClaimIn": {"claim": {"command_id": "c-1"}, "one-task": {"command_id": "c-1", "task_id": "1"}},
    "ReassignIn": {
        "reassign": {"command_id": "ra-1", "assignee_id": "pei", "reason": "休假，转给同组同事"}
    },
    "CommentIn": {"comment": {"command_id": "n-1", "comment": "客户已补交材料"}},
    "WithdrawIn": {"withdraw": {"command_id": "w-1"}},
    "ReviseIn": {
        "revise": {
            "command_id": "v-1",
            "material_version": 2,
            "form_data": {"amount": 90000},
            "reason": "金额更正，附新合同",
        },
        "keep-the-form-data": {"command_id": "v-1", "material_version": 2, "reason": "补充附件"},
    },
    "ResubmitIn": {"resubmit": RESUBMIT},
    "RequestCancellationIn": {"request-cancellation": REQUEST_CANCELLATION},
    "ExtendDeadlineIn": {"extend": EXTEND},
    "ClockIn": {"pause": PAUSE, "resume": RESUME},
    "ReturnIn": {"return": RETURN},
    "SignCallbackIn": {"signed": SIGN},
    "ApprovalOut": {
        "waiting": WAITING,
        "approved": APPROVED,
        "expired": EXPIRED,
        "launched-by-a-schedule": LAUNCHED,
        "reminded-and-escalated": REMINDED,
        "deadline-in-working-days": IN_WORKING_DAYS,
        "clock-paused": PAUSED,
        "clock-resumed": RESUMED,
        "returned": RETURNED,
        "levels-revised": REVISED,
        "resubmitted": RESUBMITTED,
        "a-cancellation": CANCELLATION,
        "cancellation-requested": {
            **APPROVED,
            "version": 7,
            "cancellation": {
                "state": "REQUESTED",
                "instance_id": CANCELLATION_INSTANCE_ID,
                "requested_at": "2026-10-01T11:00:00Z",
                "reason": "客户撤销开户申请",
                "actor": "ann",
                "settled_at": None,
                "outcome": None,
            },
        },
        "cancelled": {
            **APPROVED,
            "version": 8,
            "cancellation": {
                "state": "CANCELLED",
                "instance_id": CANCELLATION_INSTANCE_ID,
                "requested_at": "2026-10-01T11:00:00Z",
                "reason": "客户撤销开户申请",
                "actor": "ann",
                "settled_at": "2026-10-01T12:00:00Z",
                "outcome": "APPROVED",
            },
        },
    },
    "ApprovalPage": {
        "newest-first": {
            "items": [LAUNCHED, APPROVED, EXPIRED],
            "page": 1,
            "page_size": 20,
            "total": 3,
            "total_capped": False,
            "next_cursor": None,
        },
    },
    "CommandOut": {
        "approved": APPROVED_ANSWER,
        "replayed": {**APPROVED_ANSWER, "replayed": True},
        "deadline-extended": _answer(
            "EXTENDED", EXTENDED, Reason(codes.DEADLINE_EXTENDED, {"reason": "customer asked"})
        ),
        "callback-observed": _answer("OBSERVED", OBSERVED, Reason(codes.CALLBACK_OBSERVED)),
        "claimed": _answer("CLAIMED", CLAIMED, Reason(codes.CLAIMED_IN_TIME)),
        "rejected": _answer("REJECTED", REJECTED, Reason(codes.REJECTED_IN_TIME)),
        "clock-paused": _answer(
            "PAUSED", PAUSED, Reason(codes.DEADLINE_PAUSED, {"reason": PAUSE["reason"]})
        ),
        "clock-resumed": _answer(
            "RESUMED", RESUMED, Reason(codes.DEADLINE_RESUMED, {"reason": RESUME["reason"]})
        ),
        "returned": _answer("RETURNED", RETURNED, Reason(codes.RETURNED_FOR_CHANGES)),
        "revised": _answer(
            "REVISED",
            REVISED,
            Reason(codes.MATERIAL_REVISED, {"old": 1, "new": 2, "reason": "金额更正，附新合同"}),
        ),
    },
    "CommandRejectedOut": {
        "lost-already-decided": _lost(
            "withdraw",
            "CONFLICT",
            {**APPROVED, "version": 5},
            Reason(codes.ALREADY_DECIDED, {"state": "APPROVED"}),
        ),
        "lost-after-deadline": _lost("approve", "EXPIRED", EXPIRED, LATE),
        "lost-stale-material": _lost(
            "approve",
            "STALE_MATERIAL",
            {**EXTENDED, "version": 3},
            Reason(codes.MATERIAL_STALE, {"offered": 1, "current": 2}),
        ),
        "lost-claimed-by-other": _lost(
            "approve",
            "CLAIMED_BY_OTHER",
            CLAIMED,
            Reason(codes.CLAIMED_BY_OTHER, {"assignee": "olga"}),
        ),
        "lost-clock-already-paused": _lost(
            "pause-deadline",
            "CONFLICT",
            PAUSED,
            Reason(codes.CLOCK_ALREADY_PAUSED, {"since": "2026-10-01T09:10:00+00:00"}),
        ),
        "lost-returned": _lost(
            "approve",
            "CONFLICT",
            RETURNED,
            Reason(codes.INSTANCE_RETURNED, {"state": "RETURNED"}),
        ),
        "lost-already-voted": _lost(
            "approve",
            "ALREADY_VOTED",
            CLAIMED,
            Reason(codes.ALREADY_VOTED_ON_LEVEL, {"actor": "olga", "level": 1}),
        ),
        "lost-already-resubmitted": _lost(
            "resubmit",
            "CONFLICT",
            {**EXPIRED, "version": 4, "resubmitted_as": RESUBMITTED_INSTANCE_ID},
            Reason(codes.ALREADY_RESUBMITTED, {"instance_id": RESUBMITTED_INSTANCE_ID}),
        ),
        "lost-no-cancellation-definition": _lost(
            "request-cancellation",
            "CONFLICT",
            {**APPROVED, "version": 6},
            Reason(codes.NO_CANCELLATION_DEFINITION),
        ),
        "command-id-reused": PROBLEMS["COMMAND_ID_REUSED"],
    },
}
