"""The trust app takes over its models from the catalogs app, with their tables
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
                    name="Revocation",
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
                        ("sequence", models.PositiveIntegerField()),
                        ("group", models.CharField(blank=True, max_length=253)),
                        ("kind", models.CharField(blank=True, max_length=253)),
                        ("version", models.CharField(blank=True, max_length=100)),
                        ("runtime_digest", models.CharField(blank=True, max_length=71)),
                        (
                            "reason",
                            models.CharField(
                                choices=[
                                    ("compromised", "compromised"),
                                    ("broken", "broken"),
                                    ("withdrawn", "withdrawn"),
                                ],
                                max_length=20,
                            ),
                        ),
                        ("detail", models.TextField(blank=True)),
                        ("replacement", models.CharField(blank=True, max_length=500)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "catalog",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="revocations",
                                to="publishing.catalog",
                            ),
                        ),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="revocations",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_revocation",
                        "ordering": ["catalog", "sequence"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("catalog", "sequence"), name="revocation_sequence"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="RevocationList",
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
                        ("sequence", models.PositiveIntegerField()),
                        ("digest", models.CharField(max_length=71)),
                        ("signature", models.TextField()),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "catalog",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="revocation_lists",
                                to="publishing.catalog",
                            ),
                        ),
                        (
                            "signing_key",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="signed_revocation_lists",
                                to="publishing.signingkey",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_revocationlist",
                        "ordering": ["catalog", "-sequence"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("catalog", "sequence"), name="revocation_list_sequence"
                            )
                        ],
                    },
                ),
            ],
        ),
    ]
