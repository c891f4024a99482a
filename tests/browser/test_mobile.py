"""Every main page at phone size (390x844) fits the screen: no sideways scroll, a collapsing nav.

Each page is also shot at desktop size, so the two screenshots sit side by side
(``m-<page>-desktop.png`` and ``m-<page>-phone.png``).
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.utils import timezone

from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import SyncRun
from catalogs.publishing.models import Catalog
from catalogs.review import services as contributions
from catalogs.review.models import Contribution
from tests.browser.conftest import DESKTOP, PHONE, WIDTH_JS, sign_in
from tests.catalogs.factories import UserFactory
from tests.catalogs.review.contribution_fixtures import DEFINITION

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def site(db):
    """The demo catalog, a staff user (reviewer, operator), a pending contribution, a mirror."""
    call_command("load_demo", stdout=io.StringIO())
    staff = UserFactory(username="sam", is_staff=True)
    author = UserFactory(username="carl")
    catalog = Catalog.objects.get(publisher__slug="demo", name="functions")
    contribution = contributions.contribution_submit(
        catalog=catalog, content=DEFINITION, actor=author
    )
    source = mirrors.mirror_source_create(
        name="upstream",
        url="https://mirror.example.org/a/rather/long/path/to/catalog.yaml",
        actor=None,
    )
    SyncRun.objects.create(
        source=source,
        status=SyncRun.Status.FAILED,
        reason="Digest pin mismatch: pinned sha256:"
        + "a" * 64
        + ", upstream has sha256:"
        + "b" * 64,
        finished_at=timezone.now(),
    )
    return {"staff": staff, "contribution": contribution, "source": source}


def _pages(site) -> list[tuple[str, str, bool]]:
    """(name, path, signed in) of each main page."""
    contribution: Contribution = site["contribution"]
    source = site["source"]
    return [
        ("search", "/", False),
        ("search-results", "/?q=namespace", False),
        ("catalog", "/catalogs/demo/functions/", False),
        ("function", "/catalogs/demo/functions/functions/example.com/SetNamespace/", False),
        ("publisher", "/publishers/demo/", False),
        ("sign-in", "/accounts/login/", False),
        ("not-found", "/no/such/page/", False),
        ("search-signed-in", "/?q=namespace", True),
        ("new-catalog", "/catalogs/new/", True),
        ("publish", "/catalogs/demo/functions/publish/", True),
        ("contribute", "/contribute/", True),
        ("contributions", "/contributions/", True),
        ("review-queue", "/review/", True),
        ("review", f"/review/{contribution.pk}/", True),
        ("review-log", "/review/log/", True),
        ("mirrors", "/mirrors/", True),
        ("mirror", f"/mirrors/{source.pk}/", True),
        ("mirror-form", "/mirrors/new/", True),
        ("verification", "/verification/", True),
        ("tokens", "/accounts/tokens/", True),
    ]


def test_every_main_page_fits_a_phone(new_page, site, screenshots):
    phone, desktop = new_page(PHONE), new_page(DESKTOP)
    signed_in = False
    too_wide = []
    for name, path, needs_user in _pages(site):
        if needs_user and not signed_in:
            for page in (phone, desktop):
                page.set_viewport_size(DESKTOP)
                sign_in(page, "sam")
            phone.set_viewport_size(PHONE)
            signed_in = True
        for page, size in ((desktop, "desktop"), (phone, "phone")):
            response = page.goto(path)
            assert response.status == (404 if name == "not-found" else 200), (name, path)
            assert len(response.body()) <= 100 * 1024, f"{name} ({path}) is over 100 KB"
            page.screenshot(path=str(screenshots / f"m-{name}-{size}.png"), full_page=True)
        width = phone.evaluate(WIDTH_JS)
        if width > PHONE["width"]:
            widest = phone.evaluate(
                """() => [...document.querySelectorAll('body *')]
                    .filter(e => e.getBoundingClientRect().right > 391)
                    .slice(-3).map(e => e.tagName + '.' + e.className).join(', ')"""
            )
            too_wide.append(f"{name} ({path}): {width}px wide; {widest}")
    assert too_wide == []


def test_the_nav_collapses_behind_a_menu_button_on_a_phone(new_page, site, screenshots):
    page = new_page(PHONE)
    page.goto("/")  # signed out: the nav holds Search and Sign in
    nav_link = page.locator("header.top nav >> text=Sign in")
    assert not nav_link.is_visible()
    page.click("label.nav-toggle-label")
    assert nav_link.is_visible()
    assert page.evaluate(WIDTH_JS) <= PHONE["width"]
    page.screenshot(path=str(screenshots / "m-nav-open-phone.png"))
    page.click("label.nav-toggle-label")
    assert not nav_link.is_visible()

    wide = new_page(DESKTOP)
    wide.goto("/")
    assert wide.locator("header.top nav >> text=Sign in").is_visible()
    assert not wide.locator("label.nav-toggle-label").is_visible()
