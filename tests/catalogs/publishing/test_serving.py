"""The serving cache (catalogs.publishing.serving): warm pinned URLs run no query; `latest` and
signatures
are cached, and a publish or a re-sign rewrites them for every process once it commits."""

from __future__ import annotations

import hashlib

import httpx
import pytest
from django.core.cache import caches
from django.db import connection

from catalogs.publishing import serving
from catalogs.publishing.services import catalog_version_publish
from catalogs.trust import services as trust_services
from tests.catalogs.factories import catalog_yaml
from tests.live_registry import live_registry

BASE = "/c/example-co/functions"
LATEST = f"{BASE}/catalog.yaml"


@pytest.fixture
def versions(db, catalog):
    """Two published versions of example-co/functions."""
    v1, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=None
    )
    v2, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "B", "v1")), actor=None
    )
    return v1, v2


def _pinned_urls(version) -> list[str]:
    hexdigest = version.digest.removeprefix("sha256:")
    return [
        f"{BASE}/versions/{version.number}/catalog.yaml",
        f"{BASE}/sha256/{hexdigest}/catalog.yaml",
        f"{BASE}/sha256/{hexdigest.upper()}/catalog.yaml",
    ]


def test_a_warm_pinned_url_runs_no_query(client, versions, django_assert_num_queries):
    v1 = versions[0]
    for url in _pinned_urls(v1):
        client.get(url)
        client.get(url + ".sig")
        with django_assert_num_queries(0):
            response = client.get(url)
            signature = client.get(url + ".sig")
        assert response.status_code == 200
        assert response.content == bytes(v1.content)
        assert response["ETag"] == f'"{v1.digest}"'
        assert response["X-Content-Digest"] == v1.digest
        assert response["Content-Length"] == str(len(bytes(v1.content)))
        assert response["Cache-Control"] == "public, max-age=31536000, immutable"
        assert signature.status_code == 200
        assert signature.content.decode() == v1.signature
        assert signature["X-Content-Digest"] == v1.digest
        assert signature["Cache-Control"] == "public, max-age=300"


def test_a_warm_conditional_get_runs_no_query(client, versions, django_assert_num_queries):
    url = _pinned_urls(versions[0])[0]
    client.get(url)
    with django_assert_num_queries(0):
        response = client.get(url, HTTP_IF_NONE_MATCH=f'"{versions[0].digest}"')
    assert response.status_code == 304 and response.content == b""


def test_a_warm_latest_runs_no_query(client, versions, django_assert_num_queries):
    client.get(LATEST)
    client.get(LATEST + ".sig")
    with django_assert_num_queries(0):
        response = client.get(LATEST)
        signature = client.get(LATEST + ".sig")
    assert response["X-Content-Digest"] == signature["X-Content-Digest"] == versions[1].digest


def test_unknown_versions_are_asked_again_not_remembered(client, versions):
    url = f"{BASE}/versions/3/catalog.yaml"
    assert client.get(url).status_code == 404
    assert client.get(url + ".sig").status_code == 404
    v3, _ = catalog_version_publish(
        catalog=versions[0].catalog, content=catalog_yaml(("example.co", "C", "v1")), actor=None
    )
    assert client.get(url).content == bytes(v3.content)
    assert client.get(url + ".sig").content.decode() == v3.signature


def test_publish_rewrites_latest_once_it_commits(
    client, versions, catalog, django_capture_on_commit_callbacks
):
    assert client.get(LATEST)["X-Content-Digest"] == versions[1].digest
    key = serving._latest_key("example-co", "functions")
    cache = caches["serving"]
    assert cache.get(key) == versions[1].digest
    with django_capture_on_commit_callbacks(execute=True):
        v3, _ = catalog_version_publish(
            catalog=catalog, content=catalog_yaml(("example.co", "C", "v1")), actor=None
        )
        # Dropped at once; a reader that looked before the commit puts back what it saw...
        assert cache.get(key) is None
        cache.add(key, versions[1].digest)
    # ...and the commit overwrites it with what the database says now.
    assert cache.get(key) == v3.digest
    response = client.get(LATEST)
    assert response["X-Content-Digest"] == v3.digest
    assert response.content == bytes(v3.content)
    assert client.get(LATEST + ".sig")["X-Content-Digest"] == v3.digest


def test_the_same_content_again_keeps_latest(client, versions, catalog):
    client.get(LATEST)
    again, created = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=None
    )
    assert not created and again.number == 1
    assert client.get(LATEST)["X-Content-Digest"] == versions[1].digest


def test_resign_replaces_the_cached_signature(
    client, versions, django_capture_on_commit_callbacks, django_assert_num_queries
):
    v1 = versions[0]
    url = _pinned_urls(v1)[0] + ".sig"
    old = client.get(url).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        trust_services.catalog_version_sign(version=v1, resign=True)
    assert v1.signature != old  # ECDSA signatures are randomised: a re-sign is a new one
    with django_assert_num_queries(0):
        assert client.get(url).content.decode() == v1.signature


