"""The search page through Django's client: one card per function, sorts, pages, facets with
counts, empty states, and every bad parameter answered with a notice (never an error page)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from catalogs.publishing import services
from tests.catalogs.factories import CatalogFactory, PublisherFactory, UserFactory, catalog_yaml

pytestmark = pytest.mark.django_db


def _publish(catalog, *functions, runtime="container"):
    text = catalog_yaml(*functions, runtime=runtime)
    services.catalog_version_publish(catalog=catalog, content=text, actor=None)


@pytest.fixture
def registry(db):
    """SetNamespace in acme/core (verified) and zeta/fork; 24 more functions in acme/core."""
    acme = PublisherFactory(slug="acme", verified=True)
    zeta = PublisherFactory(slug="zeta")
    more = [("bulk.io", f"Bulk{i:02d}", "v1") for i in range(24)]
    _publish(
        CatalogFactory(publisher=acme, name="core"), ("example.com", "SetNamespace", "v1"), *more
    )
    _publish(
        CatalogFactory(publisher=zeta, name="fork"),
        ("example.com", "SetNamespace", "v2"),
        ("tools.io", "Untag", "v1"),
        runtime="exec",
    )


def _cards(body: str) -> list[str]:
    return re.findall(r'<li class="result">(.*?)</li>\s*(?=<li class="result">|</ol>)', body, re.S)


def _kinds(body: str) -> list[str]:
    return re.findall(r'<a class="fn" href="[^"]*">([^<]+)</a>', body)


def _notices(body: str) -> list[str]:
    return [
        html.unescape(n) for n in re.findall(r'<li class="msg warning notice">(.*?)</li>', body)
    ]


def test_a_function_in_two_catalogs_is_one_card_listing_both_with_their_badges(client, registry):
    body = client.get("/?q=setnamespace").content.decode()
    [card] = _cards(body)
    assert _kinds(body) == ["SetNamespace"]
    carriers = re.findall(r'<li><a href="([^"]+)">([^<]+)</a>(.*?)</li>', card)
    assert [(href, name) for href, name, _ in carriers] == [
        ("/catalogs/acme/core/functions/example.com/SetNamespace/", "acme/core"),
        ("/catalogs/zeta/fork/functions/example.com/SetNamespace/", "zeta/fork"),
    ]
    acme_badges, zeta_badges = carriers[0][2], carriers[1][2]
    assert '<span class="badge ok">verified</span>' in acme_badges
    assert "verified" not in zeta_badges
    assert ">signed</span>" in acme_badges and ">signed</span>" in zeta_badges
    assert "v1 · " in acme_badges and "v2 · " in zeta_badges
    # The card links to the verified catalog's function page and shows both runtimes.
    assert '<a class="fn" href="/catalogs/acme/core/functions/example.com/SetNamespace/">' in card
    assert (
        '<span class="badge runtime">container</span><span class="badge runtime">exec</span>'
        in card
    )
    assert (
        '<strong>1</strong> function for “setnamespace” <span class="muted">in 2 catalogs' in body
    )


def test_a_card_says_when_several_publishers_define_the_function(client, registry):
    body = client.get("/?q=setnamespace").content.decode()
    [card] = _cards(body)
    assert '<span class="badge warn">collision</span> 2 publishers define SetNamespace' in card
    assert "(acme, zeta)" in card
    # One publisher only: no collision note.
    [untag] = _cards(client.get("/?q=untag").content.decode())
    assert "collision" not in untag


def test_sort_links_keep_the_query_and_order_the_results(client, registry):
    body = client.get("/?q=e&sort=catalogs").content.decode()
    assert _kinds(body)[0] == "SetNamespace"  # the only one in two catalogs
    sorts = re.search(r'<nav class="sorts".*?</nav>', body, re.S).group(0)
    assert 'href="?q=e&amp;sort=name"' in sorts
    assert 'class="selected" aria-current="true" rel="nofollow">Most catalogs' in sorts.replace(
        'href="?q=e&amp;sort=catalogs" ', ""
    )
    by_name = _kinds(client.get("/?q=e&sort=name").content.decode())
    assert by_name == sorted(by_name, key=str.lower)
    # Without a query there is nothing to rank by: relevance is not offered.
    assert ">Relevance</a>" not in client.get("/").content.decode()


def test_most_pulled_sorts_by_the_pulls_of_the_carrying_catalogs(client, registry):
    from catalogs.publishing import pulls

    # zeta/fork (SetNamespace, Untag) is pulled three times, acme/core once.
    for _ in range(3):
        assert client.get("/c/zeta/fork/catalog.yaml").status_code == 200
    client.get("/c/acme/core/catalog.yaml")
    pulls.pulls_flush()
    body = client.get("/?sort=pulls&page_size=30").content.decode()
    kinds = _kinds(body)
    # SetNamespace is in both (4 pulls), Untag in fork only (3), the bulk ones in core (1).
    assert kinds[:2] == ["SetNamespace", "Untag"]
    assert kinds[2:] == sorted(kinds[2:], key=str.lower)
    assert ">Most pulled" in body


def test_pages_are_numbered_and_keep_every_parameter(client, registry):
    body = client.get("/?publisher=acme&sort=name&page_size=10").content.decode()
    assert len(_cards(body)) == 10
    pager = re.search(r'<nav class="pager".*?</nav>', body, re.S).group(0)
    assert '<span class="current" aria-current="page">1</span>' in pager
    assert 'href="?publisher=acme&amp;sort=name&amp;page_size=10&amp;page=2"' in pager
    assert 'href="?publisher=acme&amp;sort=name&amp;page_size=10&amp;page=3"' in pager
    last = client.get("/?publisher=acme&sort=name&page_size=10&page=3").content.decode()
    assert _kinds(last) == ["Bulk20", "Bulk21", "Bulk22", "Bulk23", "SetNamespace"]
    assert "Next →" not in last and "← Previous" in last


def _facet_links(facets: str) -> dict[str, tuple[str, int]]:
    """{label: (href, count)} of a page's facet checkboxes."""
    links = re.findall(
        r'<a href="([^"]+)" role="checkbox" aria-checked="(?:true|false)"[^>]*>'
        r'<span class="box" aria-hidden="true"></span><span class="label">([^<]+)</span>'
        r'<span class="count">(\d+)</span>',
        facets,
    )
    return {label: (html.unescape(href), int(count)) for href, label, count in links}


