"""What a list is sorted and searched by (projections/keyset.py) and which page numbers a
console list shows (web/console/lists.py)."""

from __future__ import annotations

import pytest

from projections.keyset import ListSpec, Order, searched_text, searching
from web.console.lists import ListView

RUNS = ListSpec(
    Order("runs", "planned_at", descending=True, tie="id"),
    "-planned_at",
    {"planned_at": "planned_at", "title": "title", "finished_at": "finished_at"},
    nullable=frozenset({"finished_at"}),
    searched=("search_text",),
)


def test_the_default_sort_is_the_lists_own_order_which_cursors_page() -> None:
    assert RUNS.order(None) is RUNS.default
    assert RUNS.order("-planned_at") is RUNS.default
    assert not RUNS.default.numbered


def test_any_other_sort_pages_by_number_with_a_stable_tie_and_empty_values_last() -> None:
    title = RUNS.order("title")
    assert (title.numbered, title.sql, title.name) == (True, "title, id", "runs:title")
    assert RUNS.order("planned_at").sql == "planned_at, id"
    finished = RUNS.order("-finished_at")
    assert finished.sql == "(finished_at IS NULL), finished_at DESC, id"
    with pytest.raises(KeyError):
        RUNS.order("secret")


def test_every_field_sorts_both_ways() -> None:
    assert RUNS.sorts == (
        "planned_at",
        "-planned_at",
        "title",
        "-title",
        "finished_at",
        "-finished_at",
    )


def test_a_search_is_a_lower_cased_substring_whose_wildcards_are_themselves() -> None:
    condition, params = searching(("search_text", "LOWER(name)"), "Finance 100%_\\")
    assert condition == ("(search_text LIKE ? ESCAPE '\\' OR LOWER(name) LIKE ? ESCAPE '\\')")
    assert params == ["%finance 100\\%\\_\\\\%"] * 2
    assert searched_text("财务 Ä", None, "Daily") == "财务 ä\ndaily"


def view(number: int, total: int, size: int = 20, capped: bool = False) -> ListView:
    return ListView(RUNS, "x", {}, {}, "", None, number, size, total, capped)


@pytest.mark.parametrize(
    ("number", "total", "shown"),
    [
        (1, 0, [1]),
        (1, 60, [1, 2, 3]),
        (1, 200, [1, 2, 3, None, 10]),
        (6, 200, [1, None, 4, 5, 6, 7, 8, None, 10]),
        (10, 200, [1, None, 8, 9, 10]),
        (3, 200, [1, 2, 3, 4, 5, None, 10]),
    ],
)
def test_the_pager_shows_the_ends_and_the_current_pages_neighbours(
    number: int, total: int, shown: list[int | None]
) -> None:
    assert view(number, total).numbers() == shown


def test_a_capped_count_still_offers_a_next_page() -> None:
    assert view(500, 10_000, capped=True).has_next
    assert not view(500, 10_000).has_next


def test_a_head_says_how_the_list_is_sorted_by_it() -> None:
    default = view(1, 10)
    assert (default.sorted_as("planned_at"), default.sorted_as("title")) == ("descending", None)
    by_title = ListView(RUNS, "x", {}, {}, "", "title", 1, 20)
    assert by_title.sorted_as("title") == "ascending"
