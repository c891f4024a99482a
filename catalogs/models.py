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


class SigningKey(models.Model):
    """A public key the registry signs (or signed) catalog versions with; the private key is not
    stored here but in settings (SIGNING_KEY_PEM / SIGNING_KEY_FILE)."""

    # First 16 hex of sha256 over the DER SubjectPublicKeyInfo.
    key_id = models.CharField(max_length=16, unique=True)
    public_key_pem = models.TextField()
    current = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["current"],
                condition=models.Q(current=True),
                name="signing_key_one_current",
            )
        ]

    def __str__(self) -> str:
        return self.key_id


class CatalogVersion(models.Model):
    """One immutable published version of a catalog: the digest and size of its canonical YAML.

    The bytes themselves (canonical YAML as produced by orchestrator.catalog, served byte for
    byte) live in the object store under their digest: ``catalogs.blobstore``.
    """

    catalog = models.ForeignKey(Catalog, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
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
    # The registry's ECDSA-SHA256 signature over ``content`` (base64 of the DER signature, as
    # ``cosign sign-blob`` writes it) and the key that made it; empty until signed.
    signature = models.TextField(blank=True)
    signing_key = models.ForeignKey(
        SigningKey,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="signed_versions",
    )

    class Meta:
        ordering = ["catalog", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["catalog", "number"], name="catalog_version_number"),
            models.UniqueConstraint(fields=["catalog", "digest"], name="catalog_version_digest"),
        ]

    def __str__(self) -> str:
        return f"{self.catalog}@{self.number}"

    @property
    def content(self) -> bytes:
        """The version's bytes, read from the object store (once per process)."""
        from catalogs.selectors import catalog_version_bytes

        return catalog_version_bytes(version=self)


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


# --- Contributions (KEP-2906 story 6) and their review audit log. ---


