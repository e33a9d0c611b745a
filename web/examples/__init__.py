"""Example bodies for the OpenAPI document: component schema name -> {example name: value}.

Every example tells one story (web/examples/world.py). The document puts each schema's
examples on the media types that use it, and the first as the schema's own `example`;
README.md and docs/api.md show only bodies found here (tests/e2e/test_openapi_examples.py).
"""

from __future__ import annotations

from typing import Any

from web.examples import (
    approvals,
    bulk,
    calendars,
    callback_sources,
    directory,
    evidence,
    groups,
    notifications,
    operations,
    runs,
    schedules,
    tasks,
    webhooks,
)

EXAMPLES: dict[str, dict[str, Any]] = {
    **directory.EXAMPLES,
    **schedules.EXAMPLES,
    **runs.EXAMPLES,
    **approvals.EXAMPLES,
    **operations.EXAMPLES,
    **callback_sources.EXAMPLES,
    **groups.EXAMPLES,
    **webhooks.EXAMPLES,
    **tasks.EXAMPLES,
    **evidence.EXAMPLES,
    **notifications.EXAMPLES,
    **bulk.EXAMPLES,
    **calendars.EXAMPLES,
}
