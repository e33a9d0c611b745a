"""Resubmit and request cancellation in a real browser (both languages): the buttons the
applicant gets on a decided instance, and the links both ways on the pages
(docs/approvals.md#resubmit-and-cancel)."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.console.conftest import Site, check_accessible, new_page, sign_in
from tests.support import DECIDERS

CANCELLED = {"en": "cancelled", "zh": "已取消"}
REQUESTED = {"en": "requested", "zh": "已申请"}
RESUBMIT = {"en": "Resubmit", "zh": "重新提交"}
ORIGINAL = {"en": "Original application", "zh": "原申请"}
CANCELS = {"en": "Cancels the approved application", "zh": "取消的原申请"}


@dataclass(frozen=True)
class Linking:
    """A definition whose approved instances are cancelled by `refund` instances, its applicant
    `ivy` (as a site of her own) and the admin who decides."""

    definition_id: str
    ivy: Site
    admin: Site


@pytest.fixture(scope="module")
def linking(site: Site) -> Linking:
    suffix = uuid.uuid4().hex[:8]
    refund = site.api(
        "POST",
        "/api/definitions",
        {
            "key": f"refund-{suffix}",
            "name": "退款",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    )
    site.api("POST", f"/api/definitions/{refund['id']}/publish")
    definition = site.api(
        "POST",
        "/api/definitions",
        {
            "key": f"order-{suffix}",
            "name": "采购订单",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
            "cancellation_definition": f"refund-{suffix}",
        },
    )
    site.api("POST", f"/api/definitions/{definition['id']}/publish")
    ivy = f"ivy-{suffix}"
    site.api("POST", "/api/accounts", {"id": ivy, "name": "Ivy", "roles": ["requester"]})
    token = site.api("POST", f"/api/accounts/{ivy}/tokens")["token"]
    return Linking(definition["id"], dataclasses.replace(site, token=token), site)


def _submitted(linking: Linking) -> dict[str, Any]:
    return linking.ivy.api(  # type: ignore[no-any-return]
        "POST",
        "/api/approvals",
        {
            "command_id": uuid.uuid4().hex,
            "definition_id": linking.definition_id,
            "title": "采购 50 台电脑",
            "form_data": {"amount": 300000},
            "material_version": 1,
        },
    )


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_applicant_resubmits_a_withdrawn_instance_and_the_pages_link_both_ways(
    browser: Any, linking: Linking, language: str
) -> None:
    from playwright.sync_api import expect

    original = _submitted(linking)
    path = f"/api/approvals/{original['id']}/withdraw"
    linking.ivy.api("POST", path, {"command_id": "w"})
    page = new_page(browser, language)
    sign_in(page, linking.ivy, linking.ivy.token, then=f"/console/approvals/{original['id']}")
    form = page.locator("form.resubmit")
    expect(form.locator("button")).to_have_text(RESUBMIT[language])
    form.locator("textarea[name=reason]").fill("补充了报价单")
    form.locator("button").click()
    expect(page.locator(".links .resubmits")).to_contain_text(original["id"])
    expect(page.locator(".links")).to_contain_text(ORIGINAL[language])
    expect(page.locator("form.resubmit")).to_have_count(0)  # the new one waits
    new_id = linking.admin.api("GET", f"/api/approvals/{original['id']}")["resubmitted_as"]
    assert new_id is not None
    assert page.url.endswith(f"/console/approvals/{new_id}")
    page.locator(".links .resubmits a").click()
    expect(page.locator(".links .resubmitted-as")).to_contain_text(new_id)
    expect(page.locator("form.resubmit")).to_have_count(0)  # resubmitted once
    if language == "en":
        check_accessible(page)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_applicant_requests_cancellation_and_sees_it_cancelled(
    browser: Any, linking: Linking, language: str
) -> None:
    from playwright.sync_api import expect

    original = _submitted(linking)
    approve = {"command_id": "ok", "material_version": 1}
    linking.admin.api("POST", f"/api/approvals/{original['id']}/approve", approve)
    page = new_page(browser, language)
    page.on("dialog", lambda dialog: dialog.accept())
    sign_in(page, linking.ivy, linking.ivy.token, then=f"/console/approvals/{original['id']}")
    form = page.locator("form.request-cancellation")
    form.locator("textarea[name=reason]").fill("客户取消订单")
    form.locator("button").click()
    expect(page.locator(".links .cancellation-of")).to_contain_text(original["id"])
    expect(page.locator(".links")).to_contain_text(CANCELS[language])
    cancellation = linking.admin.api("GET", f"/api/approvals/{original['id']}")["cancellation"]
    assert cancellation["state"] == "REQUESTED"
    page.locator(".links .cancellation-of a").click()
    expect(page.locator(".cancellation-state")).to_contain_text(REQUESTED[language])
    expect(page.locator("form.request-cancellation")).to_have_count(0)
    path = f"/api/approvals/{cancellation['instance_id']}/approve"
    linking.admin.api("POST", path, approve)
    page.reload()
    expect(page.locator(".cancellation-state")).to_contain_text(CANCELLED[language])
    expect(page.locator(".cancellation-state code")).to_have_text("CANCELLED")
    if language == "en":
        check_accessible(page)
