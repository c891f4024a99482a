"""A mirror's catalog changes only through sync runs: every other way to publish is refused.

The source is mirrored from the real local HTTPS upstream; the refusal is checked at each entry
point (service, API, web page, ``import_catalog``) with its exact message, and nothing changes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from catalogs.exceptions import MirrorCatalogReadOnlyError
from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import SyncRun
from catalogs.publishing import services
from catalogs.publishing.models import CatalogVersion, Publisher
from tests.catalogs.factories import catalog_yaml
from tests.catalogs.mirroring.conftest import catalog_doc

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]
OTHER = catalog_yaml(("example.co", "Injected", "v1"))


def refusal(source) -> str:
    return (
        f"Catalog 'mirrors/{source.name}' is a mirror of source '{source.name}' ({source.url}): "
        "it changes only through that source's sync runs."
    )


@pytest.fixture
def mirrored(mirror_settings, https_upstream, sync):
    """Source ``upstream`` synced once from the HTTPS upstream: its catalog has version 1."""
    url = https_upstream.serve("/catalog.yaml", catalog_doc("upstream"))
    source = mirrors.mirror_source_create(name="upstream", url=url, actor=None)
    assert sync(source).status == "succeeded"
    source.refresh_from_db()
    return source


@pytest.fixture
def unchanged(mirrored, client):
    """``unchanged()`` asserts the mirror still has only version 1, served as before."""
    served = client.get("/c/mirrors/upstream/catalog.yaml").content

    def check() -> None:
        versions = CatalogVersion.objects.filter(catalog=mirrored.catalog)
        assert list(versions.values_list("number", flat=True)) == [1]
        assert client.get("/c/mirrors/upstream/catalog.yaml").content == served

    return check


# ----------------------------------------------------------------------------- service


def test_service_refuses_system_callers_and_staff(mirrored, unchanged, staff_user):
    for actor in (None, staff_user):
        with pytest.raises(MirrorCatalogReadOnlyError) as err:
            services.catalog_version_publish(catalog=mirrored.catalog, content=OTHER, actor=actor)
        assert err.value.message == refusal(mirrored)
    unchanged()


def test_service_refuses_a_finished_run_and_another_sources_run(mirrored, unchanged):
    other = mirrors.mirror_source_create(
        name="other", url="https://127.0.0.1:9/catalog.yaml", actor=None
    )
    finished = SyncRun.objects.filter(source=mirrored).get()
    assert finished.status == SyncRun.Status.SUCCEEDED
    foreign = SyncRun.objects.create(source=other, status=SyncRun.Status.RUNNING)
    for run in (finished, foreign):
        with pytest.raises(MirrorCatalogReadOnlyError) as err:
            services.catalog_version_publish(
                catalog=mirrored.catalog, content=OTHER, actor=None, sync_run=run
            )
        assert err.value.message == refusal(mirrored)
    unchanged()


def test_syncs_still_publish_after_a_refusal(mirrored, https_upstream, sync, client):
    with pytest.raises(MirrorCatalogReadOnlyError):
        services.catalog_version_publish(catalog=mirrored.catalog, content=OTHER, actor=None)
    https_upstream.serve("/catalog.yaml", catalog_doc("upstream", kinds=("A", "B")))

    run = sync(mirrored)

    assert (run.status, run.reason, run.catalog_version.number) == ("succeeded", "", 2)
    assert b"Injected" not in client.get("/c/mirrors/upstream/catalog.yaml").content


# ----------------------------------------------------------------------------- API


def test_api_publish_is_a_409_naming_the_source(mirrored, unchanged, staff_user):
    api = APIClient()
    api.force_authenticate(staff_user)

    response = api.post(
        "/api/v1/catalogs/mirrors/upstream/versions/", OTHER, content_type="application/yaml"
    )

    assert response.status_code == 409
    assert response.json() == {"detail": refusal(mirrored)}
    unchanged()


def test_api_detail_shows_mirror_provenance(mirrored, catalog, staff_user):
    api = APIClient()

    body = api.get("/api/v1/catalogs/mirrors/upstream/").json()

    assert body["mirror"] == {
        "source": mirrored.pk,
        "name": "upstream",
        "source_url": f"http://testserver/api/v1/sources/{mirrored.pk}/",
        "upstream_url": mirrored.url,
        "verification": {"type": "none"},
        "last_synced_at": mirrored.last_synced_at.isoformat().replace("+00:00", "Z"),
    }
    # The source itself is for mirror operators only.
    assert api.get(body["mirror"]["source_url"]).status_code == 401
    operator = APIClient()
    operator.force_authenticate(staff_user)
    assert operator.get(body["mirror"]["source_url"]).json()["name"] == "upstream"
    assert api.get("/api/v1/catalogs/example-co/functions/").json()["mirror"] is None
    listed = api.get("/api/v1/catalogs/").json()["results"]
    assert {c["name"]: c["mirror"] is not None for c in listed} == {
        "functions": False,
        "upstream": True,
    }


# ----------------------------------------------------------------------------- web


def test_web_publish_shows_the_message(mirrored, unchanged, staff_user, client):
    client.force_login(staff_user)

    response = client.post(
        "/catalogs/mirrors/upstream/publish/", {"content": OTHER, "action": "publish"}
    )

    assert response.status_code == 409
    assert response.context["error"] == refusal(mirrored)
    assert refusal(mirrored).replace("'", "&#x27;") in response.content.decode()
    unchanged()


def test_web_detail_offers_no_publish_button_on_a_mirror(mirrored, staff_user, client, catalog):
    client.force_login(staff_user)
    assert "Publish a new version" not in client.get("/catalogs/mirrors/upstream/").content.decode()
    assert "Publish a new version" in client.get("/catalogs/example-co/functions/").content.decode()


# ----------------------------------------------------------------------------- import_catalog


def test_import_catalog_refuses_and_adds_no_owner(mirrored, unchanged, staff_user, tmp_path):
    path = tmp_path / "catalog.yaml"
    path.write_text(OTHER)
    args = ["import_catalog", str(path), "--publisher", "mirrors", "--catalog", "upstream"]

    with pytest.raises(CommandError) as err:
        call_command(*args, "--owner", "staff")
    assert str(err.value) == (
        "Publisher 'mirrors' is reserved: it is owned by the registry, so --owner cannot be given."
    )
    with pytest.raises(CommandError) as err:
        call_command(*args)
    assert str(err.value) == refusal(mirrored)

    assert not Publisher.objects.get(slug="mirrors").owners.exists()
    unchanged()


@pytest.mark.django_db(transaction=True)
def test_import_catalog_command_line_exits_with_the_message(tmp_path):
    """Its own process and SQLite file: exit status 1, the message on stderr, no version."""
    env = {
        "PATH": "/usr/bin:/bin",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "registry.settings.base",
        "MIRROR_ALLOWED_NETWORKS": "127.0.0.1/32",  # the source names 127.0.0.1:9
    }
    manage = [sys.executable, str(ROOT / "manage.py")]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*manage, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
        )

    assert run("migrate", "-v0").returncode == 0
    create = (
        "from catalogs.mirroring import services as mirrors; mirrors.mirror_source_create("
        "name='upstream', url='https://127.0.0.1:9/catalog.yaml', actor=None)"
    )
    assert run("shell", "-c", create).returncode == 0
    path = tmp_path / "catalog.yaml"
    path.write_text(OTHER)

    refused = run("import_catalog", str(path), "--publisher", "mirrors", "--catalog", "upstream")

    assert refused.returncode == 1
    assert refused.stderr == (
        "CommandError: Catalog 'mirrors/upstream' is a mirror of source 'upstream' "
        "(https://127.0.0.1:9/catalog.yaml): it changes only through that source's sync runs.\n"
    )
    count = "from catalogs.publishing.models import CatalogVersion as V; print(V.objects.count())"
    assert run("shell", "-v0", "-c", count).stdout == "0\n"
