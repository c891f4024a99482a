"""Celery tasks of publishing: take primary keys and plain data, call one service.

Task names are explicit and kept from the single-app layout, so queued messages and celery beat
entries written before still find their task.
"""

from __future__ import annotations

import hashlib

from celery import shared_task

from catalogs.publishing import blobstore, services
from catalogs.publishing.models import Catalog, CatalogVersion


@shared_task(name="catalogs.tasks.catalog_version_publish_task")
def catalog_version_publish_task(catalog_pk: int, content: str) -> dict:
    """Publish ``content`` to catalog ``catalog_pk`` as a system caller."""
    catalog = Catalog.objects.select_related("publisher").get(pk=catalog_pk)
    version, created = services.catalog_version_publish(
        catalog=catalog, content=content, actor=None
    )
    return {"version": version.number, "digest": version.digest, "created": created}


@shared_task(name="catalogs.tasks.catalog_version_verify_task")
def catalog_version_verify_task(version_pk: int) -> dict:
    """Re-hash a stored version's bytes and report whether they still match its digest."""
    version = CatalogVersion.objects.get(pk=version_pk)
    content = blobstore.blob_read(version.digest) or b""
    actual = "sha256:" + hashlib.sha256(content).hexdigest()
    return {"version": version.number, "digest": version.digest, "ok": actual == version.digest}
