"""Review levels (审批层级) and countersign (会签): a definition's review as an ordered list.

Each level names its reviewers (domain/reviewers.py), how many distinct reviewers must approve
(`approvals_required`: 1 is 或签, N is 会签) and whether one reject refuses the instance
(`any_reject_rejects`). A definition without `levels` has one level made from its `reviewers`.
An instance opens one task per required approval of its current level; a later level's tasks
open when the level before it completes. Votes keep the material version they were given on:
a revise lapses them (kept, shown lapsed) and sends the instance back to level 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from domain.errors import ValidationFailed
from domain.messages import Message
from domain.reviewers import CLOSED, FIRST_TASK, Reviewers, Task

# A level's states: not reached yet, open for votes, completed (its approvals reached), failed.
WAITING, OPEN, COMPLETED, FAILED = "waiting", "open", "completed", "failed"
APPROVE_VOTE, REJECT_VOTE = "approve", "reject"
MAX_LEVELS = 10
MAX_APPROVALS = 50


@dataclass(frozen=True)
class Level:
    """One level of a definition's review."""

    reviewers: Reviewers
    approvals_required: int = 1
    any_reject_rejects: bool = True
    name: str | None = None

    @classmethod
    def of(cls, stored: Mapping[str, Any]) -> Level:
        reviewers = Reviewers.of(stored["reviewers"])
        assert reviewers is not None, "a level names its reviewers"
        return cls(
            reviewers,
            int(stored.get("approvals_required") or 1),
            bool(stored.get("any_reject_rejects", True)),
            stored.get("name"),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "reviewers": self.reviewers.as_dict(),
            "approvals_required": self.approvals_required,
            "any_reject_rejects": self.any_reject_rejects,
        }


def check_levels(levels: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A definition's levels as kept: 1 to 10, each naming reviewers, 1 to 50 approvals, and
    no more than the accounts it names when it names only accounts. A level's problem is named
    by its place in the list, from 0 as the API's other list errors are (`levels.1.` is the
    second level)."""
    if not 1 <= len(levels) <= MAX_LEVELS:
        raise ValidationFailed.of("levels", Message("give 1 to 10 levels"))
    kept = []
    for index, stored in enumerate(levels):
        level = Level.of(stored)
        try:
            level.reviewers.check()
        except ValidationFailed as broken:
            raise ValidationFailed.of(f"levels.{index}.reviewers", broken.message) from None
        problem = _approvals_problem(level)
        if problem is not None:
            raise ValidationFailed.of(f"levels.{index}.approvals_required", problem)
        kept.append(level.as_dict())
    return kept


def _approvals_problem(level: Level) -> Message | None:
    """Why a level's `approvals_required` can never be reached, if it cannot."""
    if not 1 <= level.approvals_required <= MAX_APPROVALS:
        return Message("must be 1 to 50")
    rule = level.reviewers
    only_accounts = not (rule.groups or rule.roles or rule.applicant_leader)
    if only_accounts and level.approvals_required > len(set(rule.accounts)):
        return Message(
            "only {count} accounts are named: at most {count} approvals",
            count=len(set(rule.accounts)),
        )
    return None


def definition_levels(
    reviewers: Mapping[str, Any] | None, levels: Sequence[Mapping[str, Any]] | None
) -> list[Level] | None:
    """The levels a definition reviews in: its own, or one made from its reviewers; None when
    it names neither (anyone who may decide, as before reviewers)."""
    if levels:
        return [Level.of(level) for level in levels]
    rule = Reviewers.of(reviewers)
    return None if rule is None else [Level(rule)]


def level_of(number: int, level: Level, candidates: Sequence[str] | None) -> dict[str, Any]:
    """A level as an instance keeps it: its terms, candidates (fixed at submission), state."""
    return {
        **level.as_dict(),
        "number": number,
        "candidates": None if candidates is None else sorted(candidates),
        "state": OPEN if number == 1 else WAITING,
        "opened_at": None,
        "completed_at": None,
    }


def legacy_level(
    reviewers: Mapping[str, Any] | None, candidates: Sequence[str] | None
) -> dict[str, Any]:
    """The one level of an instance without levels: its reviewers, one approval, open."""
    rule = Reviewers.of(reviewers) or Reviewers()
    return level_of(1, Level(rule), candidates)


def initial_review(
    levels: Sequence[Mapping[str, Any]] | None,
    reviewers: Mapping[str, Any] | None,
    candidates: Sequence[str] | None,
    at: datetime,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A submitted instance's levels (its definition's, or one from its reviewers), level 1
    open at `at`, and level 1's tasks."""
    kept = [
        {**level, "opened_at": at if level["number"] == 1 else None}
        for level in (levels or [legacy_level(reviewers, candidates)])
    ]
    return kept, first_tasks(kept[0])


