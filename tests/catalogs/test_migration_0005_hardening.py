"""The issue-10 data migration repairs databases made before slugs and URLs were checked."""

from __future__ import annotations

import importlib
import logging

import pytest
from django.apps import apps

from catalogs.mirroring.models import MirrorSource, SyncRun
from catalogs.publishing.models import Catalog
from tests.catalogs.factories import CatalogFactory, PublisherFactory, UserFactory

pytestmark = pytest.mark.django_db

migration = importlib.import_module("catalogs.migrations.0005_hardening")


class _CatalogsApps:
    """The app registry as migration 0005 saw it: its models were the catalogs app's, and are
    now in the domain apps (same tables)."""

    def get_model(self, app_label: str, name: str):
        assert app_label == "catalogs"
        for label in ("publishing", "mirroring", "review", "trust", "distribution"):
            try:
                return apps.get_model(label, name)
            except LookupError:
                continue
        raise LookupError(name)


SECRET = "ghp_very-secret-token"


def test_squatted_reserved_publishers_go_back_to_the_registry(caplog):
    squatter = UserFactory(username="squatter")
    honest = UserFactory(username="honest")
    mirrors = PublisherFactory(slug="mirrors", owners=[squatter])
    official = PublisherFactory(slug="official", owners=[squatter])
    acme = PublisherFactory(slug="acme", owners=[honest])
    CatalogFactory(publisher=mirrors, name="fake")

    with caplog.at_level(logging.WARNING, logger="catalogs.migrations"):
        migration.repair(_CatalogsApps(), None)

    assert mirrors.owners.count() == official.owners.count() == 0
    assert list(acme.owners.all()) == [honest]
    assert "Reserved publisher 'mirrors' was owned by squatter" in caplog.text
    assert "Catalog 'mirrors/fake' is not a mirror but sits under the mirror publisher" in (
        caplog.text
    )
    assert Catalog.objects.filter(name="fake").exists()  # reported, not deleted


def test_credentials_leave_source_urls_descriptions_and_runs(caplog):
    publisher = PublisherFactory(slug="mirrors")
    leaky = f"https://bot:{SECRET}@git.example.co/catalog.yaml"
    catalog = CatalogFactory(publisher=publisher, name="leaky", description=f"Mirror of {leaky}")
    source = MirrorSource.objects.create(
        name="leaky", url=leaky, catalog=catalog, last_digest="sha256:" + "a" * 64
    )
    run = SyncRun.objects.create(
        source=source,
        status=SyncRun.Status.FAILED,
        reason=f"GET {leaky} answered HTTP 500",
        provenance={"url": leaky, "nested": [leaky]},
    )
    pinned = "oci://registry.example.co/c/catalog@sha256:" + "b" * 64
    clean = MirrorSource.objects.create(
        name="clean", url=pinned, catalog=CatalogFactory(publisher=publisher, name="clean")
    )

    with caplog.at_level(logging.WARNING, logger="catalogs.migrations"):
        migration.repair(_CatalogsApps(), None)

    stripped = "https://git.example.co/catalog.yaml"
    source.refresh_from_db()
    run.refresh_from_db()
    catalog.refresh_from_db()
    assert (source.url, source.last_digest) == (stripped, "")
    assert catalog.description == f"Mirror of {stripped}"
    assert run.reason == f"GET {stripped} answered HTTP 500"
    assert run.provenance == {"url": stripped, "nested": [stripped]}
    assert MirrorSource.objects.get(pk=clean.pk).url == pinned
    assert SECRET not in caplog.text
    assert "Mirror source 'leaky': credentials removed from its URL" in caplog.text
