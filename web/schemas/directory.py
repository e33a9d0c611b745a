"""Shapes of the tenant, accounts, tokens and process definitions (docs/api.md#directory)."""

from __future__ import annotations

from typing import Any

from marshmallow import (
    ValidationError,
    fields,
    validates_schema,
)

from domain.credentials import MAX_PASSWORD, MIN_PASSWORD
from domain.directory import MAX_REMINDERS, PUBLIC_ID, RETURN_TO_FIRST
from domain.messages import Message
from domain.permissions import ROLES
from domain.reasons import MAX_REASON
from projections.directory import ACCOUNT_LISTING, DEFINITION_LISTING
from web.schemas import validate
from web.schemas.base import (
    Choice,
    Described,
    OutSchema,
    StrictSchema,
    UtcDateTime,
    form_data_field,
    instant_text,
    list_query,
    merge_patch_of,
    name_field,
    replacing,
    server_uuid,
    strict_bool,
    strict_int,
    with_reason,
)
from web.schemas.calendars import deadline_rule_field
from web.schemas.enums import ESCALATION_MODE, LANGUAGE, PASSWORD_KIND, RETURN_TO_CHOICE, ROLE

PRESET_ID = r"^[a-z][a-z0-9_-]{0,63}$"

DEFINITION_KEY = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"

MAX_REVIEW_WINDOW_SECONDS = 366 * 24 * 3600


class PauseBody(StrictSchema):
    """Pausing or resuming the tick for a tenant: always with why."""

    reason = fields.String(
        required=True,
        validate=validate.Length(1, MAX_REASON),
        metadata={"description": "why, recorded on the event (timelines and the audit show it)"},
    )


class PauseOut(OutSchema):
    at = UtcDateTime(metadata={"description": "when the pause was recorded"})
    actor = fields.String(metadata={"description": "who paused"})
    reason = fields.String()


class TenantOut(OutSchema):
    id = server_uuid()
    name = fields.String()
    schedules_paused = fields.Nested(
        PauseOut,
        allow_none=True,
        metadata={"description": "null: the tick registers the tenant's cycles"},
    )
    default_calendar = fields.String(
        allow_none=True,
        metadata={
            "description": "the key of the calendar whose working days analysts' `working_days` "
            "table lists; null: none"
        },
    )


class DefaultCalendarBody(StrictSchema):
    calendar = fields.String(
        required=True,
        allow_none=True,
        validate=validate.Length(min=1, max=64),
        metadata={"description": "a calendar's key; null: no default calendar"},
    )


class AccountCreate(StrictSchema):
    id = fields.String(
        validate=validate.Regexp(PUBLIC_ID, error=Message("use 1-64 letters, digits, . _ @ -"))
    )
    name = name_field(required=True)
    roles = fields.List(Choice(ROLE), required=True, validate=validate.Length(max=len(ROLES)))


class AccountFieldsIn(StrictSchema):
    name = name_field(required=True)
    roles = AccountCreate._declared_fields["roles"]


AccountUpdate = with_reason(replacing(AccountFieldsIn, "AccountUpdate"))

AccountPatch = merge_patch_of(AccountUpdate, "AccountPatch", AccountFieldsIn)


class AccountOut(OutSchema):
    id = fields.String()
    name = fields.String()
    roles = fields.List(Choice(ROLE))
    active = fields.Boolean()
    version = fields.Integer()
    created_at = UtcDateTime()


class TokenOut(OutSchema):
    token = fields.String(
        allow_none=True,
        metadata={
            "description": "shown once; only its hash is kept (null on a replay: the secret "
            "is shown once)"
        },
    )
    token_id = server_uuid()


class PresetIn(StrictSchema):
    id = fields.String(required=True, validate=validate.Regexp(PRESET_ID))
    title = name_field(required=True)
    description = fields.String(validate=validate.Length(max=2000), load_default="")
    timezone = fields.String(validate=validate.Length(max=64), load_default=None)
    trigger = Described("TriggerIn", required=True)
    form_data = form_data_field(load_default=dict)


class PresetOut(OutSchema):
    """A ready-made schedule of a definition (`POST /api/workflows/schedules` with its id)."""

    id = fields.String()
    title = fields.String()
    description = fields.String()
    timezone = fields.String(
        allow_none=True, metadata={"description": "IANA name; null: the business time zone"}
    )
    trigger = Described("TriggerOut")
    form_data = form_data_field()


