"""Records of the registry: publishers, catalogs, immutable catalog versions and their functions.

Later issues add mirror sources and sync runs, contributions and review events, runtime artifacts
(blobs by sha256) and API tokens next to these; nothing here needs to change for that.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Publisher(models.Model):
    """An organisation or person that publishes catalogs; owners may write to it."""

    slug = models.SlugField(max_length=100, unique=True)
    display_name = models.CharField(max_length=200)
    owners = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="owned_publishers", blank=True
    )
    verified = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class CatalogQuerySet(models.QuerySet):
    """Reads of catalogs."""

    def published(self) -> CatalogQuerySet:
        """Catalogs that have at least one published version."""
        return self.filter(latest_version__isnull=False)


class Catalog(models.Model):
    """A named, versioned catalog of KRM functions under a publisher."""

    publisher = models.ForeignKey(Publisher, on_delete=models.PROTECT, related_name="catalogs")
    name = models.SlugField(max_length=100)
    description = models.TextField(blank=True)
    # Denormalised pointer so that serving "latest" and searching current functions is one lookup.
    latest_version = models.OneToOneField(
        "CatalogVersion",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="latest_of",
        editable=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = CatalogQuerySet.as_manager()

    class Meta:
        ordering = ["publisher__slug", "name"]
        constraints = [
            models.UniqueConstraint(fields=["publisher", "name"], name="catalog_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.publisher.slug}/{self.name}"


class CatalogVersion(models.Model):
    """One immutable published version of a catalog: its canonical YAML bytes and their digest."""

    catalog = models.ForeignKey(Catalog, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    # Canonical YAML as produced by orchestrator.catalog; served byte for byte.
    content = models.BinaryField()
    digest = models.CharField(max_length=71, db_index=True)  # "sha256:" + 64 hex
    size = models.PositiveIntegerField()
    document_name = models.CharField(max_length=253, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="published_catalog_versions",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["catalog", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["catalog", "number"], name="catalog_version_number"),
            models.UniqueConstraint(fields=["catalog", "digest"], name="catalog_version_digest"),
        ]

    def __str__(self) -> str:
        return f"{self.catalog}@{self.number}"


class FunctionDefinition(models.Model):
    """A function (group + kind) as defined by one catalog version."""

    catalog_version = models.ForeignKey(
        CatalogVersion, on_delete=models.CASCADE, related_name="functions"
    )
    position = models.PositiveIntegerField()
    group = models.CharField(max_length=253)
    kind = models.CharField(max_length=253)
    description = models.TextField(blank=True)
    publisher = models.CharField(max_length=253, blank=True)
    home = models.CharField(max_length=2048, blank=True)
    maintainers = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["catalog_version", "position"]
        indexes = [models.Index(fields=["group", "kind"], name="function_group_kind")]

    def __str__(self) -> str:
        return f"{self.group}/{self.kind}"


class FunctionVersion(models.Model):
    """One version of a function definition, with its runtime and derived flags."""

    function = models.ForeignKey(
        FunctionDefinition, on_delete=models.CASCADE, related_name="versions"
    )
    # Copied from the definition and version so search filters never need a join.
    catalog_version = models.ForeignKey(
        CatalogVersion, on_delete=models.CASCADE, related_name="function_versions"
    )
    group = models.CharField(max_length=253)
    kind = models.CharField(max_length=253)
    name = models.CharField(max_length=100)
    position = models.PositiveIntegerField()
    runtime = models.JSONField(default=dict, blank=True)
    schema = models.JSONField(null=True, blank=True)
    idempotent = models.BooleanField(null=True)
    usage = models.TextField(blank=True)
    examples = models.JSONField(default=list, blank=True)
    license = models.CharField(max_length=200, blank=True)
    maintainers = models.JSONField(default=list, blank=True)
    runtime_kinds = models.JSONField(default=list, blank=True)
    requires_network = models.BooleanField(default=False)
    requires_storage_mount = models.BooleanField(default=False)
    # "|tag|tag|" and "|container|exec|": JSON containment lookups are not portable to SQLite,
    # a delimited string matched with icontains is.
    tags_index = models.TextField(blank=True)
    runtime_kinds_index = models.CharField(max_length=200, blank=True)
    # Lower-cased group, kind, description, publisher and tags, for `q` text search.
    search_text = models.TextField(blank=True)

    class Meta:
        ordering = ["group", "kind", "name", "catalog_version"]
        indexes = [
            models.Index(fields=["group", "kind", "name"], name="function_version_gvk"),
            models.Index(fields=["kind"], name="function_version_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.group}/{self.name}/{self.kind}"
