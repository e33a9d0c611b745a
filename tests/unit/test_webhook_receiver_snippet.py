"""The receiver's snippet of docs/webhooks.md#verifying-a-message, run as written: it accepts a
message signed with the subscription's secret once, answers a repeat without handling it again,
and refuses a forged one."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from standardwebhooks import Webhook

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"
PYTHON = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
SECRET = "whsec_" + "c2VjcmV0LWtleS1vZi10aGUtcmVjZWl2ZXItdGVzdA=="


def receiver(handled: list[tuple[str, Any]]) -> Any:
    """The snippet's Flask app, with its secret and its `handle` filled in."""
    section = GUIDE.read_text(encoding="utf-8").split("\n## Verifying a message\n", 1)[1]
    code = PYTHON.search(section.split("\n## ", 1)[0])
    assert code, "the section has no Python block"
    source = code.group(1).replace('"whsec_..."', repr(SECRET))
    namespace: dict[str, Any] = {
        "__name__": __name__,  # Flask(__name__) finds its root path from a real module
        "handle": lambda kind, data: handled.append((kind, data)),
    }
    exec(compile(source, str(GUIDE), "exec"), namespace)  # the documented code, as written
    return namespace["app"]


def signed(secret: str, msg_id: str, body: bytes) -> dict[str, str]:
    now = datetime.now(UTC)
    signature = Webhook(secret).sign(msg_id, now, body.decode())
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
    }


def test_the_snippet_handles_a_signed_message_once_and_refuses_a_forged_one() -> None:
    handled: list[tuple[str, Any]] = []
    client = receiver(handled).test_client()
    body = json.dumps(
        {
            "type": "run.dead_lettered",
            "timestamp": "2026-12-01T03:00:00Z",
            "data": {"run_id": "r-1"},
        }
    ).encode()
    headers = signed(SECRET, "msg_1", body)

    assert client.post("/hooks/cronledger", data=body, headers=headers).status_code == 204
    assert client.post("/hooks/cronledger", data=body, headers=headers).status_code == 204
    forged = signed("whsec_" + "Zm9yZ2VkLXNlY3JldC1vZi1hbi1hdHRhY2tlcg==", "msg_2", body)
    assert client.post("/hooks/cronledger", data=body, headers=forged).status_code == 400

    assert handled == [("run.dead_lettered", {"run_id": "r-1"})]
