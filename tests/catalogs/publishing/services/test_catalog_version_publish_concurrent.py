"""Concurrent publishes to one catalog, each on its own database connection (PostgreSQL).

The row lock on the catalog must give consecutive numbers and one version per content. SQLite
(the embedded default) is tests/registry/test_sqlite_concurrency.py; this runs in CI run 3.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from catalogs.publishing.models import CatalogVersion
from catalogs.publishing.services import catalog_version_publish
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (CI run 3: deploy/ci-services.sh)")


def _publish_all(catalog, documents: list[str]) -> list[tuple[int, bool]]:
    """Publish every document at once, one thread and connection each; (number, created)."""
    barrier = threading.Barrier(len(documents))
    results: list = [None] * len(documents)

    def run(i: int) -> None:
        try:
            barrier.wait()
            version, created = catalog_version_publish(
                catalog=catalog, content=documents[i], actor=None
            )
            results[i] = (version.number, created)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(documents))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors
    return results


def test_different_documents_get_consecutive_numbers(catalog):
    documents = [catalog_yaml(("example.co", f"Fn{i}", "v1")) for i in range(8)]
    results = _publish_all(catalog, documents)
    assert sorted(number for number, _ in results) == list(range(1, 9))
    assert all(created for _, created in results)
    catalog.refresh_from_db()
    assert catalog.latest_version.number == 8


def test_the_same_document_at_once_is_one_version(catalog):
    results = _publish_all(catalog, [catalog_yaml(("example.co", "Same", "v1"))] * 8)
    assert {number for number, _ in results} == {1}
    assert sum(created for _, created in results) == 1
    assert CatalogVersion.objects.filter(catalog=catalog).count() == 1
