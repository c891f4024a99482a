"""The publishing app takes over its models from the catalogs app, with their tables
(``db_table`` kept): this changes the migration state only, not the database."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("catalogs", "0015_object_storage"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables exist (made by the catalogs app's migrations): state only.
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Catalog",
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
                        ("name", models.SlugField(max_length=100)),
                        ("description", models.TextField(blank=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "db_table": "catalogs_catalog",
                        "ordering": ["publisher__slug", "name"],
                    },
                ),
                migrations.CreateModel(
                    name="CatalogVersion",
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
                        ("number", models.PositiveIntegerField()),
                        ("digest", models.CharField(db_index=True, max_length=71)),
                        ("size", models.PositiveIntegerField()),
                        ("document_name", models.CharField(blank=True, max_length=253)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("signature", models.TextField(blank=True)),
                        (
                            "catalog",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="versions",
                                to="publishing.catalog",
                            ),
                        ),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="published_catalog_versions",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_catalogversion",
                        "ordering": ["catalog", "-number"],
                    },
                ),
                migrations.AddField(
                    model_name="catalog",
                    name="latest_version",
                    field=models.OneToOneField(
                        blank=True,
                        editable=False,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="latest_of",
                        to="publishing.catalogversion",
                    ),
                ),
                migrations.CreateModel(
                    name="FunctionDefinition",
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
                        ("position", models.PositiveIntegerField()),
                        ("group", models.CharField(max_length=253)),
                        ("kind", models.CharField(max_length=253)),
                        ("description", models.TextField(blank=True)),
                        ("publisher", models.CharField(blank=True, max_length=253)),
                        ("home", models.CharField(blank=True, max_length=2048)),
                        ("maintainers", models.JSONField(blank=True, default=list)),
                        ("tags", models.JSONField(blank=True, default=list)),
                        (
                            "catalog_version",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="functions",
                                to="publishing.catalogversion",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_functiondefinition",
                        "ordering": ["catalog_version", "position"],
                    },
                ),
                migrations.CreateModel(
                    name="FunctionVersion",
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
                        ("group", models.CharField(max_length=253)),
                        ("kind", models.CharField(max_length=253)),
                        ("name", models.CharField(max_length=100)),
                        ("position", models.PositiveIntegerField()),
                        ("runtime", models.JSONField(blank=True, default=dict)),
                        ("schema", models.JSONField(blank=True, null=True)),
                        ("idempotent", models.BooleanField(null=True)),
                        ("usage", models.TextField(blank=True)),
                        ("examples", models.JSONField(blank=True, default=list)),
                        ("license", models.CharField(blank=True, max_length=200)),
                        ("maintainers", models.JSONField(blank=True, default=list)),
                        ("runtime_kinds", models.JSONField(blank=True, default=list)),
                        ("requires_network", models.BooleanField(default=False)),
                        ("requires_storage_mount", models.BooleanField(default=False)),
                        ("tags_index", models.TextField(blank=True)),
                        ("runtime_kinds_index", models.CharField(blank=True, max_length=200)),
                        ("search_text", models.TextField(blank=True)),
                        (
                            "catalog_version",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="function_versions",
                                to="publishing.catalogversion",
                            ),
                        ),
                        (
                            "function",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="versions",
                                to="publishing.functiondefinition",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_functionversion",
                        "ordering": ["group", "kind", "name", "catalog_version"],
                    },
                ),
                migrations.CreateModel(
                    name="Publisher",
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
                        ("slug", models.SlugField(max_length=100, unique=True)),
                        ("display_name", models.CharField(max_length=200)),
                        ("verified", models.BooleanField(default=False)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "owners",
                            models.ManyToManyField(
                                blank=True,
                                related_name="owned_publishers",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_publisher",
                        "ordering": ["slug"],
                    },
                ),
                migrations.AddField(
                    model_name="catalog",
                    name="publisher",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="catalogs",
                        to="publishing.publisher",
                    ),
                ),
                migrations.CreateModel(
                    name="PublisherEvent",
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
                                    ("owner_added", "Owner added"),
                                    ("verification_requested", "Verification requested"),
                                    ("verification_granted", "Verification granted"),
                                    ("verification_refused", "Verification refused"),
                                ],
                                max_length=30,
                            ),
                        ),
                        ("detail", models.TextField(blank=True)),
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
                            "publisher",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="events",
                                to="publishing.publisher",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_publisherevent",
                        "ordering": ["created_at", "pk"],
                    },
                ),
                migrations.CreateModel(
                    name="SigningKey",
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
                        ("key_id", models.CharField(max_length=16, unique=True)),
                        ("public_key_pem", models.TextField()),
                        ("current", models.BooleanField(default=False)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("retired_at", models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        "db_table": "catalogs_signingkey",
                        "ordering": ["-created_at", "-id"],
                        "constraints": [
                            models.UniqueConstraint(
                                condition=models.Q(("current", True)),
                                fields=("current",),
                                name="signing_key_one_current",
                            )
                        ],
                    },
                ),
                migrations.AddField(
                    model_name="catalogversion",
                    name="signing_key",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="signed_versions",
                        to="publishing.signingkey",
                    ),
                ),
                migrations.CreateModel(
                    name="VerificationRequest",
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
                        ("message", models.TextField(blank=True)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("pending", "Pending"),
                                    ("granted", "Granted"),
                                    ("refused", "Refused"),
                                ],
                                default="pending",
                                max_length=20,
                            ),
                        ),
                        ("decided_at", models.DateTimeField(blank=True, null=True)),
                        ("reason", models.TextField(blank=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "decided_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "publisher",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="verification_requests",
                                to="publishing.publisher",
                            ),
                        ),
                        (
                            "requested_by",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "catalogs_verificationrequest",
                        "ordering": ["-created_at", "-pk"],
                    },
                ),
                migrations.AddIndex(
                    model_name="functiondefinition",
                    index=models.Index(fields=["group", "kind"], name="function_group_kind"),
                ),
                migrations.AddIndex(
                    model_name="functionversion",
                    index=models.Index(
                        fields=["group", "kind", "name"], name="function_version_gvk"
                    ),
                ),
                migrations.AddIndex(
                    model_name="functionversion",
                    index=models.Index(fields=["kind"], name="function_version_kind"),
                ),
                migrations.AddConstraint(
                    model_name="catalog",
                    constraint=models.UniqueConstraint(
                        fields=("publisher", "name"), name="catalog_unique_name"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="catalogversion",
                    constraint=models.UniqueConstraint(
                        fields=("catalog", "number"), name="catalog_version_number"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="catalogversion",
                    constraint=models.UniqueConstraint(
                        fields=("catalog", "digest"), name="catalog_version_digest"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="verificationrequest",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("status", "pending")),
                        fields=("publisher",),
                        name="one_pending_verification_request",
                    ),
                ),
            ],
        ),
    ]
