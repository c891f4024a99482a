"""Every API list endpoint answers a page of many rows in a fixed, small number of queries.

An N+1 (a query per row) or a per-row count would push these over the bound; the load check
(bench/load_api.py) measures the same endpoints' throughput.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from catalogs.mirroring.models import MirrorSource, SyncRun
from catalogs.publishing import services
from catalogs.publishing.models import Catalog, Publisher
from catalogs.review.models import Contribution
from tests.catalogs.factories import UserFactory, catalog_yaml

pytestmark = pytest.mark.django_db

ROWS = 60


@pytest.fixture
def many(staff_user):
    """ROWS publishers (two owners each), catalogs, versions, functions, contributions, runs."""
    owners = [UserFactory(username=f"u{i}") for i in range(2)]
    for i in range(ROWS):
        publisher = Publisher.objects.create(slug=f"p{i:02d}", display_name=f"P {i}")
        publisher.owners.set(owners)
        Catalog.objects.create(publisher=publisher, name="c")
    catalog = Catalog.objects.get(publisher__slug="p00")
    for i in range(ROWS):
        document = catalog_yaml(*[("example.co", f"K{i}x{j}", "v1") for j in range(3)])
        services.catalog_version_publish(catalog=catalog, content=document, actor=None)
    services.catalog_version_publish(
        catalog=catalog,
        content=catalog_yaml(*[("example.co", f"Fn{j}", "v1") for j in range(ROWS)]),
        actor=None,
    )
    mirror = Catalog.objects.get(publisher__slug="p01")
    source = MirrorSource.objects.create(name="src", url="https://h.example/c.yaml", catalog=mirror)
    SyncRun.objects.bulk_create(
        [SyncRun(source=source, status=SyncRun.Status.SUCCEEDED) for _ in range(ROWS)]
    )
    latest = Catalog.objects.get(pk=catalog.pk).latest_version
    for i in range(ROWS):
        Contribution.objects.create(
            catalog=catalog,
            author=staff_user,
            reviewer=owners[0],
            content="x",
            group="g",
            kind=f"K{i}",
            published_version=latest,
        )
    client = APIClient()
    client.force_authenticate(staff_user)
    return client


LISTS = {
    "publishers": "/api/v1/publishers/",
    "catalogs": "/api/v1/catalogs/",
    "versions": "/api/v1/catalogs/p00/c/versions/",
    "functions": "/api/v1/functions/",
    "contributions": "/api/v1/contributions/",
    "sources": "/api/v1/sources/",
}


@pytest.mark.parametrize("name", LISTS)
def test_list_endpoints_take_a_fixed_number_of_queries(many, name, django_assert_max_num_queries):
    with django_assert_max_num_queries(6):
        response = many.get(LISTS[name] + "?page_size=500")
    assert response.status_code == 200
    assert len(response.json()["results"]) >= (1 if name == "sources" else ROWS)


def test_source_runs_take_a_fixed_number_of_queries(many, django_assert_max_num_queries):
    source = MirrorSource.objects.get()
    with django_assert_max_num_queries(6):
        response = many.get(f"/api/v1/sources/{source.pk}/runs/?page_size=500")
    assert response.status_code == 200
    assert len(response.json()["results"]) == ROWS


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("catalogs:latest", {"publisher": "slot-catalog", "catalog": "slot-publisher"}),
        ("catalogs:version", {"publisher": "p", "catalog": "c", "number": 918273645}),
        ("catalogs:digest", {"publisher": "p", "catalog": "c", "hexdigest": "ab" * 32}),
        ("api:contribution-detail", {"pk": 7}),
        ("api:source-detail", {"pk": 918273646}),
    ],
)
def test_fast_reverse_is_reverse(name, kwargs):
    from django.urls import reverse

    from catalogs.publishing.api.serializers import fast_reverse

    assert fast_reverse(name, **kwargs) == reverse(name, kwargs=kwargs)
