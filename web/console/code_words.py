"""Stable codes as a person reads them: a label in the reader's language beside the code itself
(`labelled`), for a run's errors, a skipped cycle's reason, an approval command's outcome and
an account's roles.
The code stays as it is, for whoever searches the logs or the API for it."""

from __future__ import annotations

from flask_babel import gettext, lazy_gettext
from markupsafe import Markup

from domain import jobs, launch
from domain.approvals import (
    ALREADY_VOTED,
    APPROVED,
    CANCELLATION_REQUESTED,
    CLAIMED,
    COMMENTED,
    CONFLICT,
    EXPIRED,
    EXTENDED,
    FORBIDDEN,
    LATE_OR_CONFLICT,
    NOT_DUE,
    OBSERVED,
    PAUSED,
    REASSIGNED,
    REJECTED,
    RESUBMITTED,
    RESUMED,
    RETURNED,
    REVISED,
    RULE_BROKEN,
    SELF_APPROVAL,
    STALE_MATERIAL,
    TAKEN,
    UNCLAIMED,
    VOTED,
    WITHDRAWN,
)
from domain.runs import INTERRUPTED, SKIP_CALENDAR, SKIP_MISSED, SKIP_OVERLAP

OUTCOME_LABELS = {
    APPROVED: lazy_gettext("Approved"),
    WITHDRAWN: lazy_gettext("Withdrawn"),
    EXPIRED: lazy_gettext("Expired: the deadline had passed"),
    EXTENDED: lazy_gettext("Deadline extended"),
    OBSERVED: lazy_gettext("Recorded as an observation"),
    NOT_DUE: lazy_gettext("Not due"),
    CONFLICT: lazy_gettext("Lost: the instance was already decided"),
    LATE_OR_CONFLICT: lazy_gettext("Late: the instance was already decided"),
    STALE_MATERIAL: lazy_gettext("Refused: the material has changed"),
    SELF_APPROVAL: lazy_gettext("Refused: no self-approval"),
    FORBIDDEN: lazy_gettext("Refused: not allowed"),
    RULE_BROKEN: lazy_gettext("Refused: breaks a rule"),
    REJECTED: lazy_gettext("Rejected"),
    CLAIMED: lazy_gettext("Claimed"),
    UNCLAIMED: lazy_gettext("Given back to be claimed"),
    REASSIGNED: lazy_gettext("Reassigned"),
    COMMENTED: lazy_gettext("Commented"),
    PAUSED: lazy_gettext("Clock paused"),
    RESUMED: lazy_gettext("Clock resumed"),
    RETURNED: lazy_gettext("Returned for changes"),
    TAKEN: lazy_gettext("Refused: claimed by someone else"),
    VOTED: lazy_gettext("Vote counted"),
    ALREADY_VOTED: lazy_gettext("Refused: already decided on this level"),
    REVISED: lazy_gettext("Material revised"),
    RESUBMITTED: lazy_gettext("Resubmitted"),
    CANCELLATION_REQUESTED: lazy_gettext("Cancellation requested"),
}
ERROR_LABELS = {
    launch.INITIATOR_NOT_FOUND: lazy_gettext("Initiator not found"),
    launch.INITIATOR_INACTIVE: lazy_gettext("Initiator deactivated"),
    launch.INITIATOR_NOT_PERMITTED: lazy_gettext("Initiator may not submit"),
    launch.DEFINITION_NOT_FOUND: lazy_gettext("Definition not found"),
    launch.DEFINITION_UNPUBLISHED: lazy_gettext("Definition unpublished"),
    launch.DEFINITION_EXTERNAL: lazy_gettext("Definition is external"),
    launch.SAVER_INACTIVE: lazy_gettext("Saver deactivated"),
    launch.SAVER_NOT_PERMITTED: lazy_gettext("Saver may no longer edit"),
    launch.NO_ELIGIBLE_REVIEWER: lazy_gettext("No eligible reviewer"),
    launch.NOT_ENOUGH_REVIEWERS: lazy_gettext("Not enough reviewers"),
    jobs.JOB_TIMEOUT: lazy_gettext("Timed out"),
    jobs.JOB_FAILED: lazy_gettext("Job failed"),
    jobs.JOB_CHANGED: lazy_gettext("Job changed"),
    jobs.STORE_UNAVAILABLE: lazy_gettext("Store unavailable"),
    jobs.LOOP_STOPPED: lazy_gettext("Loop stopped"),
    jobs.AUDIT_BROKEN: lazy_gettext("Audit log fails verification"),
    jobs.NO_SIGNING_KEY: lazy_gettext("No signing key"),
    jobs.WEBHOOK_NOT_FOUND: lazy_gettext("Webhook not found"),
    jobs.WEBHOOK_DISABLED: lazy_gettext("Webhook disabled"),
    jobs.WEBHOOK_UNREACHABLE: lazy_gettext("Receiver unreachable"),
    jobs.WEBHOOK_REFUSED: lazy_gettext("Receiver refused"),
    INTERRUPTED: lazy_gettext("Interrupted"),
    SKIP_OVERLAP: lazy_gettext("Overlap"),
    SKIP_MISSED: lazy_gettext("Missed"),
    SKIP_CALENDAR: lazy_gettext("Not a working day"),
}
ROLE_LABELS = {
    "admin": lazy_gettext("Administrator"),
    "operator": lazy_gettext("Operator"),
    "requester": lazy_gettext("Requester"),
    "auditor": lazy_gettext("Auditor"),
    "integration": lazy_gettext("Integration"),
}
LABELS = {**OUTCOME_LABELS, **ERROR_LABELS, **ROLE_LABELS}


def code(text: str) -> Markup:
    """`text` (a field's name, an example to type) as code in a sentence of the catalogues:
    `_("… %(field)s …", field=code("source"))`."""
    return Markup("<code>%s</code>") % text


def proper(name: str) -> Markup:
    """A proper name in a sentence, left untranslated (a standard's, a product's)."""
    return Markup('<span translate="no">%s</span>') % name


def labelled(code: str) -> Markup:
    """`code` as a page shows it: its label, then the code itself (发起人已停用（…）)."""
    shown = Markup('<code class="code">%s</code>') % code
    label = LABELS.get(code)
    if label is None:
        return shown
    pattern = Markup(gettext("%(label)s (%(code)s)"))  # noqa: S704 (the catalogue's own words)
    return pattern % {"label": label, "code": shown}