class ReminderIn(StrictSchema):
    before_seconds = strict_int(
        1,
        MAX_REVIEW_WINDOW_SECONDS,
        required=True,
        metadata={"description": "how long before the review deadline; less than the window"},
    )


class EscalationIn(StrictSchema):
    after_seconds = strict_int(
        1,
        MAX_REVIEW_WINDOW_SECONDS,
        required=True,
        metadata={"description": "how long an instance waits for review, from its submission"},
    )
    account_id = fields.String(
        load_default=None,
        validate=validate.Regexp(PUBLIC_ID),
        metadata={
            "description": "the account it is escalated to, one of the tenant's (name this "
            "or group_leader_of)"
        },
    )
    group_leader_of = fields.String(
        load_default=None,
        validate=validate.Length(1, 64),
        metadata={
            "description": "a group key: escalated to the group's leader, or when they may "
            "not approve the instance, the next leader up its parents"
        },
    )
    mode = Choice(
        ESCALATION_MODE,
        load_default="reassign",
        metadata={
            "description": "reassign (default): the task goes to the account, with a high "
            "priority; notify: the priority rises and the account is told"
        },
    )


class ReminderOut(OutSchema):
    before_seconds = fields.Integer(metadata={"description": "how long before the deadline"})


class EscalationOut(OutSchema):
    after_seconds = fields.Integer(metadata={"description": "how long waiting, from submission"})
    account_id = fields.String(
        allow_none=True, metadata={"description": "the account it is escalated to"}
    )
    group_leader_of = fields.String(
        dump_default=None,
        allow_none=True,
        metadata={"description": "the group whose leader (walking up) it is escalated to"},
    )
    mode = Choice(
        ESCALATION_MODE,
        dump_default=None,
        allow_none=True,
        metadata={"description": "null: saved before release 0.13.0, which only notifies"},
    )


class ReminderSentOut(OutSchema):
    """A reminder recorded on an instance (its `ApprovalInstance.ReminderDue` event)."""

    before_seconds = fields.Integer(metadata={"description": "which reminder"})
    due_at = instant_text(metadata={"description": "when it was due"})
    at = instant_text(
        metadata={"description": "when the sweeper recorded it (after downtime: later)"}
    )


NOTICES_FIXED = "fixed on each instance when it starts, as its deadline is"

# A PUT leaving them out keeps them (0.7.0 added the notices, 0.13.0 the reviewers, and the
# deadline: a PUT leaving out both `review_window_seconds` and `deadline_rule` keeps it).
KEPT_WHEN_LEFT_OUT = (
    "reminders",
    "escalation",
    "reviewers",
    "review_window_seconds",
    "deadline_rule",
    "max_pause_seconds",
    "return_to",
    "levels",
    "restart_deadline_on_revise",
    "cancellation_definition",
)


class ReviewersIn(StrictSchema):
    """Who reviews a definition's instances (docs/approvals.md#who-reviews): any mix."""

    accounts = fields.List(
        fields.String(validate=validate.Length(1, 64)),
        load_default=list,
        validate=validate.Length(max=200),
        metadata={"description": "account ids of the tenant"},
    )
    groups = fields.List(
        fields.String(validate=validate.Length(1, 64)),
        load_default=list,
        validate=validate.Length(max=50),
        metadata={"description": "group keys: their members at the time of each command"},
    )
    roles = fields.List(
        fields.String(validate=validate.Length(1, 64)),
        load_default=list,
        validate=validate.Length(max=10),
        metadata={"description": "role names: every account holding one"},
    )
    applicant_leader = strict_bool(
        load_default=False,
        metadata={
            "description": "the leader of the applicant's group (walking up when the "
            "applicant leads it)"
        },
    )


class LevelIn(StrictSchema):
    """One review level (docs/approvals.md#levels-and-countersign)."""

    name = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Length(1, 100),
        metadata={"description": "e.g. 主管, 财务"},
    )
    reviewers = fields.Nested(ReviewersIn, required=True)
    approvals_required = strict_int(
        1,
        50,
        load_default=1,
        metadata={"description": "1: 或签 (any one candidate); N: 会签 (N distinct reviewers)"},
    )
    any_reject_rejects = strict_bool(
        load_default=True,
        metadata={
            "description": "false: a reject is a no vote; the level fails only when the "
            "approvals still possible can no longer reach approvals_required"
        },
    )


