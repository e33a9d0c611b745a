"""A short soak (issue 20, item 10): the deployment of `make soak` for under a minute, a fault
every few seconds, and the same audit at the end (see tests/faults/soak.py)."""

from __future__ import annotations

import pytest

from tests.faults.soak import soak

pytestmark = pytest.mark.usefixtures("postgres_ready")


def test_a_short_soak_ends_with_a_clean_audit() -> None:
    counts, problems = soak(minutes=0.75, pause=(2.0, 5.0))
    assert not problems, problems[:20]
    assert counts["kills"] + counts["connection_cuts"] > 0, counts
    assert counts["cycles"] > 0, counts
    assert counts["instances"] > 0, counts