class ContributionStatus(models.TextChoices):
    """Where a contribution is in review; transitions are guarded by catalogs.contributions."""

    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class Contribution(models.Model):
    """A KRMFunctionDefinition proposed by any signed-in user for a catalog they need not own."""

    catalog = models.ForeignKey(Catalog, on_delete=models.PROTECT, related_name="contributions")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="contributions"
    )
    # The definition as the author wrote it (YAML text), kept verbatim for review and editing.
    content = models.TextField()
    group = models.CharField(max_length=253)
    kind = models.CharField(max_length=253)
    status = models.CharField(
        max_length=20, choices=ContributionStatus.choices, default=ContributionStatus.PENDING
    )
    reason = models.TextField(blank=True)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="reviewed_contributions",
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    published_version = models.ForeignKey(
        CatalogVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-pk"]
        permissions = [("review_contribution", "Can approve or reject contributions")]
        indexes = [models.Index(fields=["status", "catalog"], name="contribution_status")]

    def __str__(self) -> str:
        return f"{self.group}/{self.kind} → {self.catalog} ({self.status})"


class ReviewEventAction(models.TextChoices):
    """What happened to a contribution."""

    SUBMITTED = "submitted", "Submitted"
    RESUBMITTED = "resubmitted", "Resubmitted"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class ReviewEvent(models.Model):
    """One entry of the audit log: who did what to a contribution, when and why."""

    contribution = models.ForeignKey(Contribution, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    action = models.CharField(max_length=20, choices=ReviewEventAction.choices)
    reason = models.TextField(blank=True)
    revision = models.PositiveIntegerField(default=1)
    catalog_version = models.ForeignKey(
        CatalogVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.action} #{self.contribution_id} by {self.actor_id}"


class TrialRunStatus(models.TextChoices):
    """How one sandboxed trial run of a contributed function ended (catalogs.sandbox)."""

    OK = "ok", "OK"
    FAILED = "failed", "Failed"
    TIMEOUT = "timeout", "Timed out"
    OUTPUT_LIMIT = "output_limit", "Output limit"
    INVALID_OUTPUT = "invalid_output", "Invalid output"
    NOT_RUN = "not_run", "Not run here"


class TrialRun(models.Model):
    """One run of a contribution's function on one example input, inside the trial sandbox."""

    contribution = models.ForeignKey(
        Contribution, on_delete=models.CASCADE, related_name="trial_runs"
    )
    revision = models.PositiveIntegerField()
    example = models.CharField(max_length=200)
    runtime = models.CharField(max_length=20)  # exec | starlark | container
    status = models.CharField(max_length=20, choices=TrialRunStatus.choices)
    flagged = models.BooleanField(default=False)
    flags = models.JSONField(default=list, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    duration = models.FloatField(default=0.0)
    stderr = models.TextField(blank=True)
    results = models.JSONField(default=list, blank=True)
    diff = models.JSONField(default=dict, blank=True)
    tried_network = models.BooleanField(default=False)
    tried_write_outside = models.BooleanField(default=False)
    detail = models.TextField(blank=True)
    jail = models.CharField(max_length=200, blank=True)
    # Times the trial was held back by an upstream host's rate limit before it ran.
    deferrals = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "pk"]

    def __str__(self) -> str:
        return f"trial #{self.contribution_id} r{self.revision} {self.example}: {self.status}"


# --- Mirroring (issue 6): sources mirrored from elsewhere, their sync runs and runtime blobs. ---


class MirrorSource(models.Model):
    """A catalog published elsewhere (HTTPS, Git or OCI) that the registry mirrors and serves."""

    name = models.SlugField(max_length=100, unique=True)
    url = models.CharField(max_length=2048)
    # Optional pin: sha256 of the document (https), manifest digest (oci) or commit (git).
    digest = models.CharField(max_length=100, blank=True)
    cosign_public_key = models.TextField(blank=True)
    sigstore_identity = models.CharField(max_length=1024, blank=True)
    sigstore_issuer = models.CharField(max_length=1024, blank=True)
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
        ordering = ["-detected_at", "-id"]

    def __str__(self) -> str:
        return f"{self.image}: {self.old_digest} -> {self.new_digest}"


# --- Revocation (issue 13 section 3): signed, append-only lists that builds honour. ---


class RevocationReason(models.TextChoices):
    COMPROMISED = "compromised", "compromised"
    BROKEN = "broken", "broken"
    WITHDRAWN = "withdrawn", "withdrawn"


class RevocationList(models.Model):
    """One sequence of a catalog's revocation list: the exact YAML served and its signature.

    Append-only: a revocation adds a list with the next sequence holding every earlier entry;
    no row is ever changed or deleted, so every sequence stays servable and verifiable.
    """

    catalog = models.ForeignKey(Catalog, on_delete=models.PROTECT, related_name="revocation_lists")
    sequence = models.PositiveIntegerField()
    # The exact YAML served is in the object store under ``digest`` (catalogs.blobstore).
    digest = models.CharField(max_length=71)
    signature = models.TextField()
    signing_key = models.ForeignKey(
        SigningKey, on_delete=models.PROTECT, related_name="signed_revocation_lists"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["catalog", "-sequence"]
        constraints = [
            models.UniqueConstraint(
                fields=["catalog", "sequence"], name="revocation_list_sequence"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.catalog} revocations#{self.sequence}"

    @property
    def content(self) -> bytes:
        """The list's YAML, read from the object store (once per process)."""
        from catalogs.selectors import stored_content

        return stored_content(digest=self.digest)


class Revocation(models.Model):
    """One revoked function version (group/kind/version) or runtime digest; also its audit
    record: who revoked it, when, why, and which list sequence first carried it."""

    catalog = models.ForeignKey(Catalog, on_delete=models.PROTECT, related_name="revocations")
    sequence = models.PositiveIntegerField()
    group = models.CharField(max_length=253, blank=True)
    kind = models.CharField(max_length=253, blank=True)
    version = models.CharField(max_length=100, blank=True)
    runtime_digest = models.CharField(max_length=71, blank=True)
    reason = models.CharField(max_length=20, choices=RevocationReason.choices)
    detail = models.TextField(blank=True)
    replacement = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="revocations",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["catalog", "sequence"]
        constraints = [
            models.UniqueConstraint(fields=["catalog", "sequence"], name="revocation_sequence"),
        ]

    def __str__(self) -> str:
        what = self.runtime_digest or f"{self.group}/{self.version} {self.kind}"
        return f"{self.catalog}: {what} ({self.reason})"


# --- The OCI distribution endpoint (issue 11): its models live with the rest of catalogs.oci. ---
from catalogs.oci.models import OciBlob, OciManifest, OciTag, OciUpload  # noqa: E402, F401

# --- People: publishers their users run themselves, and the verified badge staff grant. ---


class VerificationStatus(models.TextChoices):
    """Where a request for the verified badge is; catalogs.publishers guards the transitions."""

    PENDING = "pending", "Pending"
    GRANTED = "granted", "Granted"
    REFUSED = "refused", "Refused"


class VerificationRequest(models.Model):
    """An owner asks staff to mark their publisher as verified."""

    publisher = models.ForeignKey(
        Publisher, on_delete=models.CASCADE, related_name="verification_requests"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    message = models.TextField(blank=True)
    status = models.CharField(
        max_length=20, choices=VerificationStatus.choices, default=VerificationStatus.PENDING
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["publisher"],
                condition=models.Q(status="pending"),
                name="one_pending_verification_request",
            )
        ]

    def __str__(self) -> str:
        return f"verification of {self.publisher_id} ({self.status})"


class PublisherEventAction(models.TextChoices):
    """What happened to a publisher."""

    OWNER_ADDED = "owner_added", "Owner added"
    VERIFICATION_REQUESTED = "verification_requested", "Verification requested"
    VERIFICATION_GRANTED = "verification_granted", "Verification granted"
    VERIFICATION_REFUSED = "verification_refused", "Verification refused"


class PublisherEvent(models.Model):
    """One entry of a publisher's audit log: who changed its owners or its verified badge."""

    publisher = models.ForeignKey(Publisher, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    action = models.CharField(max_length=30, choices=PublisherEventAction.choices)
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.action} on {self.publisher_id} by {self.actor_id}"
