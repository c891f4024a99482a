"""Runtime artifacts mirrored before they were TUF targets become targets of the role of the
publisher whose catalog serves them (``<publisher>/<catalog>/blobs/sha256/<hex>``); the next
TUF refresh signs those roles (``catalogs.trust.tuf.tuf_refresh``). Container image blobs
(``oci://`` sources) are pinned by their manifests and are not targets."""

from django.db import migrations


def record(apps, schema_editor):
    RuntimeArtifact = apps.get_model("mirroring", "RuntimeArtifact")
    TufTarget = apps.get_model("trust", "TufTarget")
    links = RuntimeArtifact.catalog_versions.through.objects.exclude(
        runtimeartifact__source_uri__startswith="oci://"
    ).values_list(
        "runtimeartifact__digest",
        "runtimeartifact__size",
        "catalogversion__catalog__publisher_id",
        "catalogversion__catalog__publisher__slug",
        "catalogversion__catalog__name",
    )
    for digest, size, publisher_id, slug, name in links.distinct():
        TufTarget.objects.update_or_create(
            path=f"{slug}/{name}/blobs/sha256/{digest.removeprefix('sha256:')}",
            defaults={
                "publisher_id": publisher_id,
                "length": size,
                "sha256": digest.removeprefix("sha256:"),
                "custom": {},
            },
        )


class Migration(migrations.Migration):
    dependencies = [
        ("mirroring", "0003_mirrorsource_kind"),
        # The targets' signed custom objects: a column the rows written here must fill.
        ("trust", "0003_tuftarget_custom"),
    ]

    operations = [migrations.RunPython(record, migrations.RunPython.noop)]
