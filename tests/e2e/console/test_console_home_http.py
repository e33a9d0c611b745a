"""Where the console opens after signing in: the first area the account may see."""

from __future__ import annotations

import pytest
from flask import Flask

from tests.e2e.console.conftest import Console
from tests.e2e.helpers import account
from tests.support import Api


@pytest.mark.parametrize(
    ("roles", "landing"),
    [
        (["operator"], "/console/schedules/"),
        (["requester"], "/console/tasks/"),  # the approvals area opens on my tasks
        (["integration"], None),
    ],
)
def test_the_console_opens_on_the_first_area_the_account_may_see(
    app: Flask, admin: Api, roles: list[str], landing: str | None
) -> None:
    user = account(admin, "someone", roles)
    browser = Console(app.test_client())
    assert browser.sign_in(user.token).status_code == 302

    opened = browser.get("/console/", headers={"Accept-Language": "en"})

    if landing is None:
        assert opened.status_code == 403
        assert "may see no page" in opened.get_data(as_text=True)
    else:
        assert (opened.status_code, opened.headers["Location"]) == (302, landing)
        assert browser.get(landing).status_code == 200
