"""The scale-out stack: PostgreSQL, Redis as the broker and a real Celery worker process.

Run by deploy/ci-services.sh (CI run 3), which starts ``celery -A registry worker`` with
``KRM_TEST_SERVICES=1`` and the same settings as this pytest process. Skipped otherwise.
"""

from __future__ import annotations

import hashlib
import os

import pytest

pytestmark = [
    pytest.mark.services,
    pytest.mark.skipif(
        os.environ.get("KRM_TEST_SERVICES") != "1",
        reason="needs PostgreSQL, Redis and a running celery worker: set KRM_TEST_SERVICES=1 "
        "(deploy/ci-services.sh does, and starts the worker)",
    ),
]

TASK_TIMEOUT = 30
# deploy/ci-services.sh names its worker: broadcasts then return on its reply instead of waiting
# out the timeout. Without it, every worker that answers within the timeout is asked.
WORKER = os.environ.get("KRM_TEST_WORKER")
BROADCAST = {"destination": [WORKER], "limit": 1} if WORKER else {}


@pytest.fixture(scope="module")
def celery_app():
    from registry.celery import app

    return app


@pytest.fixture(scope="module")
def workers(celery_app) -> dict[str, dict]:
    """The workers answering a ping through the broker, by name; fails if there are none."""
    replies = {
        name: answer
        for reply in celery_app.control.ping(timeout=5.0, **BROADCAST)
        for name, answer in reply.items()
    }
    assert replies, "no celery worker answered a ping through the broker"
    return replies


@pytest.mark.django_db
def test_database_is_postgresql():
    from django.db import connection

    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        (version,) = cursor.fetchone()
    assert version.startswith("PostgreSQL ")


def test_celery_uses_redis_and_is_not_eager(settings, celery_app):
    assert settings.CELERY_BROKER_URL.startswith("redis://")
    assert settings.CELERY_TASK_ALWAYS_EAGER is False
    assert celery_app.conf.task_always_eager is False
    assert celery_app.conf.broker_url.startswith("redis://")


def test_worker_answers_through_the_broker(workers):
    assert all(answer == {"ok": "pong"} for answer in workers.values()), workers


# A complete KEP-2906 catalog with one function (every field the schema requires).
CATALOG = """\
apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: ci-services
spec:
  krmFunctions:
  - group: ci.example.co
    names:
      kind: RoundTrip
    description: Published by the celery worker in the services test.
    publisher: example.co
    versions:
    - name: v1
      schema:
        openAPIV3Schema:
          type: object
      idempotent: true
      runtime:
        container:
          image: registry.example.co/ci/round-trip:v1.0.0
          sha256: 5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef
      usage: https://docs.example.co/round-trip/README.md
      examples:
      - https://docs.example.co/round-trip/example.md
      license: Apache 2.0
"""


@pytest.fixture
def catalog(db):
    from catalogs.publishing import services

    publisher = services.publisher_create(slug="ci-services", display_name="CI", actor=None)
    return services.catalog_create(publisher=publisher, name="round-trip", actor=None)


@pytest.mark.django_db(transaction=True)
def test_publish_task_runs_in_the_worker_and_writes_postgresql(celery_app, workers, catalog):
    from catalogs.publishing import tasks
    from catalogs.publishing.models import CatalogVersion

    task = tasks.catalog_version_publish_task
    before = _executed(celery_app, task.name)
    result = task.delay(catalog.pk, CATALOG)
    reply = result.get(timeout=TASK_TIMEOUT)
    assert result.successful()
    assert reply["version"] == 1 and reply["created"] is True
    # The worker process wrote the row; this process reads it back from the shared database.
    version = CatalogVersion.objects.get(catalog=catalog)
    assert version.digest == reply["digest"]
    assert version.digest == "sha256:" + hashlib.sha256(bytes(version.content)).hexdigest()
    assert b"RoundTrip" in bytes(version.content)
    # Executed by a worker, not eagerly in this process: the workers' counters moved.
    assert _executed(celery_app, task.name) == before + 1

    verified = tasks.catalog_version_verify_task.delay(version.pk).get(timeout=TASK_TIMEOUT)
    assert verified == {"version": 1, "digest": version.digest, "ok": True}


@pytest.mark.django_db(transaction=True)
def test_failing_task_reports_the_error_and_writes_nothing(celery_app, workers, catalog):
    from catalogs.exceptions import InvalidCatalogError
    from catalogs.publishing import tasks
    from catalogs.publishing.models import CatalogVersion

    bad = CATALOG.replace("kind: Catalog", "kind: NotACatalog")
    result = tasks.catalog_version_publish_task.delay(catalog.pk, bad)
    # The worker's domain error comes back through the result backend, typed, with its problems.
    with pytest.raises(InvalidCatalogError) as raised:
        result.get(timeout=TASK_TIMEOUT)
    assert str(raised.value) == "The catalog document is invalid (1 problem)."
    assert raised.value.args[1] == [
        {
            "path": "kind",
            "message": "must be Catalog or KRMFunctionCatalog, got 'NotACatalog'",
            "line": 2,
            "column": None,
        }
    ]
    assert result.failed()
    assert not CatalogVersion.objects.filter(catalog=catalog).exists()

    missing = tasks.catalog_version_verify_task.delay(2**31 - 1)
    with pytest.raises(
        CatalogVersion.DoesNotExist, match="^CatalogVersion matching query does not exist.$"
    ):
        missing.get(timeout=TASK_TIMEOUT)


def _executed(celery_app, task_name: str) -> int:
    """How many times the running workers have executed ``task_name`` (from their stats)."""
    stats = celery_app.control.inspect(timeout=5.0, **BROADCAST).stats() or {}
    assert stats, "no celery worker answered the stats request"
    return sum(worker.get("total", {}).get(task_name, 0) for worker in stats.values())
