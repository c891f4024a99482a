"""The review app takes over its models from the catalogs app, with their tables
(``db_table`` kept): this changes the migration state only, not the database."""

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
                    name="Contribution",
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
                        ("content", models.TextField()),
                        ("group", models.CharField(max_length=253)),
                        ("kind", models.CharField(max_length=253)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("pending", "Pending"),
                                    ("approved", "Approved"),
                                    ("rejected", "Rejected"),
                                ],
                                default="pending",
                                max_length=20,
                            ),
                        ),
                        ("reason", models.TextField(blank=True)),
                        ("reviewed_at", models.DateTimeField(blank=True, null=True)),
                        ("revision", models.PositiveIntegerField(default=1)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "author",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="contributions",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "catalog",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="contributions",
                                to="publishing.catalog",
                            ),
                        ),
                        (
                            "published_version",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="publishing.catalogversion",
                            ),
                        ),
                        (
                            "reviewer",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="reviewed_contributions",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_contribution",
                        "ordering": ["-updated_at", "-pk"],
                        "permissions": [
                            ("review_contribution", "Can approve or reject contributions")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="ReviewEvent",
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
                            "action",
                            models.CharField(
                                choices=[
                                    ("submitted", "Submitted"),
                                    ("resubmitted", "Resubmitted"),
                                    ("approved", "Approved"),
                                    ("rejected", "Rejected"),
                                ],
                                max_length=20,
                            ),
                        ),
                        ("reason", models.TextField(blank=True)),
                        ("revision", models.PositiveIntegerField(default=1)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "actor",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "catalog_version",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="publishing.catalogversion",
                            ),
                        ),
                        (
                            "contribution",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="events",
                                to="review.contribution",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_reviewevent",
                        "ordering": ["created_at", "pk"],
                    },
                ),
                migrations.CreateModel(
                    name="TrialRun",
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
                        ("revision", models.PositiveIntegerField()),
                        ("example", models.CharField(max_length=200)),
                        ("runtime", models.CharField(max_length=20)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("ok", "OK"),
                                    ("failed", "Failed"),
                                    ("timeout", "Timed out"),
                                    ("output_limit", "Output limit"),
                                    ("invalid_output", "Invalid output"),
                                    ("not_run", "Not run here"),
                                ],
                                max_length=20,
                            ),
                        ),
                        ("flagged", models.BooleanField(default=False)),
                        ("flags", models.JSONField(blank=True, default=list)),
                        ("exit_code", models.IntegerField(blank=True, null=True)),
                        ("duration", models.FloatField(default=0.0)),
                        ("stderr", models.TextField(blank=True)),
                        ("results", models.JSONField(blank=True, default=list)),
                        ("diff", models.JSONField(blank=True, default=dict)),
                        ("tried_network", models.BooleanField(default=False)),
                        ("tried_write_outside", models.BooleanField(default=False)),
                        ("detail", models.TextField(blank=True)),
                        ("jail", models.CharField(blank=True, max_length=200)),
                        ("deferrals", models.PositiveIntegerField(default=0)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "contribution",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="trial_runs",
                                to="review.contribution",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_trialrun",
                        "ordering": ["-created_at", "pk"],
                    },
                ),
                migrations.AddIndex(
                    model_name="contribution",
                    index=models.Index(fields=["status", "catalog"], name="contribution_status"),
                ),
            ],
        ),
    ]
