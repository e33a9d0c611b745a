"""`/metrics` needs no token, so it reads the store at most once per cache window (item 8)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import samples
from tests.support import T0, FakeClock, Opener, World
from web import create_app

PENDING = ("cronledger_pending_runs", ())


def test_scrapes_within_the_window_reuse_the_figures(
    open_with: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock, metrics_cache_seconds=10), clock)
    services = world.services
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    assert samples(client.get("/metrics").get_data(as_text=True))[PENDING] == 0
    world.run_now("r1")
    reads: list[str] = []
    for target, name in ((services.store, "query"), (services.projector, "catch_up")):
        counted = getattr(target, name)

        def counting(*args: Any, _name: str = name, _call: Any = counted, **kwargs: Any) -> Any:
            reads.append(_name)
            return _call(*args, **kwargs)

        monkeypatch.setattr(target, name, counting)

    clock.advance(9.9)
    cached = samples(client.get("/metrics").get_data(as_text=True))
    assert (cached[PENDING], reads) == (0, [])
    clock.advance(0.1)
    fresh = samples(client.get("/metrics").get_data(as_text=True))
    assert fresh[PENDING] == 1
    assert "query" in reads
    assert "catch_up" not in reads  # a scrape never catches the projections up