class DefinitionFieldsIn(StrictSchema):
    name = name_field(required=True)
    external = strict_bool(required=True)
    review_window_seconds = strict_int(
        1,
        MAX_REVIEW_WINDOW_SECONDS,
        load_default=None,
        metadata={
            "description": "the deadline in plain seconds after submission; with a "
            "`deadline_rule` in working time, that rule's nominal length (days x 86400 or hours "
            "x 3600), which reminders are checked against. Give this or `deadline_rule`"
        },
    )
    deadline_rule = deadline_rule_field(
        allow_none=True,
        load_default=None,
        metadata={
            "description": "seconds, working_days (days, calendar, cutoff) or working_hours "
            "(hours, calendar) (docs/calendars.md); null or left out: review_window_seconds, "
            "in seconds"
        },
    )
    schedule_presets = fields.List(
        fields.Nested(PresetIn), load_default=list, validate=validate.Length(max=100)
    )
    allow_self_approval = strict_bool(
        load_default=False,
        metadata={
            "description": "whether an instance's applicant, or the account that last saved the "
            "schedule that launched it, may approve it; fixed on each instance when it starts"
        },
    )
    reminders = fields.List(
        fields.Nested(ReminderIn),
        load_default=list,
        validate=validate.Length(max=MAX_REMINDERS),
        metadata={
            "description": f"at most {MAX_REMINDERS}, each at another offset before the review "
            f"deadline (docs/approvals.md); {NOTICES_FIXED}; a PUT leaving it out keeps it"
        },
    )
    escalation = fields.Nested(
        EscalationIn,
        allow_none=True,
        load_default=None,
        metadata={"description": f"null: none; {NOTICES_FIXED}; a PUT leaving it out keeps it"},
    )
    max_pause_seconds = strict_int(
        1,
        MAX_REVIEW_WINDOW_SECONDS,
        allow_none=True,
        load_default=None,
        metadata={
            "description": "the longest one pause of an instance's clock (pause-deadline) may "
            "last: then the clock resumes by itself (docs/approvals.md#pausing-the-clock); "
            "null: no limit; a return is not limited; fixed on each instance when it starts"
        },
    )
    return_to = Choice(
        RETURN_TO_CHOICE,
        load_default=RETURN_TO_FIRST,
        metadata={
            "description": "where a revise after a return (退回) takes the review: `first` "
            "(the first level) or `returning` (the level that returned it)"
        },
    )
    reviewers = fields.Nested(
        ReviewersIn,
        load_default=None,
        metadata={
            "description": "who reviews its instances, fixed on each when it starts; a PUT "
            "leaving it out keeps it (definitions from before release 0.13.0 have none: "
            "anyone who may decide)"
        },
    )
    cancellation_definition = fields.String(
        allow_none=True,
        validate=validate.Length(1, 64),
        metadata={
            "description": "the key or id of another of the tenant's definitions whose instances "
            "cancel this one's approved instances (docs/approvals.md#resubmit-and-cancel); "
            "null: none, and approved instances cannot be cancelled; a PUT leaving it out "
            "keeps it"
        },
    )

    levels = fields.List(
        fields.Nested(LevelIn),
        allow_none=True,
        load_default=None,
        validate=validate.Length(1, 10),
        metadata={
            "description": "the review in order, level by level; given, they win over "
            "`reviewers` (which are then cleared); null or left out: one level from "
            "`reviewers`. A PUT leaving it out keeps it"
        },
    )
    restart_deadline_on_revise = strict_bool(
        load_default=None,
        allow_none=True,
        metadata={
            "description": "whether a revise of the material restarts the review deadline "
            "(default false); a PUT leaving it out keeps it"
        },
    )

    @validates_schema
    def unique_presets(self, data: dict[str, Any], **kwargs: Any) -> None:
        ids = [preset["id"] for preset in data.get("schedule_presets", [])]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValidationError(
                Message("duplicate preset id(s): {ids}", ids=", ".join(duplicates)),
                "schedule_presets",
            )


class DefinitionCreate(DefinitionFieldsIn):
    key = fields.String(required=True, validate=validate.Regexp(DEFINITION_KEY))
    reviewers = fields.Nested(
        ReviewersIn,
        load_default=None,
        metadata={
            "description": 'who reviews its instances, fixed on each when it starts ({"roles": '
            '["operator"]}: anyone holding the role); required unless `levels` are given'
        },
    )


DefinitionUpdate = replacing(DefinitionFieldsIn, "DefinitionUpdate", KEPT_WHEN_LEFT_OUT)

