"""Publishing valid documents (hostile and invalid ones: test_catalog_version_publish_errors)."""

import hashlib

import pytest
from django.contrib.auth.models import AnonymousUser

from catalogs.exceptions import NotAllowedError
from catalogs.publishing.models import CatalogVersion, FunctionDefinition, FunctionVersion
from catalogs.publishing.services import catalog_version_publish
from orchestrator.catalog import parse_catalog
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db


def test_first_publish_creates_version_1_with_canonical_bytes_and_digest(catalog, owner):
    document = catalog_yaml(("example.co", "SetLabels", "v1"))
    version, created = catalog_version_publish(catalog=catalog, content=document, actor=owner)
    assert created is True
    assert version.number == 1
    canonical = parse_catalog(document).canonical_bytes()
    assert bytes(version.content) == canonical
    assert version.digest == "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert version.size == len(canonical)
    assert version.document_name == "test-catalog"
    assert version.created_by == owner
    catalog.refresh_from_db()
    assert catalog.latest_version == version


def test_functions_and_derived_flags_are_recorded(catalog, owner, demo_catalog_bytes):
    version, _ = catalog_version_publish(catalog=catalog, content=demo_catalog_bytes, actor=owner)
    definitions = list(version.functions.order_by("position"))
    assert [(d.group, d.kind) for d in definitions] == [
        ("example.com", "SetNamespace"),
        ("example.com", "SetLogger"),
        ("example.com", "JavaApplication"),
    ]
    assert definitions[0].tags == ["mutator", "namespace"]
    assert definitions[0].maintainers == ["platform@example.com"]
    assert definitions[0].home == "https://example.com/functions/set-namespace"
    by_kind = {fv.kind: fv for fv in version.function_versions.all()}
    assert by_kind["SetNamespace"].runtime_kinds == ["container"]
    assert by_kind["SetNamespace"].requires_network is False
    assert by_kind["SetNamespace"].license == "Apache 2.0"
    assert by_kind["SetNamespace"].idempotent is True
    assert by_kind["SetNamespace"].schema["openAPIV3Schema"]["type"] == "object"
    assert by_kind["SetLogger"].runtime_kinds == ["exec"]
    assert len(by_kind["SetLogger"].runtime["exec"]["platforms"]) == 2
    assert by_kind["JavaApplication"].runtime_kinds == ["starlark"]
    assert by_kind["JavaApplication"].usage.endswith("/java-application/README.md")


def test_network_and_storage_needs_are_recorded(catalog, owner):
    needs = "          requireNetwork: true\n          requireStorageMount: true\n"
    document = catalog_yaml(("example.co", "Fetch", "v1")).replace(
        "      usage:", needs + "      usage:"
    )
    version, _ = catalog_version_publish(catalog=catalog, content=document, actor=owner)
    [fv] = version.function_versions.all()
    assert (fv.requires_network, fv.requires_storage_mount) == (True, True)


def test_same_content_again_returns_the_existing_version(catalog, owner):
    document = catalog_yaml(("example.co", "SetLabels", "v1"))
    first, _ = catalog_version_publish(catalog=catalog, content=document, actor=owner)
    again, created = catalog_version_publish(catalog=catalog, content=document, actor=owner)
    assert created is False
    assert again.pk == first.pk
    assert CatalogVersion.objects.count() == 1
    assert FunctionVersion.objects.count() == 1


def test_same_catalog_written_differently_is_the_same_version(catalog, owner):
    document = catalog_yaml(("example.co", "SetLabels", "v1"))
    first, _ = catalog_version_publish(catalog=catalog, content=document, actor=owner)
    # Comments and a different key order do not change the catalog, so not its canonical digest.
    lines = document.splitlines()
    reordered = "\n".join(["# a comment", lines[1], lines[0], *lines[2:]]) + "\n"
    again, created = catalog_version_publish(catalog=catalog, content=reordered, actor=owner)
    assert (again.pk, created) == (first.pk, False)


def test_new_content_is_the_next_version_and_old_versions_never_change(catalog, owner):
    v1, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=owner
    )
    v1_bytes, v1_digest = bytes(v1.content), v1.digest
    v2, created = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "B", "v1")), actor=owner
    )
    assert created is True and v2.number == 2 and v2.digest != v1_digest
    v1.refresh_from_db()
    assert (bytes(v1.content), v1.digest) == (v1_bytes, v1_digest)
    assert [f.kind for f in v1.functions.all()] == ["A"]
    catalog.refresh_from_db()
    assert catalog.latest_version == v2


def test_republishing_an_older_version_returns_it_and_keeps_latest(catalog, owner):
    first = catalog_yaml(("example.co", "A", "v1"))
    v1, _ = catalog_version_publish(catalog=catalog, content=first, actor=owner)
    v2, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "B", "v1")), actor=owner
    )
    again, created = catalog_version_publish(catalog=catalog, content=first, actor=owner)
    assert (again.pk, created) == (v1.pk, False)
    catalog.refresh_from_db()
    assert catalog.latest_version == v2


def test_the_same_document_in_two_catalogs_is_two_versions(catalog, owner):
    from tests.catalogs.factories import CatalogFactory

    twin = CatalogFactory(publisher=catalog.publisher, name="twin")
    document = catalog_yaml(("example.co", "A", "v1"))
    a, _ = catalog_version_publish(catalog=catalog, content=document, actor=owner)
    b, created = catalog_version_publish(catalog=twin, content=document, actor=owner)
    assert created is True and a.pk != b.pk and a.digest == b.digest


def test_staff_may_publish_and_is_recorded(catalog, staff_user):
    version, created = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=staff_user
    )
    assert created and version.created_by == staff_user


def test_system_caller_may_publish_without_a_user(catalog):
    version, created = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=None
    )
    assert created and version.created_by is None


@pytest.mark.parametrize("who", ["anonymous", "other"])
def test_non_owner_cannot_publish_and_nothing_is_written(catalog, other_user, who):
    actor = AnonymousUser() if who == "anonymous" else other_user
    with pytest.raises(NotAllowedError) as err:
        catalog_version_publish(
            catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=actor
        )
    assert err.value.message == "Only owners of publisher 'example-co' (or staff) may change it."
    assert not CatalogVersion.objects.exists()
    assert not FunctionDefinition.objects.exists()
    catalog.refresh_from_db()
    assert catalog.latest_version is None
