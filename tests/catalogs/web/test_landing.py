"""The landing section at "/" for signed-out visitors, above a search that keeps working."""

from __future__ import annotations

import html

import pytest

from catalogs.publishing import services
from tests.catalogs.factories import CatalogFactory, PublisherFactory, UserFactory, catalog_yaml

pytestmark = pytest.mark.django_db

LINE = "krm build . --trusted-catalog=http://testserver/c/{}/catalog.yaml"


def _publish(catalog, *functions):
    services.catalog_version_publish(catalog=catalog, content=catalog_yaml(*functions), actor=None)


@pytest.fixture
def catalogs(db):
    """zeta/big (3 functions, unverified), acme/small (1, verified), acme/empty (no version)."""
    acme = PublisherFactory(slug="acme", verified=True)
    zeta = PublisherFactory(slug="zeta")
    _publish(
        CatalogFactory(publisher=zeta, name="big"), *[("z.io", f"K{i}", "v1") for i in range(3)]
    )
    _publish(CatalogFactory(publisher=acme, name="small"), ("acme.io", "Fn", "v1"))
    _publish(CatalogFactory(publisher=zeta, name="two"), ("z.io", "A", "v1"), ("z.io", "B", "v1"))
    CatalogFactory(publisher=acme, name="empty")


def _landing(body: str) -> str:
    assert '<section class="landing"' in body
    return body.split('<section class="landing"', 1)[1].split("</section>", 1)[0]


def test_a_visitor_sees_what_this_is_the_build_line_and_catalogs(client, catalogs):
    response = client.get("/")
    body = response.content.decode()
    landing = _landing(body)
    assert "KRM function catalogs" in landing and "30 seconds" in landing
    # Verified publishers first, then the most functions; catalogs without a version are left out.
    assert html.unescape(landing).count("krm build . --trusted-catalog=") == 1
    assert f'<code id="landing-build-line">{LINE.format("acme/small")}</code>' in landing
    order = [landing.index(name) for name in ("acme/small</strong>", "zeta/big", "zeta/two")]
    assert order == sorted(order)
    assert "acme/empty" not in landing
    assert "3 functions · version 1" in landing
    # The search and its results are still there, below.
    assert '<form class="search"' in body.split("</section>", 1)[1]
    assert sorted(v.kind for v in response.context["page"]) == ["A", "B", "Fn", "K0", "K1", "K2"]
    assert len(response.content) <= 100 * 1024


def test_a_visitor_sees_each_catalog_listed_once(client, catalogs):
    body = client.get("/").content.decode()
    # Three published catalogs, all featured (up to six are): no second list below.
    assert '<h2 id="catalogs">' not in body
    more = PublisherFactory(slug="more")
    for i in range(4):
        _publish(CatalogFactory(publisher=more, name=f"c{i}"), ("m.io", f"M{i}", "v1"))
    body = client.get("/").content.decode()
    landing = _landing(body)
    below = body.split('<h2 id="catalogs">More catalogs</h2>', 1)[1]
    featured = {
        n for n in ("acme/small", "zeta/big", "zeta/two", *(f"more/c{i}" for i in range(4)))
    }
    in_landing = {n for n in featured if n in landing}
    in_below = {n for n in featured if f">{n}</a>" in below}
    assert len(in_landing) == 6 and in_below == featured - in_landing


def test_empty_filter_fields_are_dropped_from_the_url(client, catalogs):
    response = client.get("/?q=K1&group=&kind=&version=&catalog=&key=")
    assert (response.status_code, response["Location"]) == (302, "/?q=K1")
    assert client.get("/?group=&kind=")["Location"] == "/"
    kept = client.get("/?q=K1&tag=a&tag=&tag=b")["Location"]
    assert kept == "/?q=K1&tag=a&tag=b"


def test_a_query_shows_results_without_the_landing(client, catalogs):
    response = client.get("/?q=K1")
    body = response.content.decode()
    assert '<section class="landing"' not in body
    assert [v.kind for v in response.context["page"]] == ["K1"]


def test_a_signed_in_user_gets_the_search_only(client, catalogs):
    client.force_login(UserFactory(username="olivia"))
    body = client.get("/").content.decode()
    assert '<section class="landing"' not in body
    assert "Find KRM functions" in body


def test_an_empty_registry_says_no_catalog_is_published_yet(client, db):
    landing = _landing(client.get("/").content.decode())
    assert "No catalog is published yet" in landing
    assert "landing-build-line" not in landing
