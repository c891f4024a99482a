"""Serving catalog versions at /c/<publisher>/<catalog>/...: bytes, digest headers, caching, 304."""

import hashlib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalogs.publishing.services import catalog_version_publish
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

LATEST = "/c/example-co/functions/catalog.yaml"


@pytest.fixture
def versions(catalog):
    """Two published versions of example-co/functions."""
    v1, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=None
    )
    v2, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "B", "v1")), actor=None
    )
    return v1, v2


def _hex(version) -> str:
    return version.digest.removeprefix("sha256:")


def _assert_serves(response, version) -> None:
    body = response.content
    assert response.status_code == 200
    assert response["Content-Type"] == "application/yaml"
    assert body == bytes(version.content)
    assert response["X-Content-Digest"] == "sha256:" + hashlib.sha256(body).hexdigest()
    assert response["X-Content-Digest"] == version.digest
    assert response["ETag"] == f'"{version.digest}"'


def test_latest_serves_the_newest_version_with_a_short_max_age(client, versions, settings):
    settings.CATALOG_LATEST_MAX_AGE = 30
    response = client.get(LATEST)
    _assert_serves(response, versions[1])
    assert response["Cache-Control"] == "public, max-age=30"


def test_pinned_by_number_is_immutable(client, versions):
    response = client.get("/c/example-co/functions/versions/1/catalog.yaml")
    _assert_serves(response, versions[0])
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"


def test_pinned_by_digest_is_immutable(client, versions):
    response = client.get(f"/c/example-co/functions/sha256/{_hex(versions[0])}/catalog.yaml")
    _assert_serves(response, versions[0])
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"


def test_digest_in_upper_case_is_the_same_version(client, versions):
    response = client.get(
        f"/c/example-co/functions/sha256/{_hex(versions[0]).upper()}/catalog.yaml"
    )
    _assert_serves(response, versions[0])


@pytest.mark.parametrize(
    ("url", "cache_control"),
    [
        ("/c/example-co/functions/catalog.yaml", "public, max-age=60"),
        ("/c/example-co/functions/versions/2/catalog.yaml", "public, max-age=31536000, immutable"),
    ],
)
def test_conditional_get_with_the_etag_answers_304(client, versions, url, cache_control):
    etag = client.get(url)["ETag"]
    response = client.get(url, headers={"If-None-Match": etag})
    assert response.status_code == 304
    assert response.content == b""
    assert response["ETag"] == etag == f'"{versions[1].digest}"'
    assert response["X-Content-Digest"] == versions[1].digest
    assert response["Cache-Control"] == cache_control


@pytest.mark.parametrize(
    "header",
    ['W/"{d}"', '"sha256:0000", "{d}"', "*"],
)
def test_weak_listed_and_star_etags_match(client, versions, header):
    value = header.format(d=versions[1].digest)
    assert client.get(LATEST, headers={"If-None-Match": value}).status_code == 304


def test_stale_etag_gets_the_new_body(client, versions):
    old = f'"{versions[0].digest}"'
    response = client.get(LATEST, headers={"If-None-Match": old})
    _assert_serves(response, versions[1])


def test_head_has_the_same_headers(client, versions):
    response = client.head(LATEST)
    assert response.status_code == 200
    assert response["X-Content-Digest"] == versions[1].digest


@pytest.mark.parametrize("method", ["post", "put", "delete", "patch"])
def test_writes_are_not_allowed(client, versions, method):
    response = getattr(client, method)(LATEST)
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


@pytest.mark.parametrize(
    "url",
    [
        "/c/example-co/functions/versions/3/catalog.yaml",
        "/c/example-co/nope/catalog.yaml",
        "/c/nobody/functions/catalog.yaml",
        "/c/example-co/functions/sha256/" + "0" * 64 + "/catalog.yaml",
        "/c/example-co/functions/sha256/abc/catalog.yaml",
    ],
)
def test_unknown_versions_are_404(client, versions, url):
    assert client.get(url).status_code == 404


def test_a_digest_of_another_catalog_is_404(client, versions, publisher):
    from tests.catalogs.factories import CatalogFactory

    other = CatalogFactory(publisher=publisher, name="other")
    v, _ = catalog_version_publish(
        catalog=other, content=catalog_yaml(("example.co", "Other", "v1")), actor=None
    )
    url = f"/c/example-co/functions/sha256/{_hex(v)}/catalog.yaml"
    assert client.get(url).status_code == 404


def test_catalog_without_versions_is_404(client, catalog):
    assert client.get(LATEST).status_code == 404


def test_latest_is_no_query_once_cached(client, versions):
    client.get(LATEST)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(LATEST)
    assert response.status_code == 200
    assert len(queries) == 0, [q["sql"] for q in queries]


def test_latest_follows_a_new_publish_immediately(client, versions, catalog):
    client.get(LATEST)
    v3, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "C", "v1")), actor=None
    )
    _assert_serves(client.get(LATEST), v3)


def test_served_bytes_parse_back_to_the_same_digest(client, versions):
    from orchestrator.catalog import parse_catalog

    response = client.get(LATEST)
    parsed = parse_catalog(response.content)
    assert parsed.digest == response["X-Content-Digest"]
    assert parsed.canonical_bytes() == response.content