def test_another_database_never_sees_these_entries(
    client, versions, monkeypatch, django_assert_num_queries
):
    client.get(LATEST)
    client.get(f"{BASE}/versions/1/catalog.yaml")
    here = serving._latest_key("example-co", "functions")
    assert caches["serving"].get(here) == versions[1].digest
    # Same process and cache, another database's name (another xdist worker's test database).
    monkeypatch.setitem(connection.settings_dict, "NAME", "another-test-database")
    there = serving._latest_key("example-co", "functions")
    assert there != here and caches["serving"].get(there) is None
    with django_assert_num_queries(1):
        serving.serving_pinned_digest(
            publisher_slug="example-co", catalog_name="functions", number=1
        )


def test_without_cache_seconds_latest_asks_the_database(client, versions, settings):
    settings.CATALOG_SERVING_CACHE_SECONDS = 0
    client.get(LATEST)
    assert caches["serving"].get(serving._latest_key("example-co", "functions")) is None
    assert client.get(LATEST)["X-Content-Digest"] == versions[1].digest


def test_a_publish_reaches_every_gunicorn_process_through_redis(tmp_path, redis_url):
    """Two gunicorn workers share CACHE_URL's Redis: after a publish in one, none serves the
    old `latest`, though entries live 300 s (the default with a shared cache)."""
    import redis

    with live_registry(tmp_path, workers=2, threads=2, CACHE_URL=redis_url) as server:

        def publish(kind: str) -> str:
            response = httpx.post(
                f"{server.base}/api/v1/catalogs/acme/fns/versions/",
                content=catalog_yaml(("example.co", kind, "v1")).encode(),
                headers={
                    "Authorization": f"Token {server.token}",
                    "Content-Type": "application/yaml",
                },
                timeout=60,
            )
            assert response.status_code == 201, response.text
            return response.json()["digest"]

        def served() -> set[str]:
            # A new connection each time: the kernel spreads them over both workers.
            return {
                httpx.get(f"{server.base}/c/acme/fns/catalog.yaml").headers["X-Content-Digest"]
                for _ in range(20)
            }

        first = publish("One")
        assert served() == {first}
        keys = redis.Redis.from_url(redis_url).keys("*latest:acme/fns")
        assert len(keys) == 1, "latest is not cached in Redis"
        second = publish("Two")
        assert served() == {second}
        assert redis.Redis.from_url(redis_url).get(keys[0]) is not None


@pytest.fixture
def stored_artifact(db, settings, tmp_path):
    """A mirrored runtime artifact in local storage; (digest hex, bytes, storage name)."""
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from catalogs.mirroring.models import RuntimeArtifact

    # Local files (also on CI's object-storage stage: X-Accel-Redirect is for local storage).
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    }
    settings.MEDIA_ROOT = str(tmp_path)  # the storage follows MEDIA_ROOT (setting_changed)
    content = b"\x7fELF a mirrored binary" * 100
    hexdigest = hashlib.sha256(content).hexdigest()
    name = default_storage.save(f"artifacts/{hexdigest}", ContentFile(content))
    RuntimeArtifact.objects.create(
        digest=f"sha256:{hexdigest}", size=len(content), storage_name=name
    )
    return hexdigest, content, name


def test_stored_files_go_to_nginx_with_x_accel_redirect_when_set(client, settings, stored_artifact):
    hexdigest, content, name = stored_artifact
    url = f"/c/blobs/sha256/{hexdigest}"
    streamed = client.get(url)
    assert b"".join(streamed.streaming_content) == content
    assert "X-Accel-Redirect" not in streamed
    settings.SERVE_X_ACCEL_REDIRECT = "/_krm_media/"
    handed = client.get(url)
    assert handed.status_code == 200 and handed.content == b""
    assert handed["X-Accel-Redirect"] == f"/_krm_media/{name}"
    assert handed["ETag"] == f'"sha256:{hexdigest}"'
    assert handed["Cache-Control"] == "public, max-age=31536000, immutable"
    # The body is empty (nginx sends the file with its own length).
    assert handed.get("Content-Length", "0") == "0"


def test_a_missing_stored_file_is_404_not_a_redirect(client, settings, stored_artifact):
    from django.core.files.storage import default_storage

    hexdigest, _, name = stored_artifact
    default_storage.delete(name)
    settings.SERVE_X_ACCEL_REDIRECT = "/_krm_media/"
    response = client.get(f"/c/blobs/sha256/{hexdigest}")
    assert response.status_code == 404 and "X-Accel-Redirect" not in response
