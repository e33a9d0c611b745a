"""The HTTP benchmark's clients, run by locust (bench/http.py starts it headless).

`Mixed`: the runs list and the approval list (4 in 10 requests each), an approve and a schedule
create (1 in 10 each). `Reader`: the two lists only. Each client sends its next request as soon
as its last is answered. Configured by the environment bench/http.py sets: the tokens, the
definition to create schedules on, and a file of pending instances to approve (each once).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from locust import FastHttpUser, constant, task

ROOT = {"Authorization": f"Bearer {os.environ['BENCH_TOKEN']}"}
APPROVER = {"Authorization": f"Bearer {os.environ['BENCH_APPROVER_TOKEN']}"}
DEFINITION_ID = os.environ["BENCH_DEFINITION_ID"]
# [[instance id, material version], ...]: each approved once, by whichever client comes next.
PENDING: Iterator[list[object]] = iter(json.loads(Path(os.environ["BENCH_PENDING"]).read_text()))
SCHEDULE = {
    "name": "bench",
    "definition_id": DEFINITION_ID,
    "trigger": {"kind": "cron", "expression": "0 9 * * *"},
    "timezone": "UTC",
    "initiator_id": "root",
    "enabled": False,
}


class Reader(FastHttpUser):
    wait_time = constant(0)

    @task(4)
    def runs_list(self) -> None:
        self.client.get("/api/workflows/runs", headers=ROOT, name="GET runs list")

    @task(4)
    def approval_list(self) -> None:
        self.client.get("/api/approvals", headers=ROOT, name="GET approval list")


class Mixed(Reader):
    @task(1)
    def approve(self) -> None:
        instance = next(PENDING, None)  # gevent clients: no two take the same one
        if instance is None:
            return
        instance_id, material_version = instance
        self.client.post(
            f"/api/approvals/{instance_id}/approve",
            json={"command_id": uuid.uuid4().hex, "material_version": material_version},
            headers=APPROVER,
            name="POST approve",
        )

    @task(1)
    def create_schedule(self) -> None:
        self.client.post(
            "/api/workflows/schedules", json=SCHEDULE, headers=ROOT, name="POST schedule"
        )
