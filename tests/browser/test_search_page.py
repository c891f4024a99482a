"""The search page in chromium at desktop and phone sizes: one card per function with the catalogs
that carry it, facets with counts (behind a "Filters" button on a phone), sorts, numbered pages,
and the empty state. Screenshots: ``s-<state>-desktop.png`` and ``s-<state>-phone.png``."""

from __future__ import annotations

import pytest

from catalogs.publishing import services
from tests.browser.conftest import DESKTOP, PHONE, TRANSFERRED, WIDTH_JS
from tests.catalogs.factories import CatalogFactory, PublisherFactory, catalog_yaml

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def registry(db):
    """acme (verified) and zeta: SetNamespace carried by three catalogs, 30 other functions."""
    acme = PublisherFactory(slug="acme", verified=True)
    zeta = PublisherFactory(slug="zeta-with-a-rather-long-publisher-name")
    shared = ("example.com", "SetNamespace", "v1")
    many = [
        ("functions.example.com", f"EnsureLabelsOnEveryResource{i:02d}", "v1") for i in range(30)
    ]
    for catalog, functions, runtime in (
        (CatalogFactory(publisher=acme, name="core"), [shared, *many[:20]], "container"),
        (CatalogFactory(publisher=zeta, name="fork"), [shared, *many[20:]], "exec"),
        (CatalogFactory(publisher=zeta, name="legacy"), [shared], "container"),
    ):
        services.catalog_version_publish(
            catalog=catalog, content=catalog_yaml(*functions, runtime=runtime), actor=None
        )


STATES = [
    ("query", "/?q=namespace"),
    ("all", "/?sort=name&page=2&page_size=10"),
    ("largest", "/?sort=name&page_size=30"),
    ("filtered", "/?runtime=exec&verified=on"),
    ("two-publishers", "/?publisher=acme&publisher=zeta-with-a-rather-long-publisher-name"),
    ("typo", "/?q=namespce"),
    ("empty", "/?q=nothing-like-this&publisher=acme"),
    ("bad-parameters", "/?sort=popular&page=99"),
    (
        "many-filters",
        "/?q=namespace&group=example.com&kind=SetNamespace&runtime=exec&verified=on"
        "&publisher=zeta-with-a-rather-long-publisher-name&tag=mutator&key=0123456789abcdef",
    ),
]


@pytest.mark.parametrize(("viewport", "size"), [(DESKTOP, "desktop"), (PHONE, "phone")])
def test_the_search_page_fits_and_reads_at_both_sizes(
    new_page, registry, screenshots, viewport, size
):
    page = new_page(viewport)
    for state, path in STATES:
        response = page.goto(path)
        assert response.status == 200, path
        page.wait_for_load_state("load")
        assert page.evaluate(TRANSFERRED) <= 100 * 1024, state
        page.screenshot(path=str(screenshots / f"s-{state}-{size}.png"), full_page=True)
        assert page.evaluate(WIDTH_JS) <= viewport["width"], (state, size)

    page.goto("/?q=namespace")
    # One card for SetNamespace, listing the three catalogs that carry it, verified first.
    cards = page.locator("li.result")
    assert cards.count() == 1
    carriers = cards.first.locator("ul.carriers > li")
    assert carriers.all_inner_texts()[0].startswith("acme/core verified")
    assert carriers.count() == 3
    facets = page.locator("aside.facets")
    if size == "phone":
        # The facets wait behind the "Filters" button, which opens them in place.
        assert not facets.is_visible()
        page.click("label.facets-toggle-label")
    assert facets.is_visible()
    page.screenshot(path=str(screenshots / f"s-filters-open-{size}.png"), full_page=True)
    page.click("aside.facets >> text=exec")
    page.wait_for_url(lambda url: "runtime=exec" in url)
    page.wait_for_load_state("load")
    assert page.locator("li.result").count() == 1
    assert page.locator("a.chip").first.inner_text().startswith("runtime: exec")
    # A second runtime ticked: functions with either (the URL repeats the parameter).
    if size == "phone":
        page.click("label.facets-toggle-label")
    page.click("aside.facets >> text=container")
    page.wait_for_url(lambda url: "runtime=container" in url)
    page.wait_for_load_state("load")
    assert "runtime=exec" in page.url
    assert page.locator('aside.facets [role="checkbox"][aria-checked="true"]').count() == 2
    assert page.locator("a.chip").count() == 2
    page.screenshot(path=str(screenshots / f"s-two-runtimes-{size}.png"), full_page=True)
    assert page.evaluate(WIDTH_JS) <= viewport["width"]

    page.goto("/?q=nothing-like-this&publisher=acme")
    empty = page.locator(".empty-state")
    assert "No function matches" in empty.inner_text()
    empty.locator("text=clear them all").click()
    assert page.url.endswith("/?q=nothing-like-this")
    assert "Contribute its definition" in page.locator(".empty-state").inner_text()

    page.goto("/?sort=name")
    page.click("nav.pager >> text=2")
    assert "page=2" in page.url and "sort=name" in page.url
    assert page.locator("nav.pager .current").inner_text() == "2"
