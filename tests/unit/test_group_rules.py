"""Groups on their own: the rules one group keeps, cycles of parents, and whose leader answers
for an applicant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from domain.errors import NotFound, ValidationFailed
from domain.groups import Group, GroupFacts, applicant_leader, group_uuid, leaders_up, parent_cycle

AT = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def created(key: str = "finance", **fields: object) -> Group:
    values: dict[str, object] = {
        "name": "财务部",
        "members": ["ann", "bob"],
        "leader_id": "bob",
        "parent_key": None,
        **fields,
    }
    return Group.create(uuid4(), key, at=AT, actor="root", **values)  # type: ignore[arg-type]


def refusal(key: str = "finance", **fields: object) -> dict[str, list[str]]:
    with pytest.raises(ValidationFailed) as refused:
        created(key, **fields)
    return refused.value.errors


def test_a_group_s_id_is_its_tenant_and_key() -> None:
    group = created()
    assert group.id == group_uuid(group.tenant_id, "finance")
    assert (group.name, group.members, group.leader_id, group.deleted) == (
        "财务部",
        ["ann", "bob"],
        "bob",
        False,
    )


def test_every_rule_a_group_breaks_is_named_at_once() -> None:
    errors = refusal(
        "-bad key", name="", members=["ann", "ann"], leader_id="carl", parent_key="-bad key"
    )
    assert set(errors) == {"key", "name", "members", "leader_id", "parent_key"}
    assert errors["members"] == ["listed more than once: ann"]
    assert errors["leader_id"] == ["carl is not a member of the group"]
    assert errors["parent_key"] == ["a group cannot be its own parent"]


def test_a_name_holds_1_to_100_characters() -> None:
    assert created(name="部" * 100).name == "部" * 100
    assert set(refusal(name="部" * 101)) == {"name"}


def test_a_group_without_a_leader_or_members_is_fine() -> None:
    group = created(members=[], leader_id=None)
    assert (group.members, group.leader_id) == ([], None)


def test_an_update_checks_the_rules_and_keeps_the_key() -> None:
    group = created()
    later = AT + timedelta(hours=1)
    with pytest.raises(ValidationFailed):
        group.update("财务部", ["ann"], "bob", None, later, "root")
    group.update("财务与税务", ["ann"], "ann", "company", later, "root", reason="reorg")
    assert (group.key, group.name, group.leader_id, group.parent_key) == (
        "finance",
        "财务与税务",
        "ann",
        "company",
    )
    assert (group.created_at, group.updated_at) == (AT, later)


def test_a_deleted_group_is_not_found_until_its_key_is_created_again() -> None:
    group = created()
    group.delete(AT, "root", "merged")
    with pytest.raises(NotFound):
        group.update("财务部", [], None, None, AT, "root")
    with pytest.raises(NotFound):
        group.delete(AT, "root")
    again = AT + timedelta(days=1)
    group.create_again("新财务部", ["carl"], "carl", None, again, "root")
    assert (group.deleted, group.name, group.members, group.created_at) == (
        False,
        "新财务部",
        ["carl"],
        again,
    )


def test_a_live_group_s_key_cannot_be_created_again() -> None:
    with pytest.raises(ValidationFailed):
        created().create_again("财务部", [], None, None, AT, "root")


def test_a_parent_below_the_group_closes_a_cycle() -> None:
    parents = {"company": None, "finance": "company", "payables": "finance"}
    assert parent_cycle("company", "payables", parents)
    assert parent_cycle("finance", "finance", parents)
    assert not parent_cycle("payables", "company", parents)
    assert not parent_cycle("sales", None, parents)


TWO_LEVELS = {
    "company": GroupFacts("company", frozenset({"ceo", "cfo"}), "ceo", None),
    "finance": GroupFacts("finance", frozenset({"cfo", "ann", "bob"}), "cfo", "company"),
    "payables": GroupFacts("payables", frozenset({"carl"}), None, "finance"),
}


def test_an_applicant_s_leader_is_their_group_s_leader() -> None:
    assert applicant_leader("ann", TWO_LEVELS) == "cfo"


def test_the_leader_of_a_group_gets_the_parent_s_leader() -> None:
    assert applicant_leader("cfo", TWO_LEVELS) == "ceo"


def test_a_group_without_a_leader_passes_to_its_parent() -> None:
    assert applicant_leader("carl", TWO_LEVELS) == "cfo"


def test_no_leader_above_or_no_group_is_none() -> None:
    assert applicant_leader("ceo", TWO_LEVELS) is None
    assert applicant_leader("nobody", TWO_LEVELS) is None


def test_an_applicant_in_several_groups_counts_in_the_smallest_key() -> None:
    groups = {
        **TWO_LEVELS,
        "audit": GroupFacts("audit", frozenset({"ann", "olga"}), "olga", None),
    }
    assert applicant_leader("ann", groups) == "olga"
    assert applicant_leader("ann", dict(reversed(groups.items()))) == "olga"


def test_a_parent_missing_or_looping_ends_the_walk() -> None:
    groups = {
        "a": GroupFacts("a", frozenset({"x"}), "x", "b"),
        "b": GroupFacts("b", frozenset({"y"}), None, "a"),
        "c": GroupFacts("c", frozenset({"z"}), "z", "gone"),
    }
    assert applicant_leader("x", groups) is None
    assert applicant_leader("z", groups) is None


def test_the_leaders_up_from_a_group_come_nearest_first_each_once() -> None:
    assert leaders_up("payables", TWO_LEVELS) == ["cfo", "ceo"]
    assert leaders_up("company", TWO_LEVELS) == ["ceo"]
    assert leaders_up("nowhere", TWO_LEVELS) == []
    looped = {
        "a": GroupFacts("a", frozenset(), "x", "b"),
        "b": GroupFacts("b", frozenset(), "x", "a"),
    }
    assert leaders_up("a", looped) == ["x"]
