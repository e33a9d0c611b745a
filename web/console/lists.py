"""What every list page of the console shares (docs/console/README.md#lists): the search box,
sortable column headers, page numbers with the total, the page size and a jump to a page, all
kept in the page's address (`ListView`, shown by templates/console/lists/_macros.html); the
type-ahead pickers of schedules, definitions, accounts and groups (`/console/pick/<kind>`,
static/pickers.js), and the names of what a page refers to by id, read a page at a time.

A list is read by the same application service as the API's, searching and sorting as the
API's `q` and `sort` do; the console pages by number, so its pages may shift as rows arrive.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple
from uuid import UUID

from flask import Blueprint, abort, jsonify, request, url_for
from flask_babel import gettext as _
from werkzeug.exceptions import NotFound as PageNotFound
from werkzeug.wrappers import Response

from cronledger.application.directory import Page
from cronledger.health import REBUILDING
from domain.directory import Principal
from domain.errors import NotFound
from domain.permissions import APPROVAL_LIST, SCHEDULE_LIST
from projections.keyset import ListSpec, Window
from projections.schedules import ScheduleFilter
from web.api import services
from web.console.access import signed_in
from web.schemas.base import MAX_SEARCH

bp = Blueprint("lists", __name__, url_prefix="/pick")

PAGE_SIZES = (20, 50, 100)  # what the size choice offers (any size the API takes is kept)
MAX_PAGE_SIZE = 200
MAX_PAGE = 1_000_000
NEIGHBOURS = 2  # the page numbers shown on each side of the current page
PICKED = 20  # the most options a picker offers at once
NAME_MATCHES = 50  # how many items of a search a typed name is looked for among
UNEXPORTED = ("page", "page_size", "sort", "format")  # what an export's link leaves out


@dataclass
class ListView:
    """A list page as its address asks for it, and the total its page found.

    `args` are every parameter of the address that is not blank (the filters, the search,
    the sort, the page and its size): a link to another page, another sort or another size
    keeps all the others.
    """

    spec: ListSpec
    endpoint: str
    view_args: dict[str, Any]
    args: dict[str, str]
    search: str
    sort: str | None
    number: int
    size: int
    total: int = 0
    capped: bool = False

    @property
    def window(self) -> Window:
        return Window(self.size, self.number, search=self.search or None, sort=self.sort)

    def found(self, page: Page[Any]) -> ListView:
        """The view with how many items its page says match."""
        return replace(self, total=page.total, capped=page.total_capped)

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.size))

    @property
    def has_next(self) -> bool:
        return self.number < self.pages or self.capped

    def url(self, **changes: Any) -> str:
        """This list's address with `changes` (None leaves a parameter out)."""
        wanted = {**self.args, **changes}
        kept = {name: value for name, value in wanted.items() if value is not None}
        return url_for(self.endpoint, **self.view_args, **kept)

    @property
    def action(self) -> str:
        """Where the list's own forms send their parameters (a GET form drops a query)."""
        return url_for(self.endpoint, **self.view_args)

    def kept(self, *dropped: str) -> list[tuple[str, str]]:
        """The parameters a form of the page keeps as they are, but `dropped` (its own)."""
        return [(name, value) for name, value in self.args.items() if name not in dropped]

    def export_url(self, endpoint: str, file_format: str) -> str:
        """The list's export as `file_format`, with the list's filters and search (not its
        page, page size or sort: an export holds every row, in the list's own order)."""
        kept: dict[str, Any] = {
            name: value for name, value in self.args.items() if name not in UNEXPORTED
        }
        return url_for(endpoint, **self.view_args, **kept, format=file_format)

    def page_url(self, number: int) -> str:
        return self.url(page=None if number == 1 else number)

    def numbers(self) -> list[int | None]:
        """The page numbers to show: the first, the last and the current one's neighbours;
        None stands for the numbers left out between them."""
        last, here = self.pages, self.number
        shown = sorted({1, last, *range(here - NEIGHBOURS, here + NEIGHBOURS + 1)})
        numbers: list[int | None] = []
        for number in (n for n in shown if 1 <= n <= last):
            if numbers and number - (numbers[-1] or 0) > 1:
                numbers.append(None)
            numbers.append(number)
        return numbers

    def sorted_as(self, name: str) -> str | None:
        """`ascending` or `descending` if the list is sorted by that field (for `aria-sort`)."""
        current = self.sort or self.spec.default_sort
        if current == name:
            return "ascending"
        return "descending" if current == f"-{name}" else None

    def sort_url(self, name: str) -> str:
        """The list sorted by that field: ascending first, then the other way round."""
        wanted = f"-{name}" if self.sorted_as(name) == "ascending" else name
        return self.url(sort=None if wanted == self.spec.default_sort else wanted, page=None)

    @property
    def sizes(self) -> list[int]:
        return sorted({*PAGE_SIZES, self.size})


