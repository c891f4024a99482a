"""Records of the OCI side: stored manifests, tags, blobs that are not catalog bytes, uploads.

A catalog is one OCI repository, ``<publisher>/<catalog>``. The catalog layer is the version's
own bytes (never copied); other blobs (configs, signature payloads) are recorded here. All bytes
are in the object store by digest (``catalogs.publishing.blobstore``); these rows only name them.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class OciManifest(models.Model):
    """One manifest stored byte for byte in a catalog's repository."""

    catalog = models.ForeignKey(
        "publishing.Catalog", on_delete=models.PROTECT, related_name="oci_manifests"
    )
    digest = models.CharField(max_length=71)  # "sha256:" + 64 hex
    media_type = models.CharField(max_length=255)
    # Its bytes are in the object store under ``digest`` (catalogs.publishing.blobstore).
    size = models.PositiveIntegerField()
    # For the referrers API: the manifest this one refers to, its artifactType (or config media
    # type) and annotations, copied once so a listing never parses manifests.
    subject_digest = models.CharField(max_length=71, blank=True, db_index=True)
    artifact_type = models.CharField(max_length=255, blank=True)
    annotations = models.JSONField(default=dict, blank=True)
    # Digests of the config and layers (and of child manifests of an index), for blob GC.
    references = models.JSONField(default=list, blank=True)
    # Set on the manifest that is a catalog version (built at publish, or the one pushed).
    catalog_version = models.OneToOneField(
        "publishing.CatalogVersion",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="oci_manifest",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "catalogs_ocimanifest"
        ordering = ["catalog", "created_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["catalog", "digest"], name="oci_manifest_digest")
        ]

    def __str__(self) -> str:
        return f"{self.catalog_id}@{self.digest}"

    @property
    def content(self) -> bytes:
        """Its bytes, read from the object store (once per process)."""
        from catalogs.publishing.content import stored_content

        return stored_content(digest=self.digest)


class OciTag(models.Model):
    """A tag of a catalog's repository: ``latest``, ``v<n>``, a pushed label, ``sha256-….sig``."""

    catalog = models.ForeignKey(
        "publishing.Catalog", on_delete=models.PROTECT, related_name="oci_tags"
    )
    name = models.CharField(max_length=128)
    manifest = models.ForeignKey(OciManifest, on_delete=models.PROTECT, related_name="tags")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "catalogs_ocitag"
        ordering = ["catalog", "name"]
        constraints = [models.UniqueConstraint(fields=["catalog", "name"], name="oci_tag_name")]

    def __str__(self) -> str:
        return f"{self.catalog_id}:{self.name}"


class OciBlob(models.Model):
    """A blob of a catalog's repository other than catalog bytes (small: size-limited uploads)."""

    catalog = models.ForeignKey(
        "publishing.Catalog", on_delete=models.PROTECT, related_name="oci_blobs"
    )
    digest = models.CharField(max_length=71)
    size = models.PositiveIntegerField()
    # Its bytes are in the object store under ``digest`` (catalogs.publishing.blobstore).
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "catalogs_ociblob"
        ordering = ["catalog", "digest"]
        constraints = [
            models.UniqueConstraint(fields=["catalog", "digest"], name="oci_blob_digest")
        ]

    def __str__(self) -> str:
        return f"{self.catalog_id}@{self.digest}"

    @property
    def content(self) -> bytes:
        """Its bytes, read from the object store (once per process)."""
        from catalogs.publishing.content import stored_content

        return stored_content(digest=self.digest)


class OciUpload(models.Model):
    """A blob upload session (POST, then PATCH chunks, then PUT with the digest)."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    catalog = models.ForeignKey(
        "publishing.Catalog", on_delete=models.CASCADE, related_name="oci_uploads"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, related_name="+"
    )
    # The bytes received so far are the object ``uploads/<uuid>`` (catalogs.publishing.blobstore).
    size = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "catalogs_ociupload"
        ordering = ["created_at"]

    def __str__(self) -> str:
        return str(self.uuid)


class OciPackage(models.Model):
    """A kustomization tree pushed as an OCI artifact (Flux's format) into a repository.

    The manifest and its layer are stored like any artifact (``OciManifest``, ``OciBlob``); this
    row keeps what the page shows without unpacking the layer again: the tree's files.
    """

    manifest = models.OneToOneField(OciManifest, on_delete=models.PROTECT, related_name="package")
    layer_digest = models.CharField(max_length=71)
    # [[path, size], ...] of the tree's regular files, sorted by path; directories are implied.
    files = models.JSONField(default=list)
    pushed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return str(self.manifest)
