"""Notices (通知): which person an approval event concerns, and why, as a stable code.

A notice is made from the log by a read model (projections/notifications.py), never stored as
an event: these rules say, for one event, which accounts it notifies with which kind and
parameters. A person reads the kind's words in their language; the code stays as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid5

from domain.approvals import (
    APPROVED,
    EXPIRED,
    FORBIDDEN,
    LATE_OR_CONFLICT,
    REJECTED,
    SIGN,
    WITHDRAWN,
)
from domain.directory import NAMESPACE
from domain.reason_codes import MISMATCHES

# Kinds made today.
APPLICATION_DECIDED = "APPLICATION_DECIDED"
CALLBACK_LATE_OR_MISMATCHED = "CALLBACK_LATE_OR_MISMATCHED"
# Kinds for the tasks of an instance.
TASK_ASSIGNED = "TASK_ASSIGNED"
TASK_CLAIMABLE = "TASK_CLAIMABLE"
TASK_REMINDER = "TASK_REMINDER"
TASK_ESCALATED_TO = "TASK_ESCALATED_TO"
TASK_ESCALATED_AWAY = "TASK_ESCALATED_AWAY"
# A review level that can no longer reach its approvals: told to its candidates (issue 35).
LEVEL_BLOCKED = "LEVEL_BLOCKED"
# A deadline counted on weekdays only (its calendar does not cover the year): told to those
# who manage calendars (docs/calendars.md#assumed-deadlines).
DEADLINE_ASSUMED = "DEADLINE_ASSUMED"
KINDS = (
    APPLICATION_DECIDED,
    CALLBACK_LATE_OR_MISMATCHED,
    TASK_ASSIGNED,
    TASK_CLAIMABLE,
    TASK_REMINDER,
    TASK_ESCALATED_TO,
    TASK_ESCALATED_AWAY,
    DEADLINE_ASSUMED,
    LEVEL_BLOCKED,
)
# The languages a notice's email is written in; a person without one reads Chinese.
ZH_CN, EN = "zh-CN", "en"
LANGUAGES = (ZH_CN, EN)
DECISIONS = frozenset({APPROVED, REJECTED, WITHDRAWN, EXPIRED})
LATE = frozenset({LATE_OR_CONFLICT, EXPIRED})  # a callback's outcomes when it came too late


@dataclass(frozen=True)
class NoticeDraft:
    """A notice an event makes for one account: its kind and the values its words name."""

    account_id: str
    kind: str
    instance_id: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Handled:
    """What the notice rules read of a handled approval command."""

    instance_id: str
    command: str
    outcome: str
    actor: str
    reason_params: Mapping[str, Any] | None


def notice_id(aggregate_id: UUID, version: int, account_id: str, kind: str) -> UUID:
    """One notice per event (its aggregate and version), account and kind: deterministic, so a
    rebuild of the read model makes the same ids."""
    return uuid5(NAMESPACE, f"notice/{aggregate_id}/{version}/{account_id}/{kind}")


def notices_of_command(applicant_id: str, title: str, handled: Handled) -> list[NoticeDraft]:
    """The notices a handled command makes: its decision, or a callback that came late or
    did not match, both for the applicant."""
    return [*_decided(applicant_id, title, handled), *_callback(applicant_id, title, handled)]


def _decided(applicant_id: str, title: str, handled: Handled) -> list[NoticeDraft]:
    """A decision notifies the applicant, unless they decided it themselves (withdrew); an
    expiry is the deadline's decision, whoever's command came after it."""
    if handled.outcome not in DECISIONS:
        return []
    if handled.outcome != EXPIRED and handled.actor == applicant_id:
        return []
    params = {"title": title, "outcome": handled.outcome, "actor": handled.actor}
    return [NoticeDraft(applicant_id, APPLICATION_DECIDED, handled.instance_id, params)]


def _callback(applicant_id: str, title: str, handled: Handled) -> list[NoticeDraft]:
    """A signing callback notifies the applicant when it came late (after the deadline, or
    after the decision) or did not match the instance; a refused caller's is no callback."""
    if handled.command != SIGN or handled.outcome == FORBIDDEN:
        return []
    mismatches = list((handled.reason_params or {}).get(MISMATCHES) or [])
    late = handled.outcome in LATE
    if not late and not mismatches:
        return []
    codes = [m["code"] for m in mismatches]
    params = {"title": title, "late": late, "mismatches": codes}
    return [NoticeDraft(applicant_id, CALLBACK_LATE_OR_MISMATCHED, handled.instance_id, params)]