def test_facets_show_counts_and_toggle(client, registry):
    body = client.get("/?q=set").content.decode()
    facets = re.search(r'<aside class="facets".*?</aside>', body, re.S).group(0)
    found = _facet_links(facets)
    assert found["container"] == ("?q=set&runtime=container", 1)
    assert found["exec"] == ("?q=set&runtime=exec", 1)
    assert found["acme"] == ("?q=set&publisher=acme", 1)
    assert found["Verified publisher"] == ("?q=set&verified=on", 1)
    assert "Mirrored" not in found  # a zero count is not offered
    selected = client.get("/?q=set&runtime=exec&page=2").content.decode()
    facets = re.search(r'<aside class="facets".*?</aside>', selected, re.S).group(0)
    # The selected value is a ticked checkbox linking to its own removal (the page is dropped).
    assert (
        '<a href="?q=set" role="checkbox" aria-checked="true" class="selected" rel="nofollow">'
        in facets
    )
    assert 'class="chip" href="?q=set"' in selected
    # A new query typed in the box keeps the filters (hidden inputs), not the page.
    form = re.search(r'<form class="search".*?</form>', selected, re.S).group(0)
    assert '<input type="hidden" name="runtime" value="exec">' in form
    assert 'name="page"' not in form


def test_a_query_without_hits_says_what_to_do_next(client, registry):
    body = client.get("/?q=nothing-like-this&publisher=acme").content.decode()
    empty = re.search(r'<div class="empty-state">.*?</div>', body, re.S).group(0)
    assert "No function matches “nothing-like-this” with 1 filter" in empty
    assert (
        '<a class="chip" href="?q=nothing-like-this" rel="nofollow">publisher: acme ×</a>' in empty
    )
    assert 'href="?q=nothing-like-this">clear them all</a>' in empty
    assert "Try fewer or shorter words" in empty
    assert '<a href="/#catalogs">Browse the catalogs</a>' in empty
    assert '<a href="/contribute/">Contribute its definition</a>' in empty
    assert _cards(body) == []


