"""Every stored byte moves from the database to the object store (catalogs.publishing.blobstore).

Forward: each version's, revocation list's, OCI manifest's and blob's bytes are written to the
default storage under their digest (and checked: the digest is recomputed, the stored size read
back) before the columns are dropped; a failed write stops the migration with nothing dropped.
An upload session's bytes so far become the object ``uploads/<uuid>``.
Backward: the columns come back and are filled from the store (the objects stay where they are).
"""

from django.db import migrations, models

_TABLES = [
    ("CatalogVersion", "catalogversion"),
    ("RevocationList", "revocationlist"),
    ("OciManifest", "ocimanifest"),
    ("OciBlob", "ociblob"),
]


def _to_store(apps, schema_editor):
    from catalogs.publishing import blobstore

    for model_name, _ in _TABLES:
        model = apps.get_model("catalogs", model_name)
        rows = model.objects.values_list("pk", "digest", "content").order_by("pk")
        for pk, digest, content in rows.iterator(chunk_size=100):
            try:
                blobstore.blob_put(content=bytes(content), digest=digest)
            except blobstore.StorageError as exc:
                raise RuntimeError(f"{model_name} #{pk}: {exc}") from exc
    upload = apps.get_model("catalogs", "OciUpload")
    for uuid, content in upload.objects.values_list("uuid", "content").iterator(chunk_size=100):
        if content:
            blobstore.upload_write(upload_id=str(uuid), content=bytes(content))


def _from_store(apps, schema_editor):
    from catalogs.publishing import blobstore

    for model_name, _ in _TABLES:
        model = apps.get_model("catalogs", model_name)
        for pk, digest in model.objects.values_list("pk", "digest").iterator(chunk_size=100):
            content = blobstore.blob_read(digest)
            if content is None:
                raise RuntimeError(f"{model_name} #{pk}: {digest} is not in the object store")
            model.objects.filter(pk=pk).update(content=content)
    upload = apps.get_model("catalogs", "OciUpload")
    for pk, uuid, size in upload.objects.values_list("pk", "uuid", "size").iterator():
        content = blobstore.upload_read(upload_id=str(uuid), size=size)
        upload.objects.filter(pk=pk).update(content=content)


class Migration(migrations.Migration):
    dependencies = [
        ("catalogs", "0014_upstream_rate_limits"),
    ]

    operations = [
        # A default first, so that going back can add the columns to tables that have rows.
        *(
            migrations.AlterField(
                model_name=name, name="content", field=models.BinaryField(default=b"")
            )
            for _, name in _TABLES
        ),
        migrations.RunPython(_to_store, _from_store),
        *(migrations.RemoveField(model_name=name, name="content") for _, name in _TABLES),
        migrations.RemoveField(model_name="ociupload", name="content"),
    ]
