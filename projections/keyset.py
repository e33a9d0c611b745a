"""Lists in a stable, total order, read a page at a time: by page number, or after a sort key.

Reading after the sort key of the last item seen (keyset paging) never repeats or skips an item
when rows are inserted between two reads, as counting rows off (`OFFSET`) does. A list may also
be searched (a case-insensitive substring) and sorted by another of its columns (`ListSpec`),
and counts its matches up to COUNT_CAP only, so that a count never costs more than the page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar
from uuid import UUID

from cronledger.persistence.store import Store, as_instant

Row = tuple[Any, ...]  # a read-model row
R = TypeVar("R", bound=Row)  # a row, or what a row is read as (a NamedTuple)
SortKey = tuple[Any, ...]  # an item's values of its list's sort columns, in order
MAX_POSITION = 2**63 - 1
MAX_TIE = 64  # ids are at most this long
COUNT_CAP = 10_000  # a list counts its matches up to this many; beyond, "10,000+"
LIKE_ESCAPE = "\\"


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
    numbered: bool = False  # read by page number only: it gives no sort keys (no cursors)
    nullable: bool = False  # the column may be null: rows without a value come last

    @property
    def columns(self) -> list[str]:
        return [self.column] if self.tie is None else [self.column, self.tie]

    @property
    def sql(self) -> str:
        """The `ORDER BY` text."""
        first = f"{self.column} DESC" if self.descending else self.column
        if self.nullable:
            first = f"({self.column} IS NULL), {first}"  # the same on both stores
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
class ListSpec:
    """What a list may be sorted and searched by.

    `default` is its own order (the one cursors page), which the API names `default_sort`.
    `sortable` maps each field a caller may sort by to its column (`-field` sorts
    descending); any other order than the default is read by page number only, equal values
    in the order of the unique column `tie`. `searched` are the SQL expressions `q` is looked
    for in, each lower-cased text. All of it is fixed SQL, never user input.
    """

    default: Order
    default_sort: str
    sortable: Mapping[str, str] = field(default_factory=dict)
    tie: str = "id"
    nullable: frozenset[str] = frozenset()
    searched: tuple[str, ...] = ()

    @property
    def sorts(self) -> tuple[str, ...]:
        """Every `sort` this list takes: each field, ascending and descending."""
        return tuple(f"{sign}{name}" for name in self.sortable for sign in ("", "-"))

    def order(self, sort: str | None) -> Order:
        """The order `sort` asks for (None: the default); KeyError for a field it has not."""
        if sort is None or sort == self.default_sort:
            return self.default
        name = sort.removeprefix("-")
        return Order(
            f"{self.default.name}:{sort}",
            self.sortable[name],
            descending=sort.startswith("-"),
            tie=self.tie,
            numbered=True,
            nullable=name in self.nullable,
        )


@dataclass(frozen=True)
class Window:
    """Which page of a list to read: a numbered one (1-based), or the one after `after`; in
    the list's default order or in `sort`'s, of the items whose text holds `search` (or all)."""

    size: int = 20
    page: int | None = 1
    after: SortKey | None = None
    search: str | None = None
    sort: str | None = None

    @classmethod
    def following(cls, key: SortKey, size: int, search: str | None = None) -> Window:
        """The page after the item whose sort key is `key` (in the default order)."""
        return cls(size, page=None, after=key, search=search)

    @property
    def offset(self) -> int:
        return 0 if self.page is None else (self.page - 1) * self.size


T = TypeVar("T")


@dataclass(frozen=True)
class Slice(Generic[R]):
    """One page's rows (the columns asked for), how many items match (COUNT_CAP at most:
    `capped` when more do), and the sort key of the page's last item when more follow in an
    order that gives keys (None on the last page)."""

    rows: list[R]
    total: int
    next_key: SortKey | None
    capped: bool = False

    @property
    def keys(self) -> list[str]:
        """The first column of each row, as text: the items' ids."""
        return [str(row[0]) for row in self.rows]

    def mapped(self, read: Callable[[R], T]) -> Slice[Any]:
        """The same page with each row read as `read` makes it."""
        return Slice([read(row) for row in self.rows], self.total, self.next_key, self.capped)


def searching(searched: tuple[str, ...], text: str) -> tuple[str, list[Any]]:
    """The condition that one of the lower-cased `searched` expressions holds `text`, in any
    case, its `%`, `_` and `\\` as themselves; and its parameters."""
    escaped = text.lower()
    for special in (LIKE_ESCAPE, "%", "_"):
        escaped = escaped.replace(special, LIKE_ESCAPE + special)
    pattern = f"%{escaped}%"
    conditions = [f"{expression} LIKE ? ESCAPE '{LIKE_ESCAPE}'" for expression in searched]
    return f"({' OR '.join(conditions)})", [pattern] * len(searched)


