"""Lists read by keyset on both stores: a store whose read models an older release made lists
in the same order once reopened, and a page after a key starts right after it."""

from __future__ import annotations

from cronledger.application.directory import DefinitionFields
from cronledger.application.services import Services
from domain.directory import Principal
from projections.keyset import Window, walk
from projections.schedules import SCHEDULE_ORDER, ScheduleFilter, live_schedule_page
from tests.support import FakeClock, Opener

OLD_ACCOUNTS = (  # the `accounts` table as 0.2.0 made it: no `position`
    "CREATE TABLE accounts (aggregate_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, "
    "id TEXT NOT NULL, name TEXT NOT NULL, roles TEXT NOT NULL, active BOOLEAN NOT NULL, "
    "created_at TEXT NOT NULL, updated_at TEXT NOT NULL, version INTEGER NOT NULL)"
)


def admin_of(services: Services) -> Principal:
    root = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert root is not None
    return root


def test_accounts_an_older_release_projected_are_listed_in_order_after_the_upgrade(
    open_with: Opener, clock: FakeClock
) -> None:
    services = open_with(clock)
    root = admin_of(services)
    for name in ("zed", "amy", "kim"):  # created at one instant: the log orders them
        services.directory.create_account(root, name, name, ["requester"])
    with services.store.connect() as conn:
        conn.execute("DROP TABLE accounts")
        conn.execute(OLD_ACCOUNTS)
        conn.execute("UPDATE projection_positions SET layout = NULL WHERE name = 'directory'")
    reopened = open_with(clock)
    listed = reopened.directory.accounts(root.tenant_id, Window(size=2))
    assert ([a.id for a in listed.items], listed.total) == (["root", "zed"], 4)
    assert listed.next_key is not None
    rest = reopened.directory.accounts(root.tenant_id, Window.following(listed.next_key, 2))
    assert ([a.id for a in rest.items], rest.page, rest.next_key) == (["amy", "kim"], None, None)


def test_a_walk_in_small_batches_meets_each_row_once_across_equal_instants(
    open_with: Opener, clock: FakeClock
) -> None:
    """An export's walk (projections.keyset.walk): batches of 3 over schedules created at two
    instants, ties broken by id, the same rows in the same order as one page holds them, and
    no more than its limit."""
    services = open_with(clock)
    root = admin_of(services)
    definition = services.directory.create_definition(
        root, "walk", DefinitionFields("Walk", False, 3600, [], reviewers={"roles": ["admin"]})
    )
    services.directory.set_published(root, definition.id, True, None)
    body = {
        "name": "",
        "definition_id": str(definition.id),
        "trigger": {"kind": "cron", "expression": "0 9 * * *"},
        "initiator_id": "root",
    }
    for n in range(8):
        if n == 4:
            clock.advance(1)
        settings = services.schedules.settings_from({**body, "name": f"walk {n}"})
        services.schedules.create(root, settings, False)
    where = ScheduleFilter().where(root.tenant_id)
    page = live_schedule_page(services.store, root.tenant_id, ScheduleFilter(), Window(size=20))
    walked = [
        row[0]
        for batch in walk(services.store, "schedules", where, SCHEDULE_ORDER, "id", 100, batch=3)
        for row in batch
    ]
    assert walked == [row.id for row in page.rows]
    assert len(walked) == 8
    limited = walk(services.store, "schedules", where, SCHEDULE_ORDER, "id", 5, batch=3)
    assert [len(batch) for batch in limited] == [3, 2]