def list_view(
    spec: ListSpec,
    endpoint: str | None = None,
    size: int = PAGE_SIZES[0],
    args: Mapping[str, str] | None = None,
    blank_kept: tuple[str, ...] = (),
) -> ListView:
    """The list page the request's address asks for (`q`, `sort`, `page`, `page_size`), in
    `spec`'s sorts; what is not one of them, or out of range, is left at its default. The
    other parameters are kept as they are, blank ones left out but `blank_kept` (a blank that
    means something: "any")."""
    given = request.args if args is None else args
    kept = {
        name: value.strip() for name, value in given.items() if value.strip() or name in blank_kept
    }
    sort = kept.get("sort")
    if sort not in spec.sorts:
        kept.pop("sort", None)
        sort = None
    return ListView(
        spec,
        endpoint or str(request.endpoint),
        dict(request.view_args or {}),
        kept,
        kept.get("q", "")[:MAX_SEARCH],
        sort,
        _number(kept.get("page"), 1, MAX_PAGE) or 1,
        _number(kept.get("page_size"), 1, MAX_PAGE_SIZE) or size,
    )


def lists_ready() -> None:
    """503 while the read models are rebuilt after an upgrade (their live tables lack the new
    columns until the rebuilt ones are swapped in): before reading a whole list."""
    if services().health.phase == REBUILDING:
        abort(503, _("The lists are being rebuilt after an upgrade: try again in a minute."))


def _number(text: str | None, low: int, high: int) -> int | None:
    if text is None or not text.isascii() or not text.isdigit():
        return None
    number = int(text)
    return number if low <= number <= high else None


# -- names: what a page refers to by id, named ---------------------------------------------


class Named(NamedTuple):
    """What a page shows for an id: the name, and whether it names something still there
    (a link goes to its page) or something deleted."""

    text: str
    live: bool = True

    def __str__(self) -> str:
        return self.text


def schedule_names(principal: Principal, ids: Iterable[str]) -> dict[str, Named]:
    """The names of the tenant's schedules of these ids (a deleted one's marked so)."""
    found = services().schedules.names(principal.tenant_id, ids)
    return {
        schedule_id: Named(_("%(name)s (deleted)", name=name), False) if deleted else Named(name)
        for schedule_id, (name, deleted) in found.items()
    }


def account_names(principal: Principal, ids: Iterable[str]) -> dict[str, str]:
    return services().directory.account_names(principal.tenant_id, ids)


def definition_names(principal: Principal, ids: Iterable[str]) -> dict[str, str]:
    return services().directory.definition_names(principal.tenant_id, ids)


# -- pickers ---------------------------------------------------------------------------------


class Option(NamedTuple):
    """What a picker offers: the value the form sends, the name shown, and a hint beside it."""

    value: str
    label: str
    hint: str = ""


@dataclass(frozen=True)
class Kind:
    """What a picker picks: who may search it, and how its options are found by a search."""

    permission: str
    search: Callable[[UUID, str, int], list[Option]]
    by_value: Callable[[UUID, str], Option | None] = field(default=lambda tenant, value: None)


def _schedules(tenant_id: UUID, text: str, count: int) -> list[Option]:
    window = Window(count, 1, search=text or None, sort="name")
    page = services().schedules.list_page(tenant_id, ScheduleFilter(), window)
    return [Option(item.id, item.name) for item in page.items]


def _schedule(tenant_id: UUID, value: str) -> Option | None:
    try:
        schedule = services().schedules.find(tenant_id, value)
    except NotFound:
        return None
    name = schedule.settings.name
    shown = _("%(name)s (deleted)", name=name) if schedule.deleted else name
    return Option(str(schedule.id), shown)