def first_tasks(level: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tasks a level opens with: one per required approval, "1", "2", ... at level 1."""
    candidates = level["candidates"]
    kept = None if candidates is None else tuple(candidates)
    return [Task(str(n), kept).as_dict() for n in range(1, int(level["approvals_required"]) + 1)]


def level_tasks(tasks: Sequence[Mapping[str, Any]], number: int) -> list[dict[str, Any]]:
    """The tasks of level `number` (a task kept before levels is level 1's)."""
    return [dict(t) for t in tasks if t.get("level", 1) == number]


def counted_votes(votes: Sequence[Mapping[str, Any]], number: int) -> list[Mapping[str, Any]]:
    """The votes that count on level `number`: those not lapsed."""
    return [v for v in votes if v["level"] == number and not v["lapsed"]]


@dataclass(frozen=True)
class Tally:
    """Where the current level stands when a vote arrives: approvals counted, who voted or
    holds another of its tasks, how many approvals are still possible, whether it is last."""

    level: int = 1
    required: int = 1
    approvals: int = 0
    voters: frozenset[str] = frozenset()
    holders: frozenset[str] = frozenset()
    possible: int = 1
    last: bool = True
    any_reject_rejects: bool = True


def tally_of(
    levels: Sequence[Mapping[str, Any]],
    votes: Sequence[Mapping[str, Any]],
    tasks: Sequence[Mapping[str, Any]],
    current: int,
    task_id: str,
    eligible: Sequence[str] | None = None,
) -> Tally:
    """The tally of level `current` for a command on `task_id`; `eligible` are the level's
    candidates who may still approve (the directory now), by default all of them."""
    level = levels[current - 1]
    counted = counted_votes(votes, current)
    voters = frozenset(v["actor"] for v in counted)
    approvals = sum(1 for v in counted if v["vote"] == APPROVE_VOTE)
    holders = frozenset(
        t["assignee_id"]
        for t in level_tasks(tasks, current)
        if t["id"] != task_id and t["assignee_id"] and t["state"] != CLOSED
    )
    pool = set(eligible if eligible is not None else _candidates_of(level, tasks, current))
    possible = approvals + len(pool - voters)
    return Tally(
        current,
        int(level["approvals_required"]),
        approvals,
        voters,
        holders,
        possible,
        current == len(levels),
        bool(level["any_reject_rejects"]),
    )


def _candidates_of(
    level: Mapping[str, Any], tasks: Sequence[Mapping[str, Any]], number: int
) -> set[str]:
    """Everyone a level's tasks name (its candidates, and any escalation's target)."""
    found = set(level["candidates"] or ())
    for task in level_tasks(tasks, number):
        found |= set(task["candidates"] or ())
    return found


def vote_of(
    number: int, task_id: str, command: str, actor: str, at: datetime, version: int, cid: Any
) -> dict[str, Any]:
    """A vote as kept: on which level and task, approve or reject, on which material."""
    return {
        "level": number,
        "task_id": task_id,
        "vote": APPROVE_VOTE if command == "approve" else REJECT_VOTE,
        "actor": actor,
        "at": at,
        "material_version": version,
        "lapsed": False,
        "command_id": cid,
    }


def with_level_state(
    levels: Sequence[Mapping[str, Any]], number: int, state: str, at: datetime
) -> list[dict[str, Any]]:
    """The levels with level `number` completed or failed at `at`."""
    return [
        {**level, "state": state, "completed_at": at} if level["number"] == number else dict(level)
        for level in levels
    ]


def completed(
    levels: Sequence[Mapping[str, Any]],
    tasks: Sequence[Mapping[str, Any]],
    number: int,
    at: datetime,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """After level `number` completed at `at`: it is completed, its tasks closed, and the next
    level (if any) open with its tasks (new ones, or its earlier ones reopened after a revise)."""
    kept = with_level_state(levels, number, COMPLETED, at)
    moved = [
        Task.of(t).closed().as_dict() if t.get("level", 1) == number else dict(t) for t in tasks
    ]
    if number >= len(levels):
        return kept, moved
    following = kept[number]
    kept[number] = {**following, "state": OPEN, "opened_at": at, "completed_at": None}
    return kept, [*reopened(moved, number + 1), *_opened_tasks(following, moved)]


def opened_tasks(
    levels: Sequence[Mapping[str, Any]], tasks: Sequence[Mapping[str, Any]], number: int
) -> list[dict[str, Any]]:
    """The tasks level `number + 1` would open with after level `number` (none after the last)."""
    if number >= len(levels):
        return []
    return _opened_tasks(levels[number], tasks)


def _opened_tasks(
    level: Mapping[str, Any], tasks: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    number = level["number"]
    if level_tasks(tasks, number):
        return []  # reopened in place by `reopened`
    candidates = level["candidates"]
    kept = None if candidates is None else tuple(candidates)
    start = len(tasks) + 1
    return [
        Task(str(start + n), kept, level=number).as_dict()
        for n in range(int(level["approvals_required"]))
    ]


def reopened(tasks: Sequence[Mapping[str, Any]], number: int) -> list[dict[str, Any]]:
    """The tasks with level `number`'s reopened (a level opened again after a revise)."""
    return [
        Task.of(t).released().as_dict() if t.get("level", 1) == number else dict(t) for t in tasks
    ]


@dataclass(frozen=True)
class Revision:
    """What a revise does to the review: votes lapsed, back to which level, tasks moved."""

    lapsed: int
    back_to_level: int
    reopened_tasks: list[str]
    closed_tasks: list[str]


def revision_after(
    votes: Sequence[Mapping[str, Any]],
    tasks: Sequence[Mapping[str, Any]],
    current: int,
    back_to: int = 1,
    returned: bool = False,
) -> Revision:
    """A revise lapses the votes kept from level `back_to` on (all are on older material:
    level 1, or the returning level when the definition says so after a return); with any
    lapsed, or after a return, the review goes back to `back_to`: its tasks that were voted on
    (all of them, when it was completed or the instance returned) reopen, later levels' open
    tasks close. With nothing voted yet and no return, the review stays as it is."""
    live = [v for v in votes if not v["lapsed"] and v["level"] >= back_to]
    if not live and not returned:
        return Revision(0, current, [], [])
    voted = {v["task_id"] for v in live if v["level"] == back_to}
    every = returned or current > back_to
    reopened_ids = [
        t["id"] for t in tasks if t.get("level", 1) == back_to and (every or t["id"] in voted)
    ]
    closed_ids = [t["id"] for t in tasks if t.get("level", 1) > back_to and t["state"] != CLOSED]
    return Revision(len(live), back_to, reopened_ids, closed_ids)


def revised(
    levels: Sequence[Mapping[str, Any]],
    tasks: Sequence[Mapping[str, Any]],
    votes: Sequence[Mapping[str, Any]],
    revision: Revision,
    at: datetime,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Levels, tasks and votes after a revise (see `revision_after`): levels before the one
    it goes back to stand, that one opens again, later ones wait."""
    back_to = revision.back_to_level
    if not revision.lapsed and not revision.reopened_tasks:
        return [dict(x) for x in levels], [dict(t) for t in tasks], [dict(v) for v in votes]
    kept_levels = [_level_after_revise(level, back_to, at) for level in levels]
    moved = []
    for stored in tasks:
        task = Task.of(stored)
        if task.id in revision.reopened_tasks:
            task = task.released()
        elif task.id in revision.closed_tasks:
            task = task.closed()
        moved.append(task.as_dict())
    lapsed = [{**v, "lapsed": True} if v["level"] >= back_to else dict(v) for v in votes]
    return kept_levels, moved, lapsed


def _level_after_revise(level: Mapping[str, Any], back_to: int, at: datetime) -> dict[str, Any]:
    if level["number"] < back_to:
        return dict(level)
    if level["number"] > back_to:
        return {**level, "state": WAITING, "completed_at": None}
    reopened = {} if level["state"] == OPEN else {"opened_at": at}
    return {**level, "state": OPEN, "completed_at": None} | reopened


def current_task_id(
    tasks: Sequence[Mapping[str, Any]], current: int, actor: str, voted: bool = False
) -> str:
    """The task a command without `task_id` is about: the one the actor holds on the current
    level, else the first open one, else the level's first (held by another, or closed)."""
    mine = level_tasks(tasks, current)
    if not mine:
        return FIRST_TASK
    for task in mine:
        if task["assignee_id"] == actor and task["state"] != CLOSED:
            return str(task["id"])
    for task in mine:
        if task["assignee_id"] is None and task["state"] != CLOSED:
            return str(task["id"])
    return str(mine[0]["id"])


def closed_vote_task(tasks: Sequence[Mapping[str, Any]], task_id: str) -> list[dict[str, Any]]:
    """The tasks after a vote counted on `task_id`: that task is closed."""
    return [Task.of(t).closed().as_dict() if t["id"] == task_id else dict(t) for t in tasks]
