"""Shapes of a reviewer's tasks (docs/approvals.md#my-tasks)."""

from __future__ import annotations

from marshmallow import fields

from projections.tasks import TASK_LISTINGS
from web.schemas.base import (
    Choice,
    Choices,
    OutSchema,
    PageQuery,
    UtcDateTime,
    page_of,
    search_field,
    server_uuid,
    sort_field,
)
from web.schemas.enums import DECISION_OUTCOME, TASK_PRIORITY, TASK_SCOPE, TASK_STATE

TASK_SORT = Choices(
    "TaskSort",
    TASK_LISTINGS["assigned"].sorts,
    "a field to sort by, `-field` for descending (default `-review_deadline_at`, decided "
    "tasks `-decided_at`); any other than the default pages by number only "
    "(docs/api.md#sorting)",
)


class TaskListQuery(PageQuery):
    q = search_field("title")
    sort = sort_field(TASK_SORT)
    scope = Choice(
        TASK_SCOPE,
        load_default="assigned",
        metadata={
            "description": "whose tasks: assigned to the caller (default), claimable by "
            "the caller, or decided by the caller"
        },
    )


class TaskOut(OutSchema):
    instance_id = server_uuid()
    task_id = fields.String()
    title = fields.String(metadata={"description": "the instance's"})
    definition_id = server_uuid()
    applicant_id = fields.String()
    review_deadline_at = UtcDateTime()
    time_left_seconds = fields.Float(
        allow_none=True,
        metadata={
            "description": "until the deadline, as of the answer (negative: overdue, "
            "not yet expired); null once closed"
        },
    )
    priority = Choice(TASK_PRIORITY)
    state = Choice(TASK_STATE)
    assignee_id = fields.String(allow_none=True)
    claimed_at = UtcDateTime(allow_none=True)
    candidates = fields.List(
        fields.String(),
        allow_none=True,
        metadata={"description": "who may claim it; null: anyone who may decide"},
    )
    decided_by = fields.String(allow_none=True)
    decided_at = UtcDateTime(allow_none=True)
    outcome = Choice(DECISION_OUTCOME, allow_none=True)
    level = fields.Integer(metadata={"description": "the review level of the instance it is"})


class TaskCountsOut(OutSchema):
    assigned = fields.Integer()
    claimable = fields.Integer()
    decided = fields.Integer()


class TaskPageOut(page_of(TaskOut)):  # type: ignore[misc]
    """A page of the caller's tasks in one scope, and how many each scope holds."""

    counts = fields.Nested(TaskCountsOut)
