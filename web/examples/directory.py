"""Examples of accounts, tokens and process definitions."""

from __future__ import annotations

from typing import Any

from web.examples.calendars import THREE_WORKING_DAYS
from web.examples.world import (
    CREATED_AT,
    DEFINITION_ID,
    PRESET,
    REFUND_DEFINITION_ID,
    TOKEN_ID,
)

ANN = {
    "id": "ann",
    "name": "Ann",
    "roles": ["requester"],
    "active": True,
    "version": 1,
    "created_at": CREATED_AT,
}
ANN_RENAMED = {**ANN, "name": "Ann Lee", "roles": ["auditor", "requester"], "version": 3}
ROOT = {**ANN, "id": "root", "name": "root", "roles": ["admin"], "version": 2}

DEFINITION_FIELDS = {
    "name": "Daily check",
    "external": False,
    "review_window_seconds": 86400,
    "allow_self_approval": False,
    "schedule_presets": [PRESET],
    "reviewers": {"roles": ["operator"]},
}
REVIEWERS = {"accounts": [], "groups": [], "roles": ["operator"], "applicant_leader": False}
NO_NOTICES: dict[str, Any] = {"reminders": [], "escalation": None}
# Revision 2: a reminder an hour before each instance's deadline, and after 12 hours waiting an
# escalation to olga (web/examples/approvals.py `REMINDED`).
NOTICES = {
    "reminders": [{"before_seconds": 3600}],
    "escalation": {
        "after_seconds": 43200,
        "account_id": "olga",
        "group_leader_of": None,
        "mode": "reassign",
    },
}
DEFINITION = {
    "id": DEFINITION_ID,
    "key": "daily-check",
    "name": "Daily check",
    "external": False,
    "published": True,
    "revision": 1,
    "review_window_seconds": 86400,
    "deadline_rule": {"kind": "seconds", "seconds": 86400},
    "schedule_presets": [{**PRESET, "description": ""}],
    "allow_self_approval": False,
    **NO_NOTICES,
    "version": 2,
    "created_at": CREATED_AT,
    "reviewers": REVIEWERS,
    "max_pause_seconds": None,
    "return_to": "first",
    "levels": None,
    "restart_deadline_on_revise": False,
    "cancellation_definition": REFUND_DEFINITION_ID,
}
# Two levels (issue 35): the applicant's leader (或签), then two of three finance reviewers
# (会签); a revise restarts the deadline.
LEVELS = [
    {
        "name": "主管",
        "reviewers": {**REVIEWERS, "roles": [], "applicant_leader": True},
        "approvals_required": 1,
        "any_reject_rejects": True,
    },
    {
        "name": "财务",
        "reviewers": {**REVIEWERS, "roles": [], "groups": ["finance"]},
        "approvals_required": 2,
        "any_reject_rejects": False,
    },
]
WITH_LEVELS = {
    **DEFINITION,
    "id": "3c1f0a52-6e2d-5b7a-8f41-9d0e2c6b7a15",
    "key": "payment",
    "name": "Payment",
    "reviewers": None,
    "levels": LEVELS,
    "restart_deadline_on_revise": True,
    "cancellation_definition": None,
}

# A definition whose instances' deadline is three working days on calendar `cn`: its review
# window is the rule's nominal length, 3 x 86400 seconds.
IN_WORKING_DAYS = {
    **DEFINITION,
    "id": "ed00c9e2-4dde-5fd3-be81-91b0cc29b10d",
    "key": "credit-limit",
    "name": "Credit limit",
    "review_window_seconds": 259200,
    "deadline_rule": THREE_WORKING_DAYS,
    "schedule_presets": [],
    "max_pause_seconds": 86400,
    "cancellation_definition": None,
}

