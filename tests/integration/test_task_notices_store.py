"""Notices of an instance's task reach the people it concerns (both stores)."""

from __future__ import annotations

from typing import Any

import pytest

from cronledger.application.directory import DefinitionFields
from cronledger.application.services import Services
from domain.approvals import CLAIM, REASSIGN, REJECT, UNCLAIM, Command, Submission
from domain.directory import Principal
from domain.permissions import ROLES
from projections.keyset import Window


@pytest.fixture
def people(services: Services) -> dict[str, Principal]:
    root = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert root is not None
    found = {"root": root}
    for name, role in [("ann", "requester"), ("bo", "operator"), ("cy", "operator")]:
        services.directory.create_account(root, name, name.title(), [role])
        found[name] = Principal(root.tenant_id, name, ROLES[role])
    return found


def kinds(services: Services, who: Principal) -> list[tuple[str, dict[str, Any]]]:
    services.projector.catch_up()
    page = services.notifications.inbox(who, Window(50, 1))
    return sorted((n.kind, n.params) for n in page.page.items)


def test_candidates_assignees_and_the_applicant_are_told(
    services: Services, people: dict[str, Principal]
) -> None:
    root = people["root"]
    fields = DefinitionFields("Loan", False, 3600, [], reviewers={"accounts": ["bo", "cy"]})
    definition = services.directory.create_definition(root, "loan", fields).id
    services.directory.set_published(root, definition, True, None)
    view, _ = services.approvals.submit(
        people["ann"], Submission("s", definition, "贷款", {}, 1, None)
    )
    claimable = ("TASK_CLAIMABLE", {"title": "贷款"})
    assert kinds(services, people["bo"]) == kinds(services, people["cy"]) == [claimable]

    def send(who: str, kind: str, **payload: Any) -> None:
        services.approvals.command(people[who], view.id, Command(kind, f"{who}-{kind}", payload))

    send("bo", CLAIM)
    send("bo", REASSIGN, assignee_id="cy", reason="休假")
    assert ("TASK_ASSIGNED", {"title": "贷款", "actor": "bo"}) in kinds(services, people["cy"])
    send("cy", UNCLAIM)
    assert kinds(services, people["bo"]).count(claimable) == 2  # told again: it is claimable
    send("bo", REJECT, material_version=1, comment="不符合")
    decided = kinds(services, people["ann"])
    assert decided == [
        ("APPLICATION_DECIDED", {"title": "贷款", "outcome": "REJECTED", "actor": "bo"})
    ]
