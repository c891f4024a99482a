"""Records of mirroring: sources upstream, their sync runs, the runtime artifacts they mirrored
and the drift they saw."""

from __future__ import annotations

from django.db import models

from catalogs.publishing.models import Catalog, CatalogVersion


class MirrorSource(models.Model):
    """A catalog published elsewhere (HTTPS, Git or OCI) that the registry mirrors and serves,
    or a kustomization package (an OCI artifact in Flux's format) it mirrors into a repository."""

    class Kind(models.TextChoices):
        CATALOG = "catalog"
        PACKAGE = "package"

    name = models.SlugField(max_length=100, unique=True)
    # What the URL names: a catalog (https, git or oci), or a kustomization package (oci only),
    # served at oci://<registry>/mirrors/<name>:<upstream tag> and on the packages page.
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.CATALOG)
    url = models.CharField(max_length=2048)
    # Optional pin: sha256 of the document (https), manifest digest (oci) or commit (git).
    digest = models.CharField(max_length=100, blank=True)
    cosign_public_key = models.TextField(blank=True)
    sigstore_identity = models.CharField(max_length=1024, blank=True)
    sigstore_issuer = models.CharField(max_length=1024, blank=True)
    # An upstream registry of this kind (it serves /tuf/): the sha256 of the TUF root to pin;
    # empty: pinned on first sync (or by cosign_public_key, when that key signs the root).
    upstream_root_sha256 = models.CharField(max_length=64, blank=True)
    # The upstream's TUF metadata trusted after the last good sync (catalogs.mirroring.
    # upstream_trust): the pinned root and how, the newest root, timestamp and snapshot.
    upstream_tuf = models.JSONField(default=dict, blank=True)
    mirror_runtimes = models.BooleanField(default=False)
    enabled = models.BooleanField(default=True)
    interval_minutes = models.PositiveIntegerField(default=60)
    # The mirrored catalog, served under the mirror publisher like any published catalog.
    catalog = models.OneToOneField(Catalog, on_delete=models.PROTECT, related_name="mirror_source")
    # What the last successful run saw upstream (for "unchanged" and conditional requests).
    last_digest = models.CharField(max_length=100, blank=True)
    last_etag = models.CharField(max_length=1024, blank=True)
    last_modified = models.CharField(max_length=100, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    # Verification record of the version being served: which signature checks passed, and how.
    verification = models.JSONField(default=dict, blank=True)
    # Container image tag -> digest at the source registry, as resolved by the last sync.
    image_digests = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "catalogs_mirrorsource"
        ordering = ["name"]
        permissions = [("operate_mirrors", "Can create, change and sync mirror sources")]

    def __str__(self) -> str:
        return self.name


class SyncRun(models.Model):
    """One attempt to mirror a source: its status, timings, what it saw and why it failed."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        UNCHANGED = "unchanged"
        FAILED = "failed"

    source = models.ForeignKey(MirrorSource, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    reason = models.TextField(blank=True)
    digest = models.CharField(max_length=100, blank=True)
    bytes = models.PositiveBigIntegerField(default=0)
    function_count = models.PositiveIntegerField(default=0)
    artifact_count = models.PositiveIntegerField(default=0)
    provenance = models.JSONField(default=dict, blank=True)
    verification = models.JSONField(default=dict, blank=True)
    catalog_version = models.ForeignKey(
        CatalogVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="sync_runs"
    )
    attempts = models.PositiveIntegerField(default=0)
    # Times the run was held back by an upstream host's rate limit (UPSTREAM_RATE_LIMIT), and
    # until when the last deferral holds it (its job is retried then).
    deferrals = models.PositiveIntegerField(default=0)
    deferred_until = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "catalogs_syncrun"
        ordering = ["-queued_at", "-id"]
        indexes = [models.Index(fields=["source", "status"], name="sync_run_source_status")]

    def __str__(self) -> str:
        return f"{self.source.name}#{self.pk} {self.status}"


class RuntimeArtifact(models.Model):
    """A mirrored exec binary or starlark script, stored once by its sha256."""

    digest = models.CharField(max_length=71, unique=True)  # "sha256:" + 64 hex
    size = models.PositiveBigIntegerField()
    storage_name = models.CharField(max_length=255)
    source_uri = models.CharField(max_length=2048, blank=True)
    catalog_versions = models.ManyToManyField(
        CatalogVersion, related_name="runtime_artifacts", blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "catalogs_runtimeartifact"
        ordering = ["digest"]

    def __str__(self) -> str:
        return self.digest


class DriftEvent(models.Model):
    """A container image tag that moved to another digest between two syncs of a source."""

    source = models.ForeignKey(MirrorSource, on_delete=models.CASCADE, related_name="drift_events")
    run = models.ForeignKey(SyncRun, on_delete=models.CASCADE, related_name="drift_events")
    image = models.CharField(max_length=2048)
    old_digest = models.CharField(max_length=100)
    new_digest = models.CharField(max_length=100)
    detected_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "catalogs_driftevent"
        ordering = ["-detected_at", "-id"]

    def __str__(self) -> str:
        return f"{self.image}: {self.old_digest} -> {self.new_digest}"
