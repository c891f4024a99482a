"""Records of publishing: publishers and their owners, catalogs, immutable catalog versions, the
functions they define, the registry's signing keys, and publisher verification."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Visibility(models.TextChoices):
    """Who may see a publisher or a catalog: everyone, or only the publisher's owners (and
    staff). A private publisher makes every one of its catalogs private; the one rule is
    ``catalogs.publishing.selectors.catalog_visible``."""

    PUBLIC = "public", "Public"
    PRIVATE = "private", "Private"


class Publisher(models.Model):
    """An organisation or person that publishes catalogs; owners may write to it."""

    slug = models.SlugField(max_length=100, unique=True)
    display_name = models.CharField(max_length=200)
    owners = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="owned_publishers", blank=True
    )
    verified = models.BooleanField(default=False)
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.PUBLIC
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "catalogs_publisher"
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
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.PUBLIC
    )
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
        db_table = "catalogs_catalog"
        ordering = ["publisher__slug", "name"]
        constraints = [
            models.UniqueConstraint(fields=["publisher", "name"], name="catalog_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.publisher.slug}/{self.name}"

    @property
    def private(self) -> bool:
        """Whether only members see it: it, or its publisher, is private."""
        return Visibility.PRIVATE in (self.visibility, self.publisher.visibility)


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
        db_table = "catalogs_signingkey"
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
    byte) live in the object store under their digest: ``catalogs.publishing.blobstore``.
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
    # npm's `deprecate`: the publisher's message to anyone still using this version (it stays
    # served and verifiable, unlike a revoked one); empty when not deprecated.
    deprecation = models.TextField(blank=True)
    deprecated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "catalogs_catalogversion"
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
        from catalogs.publishing.content import catalog_version_bytes

        return catalog_version_bytes(version=self)


class PullVia(models.TextChoices):
    """How a version was pulled."""

    HTTPS = "https", "HTTPS (/c/)"
    OCI = "oci", "OCI (/v2/)"


class CatalogVersionPulls(models.Model):
    """How often a version was pulled on one day (UTC) one way: counted in memory by the
    serving processes and added here in batches (``catalogs.publishing.pulls``)."""

    version = models.ForeignKey(
        CatalogVersion, on_delete=models.CASCADE, related_name="pull_counts"
    )
    day = models.DateField()
    via = models.CharField(max_length=8, choices=PullVia.choices)
    count = models.PositiveBigIntegerField(default=0)

    class Meta:
        db_table = "catalogs_catalogversionpulls"
        ordering = ["version", "day", "via"]
        constraints = [
            models.UniqueConstraint(fields=["version", "day", "via"], name="catalog_version_pulls")
        ]
        indexes = [models.Index(fields=["day"], name="catalog_version_pulls_day")]

    def __str__(self) -> str:
        return f"{self.version} {self.day} {self.via}: {self.count}"


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
        db_table = "catalogs_functiondefinition"
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
        db_table = "catalogs_functionversion"
        ordering = ["group", "kind", "name", "catalog_version"]
        indexes = [
            models.Index(fields=["group", "kind", "name"], name="function_version_gvk"),
            models.Index(fields=["kind"], name="function_version_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.group}/{self.name}/{self.kind}"


class VerificationStatus(models.TextChoices):
    """Where a request for the verified badge is; catalogs.publishing.publishers guards the
    transitions."""

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
        db_table = "catalogs_verificationrequest"
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
    OWNER_INVITED = "owner_invited", "Owner invited"
    INVITATION_DECLINED = "invitation_declined", "Invitation declined"
    VERIFICATION_REQUESTED = "verification_requested", "Verification requested"
    VERIFICATION_GRANTED = "verification_granted", "Verification granted"
    VERIFICATION_REFUSED = "verification_refused", "Verification refused"
    VERIFICATION_CLEARED = "verification_cleared", "Verification cleared"
    PUBLISHER_CREATED = "publisher_created", "Publisher created"
    CATALOG_CREATED = "catalog_created", "Catalog created"
    VERSION_PUBLISHED = "version_published", "Version published"
    LATEST_SET = "latest_set", "Latest version set"
    VERSION_DEPRECATED = "version_deprecated", "Version deprecated"
    VERSION_UNDEPRECATED = "version_undeprecated", "Deprecation withdrawn"
    ROBOT_CREATED = "robot_created", "Robot account created"
    ROBOT_DELETED = "robot_deleted", "Robot account deleted"


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
        db_table = "catalogs_publisherevent"
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.action} on {self.publisher_id} by {self.actor_id}"


class OwnerInvitationStatus(models.TextChoices):
    """Where an invitation to co-own a publisher is; catalogs.publishing.publishers guards it."""

    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    DECLINED = "declined", "Declined"


class OwnerInvitation(models.Model):
    """An owner invites a user to co-own a publisher; the user becomes one only by accepting."""

    publisher = models.ForeignKey(Publisher, on_delete=models.CASCADE, related_name="invitations")
    invitee = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="owner_invitations"
    )
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    status = models.CharField(
        max_length=20, choices=OwnerInvitationStatus.choices, default=OwnerInvitationStatus.PENDING
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "catalogs_ownerinvitation"
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["publisher", "invitee"],
                condition=models.Q(status="pending"),
                name="one_pending_owner_invitation",
            )
        ]

    def __str__(self) -> str:
        return f"invitation of {self.invitee_id} to {self.publisher_id} ({self.status})"


class PublisherRobot(models.Model):
    """A robot account of a publisher, for CI: a user without a password that publishes to this
    publisher only, with API tokens of the read and publish scopes (Harbor's robot accounts)."""

    publisher = models.ForeignKey(Publisher, on_delete=models.CASCADE, related_name="robots")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="robot"
    )
    name = models.SlugField(max_length=50)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["publisher", "name"], name="publishing_robot_name"),
        ]

    def __str__(self) -> str:
        return f"{self.publisher_id}:{self.name}"
