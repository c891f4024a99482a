"""A revoked function is shown as revoked on every page that offers it, at desktop (1280x900)
and phone (390x844) size: the search card and its facet, the catalog page, the function page."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from catalogs.publishing.models import Catalog
from catalogs.trust.revocations import revocation_create
from tests.browser.conftest import DESKTOP, PHONE, WIDTH_JS
from tests.catalogs.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)
REPLACEMENT = "example.com/v1 SetNamespace from demo/functions-next (republished, same config)"


@pytest.fixture
def revoked(db):
    call_command("load_demo", stdout=io.StringIO())
    catalog = Catalog.objects.get(publisher__slug="demo", name="functions")
    revocation_create(
        catalog=catalog,
        actor=UserFactory(username="sam", is_staff=True),
        reason="compromised",
        group="example.com",
        kind="SetNamespace",
        version="v1",
        detail="its image was rebuilt from a tampered busybox",
        replacement=REPLACEMENT,
    )


PAGES = [
    ("search", "/?q=namespace", ".result .badge.rejected"),
    ("search-facet", "/?revoked=on", ".result .badge.rejected"),
    ("catalog", "/catalogs/demo/functions/", ".revoked-banner"),
    ("function", "/catalogs/demo/functions/functions/example.com/SetNamespace/", ".revoked-banner"),
]


def test_a_revoked_function_is_shown_revoked_everywhere(new_page, revoked, screenshots):
    too_wide = []
    for size, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        page = new_page(viewport)
        for name, path, marker in PAGES:
            assert page.goto(path).status == 200
            assert page.locator(marker).first.is_visible(), (name, size)
            text = (
                page.inner_text("main") if page.locator("main").count() else page.inner_text("body")
            )
            assert "compromised" in text, (name, size)
            if name != "search-facet":
                assert REPLACEMENT in text, (name, size)
            page.screenshot(path=str(screenshots / f"revoked-{name}-{size}.png"), full_page=True)
            if size == "phone" and page.evaluate(WIDTH_JS) > PHONE["width"]:
                too_wide.append(name)
        if size == "desktop":
            # the function page offers no build line for the only, revoked, version
            page.goto(PAGES[-1][1])
            assert page.locator("#build-latest").count() == 0
    assert too_wide == []