def searched_text(*parts: str | None) -> str:
    """What a `search_text` column keeps: the row's names and titles, lower-cased (Unicode
    lower case on both stores; SQLite's `LOWER` knows only ASCII)."""
    return "\n".join(part.lower() for part in parts if part)


def read_slice(
    store: Store,
    table: str,
    where: tuple[str, list[Any]],
    spec: ListSpec,
    window: Window,
    columns: str = "id",
) -> Slice[Row]:
    """One page of the rows of `table` matching `where` (SQL and parameters) and the window's
    search, in the window's sort of `spec` (its default order if none).

    `table`, the SQL of `where` and `columns` are the caller's fixed SQL, never user input.
    One row more than the page is read, to tell whether another page follows. The count comes
    with the page, in the same statement, and stops at one more than COUNT_CAP; only an empty
    page asks for it on its own.
    """
    order = spec.order(window.sort)
    condition, params = where
    if window.search:
        found, found_params = searching(spec.searched, window.search)
        condition, params = f"{condition} AND {found}", [*params, *found_params]
    cap = COUNT_CAP
    counted = f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE {condition} LIMIT {cap + 1}) AS n"  # noqa: S608
    page_condition, page_params = condition, params
    if window.after is not None:
        beyond, beyond_params = order.after(window.after)
        page_condition, page_params = f"{condition} AND {beyond}", [*params, *beyond_params]
    rows = store.query(
        f"SELECT ({counted}), {', '.join(order.columns)}, {columns} FROM {table} "  # noqa: S608
        f"WHERE {page_condition} ORDER BY {order.sql} LIMIT ? OFFSET ?",
        [*params, *page_params, window.size + 1, window.offset],
    )
    total = int(rows[0][0] if rows else store.query(counted, params)[0][0])
    page, more = [row[1:] for row in rows[: window.size]], len(rows) > window.size
    sorted_by = len(order.columns)
    return Slice(
        [row[sorted_by:] for row in page],
        min(total, cap),
        order.key_of(page[-1]) if more and not order.numbered else None,
        capped=total > cap,
    )


def searched_where(
    where: tuple[str, list[Any]], spec: ListSpec, search: str | None
) -> tuple[str, list[Any]]:
    """`where` and, given a search, the condition that the row holds it (as `read_slice`
    searches)."""
    if not search:
        return where
    condition, params = where
    found, found_params = searching(spec.searched, search)
    return f"{condition} AND {found}", [*params, *found_params]


def count_up_to(store: Store, table: str, where: tuple[str, list[Any]], cap: int) -> int:
    """How many rows of `table` match `where`, counted up to `cap + 1` at most (any more are
    never read). `table` and the SQL of `where` are fixed SQL."""
    condition, params = where
    counted = f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE {condition} LIMIT ?) AS n"  # noqa: S608
    return int(store.query(counted, [*params, cap + 1])[0][0])


def walk(
    store: Store,
    table: str,
    where: tuple[str, list[Any]],
    order: Order,
    columns: str,
    limit: int,
    batch: int = 1_000,
) -> Iterator[list[Row]]:
    """The rows of `table` matching `where`, at most `limit`, in `order` (one that gives sort
    keys), `batch` at a time: each batch read after the last row of the one before (keyset
    paging, as cursors page), so that no read holds more than a batch and none counts. A row
    inserted while the walk goes on appears only if its place is after the batch read last.
    `table`, the SQL of `where` and `columns` are fixed SQL."""
    condition, params = where
    after: SortKey | None = None
    left = limit
    sorted_by = len(order.columns)
    while left > 0:
        page_condition, page_params = condition, params
        if after is not None:
            beyond, beyond_params = order.after(after)
            page_condition, page_params = f"{condition} AND {beyond}", [*params, *beyond_params]
        rows = store.query(
            f"SELECT {', '.join(order.columns)}, {columns} FROM {table} "  # noqa: S608
            f"WHERE {page_condition} ORDER BY {order.sql} LIMIT ?",
            [*page_params, min(batch, left)],
        )
        if not rows:
            return
        yield [row[sorted_by:] for row in rows]
        left -= len(rows)
        if len(rows) < batch:
            return
        after = order.key_of(rows[-1])


def names_by_id(
    store: Store, table: str, columns: str, tenant_id: UUID, ids: Iterable[str]
) -> list[Row]:
    """`id` and `columns` of the tenant's rows of `table` whose `id` is one of `ids`, in one
    query (a page's names, read at once). `table` and `columns` are fixed SQL."""
    wanted = sorted({str(i) for i in ids if i})
    if not wanted:
        return []
    marks = ", ".join("?" for _ in wanted)
    return store.query(
        f"SELECT id, {columns} FROM {table} WHERE tenant_id = ? AND id IN ({marks})",  # noqa: S608
        [str(tenant_id), *wanted],
    )