@dataclass(frozen=True)
class TaskFacts:
    """What the notice rules read of an instance's task: its title, who may claim it (None:
    anyone who may decide, whom no notice can name), and who holds it."""

    instance_id: str
    title: str
    candidates: tuple[str, ...] | None
    assignee_id: str | None


def claimable_notices(task: TaskFacts, leaving_out: str | None = None) -> list[NoticeDraft]:
    """The task may be claimed: each candidate is told (but `leaving_out`, who let it go)."""
    return [
        NoticeDraft(account, TASK_CLAIMABLE, task.instance_id, {"title": task.title})
        for account in task.candidates or ()
        if account != leaving_out
    ]


def assigned_notices(task: TaskFacts, assignee: str, by: str) -> list[NoticeDraft]:
    """The task was handed to `assignee` by someone else: they are told."""
    if assignee == by:
        return []
    params = {"title": task.title, "actor": by}
    return [NoticeDraft(assignee, TASK_ASSIGNED, task.instance_id, params)]


def escalation_notices(
    task: TaskFacts, target: str | None, to_assignee: str | None
) -> list[NoticeDraft]:
    """An escalation tells its target (None: nobody eligible), and the assignee it took the
    task from."""
    params = {"title": task.title, "target": target or ""}
    told = [NoticeDraft(target, TASK_ESCALATED_TO, task.instance_id, params)] if target else []
    previous = task.assignee_id
    if to_assignee is not None and previous is not None and previous != to_assignee:
        told.append(NoticeDraft(previous, TASK_ESCALATED_AWAY, task.instance_id, params))
    return told


def assumed_deadline_notices(
    instance_id: str, title: str, policy: Mapping[str, Any]
) -> list[NoticeDraft]:
    """A deadline counted on weekdays only tells each account its policy names."""
    params = {"title": title, "calendar": policy.get("calendar", "")}
    told = policy.get("assumed_told") or []
    return [NoticeDraft(account, DEADLINE_ASSUMED, instance_id, params) for account in told]


def reminder_notices(task: TaskFacts, before_seconds: int) -> list[NoticeDraft]:
    """A reminder is due: the assignee is told, or while nobody holds it, every candidate."""
    params = {"title": task.title, "before_seconds": before_seconds}
    accounts = [task.assignee_id] if task.assignee_id else list(task.candidates or ())
    return [NoticeDraft(a, TASK_REMINDER, task.instance_id, params) for a in accounts]


def blocked_notices(
    instance_id: str, title: str, candidates: Sequence[str], level: int, required: int
) -> list[NoticeDraft]:
    """A level can no longer reach its approvals: each of its candidates is told."""
    params = {"title": title, "level": level, "required": required}
    return [NoticeDraft(a, LEVEL_BLOCKED, instance_id, params) for a in candidates]


# Emailing a notice (docs/operations.md#email-delivery): at least once, retried with backoff.
MAX_EMAIL_ATTEMPTS = 8
SENT, FAILED = "SENT", "FAILED"


def email_due(attempts: int, last_at: datetime | None, now: datetime, base_seconds: float) -> bool:
    """Whether a notice's email is tried at `now`, after `attempts` failed ones (the last at
    `last_at`): at once the first time, then after base, 2 x base, 4 x base...; never once
    every attempt failed."""
    if attempts >= MAX_EMAIL_ATTEMPTS:
        return False
    if last_at is None:
        return True
    return now >= last_at + timedelta(seconds=base_seconds * 2 ** (attempts - 1))


