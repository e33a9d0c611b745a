"""Lists in a stable, total order, read a page at a time: by page number, or after a sort key.

Reading after the sort key of the last item seen (keyset paging) never repeats or skips an item
when rows are inserted between two reads, as counting rows off (`OFFSET`) does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from cronledger.persistence.store import Store, as_instant

Row = tuple[Any, ...]  # a read-model row
R = TypeVar("R", bound=Row)  # a row, or what a row is read as (a NamedTuple)
SortKey = tuple[Any, ...]  # an item's values of its list's sort columns, in order
MAX_POSITION = 2**63 - 1
MAX_TIE = 64  # ids are at most this long


@dataclass(frozen=True)
class Order:
    """A list's total order, of one of two kinds: by an instant `column` (descending for
    newest-first lists), equal instants by the unique id column `tie`, ascending; or by a unique
    log position `column` alone.

    `name` tells the lists apart, so that a cursor of one list is refused by another. The
    columns are fixed SQL, never user input.
    """

    name: str
    column: str
    descending: bool = False
    tie: str | None = None

    @property
    def columns(self) -> list[str]:
        return [self.column] if self.tie is None else [self.column, self.tie]

    @property
    def sql(self) -> str:
        """The `ORDER BY` text."""
        first = f"{self.column} DESC" if self.descending else self.column
        return first if self.tie is None else f"{first}, {self.tie}"

    def after(self, key: SortKey) -> tuple[str, list[Any]]:
        """The condition matching the items after `key`, and its parameters.

        The leading `column <= ?` (or `>=`) lets either store read the list's index as a range.
        """
        beyond = "<" if self.descending else ">"
        if self.tie is None:
            return f"{self.column} {beyond} ?", [key[0]]
        value, tie = key
        return (
            f"{self.column} {beyond}= ? AND ({self.column} {beyond} ? OR {self.tie} > ?)",
            [value, value, tie],
        )

    def key_of(self, row: Row) -> SortKey:
        """The sort key of a row that starts with the sort columns (as `read_slice` selects)."""
        if self.tie is None:
            return (int(row[0]),)
        return (as_instant(row[0]), str(row[1]))

    def plain(self, key: SortKey) -> list[Any]:
        """The key as JSON values: a position, or an instant (ISO 8601, UTC) and an id."""
        if self.tie is None:
            return [key[0]]
        instant, tie = key
        return [instant.astimezone(UTC).isoformat(), tie]

    def parsed(self, values: Any) -> SortKey:
        """The key `plain` gave these values for; ValueError for anything it never gives."""
        if not isinstance(values, list) or len(values) != len(self.columns):
            raise ValueError("not a sort key of this list")
        if self.tie is None:
            return (_position(values[0]),)
        return (_instant(values[0]), _tie(values[1]))


def _position(value: Any) -> int:
    if type(value) is not int or not 0 <= value <= MAX_POSITION:
        raise ValueError("not a log position")
    return value


def _instant(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError("not an instant")
    instant = datetime.fromisoformat(value)
    if instant.utcoffset() is None:
        raise ValueError("an instant without an offset")
    return instant.astimezone(UTC)


def _tie(value: Any) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_TIE:
        raise ValueError("not an id")
    return value


@dataclass(frozen=True)
class Window:
    """Which page of a list to read: a numbered one (1-based), or the one after `after`."""

    size: int = 20
    page: int | None = 1
    after: SortKey | None = None

    @classmethod
    def following(cls, key: SortKey, size: int) -> Window:
        """The page after the item whose sort key is `key`."""
        return cls(size, page=None, after=key)

    @property
    def offset(self) -> int:
        return 0 if self.page is None else (self.page - 1) * self.size


@dataclass(frozen=True)
class Slice(Generic[R]):
    """One page's rows (the columns asked for), how many items match, and the sort key of the
    page's last item when more follow (None on the last page)."""

    rows: list[R]
    total: int
    next_key: SortKey | None

    @property
    def keys(self) -> list[str]:
        """The first column of each row, as text: the items' ids."""
        return [str(row[0]) for row in self.rows]


def read_slice(
    store: Store,
    table: str,
    where: tuple[str, list[Any]],
    order: Order,
    window: Window,
    columns: str = "id",
) -> Slice[Row]:
    """One page of the rows of `table` matching `where` (SQL and parameters), in `order`.

    `table`, the SQL of `where` and `columns` are the caller's fixed SQL, never user input.
    One row more than the page is read, to tell whether another page follows. The count comes
    with the page, in the same statement; only an empty page asks for it on its own.
    """
    condition, params = where
    counted = f"SELECT COUNT(*) FROM {table} WHERE {condition}"  # noqa: S608
    page_condition, page_params = condition, params
    if window.after is not None:
        beyond, beyond_params = order.after(window.after)
        page_condition, page_params = f"{condition} AND {beyond}", [*params, *beyond_params]
    rows = store.query(
        f"SELECT ({counted}), {', '.join(order.columns)}, {columns} FROM {table} "  # noqa: S608
        f"WHERE {page_condition} ORDER BY {order.sql} LIMIT ? OFFSET ?",
        [*params, *page_params, window.size + 1, window.offset],
    )
    total = rows[0][0] if rows else store.query(counted, params)[0][0]
    page, more = [row[1:] for row in rows[: window.size]], len(rows) > window.size
    sorted_by = len(order.columns)
    return Slice(
        [row[sorted_by:] for row in page],
        int(total),
        order.key_of(page[-1]) if more else None,
    )