def _definitions(tenant_id: UUID, text: str, count: int) -> list[Option]:
    window = Window(count, 1, search=text or None, sort="name")
    page = services().directory.definitions(tenant_id, window)
    return [Option(item.id, item.name, item.key) for item in page.items]


def _definition(tenant_id: UUID, value: str) -> Option | None:
    found = services().directory.find_definition(tenant_id, value)
    return None if found is None else Option(str(found.id), found.name, found.key)


def _accounts(tenant_id: UUID, text: str, count: int) -> list[Option]:
    window = Window(count, 1, search=text or None, sort="name")
    page = services().directory.accounts(tenant_id, window)
    return [Option(item.id, item.name, item.id) for item in page.items]


def _account(tenant_id: UUID, value: str) -> Option | None:
    name = services().directory.account_names(tenant_id, [value]).get(value)
    return None if name is None else Option(value, name, value)


def _groups(tenant_id: UUID, text: str, count: int) -> list[Option]:
    window = Window(count, 1, search=text or None, sort="name")
    page = services().groups.groups(tenant_id, window)
    return [Option(item.key, item.name, item.key) for item in page.items]


def _group(tenant_id: UUID, value: str) -> Option | None:
    try:
        group = services().groups.group_by_key(tenant_id, value)
    except NotFound:
        return None
    return Option(group.key, group.name, group.key)


KINDS = {
    "schedules": Kind(SCHEDULE_LIST, _schedules, _schedule),
    "definitions": Kind(APPROVAL_LIST, _definitions, _definition),
    "accounts": Kind(APPROVAL_LIST, _accounts, _account),
    "groups": Kind(APPROVAL_LIST, _groups, _group),
}


@bp.get("/<kind>")
@signed_in()
def pick(principal: Principal, kind: str) -> Response:
    """The options of a picker whose name (or id, or key) holds the text typed: JSON."""
    picker = _kind(principal, kind)
    text = request.args.get("q", "").strip()[:MAX_SEARCH]
    options = picker.search(principal.tenant_id, text, PICKED)
    return jsonify({"items": [option._asdict() for option in options]})


def _kind(principal: Principal, kind: str) -> Kind:
    picker = KINDS.get(kind)
    if picker is None:
        raise PageNotFound()
    if not principal.can(picker.permission):
        raise PageNotFound()
    return picker


class PickerValue(NamedTuple):
    """What a picker's field holds once read: the value the list or the command takes (None
    when nothing matched), the name to show, and why nothing matched."""

    value: str | None
    shown: str
    problem: str | None = None


def read_picker(principal: Principal, kind: str, typed: str) -> PickerValue:
    """What a picker's field typed means: a value of that kind (an id, or a group's key) as
    it is, else the one item whose name (or key, or id) is exactly that text. Without
    scripts a picker is a text field: this reads what was typed in it."""
    picker = KINDS[kind]
    text = typed.strip()
    if not text:
        return PickerValue(None, "")
    found = picker.by_value(principal.tenant_id, text)
    if found is not None:
        return PickerValue(found.value, found.label)
    candidates = picker.search(principal.tenant_id, text, NAME_MATCHES)
    exact = [o for o in candidates if text in (o.label, o.hint, o.value)]
    if len(exact) == 1:
        return PickerValue(exact[0].value, exact[0].label)
    if exact:
        problem = _("Several have the name %(name)s: pick one from the list.", name=text)
        return PickerValue(None, text, problem)
    return PickerValue(None, text, _("Nothing of that name or id: pick one from the list."))


def shown_names(principal: Principal, kind: str, values: Iterable[str]) -> dict[str, str]:
    """The names pickers show for values already chosen (one query for a page's)."""
    wanted = [value for value in values if value]
    if kind == "schedules":
        return {key: named.text for key, named in schedule_names(principal, wanted).items()}
    if kind == "accounts":
        return account_names(principal, wanted)
    if kind == "definitions":
        return definition_names(principal, wanted)
    found = (KINDS[kind].by_value(principal.tenant_id, value) for value in wanted)
    return {option.value: option.label for option in found if option is not None}
