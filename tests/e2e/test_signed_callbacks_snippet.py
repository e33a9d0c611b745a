"""The sender's snippet of docs/webhooks.md#verified-callbacks, run as written against
`cronledger serve` on each store: its signed callback is recorded once, naming its source."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import answers, request
from tests.processes import free_port, started
from tests.support import DECIDERS

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"
SECRET_KEY = "snippet-test-secret-key-of-32-characters"
PYTHON = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def snippet() -> str:
    """The first Python block of the guide's "Verified callbacks" section."""
    section = GUIDE.read_text(encoding="utf-8").split("\n## Verified callbacks\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    found = PYTHON.search(section)
    assert found, "the section has no Python block"
    return found.group(1)


@pytest.fixture
def served(store_url: str, token: str) -> Iterator[str]:
    """`cronledger serve` with a secret key, once it answers."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with started(
        store_url, "serve", "--port", str(port), CRONLEDGER_SECRET_KEY=SECRET_KEY
    ) as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "answering /healthz")
        yield base


def api(base: str, token: str, path: str, body: Any = None, status: int = 200) -> Any:
    code, answer = request(f"{base}{path}", token, body)
    assert code == status, answer
    return answer


def test_the_guide_s_sender_snippet_posts_a_verified_callback(served: str, token: str) -> None:
    source = api(served, token, "/api/callback-sources", {"name": "esign"}, 201)
    definition = api(
        served,
        token,
        "/api/definitions",
        {
            "key": "contract",
            "name": "Contract",
            "external": True,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
        201,
    )
    api(served, token, f"/api/definitions/{definition['id']}/publish", {})
    instance = api(
        served,
        token,
        "/api/approvals",
        {
            "command_id": "submit-1",
            "definition_id": definition["id"],
            "title": "Contract C-9",
            "material_version": 2,
        },
        201,
    )
    names: dict[str, Any] = {}
    exec(compile(snippet(), str(GUIDE), "exec"), names)  # the guide's own code, as written
    post: Callable[..., Any] = names["post_signed_callback"]
    callback = {
        "contract_id": "C-9",
        "material_version": 2,
        "occurred_at": "2026-10-01T17:58:00+08:00",
        "source": "esign",
    }

    first = post(served, instance["id"], source["secret"], callback, "msg_2Ks9cbDqkUvzYBCa")
    again = post(served, instance["id"], source["secret"], callback, "msg_2Ks9cbDqkUvzYBCa")

    assert (first["outcome"], first["replayed"]) == ("OBSERVED", False)
    assert (again["outcome"], again["replayed"]) == ("OBSERVED", True)
    [observation] = again["instance"]["observations"]
    assert (observation["source"], observation["command_id"]) == ("esign", "msg_2Ks9cbDqkUvzYBCa")
    timeline = api(served, token, f"/api/approvals/{instance['id']}/timeline")["items"]
    assert [(e["type"], e["actor"]) for e in timeline][1:] == [
        ("ApprovalInstance.CallbackObserved", f"source:{source['id']}")
    ]
