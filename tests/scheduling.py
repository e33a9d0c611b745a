"""The order in which `make test` hands modules to its workers: the heaviest first.

pytest-xdist's `--dist loadscope` gives a worker a whole module (or test class) at a time, so a
module's server, browser or data set is made once; with `--no-loadscope-reorder` it hands them
out in the order collected, which this plugin sets: heaviest first, so that a long module (the
soak, the 30-second outage, the image build) starts early instead of ending the run alone while
the other workers idle. A module weighs its seconds in `MEASURED`, else an estimate from its
tests (`estimate`); ties keep the order of collection, the same in every worker.
"""

from __future__ import annotations

import pytest

# Seconds of a worker per module, the heaviest of a `make test` on 2 cores (2026-12-04, four
# workers; the modules changed since weigh what they did then). Exact figures do not matter:
# the order does. A new module that takes a minute or more belongs here.
MEASURED: dict[str, float] = {
    "e2e/test_audit_tampering.py": 250,
    "e2e/test_cursor_paging_http.py": 210,
    "e2e/test_cli_and_server.py": 200,
    "e2e/test_audit_cli.py": 200,
    "e2e/test_event_stream.py": 180,
    "faults/test_backup.py": 150,
    "e2e/test_openapi_conformance.py": 150,
    "e2e/test_shutdown_process.py": 140,
    "e2e/test_deploy.py": 130,
    "faults/test_log_scan.py": 120,
    "e2e/test_idempotency_http.py": 120,
    "integration/test_projections_store.py": 120,
    "e2e/console/test_console_runs.py": 120,
    "e2e/console/test_console_schedules.py": 120,
    "e2e/test_evidence_http.py": 120,
    "e2e/test_evidence_cli.py": 110,
    "e2e/test_http_conditions_http.py": 100,
    "e2e/console/test_console_approvals.py": 100,
    "e2e/console/test_console_directory.py": 100,
    "faults/test_soak.py": 90,
    "faults/test_served_conformance.py": 90,
    "integration/test_tick_store.py": 90,
    "e2e/test_web_workers.py": 80,
    "e2e/console/test_console_tasks.py": 80,
    "faults/test_hostile_input.py": 80,
    "e2e/test_checkpoint_signing_process.py": 80,
    "e2e/console/test_console_shell.py": 80,
    "e2e/test_schedules_http.py": 80,
    "faults/test_clock_jumps.py": 80,
    "integration/test_ledger_get_many.py": 70,
    "e2e/test_input_bounds_http.py": 70,
    "e2e/console/test_console_callback_sources.py": 70,
    "faults/test_races_http.py": 70,
    "e2e/test_signed_callbacks_http.py": 70,
    "faults/test_isolation.py": 70,
    "faults/test_database_away.py": 70,
    "integration/test_worker_store.py": 70,
    "faults/test_long_outage.py": 70,
    "integration/test_webhook_delivery_store.py": 60,
    "e2e/console/test_console_webhooks.py": 60,
    "e2e/test_wheel.py": 60,
    "e2e/console/test_console_sessions_http.py": 60,
    "integration/test_read_shapes_store.py": 60,
    "faults/test_connections_cut.py": 60,
    "e2e/test_pauses_cli.py": 60,
    "e2e/console/test_console_schedules_forms.py": 60,
    "integration/test_webhook_fairness_store.py": 60,
}
STORE_FIXTURES = frozenset({"store_url", "bare_store_url", "console_store"})


def estimate(item: pytest.Item) -> float:
    """A test's seconds, roughly: one that starts processes, servers or browsers (`slow`) a few,
    one on a store about one, any other next to none."""
    if item.get_closest_marker("slow"):
        return 4.0
    if STORE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return 1.0
    return 0.05


def module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0].removeprefix("tests/")


@pytest.hookimpl(trylast=True)  # after the markers are set and pytest's own reordering
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    estimated: dict[str, float] = {}
    for item in items:
        module = module_of(item)
        estimated[module] = estimated.get(module, 0.0) + estimate(item)
    weights = {module: MEASURED.get(module, seconds) for module, seconds in estimated.items()}
    items.sort(key=lambda item: -weights[module_of(item)])
