"""Records of trust: revocations of functions and runtimes, and the signed lists that carry them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from catalogs.publishing.models import Catalog, Publisher, SigningKey


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
    # The exact YAML served is in the object store under ``digest`` (catalogs.publishing.blobstore).
    digest = models.CharField(max_length=71)
    signature = models.TextField()
    signing_key = models.ForeignKey(
        SigningKey, on_delete=models.PROTECT, related_name="signed_revocation_lists"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "catalogs_revocationlist"
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
        from catalogs.publishing.content import stored_content

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
        db_table = "catalogs_revocation"
        ordering = ["catalog", "sequence"]
        # Not unique: one list sequence may carry several entries (a mirror carrying an
        # upstream's new entries at once); the lists' own sequences are unique.
        indexes = [models.Index(fields=["catalog", "sequence"], name="revocation_sequence_idx")]

    def __str__(self) -> str:
        what = self.runtime_digest or f"{self.group}/{self.version} {self.kind}"
        return f"{self.catalog}: {what} ({self.reason})"


class TufMetadata(models.Model):
    """One version of one role of the registry's TUF repository: the exact JSON served.

    Roles: ``root``, ``targets``, ``snapshot``, ``timestamp`` and one delegated role per publisher
    (named after its slug). Every root version is kept (clients walk the rotations); other roles
    keep their last versions (``catalogs.trust.tuf``), served at ``/tuf/<V>.<role>.json``.
    """

    role = models.CharField(max_length=100)
    version = models.PositiveIntegerField()
    data = models.TextField()
    expires = models.DateTimeField()
    # Signed by the publisher's own key (uploaded), not by the registry's.
    uploaded = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["role", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["role", "version"], name="tuf_metadata_role_version")
        ]

    def __str__(self) -> str:
        return f"{self.version}.{self.role}.json"


class TufTarget(models.Model):
    """One TUF target the registry serves below ``/c/``: its path, length and sha256."""

    path = models.CharField(max_length=400, unique=True)
    publisher = models.ForeignKey(Publisher, on_delete=models.CASCADE, related_name="tuf_targets")
    length = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    # The target's signed "custom" object (e.g. {"deprecation": "<message>"}); empty for none.
    custom = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]

    def __str__(self) -> str:
        return self.path


class PublisherKey(models.Model):
    """A public key a publisher holds: its delegated TUF role is then signed by its keys only."""

    publisher = models.ForeignKey(Publisher, on_delete=models.CASCADE, related_name="tuf_keys")
    keyid = models.CharField(max_length=64)
    # The TUF key (keytype, scheme, keyval) as it appears in the targets metadata.
    key = models.JSONField()
    public_key_pem = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["publisher", "created_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["publisher", "keyid"], name="publisher_key_unique")
        ]

    def __str__(self) -> str:
        return f"{self.publisher}: {self.keyid[:16]}"


from catalogs.distribution.models import OciBlob, OciManifest, OciTag, OciUpload  # noqa: E402, F401
