"""Records of trust: revocations of functions and runtimes, and the signed lists that carry them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from catalogs.publishing.models import Catalog, SigningKey


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
        constraints = [
            models.UniqueConstraint(fields=["catalog", "sequence"], name="revocation_sequence"),
        ]

    def __str__(self) -> str:
        what = self.runtime_digest or f"{self.group}/{self.version} {self.kind}"
        return f"{self.catalog}: {what} ({self.reason})"


from catalogs.distribution.models import OciBlob, OciManifest, OciTag, OciUpload  # noqa: E402, F401