def test_without_a_query_the_page_says_what_it_shows_and_what_to_do(client, registry):
    body = client.get("/").content.decode()
    assert (
        '<p class="hint muted small">Every function, by name. Type a kind, group, tag or words '
        "of a description above, or pick a filter.</p>"
    ) in body
    assert len(_cards(body)) == 20
    assert '<p class="hint' not in client.get("/?q=set").content.decode()
    updated = client.get("/?sort=updated").content.decode()
    assert "Every function, recently updated first." in updated


def test_an_empty_registry_says_how_functions_get_here(client, db):
    body = client.get("/?sort=name").content.decode()
    empty = re.search(r'<div class="empty-state">.*?</div>', body, re.S).group(0)
    assert "No function is published yet" in empty
    assert '<a href="/catalogs/new/">create a catalog</a>' in empty
    assert '<a href="/contribute/">contribute a function</a>' in empty


@pytest.mark.parametrize(
    ("query", "notice"),
    [
        (
            "sort=popular",
            "Unknown sort 'popular' (choose one of: relevance, name, updated, catalogs, pulls). "
            "Sorted by name instead.",
        ),
        ("page=99", "There is no page 99: the results fill 2 pages. Showing page 2."),
        ("page=abc", "'abc' is not a page number. Showing page 1."),
        ("page=-1", "There is no page -1; pages start at 1. Showing page 1."),
        ("page_size=500", "Page size 500 is out of range (1 to 30). Showing 20 per page."),
        (
            "runtime=wasm",
            "Filter 'runtime' ignored: Select a valid choice. wasm is not one of the "
            "available choices.",
        ),
    ],
)
def test_a_bad_parameter_is_a_notice_not_an_error(client, registry, query, notice):
    response = client.get(f"/?{query}")
    assert response.status_code == 200
    body = response.content.decode()
    assert _notices(body) == [notice]
    assert len(_cards(body)) in (6, 20)  # page 2 of 26, or page 1


@pytest.mark.parametrize("signed_in", [False, True])
def test_queries_per_page_do_not_grow_with_the_results(
    client, registry, signed_in, django_assert_max_num_queries
):
    if signed_in:
        client.force_login(UserFactory(username="olivia"))
    # Three for the search, one for the catalogs listed under an empty query, one for the
    # landing (signed out), or seven for session, user, reviewer, operator, pending-invitation
    # and unread-inbox checks (signed in); a multi-select facet ticked (runtime=exec) adds two
    # (its counts: the rows and badges without it), a word of four letters or more one (is it
    # found as typed?).
    budget = 14 if signed_in else 7
    for path in ("/", "/?q=bulk&page_size=30", "/?q=e&runtime=exec&sort=updated", "/?q=zzz"):
        with django_assert_max_num_queries(budget):
            assert client.get(path).status_code == 200


def _asset_bytes(body: str) -> int:
    """The size of every static file the page links (stylesheets, scripts, icon)."""
    from django.conf import settings
    from django.contrib.staticfiles import finders

    paths = re.findall(r'(?:href|src)="' + re.escape(settings.STATIC_URL) + r'([^"]+)"', body)
    assert any(p.endswith(".css") for p in paths) and any(p.endswith(".js") for p in paths)
    return sum(Path(finders.find(p)).stat().st_size for p in set(paths))


def test_the_largest_page_with_its_assets_stays_under_100_kb(client, db):
    """30 results (the largest page size) with long names, each carried by 8 catalogs."""
    publisher = PublisherFactory(slug="example-platform-team", verified=True)
    functions = [
        ("functions.example-platform.io", f"EnsureResourceLabels{i:02d}", "v1") for i in range(30)
    ]
    for c in range(8):
        catalog = CatalogFactory(publisher=publisher, name=f"kubernetes-functions-{c:02d}")
        text = catalog_yaml(*functions).replace("function.", "function. " + "Lorem ipsum. " * 30)
        services.catalog_version_publish(catalog=catalog, content=text, actor=None)
    response = client.get("/?q=ensure&page_size=30")
    body = response.content.decode()
    assert len(_cards(body)) == 30 and body.count("and 5 more catalogs") == 30
    total = len(response.content) + _asset_bytes(body)
    assert total <= 100 * 1024, (len(response.content), total)


