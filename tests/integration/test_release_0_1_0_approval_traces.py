"""Instances release 0.1.0 wrote, read with extension history and matched callbacks
(requirement 004: deadlines and late messages)."""

from __future__ import annotations

from cronledger.application.services import Services
from domain.approvals import SIGN, Command
from tests.release_stores import facts

FACTS = facts("release-0.1.0-working")


def test_an_old_extension_is_in_the_history_under_rule_version_1(upgraded: Services) -> None:
    principal = upgraded.directory.authenticate(FACTS["tokens"]["acme"])
    assert principal is not None
    view = upgraded.approvals.view(principal.tenant_id, FACTS["instances"]["extended"])
    assert view.deadline_policy == {"source": "extended", "reason": "asked", "rule_version": 1}
    assert view.extensions == [
        {
            "old_deadline_at": "2026-10-01T10:00:00Z",
            "new_deadline_at": view.review_deadline_at.isoformat().replace("+00:00", "Z"),
            "reason": "asked",
            "actor": "root",
            "at": "2026-10-01T09:50:00Z",
            "rule_version": 1,
        }
    ]


def test_an_old_callback_binds_the_contract_and_new_ones_are_matched(upgraded: Services) -> None:
    principal = upgraded.directory.authenticate(FACTS["tokens"]["acme"])
    assert principal is not None
    signed = FACTS["instances"]["extended"]  # 0.1.0 recorded a callback on it, contract C-1
    view = upgraded.approvals.view(principal.tenant_id, signed)
    assert view.contract_id == "C-1"
    assert [(o["contract_matches"], o["material_matches"]) for o in view.observations] == [
        (True, True)
    ]
    other = Command(
        SIGN,
        "s-after-upgrade",
        {
            "contract_id": "C-2",
            "material_version": 1,
            "occurred_at": upgraded.ledger.clock(),
            "source": "esign",
        },
    )
    result = upgraded.approvals.command(principal, signed, other)
    assert (
        "mismatch: contract C-2 is not the instance's C-1"
        in upgraded.ledger.timeline(upgraded.approvals.instance(principal.tenant_id, signed).id)[
            -1
        ].reason
    )
    assert result.instance.observations[-1]["contract_matches"] is False