DefinitionPatch = merge_patch_of(DefinitionUpdate, "DefinitionPatch", DefinitionFieldsIn)


class ReviewersOut(OutSchema):
    """Who reviews: accounts, members of groups, holders of roles, the applicant's leader."""

    accounts = fields.List(fields.String())
    groups = fields.List(fields.String(), metadata={"description": "group keys"})
    roles = fields.List(fields.String())
    applicant_leader = fields.Boolean()


class LevelOut(OutSchema):
    name = fields.String(allow_none=True)
    reviewers = fields.Nested(ReviewersOut)
    approvals_required = fields.Integer()
    any_reject_rejects = fields.Boolean()


class DefinitionOut(OutSchema):
    id = server_uuid()
    key = fields.String()
    name = fields.String()
    external = fields.Boolean()
    published = fields.Boolean()
    revision = fields.Integer(
        metadata={
            "description": "the published revision: publishing, and each update while "
            "published, makes the next one; 0 until first published"
        }
    )
    review_window_seconds = fields.Integer()
    deadline_rule = Described(
        "DeadlineRuleOut",
        metadata={"description": "how an instance's deadline is counted (docs/calendars.md)"},
    )
    schedule_presets = fields.List(fields.Nested(PresetOut))
    allow_self_approval = fields.Boolean()
    reminders = fields.List(fields.Nested(ReminderOut))
    escalation = fields.Nested(EscalationOut, allow_none=True)
    reviewers = fields.Nested(
        ReviewersOut,
        allow_none=True,
        metadata={"description": "null: anyone who may decide, or the definition has levels"},
    )
    max_pause_seconds = fields.Integer(
        allow_none=True, metadata={"description": "the longest one pause lasts; null: no limit"}
    )
    return_to = Choice(RETURN_TO_CHOICE)
    levels = fields.List(
        fields.Nested(LevelOut),
        allow_none=True,
        metadata={"description": "null: one level from `reviewers`"},
    )
    restart_deadline_on_revise = fields.Boolean()
    cancellation_definition = fields.String(
        allow_none=True,
        metadata={
            "description": "the id of the definition whose instances cancel this one's approved "
            "instances; null: none"
        },
    )
    version = fields.Integer()
    created_at = UtcDateTime()


class DefinitionSettable(DefinitionOut):
    """A definition as a merge patch reads it: a rule in seconds is its review window (null
    here), so a patch of `review_window_seconds` alone changes it."""

    deadline_rule = fields.Method("_working_rule", allow_none=True)  # type: ignore[assignment]

    @staticmethod
    def _working_rule(definition: Any) -> dict[str, Any] | None:
        rule = dict(definition.deadline_rule)
        return None if rule["kind"] == "seconds" else rule


class PasswordIn(StrictSchema):
    password = fields.String(
        required=True,
        validate=validate.Length(max=MAX_PASSWORD),
        metadata={
            "description": f"the new password: {MIN_PASSWORD} to {MAX_PASSWORD} characters, "
            "not the account's id or name; only its argon2id hash is kept, outside the log"
        },
    )
    must_change = strict_bool(
        load_default=False,
        metadata={
            "description": "a one-time password, changed at the account's next sign-in "
            "(a directory manager's, for another account)"
        },
    )
    current_password = fields.String(
        load_default=None,
        validate=validate.Length(max=MAX_PASSWORD),
        metadata={
            "description": "the account's own change: its current password (when it has one)"
        },
    )


class PasswordOut(OutSchema):
    """What the log recorded: that a password was set, never the password."""

    account_id = fields.String()
    kind = Choice(PASSWORD_KIND)
    must_change = fields.Boolean()
    set_at = UtcDateTime()
    set_by = fields.String(metadata={"description": "the account that set it"})


class ContactIn(StrictSchema):
    email = fields.Email(
        load_default=None,
        allow_none=True,
        validate=validate.Length(max=254),
        metadata={"description": "where the account's notices are emailed; null: none"},
    )
    language = Choice(LANGUAGE, load_default="zh-CN")


class ContactOut(OutSchema):
    account_id = fields.String()
    email = fields.String(allow_none=True)
    language = Choice(LANGUAGE)
    updated_at = UtcDateTime(
        allow_none=True, metadata={"description": "null: none were given, or they were erased"}
    )


AccountListQuery = list_query("AccountListQuery", ACCOUNT_LISTING, "id or name")
DefinitionListQuery = list_query("DefinitionListQuery", DEFINITION_LISTING, "key or name")