def test_several_values_of_a_facet_are_ticked_together(client, registry):
    body = client.get("/?publisher=zeta").content.decode()
    facets = _facet_links(re.search(r'<aside class="facets".*?</aside>', body, re.S).group(0))
    # Ticking acme adds it to zeta (the URL repeats the parameter); its count is what it adds.
    assert facets["acme"] == ("?publisher=zeta&publisher=acme", 25)
    assert facets["zeta"] == ("?", 2)
    both = client.get("/?publisher=zeta&publisher=acme&sort=name").content.decode()
    assert len(_kinds(both)) == 20  # 27 functions of both publishers, 20 a page
    facets = _facet_links(re.search(r'<aside class="facets".*?</aside>', both, re.S).group(0))
    # Unticking one keeps the other; both ticked boxes say so.
    assert facets["acme"] == ("?publisher=zeta&sort=name", 25)
    assert facets["zeta"] == ("?publisher=acme&sort=name", 2)
    assert both.count('aria-checked="true"') == 2
    # One chip per value, each removing only its own.
    chips = re.findall(r'<a class="chip" href="([^"]+)"[^>]*>([^<]+)<', both)
    assert [(html.unescape(h), label.strip()) for h, label in chips] == [
        ("?publisher=acme&sort=name", "publisher: zeta"),
        ("?publisher=zeta&sort=name", "publisher: acme"),
    ]
    # A new query keeps both (hidden inputs), and a second facet narrows (AND).
    form = re.search(r'<form class="search".*?</form>', both, re.S).group(0)
    assert form.count('<input type="hidden" name="publisher"') == 2
    narrowed = client.get("/?publisher=zeta&publisher=acme&runtime=exec").content.decode()
    assert _kinds(narrowed) == ["SetNamespace", "Untag"]


def test_a_ticked_value_beyond_the_listed_ones_stays_ticked(client, registry):
    body = client.get("/?publisher=nobody&publisher=zeta").content.decode()
    facets = _facet_links(re.search(r'<aside class="facets".*?</aside>', body, re.S).group(0))
    assert facets["nobody"] == ("?publisher=zeta", 0)
    assert _kinds(body) == ["SetNamespace", "Untag"]


def test_a_mistyped_word_says_what_was_searched_instead(client, registry):
    body = client.get("/?q=namespce").content.decode()
    assert _kinds(body) == ["SetNamespace"]
    assert _notices(body) == ["No function contains “namespce”: showing those with “namespace”."]
    assert _notices(client.get("/?q=namespace").content.decode()) == []


def test_cards_show_the_pull_count(client, registry):
    from catalogs.publishing import pulls

    for _ in range(3):
        assert client.get("/c/zeta/fork/catalog.yaml").status_code == 200
    pulls.pulls_flush()
    [card] = _cards(client.get("/?q=untag").content.decode())
    assert '<span class="pulls" title="Pulls of the catalogs carrying it">3 pulls</span>' in card
    [card] = _cards(client.get("/?q=bulk00").content.decode())
    assert 'class="pulls"' not in card  # never pulled: nothing to say


def test_a_private_catalog_counts_in_no_facet_and_suggests_no_word(client, registry):
    from catalogs.publishing.models import Catalog

    owner = UserFactory(username="owner")
    hidden = PublisherFactory(slug="hidden", owners=[owner])
    _publish(
        CatalogFactory(publisher=hidden, name="stuff"),
        ("example.com", "SetNamespace", "v3"),
        ("zz.io", "Zanzibar", "v1"),
    )
    services.catalog_update(
        catalog=Catalog.objects.get(name="stuff"), actor=owner, visibility="private"
    )
    body = client.get("/?publisher=zeta&publisher=hidden").content.decode()
    facets = _facet_links(re.search(r'<aside class="facets".*?</aside>', body, re.S).group(0))
    assert facets["hidden"] == ("?publisher=zeta", 0)  # ticked by hand: shown, counting nothing
    assert facets["acme"][1] == 25 and facets["zeta"][1] == 2
    assert _notices(client.get("/?q=zanzibr").content.decode()) == []
    client.force_login(owner)
    body = client.get("/?publisher=zeta&publisher=hidden").content.decode()
    facets = _facet_links(re.search(r'<aside class="facets".*?</aside>', body, re.S).group(0))
    assert facets["hidden"] == ("?publisher=zeta", 2)
    assert _notices(client.get("/?q=zanzibr").content.decode()) == [
        "No function contains “zanzibr”: showing those with “zanzibar”."
    ]
