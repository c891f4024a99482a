"""Pull counting (catalogs.publishing.pulls): every GET that sends a version's bytes counts once
for that version and day, in memory first; a flush adds the counts to the database, where the
API's versions, catalog and per-day answers show them."""

from __future__ import annotations

import datetime
import threading
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalogs.publishing import pulls
from catalogs.publishing.models import CatalogVersionPulls
from catalogs.publishing.services import catalog_version_publish
from tests.catalogs.factories import catalog_yaml

BASE = "/c/example-co/functions"
API = "/api/v1/catalogs/example-co/functions"


@pytest.fixture
def versions(db, catalog):
    v1, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=None
    )
    v2, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "B", "v1")), actor=None
    )
    return v1, v2


def _today() -> datetime.date:
    return datetime.datetime.now(datetime.UTC).date()


def test_each_get_that_sends_the_bytes_counts_one_pull(client, api_client, versions):
    v1, v2 = versions
    hexdigest = v1.digest.removeprefix("sha256:")
    for url in (
        f"{BASE}/versions/1/catalog.yaml",
        f"{BASE}/sha256/{hexdigest}/catalog.yaml",
        f"{BASE}/catalog.yaml",  # latest: v2
        f"{BASE}/catalog.yaml",
    ):
        assert client.get(url).status_code == 200
    # Not pulls: HEAD, a revalidation answered 304, a signature, a version that does not exist.
    assert client.head(f"{BASE}/versions/1/catalog.yaml").status_code == 200
    revalidated = client.get(f"{BASE}/versions/1/catalog.yaml", HTTP_IF_NONE_MATCH=f'"{v1.digest}"')
    assert revalidated.status_code == 304
    assert client.get(f"{BASE}/versions/1/catalog.yaml.sig").status_code == 200
    assert client.get(f"{BASE}/versions/9/catalog.yaml").status_code == 404

    assert pulls.pulls_pending() == 4
    assert CatalogVersionPulls.objects.count() == 0  # nothing written while serving
    assert pulls.pulls_flush() == 4
    assert pulls.pulls_pending() == 0

    rows = api_client.get(f"{API}/versions/").json()["results"]
    assert [(row["version"], row["pulls"]) for row in rows] == [(2, 2), (1, 2)]
    assert api_client.get(f"{API}/").json()["pulls"] == 4
    listed = api_client.get("/api/v1/catalogs/").json()["results"]
    assert [c["pulls"] for c in listed if c["name"] == "functions"] == [4]
    days = api_client.get(f"{API}/pulls/?days=2").json()
    assert days == [
        {"day": str(_today() - datetime.timedelta(days=1)), "https": 0, "oci": 0, "total": 0},
        {"day": str(_today()), "https": 4, "oci": 0, "total": 4},
    ]


def test_flushes_add_to_the_same_row(client, versions):
    for _ in range(3):
        client.get(f"{BASE}/versions/1/catalog.yaml")
        pulls.pulls_flush()
    row = CatalogVersionPulls.objects.get()
    assert (row.version_id, row.day, row.via, row.count) == (versions[0].pk, _today(), "https", 3)


def test_a_warm_pinned_pull_runs_no_query(client, versions):
    url = f"{BASE}/versions/1/catalog.yaml"
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    assert len(queries) == 0
    assert pulls.pulls_pending() == 2


def test_pulls_of_what_is_no_version_count_nothing(versions):
    pulls.pull_record(
        via="https",
        publisher_slug="example-co",
        catalog_name="functions",
        digest="sha256:" + "0" * 64,
    )
    pulls.pull_record(
        via="https", publisher_slug="other", catalog_name="functions", digest=versions[0].digest
    )
    assert pulls.pulls_flush() == 0
    assert CatalogVersionPulls.objects.count() == 0


def test_pulls_counted_by_the_proxy_are_not_counted_again(client, versions, settings):
    settings.USAGE_CATALOG_PULLS_FROM_PROXY = True
    assert client.get(f"{BASE}/versions/1/catalog.yaml").status_code == 200
    assert pulls.pulls_pending() == 0


@pytest.mark.parametrize("days", ["0", "367", "x", "-1"])
def test_a_bad_days_parameter_is_refused_by_name(api_client, versions, days):
    response = api_client.get(f"{API}/pulls/?days={days}")
    assert response.status_code == 400
    assert response.json()["days"] == [f"must be a whole number from 1 to 366, not {days!r}"]


@pytest.mark.django_db(transaction=True)
def test_the_flushing_thread_stores_pulls_within_seconds(client, catalog, settings):
    """The serving processes' path: no one calls pulls_flush, the thread does (real thread, real
    database; committed rows, as the thread has its own connection)."""
    catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=None
    )
    settings.USAGE_FLUSH_SECONDS = 1
    pulls.pulls_discard()
    pulls._started = False  # this process's earlier tests ran with the thread off
    try:
        assert client.get(f"{BASE}/versions/1/catalog.yaml").status_code == 200
        deadline = time.monotonic() + 10
        while not CatalogVersionPulls.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert CatalogVersionPulls.objects.get().count == 1
    finally:
        settings.USAGE_FLUSH_SECONDS = 0
        pulls._wake.set()
        for thread in threading.enumerate():
            if thread.name == pulls.FLUSHER_NAME:
                thread.join(timeout=10)
                assert not thread.is_alive()


def test_the_catalog_and_function_pages_show_the_pulls(client, versions):
    for _ in range(3):
        client.get(f"{BASE}/versions/1/catalog.yaml")
    client.get(f"{BASE}/catalog.yaml")
    pulls.pulls_flush()
    page = client.get("/catalogs/example-co/functions/").content.decode()
    assert "4 pulls, 4 in the last 30 days" in page
    # The versions table: version 2 pulled once, version 1 three times.
    assert '<td class="num">1</td>' in page and '<td class="num">3</td>' in page
    function = client.get("/catalogs/example-co/functions/functions/example.co/B/").content.decode()
    assert "4 of its catalog, 4 in the last 30 days" in function
