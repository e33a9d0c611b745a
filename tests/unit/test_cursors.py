"""Cursors: what a list gives round-trips exactly; a well-formed cursor of values the list never
gives, or of another list, is refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from projections.approvals import APPROVAL_ORDER
from projections.directory import ACCOUNT_ORDER
from projections.keyset import Order, SortKey
from projections.operations import OPERATION_ORDER
from projections.runs import RUN_ORDER
from web.paging import cursor_of, sort_key
from web.problems import Problem

PLANNED = datetime(2026, 10, 1, 9, 0, 0, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("order", "key"),
    [
        (RUN_ORDER, (PLANNED, "0b6f7c3e-5a8e-4d7e-9c1a-2f4b6d8e0a1c")),
        (APPROVAL_ORDER, (PLANNED.replace(microsecond=0), "x")),
        (OPERATION_ORDER, (2**63 - 1,)),
        (ACCOUNT_ORDER, (0,)),
    ],
)
def test_a_cursor_gives_back_the_sort_key_it_was_made_of(order: Order, key: SortKey) -> None:
    cursor = cursor_of(order, key)
    assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert sort_key(cursor, order) == key


def test_an_instant_at_another_offset_is_the_same_key_in_utc() -> None:
    shanghai = PLANNED.astimezone(timezone(timedelta(hours=8)))
    cursor = cursor_of(RUN_ORDER, (shanghai, "r"))
    assert cursor == cursor_of(RUN_ORDER, (PLANNED, "r"))
    assert sort_key(cursor, RUN_ORDER)[0].utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    ("order", "key", "read_by"),
    [
        (OPERATION_ORDER, (2**63,), OPERATION_ORDER),  # past BIGINT
        (OPERATION_ORDER, (-1,), OPERATION_ORDER),
        (RUN_ORDER, (PLANNED, "x" * 65), RUN_ORDER),  # longer than any id
        (RUN_ORDER, (PLANNED, "r"), APPROVAL_ORDER),  # the same shape, another list
        (ACCOUNT_ORDER, (3,), OPERATION_ORDER),
    ],
)
def test_a_well_made_cursor_of_values_or_a_list_it_never_gives_is_refused(
    order: Order, key: SortKey, read_by: Order
) -> None:
    with pytest.raises(Problem) as refused:
        sort_key(cursor_of(order, key), read_by)
    assert (refused.value.code, list(refused.value.errors or {})) == (
        "VALIDATION_FAILED",
        ["cursor"],
    )
