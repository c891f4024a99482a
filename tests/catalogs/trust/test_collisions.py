"""Collisions in the registry: per function, the other catalogs defining the same GVK and whether
their runtimes differ (selector, API endpoint, function page)."""

from __future__ import annotations

import pytest

from catalogs.publishing import services
from catalogs.publishing.models import Catalog, FunctionVersion
from catalogs.trust.collisions import function_collisions
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db


@pytest.fixture
def three(catalog, publisher):
    same = Catalog.objects.create(publisher=publisher, name="same")
    other = Catalog.objects.create(publisher=publisher, name="other")
    gvk = [("example.co", "SetTier", "v1")]
    services.catalog_version_publish(catalog=catalog, content=catalog_yaml(*gvk), actor=None)
    services.catalog_version_publish(catalog=same, content=catalog_yaml(*gvk), actor=None)
    services.catalog_version_publish(
        catalog=other, content=catalog_yaml(*gvk, runtime="exec"), actor=None
    )
    return FunctionVersion.objects.get(catalog_version__catalog=catalog)


def test_selector_names_other_catalogs_and_runtime_difference(three):
    found = function_collisions(version=three)
    assert [(c["catalog"], c["runtime_differs"]) for c in found] == [
        ("example-co/other", True),
        ("example-co/same", False),
    ]


def test_api_and_function_page(three, client):
    resp = client.get(f"/api/v1/functions/{three.pk}/collisions/")
    assert resp.status_code == 200
    body = resp.json()
    assert [(c["catalog"], c["runtime_differs"]) for c in body] == [
        ("example-co/other", True),
        ("example-co/same", False),
    ]
    assert body[0]["function_url"].endswith(f"/api/v1/functions/{body[0]['function_id']}/")
    assert client.get("/api/v1/functions/999999/collisions/").status_code == 404
    page = client.get("/catalogs/example-co/functions/functions/example.co/SetTier/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Also defined in" in text
    assert 'example-co/other</a>\n    <span class="badge warn">different runtime' in text
    assert 'example-co/same</a>\n    <span class="badge">same runtime' in text


def test_no_collision_no_section(catalog, client):
    content = catalog_yaml(("example.co", "Alone", "v1"))
    services.catalog_version_publish(catalog=catalog, content=content, actor=None)
    page = client.get("/catalogs/example-co/functions/functions/example.co/Alone/")
    assert page.status_code == 200 and "Also defined in" not in page.content.decode()
