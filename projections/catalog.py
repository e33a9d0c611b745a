"""Every read model the service keeps."""

from __future__ import annotations

from projections.activity import ActivityProjection
from projections.approvals import ApprovalsProjection
from projections.calendars import CalendarsProjection
from projections.callback_sources import CallbackSourcesProjection
from projections.chain import HashChainProjection
from projections.directory import DirectoryProjection
from projections.engine import Projection
from projections.groups import GroupsProjection
from projections.levels import LevelsProjection
from projections.merkle import MerkleTreeProjection
from projections.notifications import NotificationsProjection
from projections.operations import OperationsProjection
from projections.pauses import PausesProjection
from projections.rollup import ScheduleDailyProjection
from projections.runs import RunsProjection
from projections.schedules import SchedulesProjection
from projections.tasks import TasksProjection
from projections.webhooks import WebhooksProjection


def all_projections(zone: str) -> list[Projection]:
    """Every read model, those with business-time columns in `zone` (`CRONLEDGER_TIMEZONE`)."""
    return [
        SchedulesProjection(),
        RunsProjection(zone),
        ApprovalsProjection(zone),
        ScheduleDailyProjection(zone),
        DirectoryProjection(),
        OperationsProjection(zone),
        PausesProjection(),
        WebhooksProjection(),
        HashChainProjection(),
        MerkleTreeProjection(),
        ActivityProjection(zone),
        CallbackSourcesProjection(),
        TasksProjection(zone),
        LevelsProjection(),
        NotificationsProjection(),
        GroupsProjection(),
        CalendarsProjection(),
    ]


def projection_named(name: str, zone: str) -> Projection:
    """The projection called `name`; ValueError lists the names there are."""
    for projection in all_projections(zone):
        if projection.name == name:
            return projection
    names = ", ".join(p.name for p in all_projections(zone))
    raise ValueError(f"no projection {name!r}: there are {names}")


def rebuildable_projections(zone: str) -> list[Projection]:
    return [p for p in all_projections(zone) if p.rebuildable]