EXAMPLES: dict[str, dict[str, Any]] = {
    "PasswordIn": {
        "one-time": {"password": "change-me-at-first-sign-in", "must_change": True},
        "first-own": {"password": "an admin passphrase of my own"},
        "own-change": {
            "current_password": "change-me-at-first-sign-in",
            "password": "a long walk by the river",
        },
    },
    "PasswordOut": {
        "reset": {
            "account_id": "olga",
            "kind": "set",
            "must_change": True,
            "set_at": CREATED_AT,
            "set_by": "root",
        },
        "changed": {
            "account_id": "olga",
            "kind": "changed",
            "must_change": False,
            "set_at": CREATED_AT,
            "set_by": "olga",
        },
    },
    "ContactIn": {"english": {"email": "ann@example.com", "language": "en"}},
    "ContactOut": {
        "english": {
            "account_id": "ann",
            "email": "ann@example.com",
            "language": "en",
            "updated_at": CREATED_AT,
        },
        "erased": {"account_id": "ann", "email": None, "language": "zh-CN", "updated_at": None},
    },
    "AccountCreate": {
        "requester": {"id": "ann", "name": "Ann", "roles": ["requester"]},
        "operator": {"id": "olga", "name": "Olga", "roles": ["operator"]},
        "reviewer": {"id": "vera", "name": "Vera", "roles": ["operator"]},
        "auditor": {"id": "audrey", "name": "Audrey", "roles": ["auditor"]},
        "integration": {"id": "esign", "name": "E-signature", "roles": ["integration"]},
    },
    "AccountUpdate": {
        "rename": {"name": "Ann Lee", "roles": ["requester", "auditor"], "version": 1},
    },
    "AccountPatch": {
        "roles": {"roles": ["requester"], "reason": "no longer audits"},
    },
    "AccountOut": {"created": ANN, "renamed": ANN_RENAMED},
    "AccountPage": {
        "first-page": {
            "items": [ROOT, ANN_RENAMED],
            "page": 1,
            "page_size": 20,
            "total": 2,
            "total_capped": False,
            "next_cursor": None,
        },
    },
    "TokenOut": {
        "issued": {
            "token": "clt_q8Zb3f0mX1c9Qe7LwTn2VhR5yKdA4sJpG6uE0oIiNzM",
            "token_id": TOKEN_ID,
        },
    },
    "DefinitionCreate": {
        "with-a-preset": {"key": "daily-check", **DEFINITION_FIELDS},
        "in-working-days": {
            "key": "credit-limit",
            "name": "Credit limit",
            "external": False,
            "deadline_rule": THREE_WORKING_DAYS,
            "reviewers": {"roles": ["operator"]},
        },
        "levels-and-countersign": {
            "key": "payment",
            "name": "Payment",
            "external": False,
            "review_window_seconds": 86400,
            "levels": [
                {"name": "主管", "reviewers": {"applicant_leader": True}},
                {
                    "name": "财务",
                    "reviewers": {"groups": ["finance"]},
                    "approvals_required": 2,
                    "any_reject_rejects": False,
                },
            ],
            "restart_deadline_on_revise": True,
        },
    },
    "DefinitionUpdate": {
        "longer-review": {
            **DEFINITION_FIELDS,
            **NO_NOTICES,
            "review_window_seconds": 172800,
            "version": 2,
        },
        "reminders-and-escalation": {**DEFINITION_FIELDS, **NOTICES, "version": 2},
    },
    "DefinitionPatch": {
        "external": {"external": True, "version": 2},
        "reminders-and-escalation": {**NOTICES, "version": 2},
        "escalation-to-a-group-leader": {
            "escalation": {"after_seconds": 43200, "group_leader_of": "finance"},
            "version": 2,
        },
        "cancelled-by-refunds": {"cancellation_definition": "refund", "version": 2},
    },
    "DefinitionOut": {
        "published": DEFINITION,
        "with-reminders-and-escalation": {**DEFINITION, **NOTICES, "revision": 2, "version": 3},
        "created": {**DEFINITION, "published": False, "revision": 0, "version": 1},
        "from-before-reviewers": {**DEFINITION, "reviewers": None},
        "in-working-days": IN_WORKING_DAYS,
        "levels-and-countersign": WITH_LEVELS,
    },
    "DefinitionPage": {
        "first-page": {
            "items": [DEFINITION],
            "page": 1,
            "page_size": 20,
            "total": 1,
            "total_capped": False,
            "next_cursor": None,
        },
    },
}
