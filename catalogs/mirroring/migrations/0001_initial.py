"""The mirroring app takes over its models from the catalogs app, with their tables
(``db_table`` kept): this changes the migration state only, not the database."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("catalogs", "0015_object_storage"),
        ("publishing", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables exist (made by the catalogs app's migrations): state only.
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="MirrorSource",
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
                        ("name", models.SlugField(max_length=100, unique=True)),
                        ("url", models.CharField(max_length=2048)),
                        ("digest", models.CharField(blank=True, max_length=100)),
                        ("cosign_public_key", models.TextField(blank=True)),
                        ("sigstore_identity", models.CharField(blank=True, max_length=1024)),
                        ("sigstore_issuer", models.CharField(blank=True, max_length=1024)),
                        ("mirror_runtimes", models.BooleanField(default=False)),
                        ("enabled", models.BooleanField(default=True)),
                        ("interval_minutes", models.PositiveIntegerField(default=60)),
                        ("last_digest", models.CharField(blank=True, max_length=100)),
                        ("last_etag", models.CharField(blank=True, max_length=1024)),
                        ("last_modified", models.CharField(blank=True, max_length=100)),
                        ("last_synced_at", models.DateTimeField(blank=True, null=True)),
                        ("verification", models.JSONField(blank=True, default=dict)),
                        ("image_digests", models.JSONField(blank=True, default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "catalog",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="mirror_source",
                                to="publishing.catalog",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_mirrorsource",
                        "ordering": ["name"],
                        "permissions": [
                            ("operate_mirrors", "Can create, change and sync mirror sources")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="RuntimeArtifact",
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
                        ("digest", models.CharField(max_length=71, unique=True)),
                        ("size", models.PositiveBigIntegerField()),
                        ("storage_name", models.CharField(max_length=255)),
                        ("source_uri", models.CharField(blank=True, max_length=2048)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "catalog_versions",
                            models.ManyToManyField(
                                blank=True,
                                related_name="runtime_artifacts",
                                to="publishing.catalogversion",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_runtimeartifact",
                        "ordering": ["digest"],
                    },
                ),
                migrations.CreateModel(
                    name="SyncRun",
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
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("queued", "Queued"),
                                    ("running", "Running"),
                                    ("succeeded", "Succeeded"),
                                    ("unchanged", "Unchanged"),
                                    ("failed", "Failed"),
                                ],
                                default="queued",
                                max_length=20,
                            ),
                        ),
                        ("reason", models.TextField(blank=True)),
                        ("digest", models.CharField(blank=True, max_length=100)),
                        ("bytes", models.PositiveBigIntegerField(default=0)),
                        ("function_count", models.PositiveIntegerField(default=0)),
                        ("artifact_count", models.PositiveIntegerField(default=0)),
                        ("provenance", models.JSONField(blank=True, default=dict)),
                        ("verification", models.JSONField(blank=True, default=dict)),
                        ("attempts", models.PositiveIntegerField(default=0)),
                        ("deferrals", models.PositiveIntegerField(default=0)),
                        ("deferred_until", models.DateTimeField(blank=True, null=True)),
                        ("queued_at", models.DateTimeField(auto_now_add=True)),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "catalog_version",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="sync_runs",
                                to="publishing.catalogversion",
                            ),
                        ),
                        (
                            "source",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="runs",
                                to="mirroring.mirrorsource",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_syncrun",
                        "ordering": ["-queued_at", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="DriftEvent",
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
                        ("image", models.CharField(max_length=2048)),
                        ("old_digest", models.CharField(max_length=100)),
                        ("new_digest", models.CharField(max_length=100)),
                        ("detected_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "source",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="drift_events",
                                to="mirroring.mirrorsource",
                            ),
                        ),
                        (
                            "run",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="drift_events",
                                to="mirroring.syncrun",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_driftevent",
                        "ordering": ["-detected_at", "-id"],
                    },
                ),
                migrations.AddIndex(
                    model_name="syncrun",
                    index=models.Index(fields=["source", "status"], name="sync_run_source_status"),
                ),
            ],
        ),
    ]
