"""The distribution app takes over its models from the catalogs app, with their tables
(``db_table`` kept): this changes the migration state only, not the database."""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("catalogs", "0015_object_storage"),
        ("publishing", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables exist (made by the catalogs app's migrations): state only.
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="OciManifest",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("digest", models.CharField(max_length=71)),
                        ("media_type", models.CharField(max_length=255)),
                        ("size", models.PositiveIntegerField()),
                        (
                            "subject_digest",
                            models.CharField(blank=True, db_index=True, max_length=71),
                        ),
                        ("artifact_type", models.CharField(blank=True, max_length=255)),
                        ("annotations", models.JSONField(blank=True, default=dict)),
                        ("references", models.JSONField(blank=True, default=list)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "catalog",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="oci_manifests",
                                to="publishing.catalog",
                            ),
                        ),
                        (
                            "catalog_version",
                            models.OneToOneField(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="oci_manifest",
                                to="publishing.catalogversion",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_ocimanifest",
                        "ordering": ["catalog", "created_at", "pk"],
                    },
                ),
                migrations.CreateModel(
                    name="OciTag",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("name", models.CharField(max_length=128)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "catalog",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="oci_tags",
                                to="publishing.catalog",
                            ),
                        ),
                        (
                            "manifest",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="tags",
                                to="distribution.ocimanifest",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_ocitag",
                        "ordering": ["catalog", "name"],
                    },
                ),
                migrations.CreateModel(
                    name="OciUpload",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("uuid", models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                        ("size", models.PositiveIntegerField(default=0)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "catalog",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="oci_uploads",
                                to="publishing.catalog",
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_ociupload",
                        "ordering": ["created_at"],
                    },
                ),
                migrations.CreateModel(
                    name="OciBlob",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("digest", models.CharField(max_length=71)),
                        ("size", models.PositiveIntegerField()),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "catalog",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="oci_blobs",
                                to="publishing.catalog",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_ociblob",
                        "ordering": ["catalog", "digest"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("catalog", "digest"), name="oci_blob_digest"
                            )
                        ],
                    },
                ),
                migrations.AddConstraint(
                    model_name="ocimanifest",
                    constraint=models.UniqueConstraint(
                        fields=("catalog", "digest"), name="oci_manifest_digest"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="ocitag",
                    constraint=models.UniqueConstraint(
                        fields=("catalog", "name"), name="oci_tag_name"
                    ),
                ),
            ],
        ),
    ]
