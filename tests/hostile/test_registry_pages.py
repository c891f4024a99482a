"""Pages whose size grows with user content stay bounded: the catalog page of a catalog of
thousands of functions costs the same queries and about the same bytes as one of a hundred.

Bounds are counted (queries, bytes, rows), not timed; ``bench/hostile_inputs.py --registry``
times the largest catalog the default CATALOG_MAX_BYTES allows.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalogs.publishing.models import Catalog
from catalogs.publishing.services import catalog_version_publish
from orchestrator.catalog import parse_catalog
from orchestrator.functions.catalogs import LoadedCatalog, parse_ref
from orchestrator.functions.view import summary
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

PAGE = "/catalogs/example-co/functions/"
URL = "http://testserver/c/example-co/functions/catalog.yaml"


def _publish(catalog: Catalog, owner, count: int) -> None:
    document = catalog_yaml(*[("example.co", f"Fn{i:05d}", "v1") for i in range(count)])
    catalog_version_publish(catalog=catalog, content=document, actor=owner)


def _rows(html: str) -> list[str]:
    return re.findall(r'<a href="/catalogs/example-co/functions/functions/[^"]+">(Fn\d+)</a>', html)


def test_the_trust_view_is_what_krm_view_catalog_shows(client, catalog, owner, demo_catalog_bytes):
    """Every row and the header, page after page, equal ``krm view catalog``'s data."""
    from catalogs.publishing.content import catalog_version_bytes
    from catalogs.web.catalog_trust import catalog_trust_page

    catalog_version_publish(catalog=catalog, content=demo_catalog_bytes.decode(), actor=owner)
    catalog.refresh_from_db()
    version = catalog.latest_version
    parsed = parse_catalog(catalog_version_bytes(version=version))
    expected = summary(LoadedCatalog(ref=parse_ref(URL, "/"), catalog=parsed, source=URL))
    view, page = catalog_trust_page(version=version, source=URL, page=1)
    assert page.paginator.num_pages == 1
    for row in view["functions"]:
        row.pop("group")
    assert view == expected


def test_a_catalog_of_thousands_of_functions_costs_what_a_small_one_does(
    client, catalog, owner, settings
):
    settings.CATALOG_PAGE_FUNCTIONS = 100
    _publish(catalog, owner, 150)
    with CaptureQueriesContext(connection) as small_queries:
        small = client.get(PAGE)
    _publish(catalog, owner, 3000)
    with CaptureQueriesContext(connection) as large_queries:
        large = client.get(PAGE)
    assert (small.status_code, large.status_code) == (200, 200)
    assert len(large_queries) == len(small_queries), [q["sql"][:120] for q in large_queries]
    small_html, large_html = small.content.decode(), large.content.decode()
    # One page of 100 functions, twice (the trust view and the cards), on each.
    assert _rows(large_html)[:100] == [f"Fn{i:05d}" for i in range(100)]
    assert len(_rows(large_html)) == len(_rows(small_html)) == 100
    assert "Functions 1–100 of 3000 · page 1 of 30" in large_html
    assert len(large.content) < len(small.content) + 2048
    assert len(large.content) < 256 * 1024
    last = client.get(PAGE + "?page=30").content.decode()
    assert _rows(last)[0] == "Fn02900" and "Functions 2901–3000 of 3000" in last