# The words of each kind, by language: a subject and a body, from the notice's params.
OUTCOME_WORDS = {
    ZH_CN: {APPROVED: "已通过", REJECTED: "被拒绝", WITHDRAWN: "已撤回", EXPIRED: "已过期"},
    EN: {APPROVED: "approved", REJECTED: "rejected", WITHDRAWN: "withdrawn", EXPIRED: "expired"},
}
WORDS = {
    ZH_CN: {
        APPLICATION_DECIDED: (
            "您的申请「{title}」{outcome}",
            "您的申请「{title}」{outcome}（{actor}）。",
        ),
        CALLBACK_LATE_OR_MISMATCHED: (
            "您的申请「{title}」收到异常回调",
            "您的申请「{title}」收到一个{how}的签署回调。",
        ),
        TASK_ASSIGNED: ("审批任务「{title}」已转交给您", "{actor} 将审批任务「{title}」转交给您。"),
        TASK_CLAIMABLE: ("有待领取的审批任务「{title}」", "审批任务「{title}」等待领取。"),
        TASK_REMINDER: ("审批任务「{title}」即将到期", "审批任务「{title}」即将到期，请尽快处理。"),
        TASK_ESCALATED_TO: ("审批任务「{title}」已升级给您", "审批任务「{title}」已超时升级给您。"),
        LEVEL_BLOCKED: (
            "「{title}」第 {level} 级无法完成",
            "「{title}」第 {level} 级的审批人不足，已无法达到 {required} 人通过。",
        ),
        TASK_ESCALATED_AWAY: (
            "审批任务「{title}」已升级转交",
            "审批任务「{title}」已超时升级，转交给 {target}。",
        ),
        DEADLINE_ASSUMED: (
            "「{title}」的截止时间按工作日推定",
            "日历 {calendar} 未覆盖相应年份，「{title}」的截止时间只按周一至周五计算，"
            "请导入该年份。",
        ),
    },
    EN: {
        APPLICATION_DECIDED: (
            'Your application "{title}" was {outcome}',
            'Your application "{title}" was {outcome} ({actor}).',
        ),
        CALLBACK_LATE_OR_MISMATCHED: (
            'A signing callback on "{title}" needs a look',
            'Your application "{title}" received a signing callback that was {how}.',
        ),
        TASK_ASSIGNED: ('"{title}" is yours to review', '{actor} handed you "{title}" to review.'),
        TASK_CLAIMABLE: ('"{title}" may be claimed', '"{title}" waits for a reviewer to claim it.'),
        TASK_REMINDER: ('"{title}" is due soon', '"{title}" is due soon: please review it.'),
        TASK_ESCALATED_TO: ('"{title}" was escalated to you', '"{title}" waited too long.'),
        LEVEL_BLOCKED: (
            'Level {level} of "{title}" cannot complete',
            'Level {level} of "{title}" can no longer reach {required} approvals.',
        ),
        TASK_ESCALATED_AWAY: (
            '"{title}" was escalated',
            '"{title}" waited too long and went to {target}.',
        ),
        DEADLINE_ASSUMED: (
            'The deadline of "{title}" was assumed',
            'Calendar {calendar} does not cover the year: the deadline of "{title}" was '
            "counted on weekdays only. Import that year.",
        ),
    },
}
GENERIC = {ZH_CN: ("新通知", "您有一条新通知。"), EN: ("New notice", "You have a new notice.")}
HOW = {ZH_CN: ("迟到", "不匹配"), EN: ("late", "mismatched")}


def email_of(kind: str, params: Mapping[str, Any], language: str) -> tuple[str, str]:
    """A notice's subject and body in `language` (Chinese for any other), with its code."""
    language = language if language in WORDS else ZH_CN
    subject, body = WORDS[language].get(kind, GENERIC[language])
    outcome = params.get("outcome", "")
    late, mismatched = HOW[language]
    values = {
        **params,
        "outcome": OUTCOME_WORDS[language].get(outcome, outcome),
        "how": late if params.get("late") else mismatched,
    }
    return subject.format(**values), f"{body.format(**values)}\n\n[{kind}]"
