"""Quotas a user cannot talk their way around: OCI upload sessions (count and bytes), a GC that
no refreshing postpones, pending contributions and the contribution rate. Each is a 429 that
names its setting, and nothing is stored past it."""

# ruff: noqa: F811

from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from catalogs.distribution.models import OciUpload
from catalogs.distribution.services import oci_uploads_gc
from catalogs.review.models import Contribution
from tests.catalogs.factories import api_token_key
from tests.catalogs.review.contribution_fixtures import (  # noqa: F401 (fixtures)
    DEFINITION,
    contributor,
    published,
)

pytestmark = pytest.mark.django_db

UPLOADS = "/v2/example-co/functions/blobs/uploads/"


@pytest.fixture
def basic(owner, catalog) -> str:
    key = api_token_key(owner)
    return "Basic " + base64.b64encode(f"owner:{key}".encode()).decode()


def _error(response) -> tuple[int, str, str]:
    error = response.json()["errors"][0]
    return response.status_code, error["code"], error["message"]


def test_upload_sessions_per_user_are_capped(client, basic, settings):
    settings.OCI_UPLOAD_SESSIONS_PER_USER = 3
    for _ in range(3):
        assert client.post(UPLOADS, HTTP_AUTHORIZATION=basic).status_code == 202
    refused = client.post(UPLOADS, HTTP_AUTHORIZATION=basic)
    assert _error(refused) == (
        429,
        "TOOMANYREQUESTS",
        "you have 3 upload sessions open, the most allowed (OCI_UPLOAD_SESSIONS_PER_USER): "
        "finish or cancel one, or wait for the garbage collection of idle ones (60 minutes)",
    )
    assert OciUpload.objects.count() == 3


def test_bytes_held_in_upload_sessions_are_capped(client, basic, settings):
    settings.OCI_UPLOAD_BYTES_PER_USER = 1000
    first = client.post(UPLOADS, HTTP_AUTHORIZATION=basic)["Location"]
    second = client.post(UPLOADS, HTTP_AUTHORIZATION=basic)["Location"]
    octets = "application/octet-stream"
    ok = client.patch(first, data=b"x" * 800, content_type=octets, HTTP_AUTHORIZATION=basic)
    assert ok.status_code == 202
    refused = client.patch(second, data=b"y" * 300, content_type=octets, HTTP_AUTHORIZATION=basic)
    assert _error(refused) == (
        429,
        "TOOMANYREQUESTS",
        "your open upload sessions would hold 1100 bytes, over the quota of 1000 bytes "
        "(OCI_UPLOAD_BYTES_PER_USER): finish or cancel a session first",
    )
    assert sorted(OciUpload.objects.values_list("size", flat=True)) == [0, 800]


def test_a_session_kept_busy_is_collected_all_the_same(client, basic, settings):
    location = client.post(UPLOADS, HTTP_AUTHORIZATION=basic)["Location"]
    upload = OciUpload.objects.get()
    # Opened five hours ago, written to a second ago: idle for no time at all.
    OciUpload.objects.filter(pk=upload.pk).update(
        created_at=timezone.now() - timedelta(hours=5), updated_at=timezone.now()
    )
    assert oci_uploads_gc() == (1, 0)
    gone = client.get(location, HTTP_AUTHORIZATION=basic)
    assert _error(gone)[:2] == (404, "BLOB_UPLOAD_UNKNOWN")


def _submit(client, n: int):
    content = DEFINITION.replace("kind: SetOwner", f"kind: SetOwner{n}")
    return client.post(
        "/api/v1/contributions/",
        {"publisher": "example-co", "catalog": "functions", "definition": content},
        format="json",
    )


def test_pending_contributions_per_user_are_capped(published, contributor, settings):
    settings.CONTRIBUTIONS_PENDING_PER_USER = 2
    client = APIClient()
    client.force_authenticate(contributor)
    assert [_submit(client, n).status_code for n in range(2)] == [201, 201]
    refused = _submit(client, 2)
    assert (refused.status_code, refused.json()) == (
        429,
        {
            "detail": "You have 2 contributions waiting for review, the most allowed "
            "(CONTRIBUTIONS_PENDING_PER_USER): wait until one is reviewed."
        },
    )
    assert Contribution.objects.count() == 2


def test_contributions_per_user_are_rate_limited(published, contributor, settings):
    settings.CONTRIBUTION_RATE_LIMIT = "3/hour"
    client = APIClient()
    client.force_authenticate(contributor)
    assert [_submit(client, n).status_code for n in range(3)] == [201, 201, 201]
    refused = _submit(client, 3)
    assert refused.status_code == 429
    detail = refused.json()["detail"]
    assert detail.startswith(
        "Too many contributions: at most 3/hour per user (CONTRIBUTION_RATE_LIMIT); try again in "
    )
    assert 3590 <= int(detail.rsplit(" ", 2)[-2]) <= 3600
    assert Contribution.objects.count() == 3


def test_a_publishers_storage_is_capped_for_its_users(client, basic, catalog, owner, settings):
    from catalogs.distribution.models import OciBlob
    from catalogs.exceptions import QuotaExceededError
    from catalogs.publishing.models import CatalogVersion
    from catalogs.publishing.services import catalog_version_publish
    from tests.catalogs.factories import catalog_yaml

    first = catalog_yaml(("example.co", "First", "v1"))
    catalog_version_publish(catalog=catalog, content=first, actor=owner)
    used = CatalogVersion.objects.get().size
    settings.PUBLISHER_STORAGE_MAX_BYTES = used + 100
    second = catalog_yaml(("example.co", "Second", "v1"))
    with pytest.raises(QuotaExceededError) as refused:
        catalog_version_publish(catalog=catalog, content=second, actor=owner)
    assert refused.value.message.endswith(
        f"over its storage quota of {used + 100} bytes (PUBLISHER_STORAGE_MAX_BYTES); ask the "
        "registry's staff for more."
    )
    assert CatalogVersion.objects.count() == 1
    # A system caller (an import, a mirror sync) is not held to it.
    catalog_version_publish(catalog=catalog, content=second, actor=None)
    # Nor are OCI uploads past it allowed.
    blob = b"z" * 200
    import hashlib

    digest = "sha256:" + hashlib.sha256(blob).hexdigest()
    blobs = list(OciBlob.objects.values_list("digest", flat=True))  # the signatures' own
    response = client.post(
        f"{UPLOADS}?digest={digest}",
        data=blob,
        content_type="application/octet-stream",
        HTTP_AUTHORIZATION=basic,
    )
    assert _error(response)[:2] == (429, "TOOMANYREQUESTS")
    assert "(PUBLISHER_STORAGE_MAX_BYTES)" in _error(response)[2]
    assert list(OciBlob.objects.values_list("digest", flat=True)) == blobs
