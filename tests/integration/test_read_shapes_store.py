"""One read shape per resource, on both stores, after a busy day: a list and a single read answer
the row its projection keeps; a command answers from the aggregate it saved (`of_aggregate`),
which must be that same row; and every field the API answers is an attribute of it, so a field
added to the answer without its row (or the other way round) fails here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from marshmallow import Schema

from cronledger.application.services import Services
from domain.approvals import ApprovalInstance
from domain.callback_sources import CallbackSource
from domain.directory import Account, Definition, account_uuid
from domain.groups import Group
from domain.runs import Run
from domain.schedules import Schedule
from domain.webhooks import WebhookDelivery, WebhookSubscription
from projections.approvals import ApprovalRow, approval_row
from projections.callback_sources import CallbackSourceRow, callback_source_row
from projections.directory import AccountRow, DefinitionRow, account_row, definition_row
from projections.groups import GroupRow, group_row
from projections.keyset import Window
from projections.runs import RunDetail, RunRow, run_attempts, run_row
from projections.schedules import ScheduleRow, last_run_of, schedule_row
from projections.webhooks import DeliveryRow, WebhookRow, delivery_page, webhook_row
from tests.support import World
from web.schemas.approvals import ApprovalOut
from web.schemas.callback_sources import CallbackSourceOut
from web.schemas.directory import AccountOut, DefinitionOut
from web.schemas.groups import GroupOut
from web.schemas.runs import RunDetailOut, RunOut
from web.schemas.schedules import ScheduleOut
from web.schemas.webhooks import DeliveryOut, WebhookOut


def ids(services: Services, table: str) -> Iterator[tuple[UUID, str]]:
    """Each row's tenant and id, of every tenant."""
    for tenant_id, row_id in services.store.query(f"SELECT tenant_id, id FROM {table}"):
        yield UUID(str(tenant_id)), str(row_id)


def aggregate(services: Services, aggregate_id: UUID) -> Any:
    return services.ledger.repository.get(aggregate_id)


def pairs(services: Services) -> Iterator[tuple[str, Any, Any]]:
    """(what, the row read back, the row its aggregate gives) for every row of every resource."""
    store = services.store
    for tenant_id, account_id in ids(services, "accounts"):
        account = aggregate(services, account_uuid(tenant_id, account_id))
        assert isinstance(account, Account)
        yield "account", account_row(store, tenant_id, account_id), AccountRow.of_aggregate(account)
    for tenant_id, definition_id in ids(services, "definitions"):
        definition = aggregate(services, UUID(definition_id))
        assert isinstance(definition, Definition)
        read = definition_row(store, tenant_id, UUID(definition_id))
        yield "definition", read, DefinitionRow.of_aggregate(definition)
    for tenant_id, schedule_id in ids(services, "schedules"):
        schedule = aggregate(services, UUID(schedule_id))
        assert isinstance(schedule, Schedule)
        if not schedule.deleted:
            made = ScheduleRow.of_aggregate(schedule, last_run_of(store, schedule.id))
            yield "schedule", schedule_row(store, tenant_id, schedule.id), made
    for tenant_id, run_id in ids(services, "runs"):
        run = aggregate(services, UUID(run_id))
        assert isinstance(run, Run)
        read_run = run_row(store, tenant_id, run.id)
        yield "run", read_run, RunRow.of_aggregate(run)
        assert read_run is not None
        detail = RunDetail(read_run, run_attempts(store, read_run.id))
        yield "run with attempts", detail, RunDetail.of_aggregate(run)
    for tenant_id, instance_id in ids(services, "approvals"):
        instance = aggregate(services, UUID(instance_id))
        assert isinstance(instance, ApprovalInstance)
        read = approval_row(store, tenant_id, instance.id)
        yield "approval", read, ApprovalRow.of_aggregate(instance)
    for tenant_id, webhook_id in ids(services, "webhooks"):
        subscription = aggregate(services, UUID(webhook_id))
        assert isinstance(subscription, WebhookSubscription)
        yield (
            "webhook",
            webhook_row(store, tenant_id, subscription.id),
            WebhookRow.of_aggregate(subscription),
        )
        for delivery_row in delivery_page(store, subscription.id, Window(200)).rows:
            delivery = aggregate(services, UUID(delivery_row.id))
            assert isinstance(delivery, WebhookDelivery)
            yield "delivery", delivery_row, DeliveryRow.of_aggregate(delivery)
    for tenant_id, source_id in ids(services, "callback_sources"):
        source = aggregate(services, UUID(source_id))
        assert isinstance(source, CallbackSource)
        read = callback_source_row(store, tenant_id, source.id)
        yield "callback source", read, CallbackSourceRow.of_aggregate(source)
    for tenant_id, group_id in ids(services, "groups"):
        group = aggregate(services, UUID(group_id))
        assert isinstance(group, Group)
        yield "group", group_row(store, tenant_id, group.id), GroupRow.of_aggregate(group)


def as_compared(row: Any) -> Any:
    """A row, or a run with its attempts, as plain values."""
    if isinstance(row, RunDetail):
        return (row.row, row.attempts)
    return row


def test_a_command_answers_the_row_its_resource_is_read_as(busy: World) -> None:
    services = busy.services
    services.projector.catch_up()
    seen: dict[str, int] = {}
    for what, read, made in pairs(services):
        assert read is not None, what
        assert as_compared(read) == as_compared(made), what
        seen[what] = seen.get(what, 0) + 1
    assert set(seen) == {
        "account",
        "definition",
        "schedule",
        "run",
        "run with attempts",
        "approval",
        "webhook",
        "delivery",
        "callback source",
        "group",
    }


ANSWERS: dict[type[Schema], str] = {
    AccountOut: "account",
    DefinitionOut: "definition",
    ScheduleOut: "schedule",
    RunOut: "run",
    RunDetailOut: "run with attempts",
    ApprovalOut: "approval",
    WebhookOut: "webhook",
    DeliveryOut: "delivery",
    CallbackSourceOut: "callback source",
    GroupOut: "group",
}


@pytest.mark.parametrize("schema", list(ANSWERS), ids=lambda schema: schema.__name__)
def test_every_field_the_api_answers_is_an_attribute_of_the_row(
    busy: World, schema: type[Schema]
) -> None:
    """Marshmallow leaves out, without a word, a field its object lacks: here it may not."""
    services = busy.services
    services.projector.catch_up()
    if schema is ScheduleOut:
        (schedule_id,) = [i for _, i in ids(services, "schedules")][:1]
        answer: Any = services.schedules.view(busy.root.tenant_id, schedule_id)
    else:
        answer = next(read for what, read, _ in pairs(services) if what == ANSWERS[schema])
    missing = [
        name
        for name, field in schema().fields.items()
        if not hasattr(answer, field.attribute or name)
    ]
    assert missing == []
