"""Celery tasks, run in this process with ``apply()`` in every mode.

The round trip through Redis to a real worker is tests/services/test_services.py (CI run 3).
"""

import pytest

from catalogs.exceptions import InvalidCatalogError
from catalogs.publishing import tasks
from catalogs.publishing.models import CatalogVersion
from tests.catalogs.bad_documents import BAD_DOCUMENTS
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db


def test_publish_task_publishes_and_is_idempotent(catalog):
    document = catalog_yaml(("example.co", "A", "v1"))
    first = tasks.catalog_version_publish_task.apply(args=(catalog.pk, document)).get()
    again = tasks.catalog_version_publish_task.apply(args=(catalog.pk, document)).get()
    version = CatalogVersion.objects.get()
    assert first == {"version": 1, "digest": version.digest, "created": True}
    assert again == {"version": 1, "digest": version.digest, "created": False}


def test_publish_task_with_a_bad_document_raises_and_writes_nothing(catalog):
    with pytest.raises(InvalidCatalogError):
        tasks.catalog_version_publish_task.apply(args=(catalog.pk, BAD_DOCUMENTS["empty"][0])).get()
    assert not CatalogVersion.objects.exists()


def test_verify_task_detects_tampered_bytes(catalog):
    document = catalog_yaml(("example.co", "A", "v1"))
    result = tasks.catalog_version_publish_task.apply(args=(catalog.pk, document)).get()
    version = CatalogVersion.objects.get()
    ok = tasks.catalog_version_verify_task.apply(args=(version.pk,)).get()
    assert ok == {"version": 1, "digest": result["digest"], "ok": True}
    # Only a write to the object store behind the registry's back can change stored bytes; the
    # verifier must notice it.
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from catalogs.publishing import blobstore

    name = blobstore.blob_name(version.digest)
    default_storage.delete(name)
    default_storage.save(name, ContentFile(b"tampered"))
    assert tasks.catalog_version_verify_task.apply(args=(version.pk,)).get()["ok"] is False


def test_invalid_catalog_error_survives_celerys_json_round_trip():
    from celery.backends.base import Backend

    from registry.celery import app

    backend = Backend(app=app, serializer="json")
    err = InvalidCatalogError(
        "The catalog document is invalid (1 problem).",
        [{"path": "kind", "message": "must be Catalog", "line": None, "column": None}],
    )
    meta = backend.prepare_exception(err)
    rebuilt = backend.exception_to_python(meta)
    assert type(rebuilt) is InvalidCatalogError
    assert str(rebuilt) == "The catalog document is invalid (1 problem)."
    assert [p.as_dict() for p in rebuilt.problems] == [
        {"path": "kind", "message": "must be Catalog", "line": None, "column": None}
    ]
