"""Migration 0016 hands every model of the single catalogs app to its domain app: every row of
every model, the M2M links, the content types (so granted permissions follow) and the stored bytes
survive, and the move can be undone. Runs on SQLite here and on PostgreSQL in CI's third run."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from catalogs.publishing import blobstore

DOMAIN_APPS = ("publishing", "distribution", "trust", "mirroring", "review")
BEFORE = [("catalogs", "0015_object_storage")] + [(app, None) for app in DOMAIN_APPS]
AFTER = [("catalogs", "0016_models_to_domain_apps")]
MOVED = {
    "publishing": [
        "Publisher", "Catalog", "SigningKey", "CatalogVersion", "FunctionDefinition",
        "FunctionVersion", "VerificationRequest", "PublisherEvent",
    ],
    "review": ["Contribution", "ReviewEvent", "TrialRun"],
    "mirroring": ["MirrorSource", "SyncRun", "RuntimeArtifact", "DriftEvent"],
    "trust": ["RevocationList", "Revocation"],
    "distribution": ["OciManifest", "OciTag", "OciBlob", "OciUpload"],
}  # fmt: skip


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    state_at = [(app, name) for app, name in targets if name is not None]
    return executor.loader.project_state(state_at).apps


def _digest(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


def _populate(old, user) -> dict[str, dict]:
    """One row (or two) of every model at 0015, through the historical models; their values."""
    m = lambda name: old.get_model("catalogs", name)  # noqa: E731
    publisher = m("Publisher").objects.create(slug="acme", display_name="Acme", verified=True)
    publisher.owners.add(user.pk)
    catalog = m("Catalog").objects.create(publisher=publisher, name="functions", description="d")
    key = m("SigningKey").objects.create(
        key_id="0123456789abcdef", public_key_pem="PEM", current=True
    )
    document = b"apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\n"
    blobstore.blob_put(content=document, digest=_digest(document))
    version = m("CatalogVersion").objects.create(
        catalog=catalog, number=1, digest=_digest(document), size=len(document),
        signature="c2ln", signing_key=key,
    )  # fmt: skip
    catalog.latest_version = version
    catalog.save()
    fn = m("FunctionDefinition").objects.create(
        catalog_version=version, position=0, group="example.com", kind="SetNamespace"
    )
    m("FunctionVersion").objects.create(
        catalog_version=version, function=fn, group="example.com", kind="SetNamespace",
        name="v1", position=0,
    )  # fmt: skip
    m("VerificationRequest").objects.create(publisher=publisher, requested_by_id=user.pk)
    m("PublisherEvent").objects.create(publisher=publisher, action="owner-added")
    contribution = m("Contribution").objects.create(
        catalog=catalog, author_id=user.pk, content="spec: {}", group="example.com", kind="K"
    )
    m("ReviewEvent").objects.create(contribution=contribution, action="submitted")
    m("TrialRun").objects.create(
        contribution=contribution, revision=1, example="built-in", runtime="exec", status="passed"
    )
    mirror_catalog = m("Catalog").objects.create(publisher=publisher, name="mirrored")
    source = m("MirrorSource").objects.create(
        name="upstream", url="https://example.com/c.yaml", catalog=mirror_catalog
    )
    run = m("SyncRun").objects.create(source=source, status="succeeded")
    artifact = m("RuntimeArtifact").objects.create(
        digest=_digest(b"artifact"), size=8, storage_name="blobs/x"
    )
    artifact.catalog_versions.add(version)
    m("DriftEvent").objects.create(
        source=source, run=run, image="i", old_digest="a", new_digest="b"
    )
    m("RevocationList").objects.create(
        catalog=catalog, sequence=1, digest=_digest(b"list"), signature="c2ln", signing_key=key
    )
    m("Revocation").objects.create(catalog=catalog, sequence=1, reason="security")
    manifest = b'{"schemaVersion": 2}'
    blobstore.blob_put(content=manifest, digest=_digest(manifest))
    row = m("OciManifest").objects.create(
        catalog=catalog, digest=_digest(manifest), size=len(manifest),
        media_type="application/vnd.oci.image.manifest.v1+json", catalog_version=version,
    )  # fmt: skip
    m("OciTag").objects.create(catalog=catalog, name="latest", manifest=row)
    m("OciBlob").objects.create(catalog=catalog, digest=_digest(b"blob"), size=4)
    m("OciUpload").objects.create(catalog=catalog, size=0)
    return {
        name: {
            obj.pk: {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}
            for obj in m(name).objects.all()
        }
        for names in MOVED.values()
        for name in names
    }


@pytest.fixture
def latest():
    """The leaf migrations; the schema goes back to them after the test, whatever happened (every
    later test of this worker needs the whole schema)."""
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    yield leaves
    _migrate(leaves)


@pytest.mark.django_db(transaction=True)
def test_every_row_link_permission_and_blob_survives_the_move(settings, tmp_path, latest):
    settings.MEDIA_ROOT = str(tmp_path)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    }
    old = _migrate(BEFORE)
    from django.apps import apps as global_apps
    from django.contrib.auth.management import create_permissions
    from django.contrib.auth.models import Permission, User
    from django.contrib.contenttypes.management import create_contenttypes
    from django.contrib.contenttypes.models import ContentType

    # The database as the single-app layout left it: content types and permissions of catalogs.
    ContentType.objects.filter(app_label__in=DOMAIN_APPS).delete()
    for name in [n.lower() for names in MOVED.values() for n in names]:
        ContentType.objects.get_or_create(app_label="catalogs", model=name)
    review_ct = ContentType.objects.get(app_label="catalogs", model="contribution")
    permission, _ = Permission.objects.get_or_create(
        content_type=review_ct, codename="review_contribution",
        defaults={"name": "Can approve or reject contributions"},
    )  # fmt: skip
    user = User.objects.create_user("reviewer")
    user.user_permissions.add(permission)
    before = _populate(old, user)

    new = _migrate(AFTER)
    for app, names in MOVED.items():
        for name in names:
            rows = {
                obj.pk: {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}
                for obj in new.get_model(app, name).objects.all()
            }
            assert rows == before[name], f"{app}.{name} rows changed"
    assert [u.pk for u in new.get_model("publishing", "Publisher").objects.get().owners.all()] == [
        user.pk
    ]
    artifact = new.get_model("mirroring", "RuntimeArtifact").objects.get()
    assert artifact.catalog_versions.count() == 1
    # Content types moved (not duplicated), so the permission granted before still holds.
    assert not ContentType.objects.filter(app_label="catalogs").exists()
    for app_config in global_apps.get_app_configs():
        create_contenttypes(app_config, verbosity=0)
        create_permissions(app_config, verbosity=0)
    assert Permission.objects.filter(codename="review_contribution").count() == 1
    user = User.objects.get(pk=user.pk)
    assert user.has_perm("review.review_contribution")
    # The bytes are where they were.
    for digest, size in new.get_model("publishing", "CatalogVersion").objects.values_list(
        "digest", "size"
    ):
        assert len(blobstore.blob_read(digest) or b"") == size

    # And back: the catalogs app owns the same rows again.
    back = _migrate(BEFORE)
    assert back.get_model("catalogs", "CatalogVersion").objects.get().digest == _digest(
        b"apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\n"
    )
    assert ContentType.objects.filter(app_label="catalogs", model="contribution").exists()
    _migrate(latest)
