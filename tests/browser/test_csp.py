"""Pages that no other browser test opens, under the Content-Security-Policy in chromium: the
API docs (Swagger UI), the admin's sign-in and the sign-in lockout page. ``new_page`` fails the
test on any policy violation or script error."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_api_docs_render_under_the_policy(new_page):
    page = new_page()
    page.goto("/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock")
    assert page.locator(".opblock").count() > 10


def test_admin_sign_in_under_the_policy(new_page, admin_user):
    page = new_page()
    page.goto("/admin/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "password")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    page.goto("/admin/publishing/publisher/add/")
    page.wait_for_selector("#id_slug")


def test_the_lockout_page_under_the_policy(new_page, owner, settings):
    settings.AXES_FAILURE_LIMIT = 2
    page = new_page()
    for _ in range(2):
        page.goto("/accounts/login/")
        page.fill("#id_username", "owner")
        page.fill("#id_password", "wrong")
        page.click("form.stacked button[type=submit]")
    page.wait_for_selector("text=Too many sign-in attempts")
