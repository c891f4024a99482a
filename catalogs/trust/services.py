"""Writes of trust: signing catalog versions with the registry's key (the ``cosign sign-blob``
signature served beside catalog.yaml, and cosign's signature artifact in the OCI repository),
and keeping the registry's TUF repository (``catalogs.trust.tuf``) in step with what it serves.

Publishing tells trust about each new version through ``catalogs.events`` (handlers at the end);
trust never asks publishing to call it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from catalogs.distribution.events import OciPackagePushed
from catalogs.distribution.models import OciManifest, OciTag
from catalogs.distribution.services import oci_artifact_store
from catalogs.publishing import serving
from catalogs.publishing.content import catalog_version_bytes
from catalogs.publishing.events import (
    CatalogLatestChanged,
    CatalogVersionDeprecationChanged,
    CatalogVersionPublished,
    CatalogVersionSignatureRequested,
    VisibilityChanged,
)
from catalogs.publishing.models import Catalog, CatalogVersion
from catalogs.trust import revocations, signing, tuf
from catalogs.trust.models import RevocationList


@transaction.atomic
def catalog_version_sign(
    *, version: CatalogVersion, content: bytes | None = None, resign: bool = False
) -> CatalogVersion:
    """Sign ``version``'s served bytes with the registry's current key (if unsigned or ``resign``).

    The signature is ECDSA-SHA256 over exactly the bytes served as catalog.yaml, base64 of the DER
    signature (the ``cosign sign-blob`` format). A version signed concurrently keeps the first
    signature made.
    """
    _oci_signature_store(version=version, resign=resign)
    if version.signature and not resign:
        return version
    if content is None:
        content = catalog_version_bytes(version=version)
    signature = signing.sign_bytes(content)
    rows = CatalogVersion.objects.filter(pk=version.pk)
    if not resign:
        rows = rows.filter(signature="")
    updated = rows.update(signature=signature.signature_b64, signing_key=signature.key)
    if updated:
        version.signature = signature.signature_b64
        version.signing_key = signature.key
        serving.serving_signature_changed(digest=version.digest)
    else:
        version.refresh_from_db(fields=["signature", "signing_key"])
    return version


def _oci_signature_store(*, version: CatalogVersion, resign: bool) -> str | None:
    """Store cosign's signature artifact of ``version``'s OCI manifest (tag ``sha256-<hex>.sig``,
    subject = the manifest); returns its digest, None if it exists (and not ``resign``)."""
    if not settings.SIGNING_OCI_ARTIFACTS:
        return None
    manifest = (
        OciManifest.objects.filter(catalog_version=version)
        .only("digest", "size", "media_type", "catalog_id")
        .first()
    )
    if manifest is None:
        return None
    return oci_manifest_sign(manifest=manifest, resign=resign)


def oci_manifest_sign(*, manifest: OciManifest, resign: bool = False) -> str | None:
    """Store cosign's signature artifact of a stored manifest (tag ``sha256-<hex>.sig``,
    subject = the manifest); its digest, None if it exists (and not ``resign``) or signing OCI
    artifacts is off (``SIGNING_OCI_ARTIFACTS``)."""
    if not settings.SIGNING_OCI_ARTIFACTS:
        return None
    tag = signing.cosign_signature_tag(manifest.digest)
    if not resign and OciTag.objects.filter(catalog_id=manifest.catalog_id, name=tag).exists():
        return None
    catalog = Catalog.objects.select_related("publisher").get(pk=manifest.catalog_id)
    host = urlsplit(settings.REGISTRY_PUBLIC_URL).netloc
    artifact = signing.cosign_artifact_build(
        repository=f"{host}/{catalog.publisher.slug}/{catalog.name}",
        manifest_digest=manifest.digest,
        manifest_size=manifest.size,
        manifest_media_type=manifest.media_type,
    )
    return oci_artifact_store(
        catalog=catalog,
        manifest=artifact.manifest,
        media_type=signing.OCI_MANIFEST_MEDIA_TYPE,
        blobs=artifact.blobs,
        tags=[artifact.tag],
    )


def catalog_versions_sign(*, resign: bool = False) -> int:
    """Sign every version lacking a signature (every version with ``resign``); the number."""
    count = 0
    versions = CatalogVersion.objects.order_by("pk")
    if not resign:
        unsigned = Q(signature="")
        if settings.SIGNING_OCI_ARTIFACTS:
            sig_tags = OciTag.objects.filter(name__endswith=".sig").values(
                "manifest__subject_digest"
            )
            unsigned |= Q(oci_manifest__isnull=False) & ~Q(oci_manifest__digest__in=sig_tags)
        versions = versions.filter(unsigned)
    for version in versions.iterator():
        catalog_version_sign(version=version, resign=resign)
        count += 1
    return count


def catalog_tuf_targets_set(*, catalog: Catalog) -> None:
    """Record ``catalog``'s TUF targets: every version, the latest pointer, the revocation list
    (an empty one, sequence 0, is published for a catalog that has none)."""
    if catalog.latest_version_id is None:
        return
    if not RevocationList.objects.filter(catalog=catalog).exists():
        revocations.revocation_list_publish(catalog=catalog, sequence=0, tuf_sign=False)
    for version in catalog.versions.order_by("number"):
        version.catalog = catalog
        tuf.catalog_version_targets_set(version=version)


def runtime_artifact_targets_record(*, catalog: Catalog, artifacts: list[tuple[str, int]]) -> None:
    """The runtime artifacts (``(sha256:<hex>, size)``) the registry serves for ``catalog``
    become targets of its publisher's role, signed with the version that names them (call
    before publishing it, in its transaction)."""
    tuf.runtime_artifact_targets_set(catalog=catalog, artifacts=artifacts)


def tuf_repository_init() -> None:
    """Make the registry a TUF repository (idempotent): targets for every published catalog,
    then root, targets, the publishers' roles, snapshot and timestamp."""
    with transaction.atomic():
        catalogs = Catalog.objects.published().select_related("publisher").order_by("pk")
        slugs = set()
        for catalog in catalogs.iterator():
            catalog_tuf_targets_set(catalog=catalog)
            slugs.add(catalog.publisher.slug)
        tuf.tuf_publish(publishers=sorted(slugs))


def tuf_repository_ensure() -> None:
    """Initialise the repository on first use (a registry upgraded with catalogs in it)."""
    if tuf.current("root") is None or tuf.current("timestamp") is None:
        tuf_repository_init()


def on_catalog_version_published(event: CatalogVersionPublished) -> None:
    """Sign a new version in its publishing transaction (after distribution stored its manifest),
    give its catalog a revocation list if it has none, and sign them as TUF targets."""
    version = event.version
    catalog_version_sign(version=version, content=event.content)
    catalog = Catalog.objects.select_related("publisher").get(pk=version.catalog_id)
    if tuf.current("root") is None:
        tuf_repository_init()  # every catalog, this one included
        return
    if not RevocationList.objects.filter(catalog=catalog).exists():
        revocations.revocation_list_publish(catalog=catalog, sequence=0, tuf_sign=False)
    version.catalog = catalog
    tuf.catalog_version_targets_set(version=version)
    tuf.tuf_publish(publishers=[catalog.publisher.slug])


def on_catalog_latest_changed(event: CatalogLatestChanged) -> None:
    """An older version was made latest again: the TUF latest pointer names it, re-signed."""
    if tuf.current("root") is None:
        return  # the repository is created, with every catalog as it is then, on first use
    version = event.version
    catalog = Catalog.objects.select_related("publisher").get(pk=version.catalog_id)
    version.catalog = catalog
    tuf.catalog_version_targets_set(version=version)
    tuf.tuf_publish(publishers=[catalog.publisher.slug])


def on_catalog_version_deprecation_changed(event: CatalogVersionDeprecationChanged) -> None:
    """A version's deprecation changed: its targets carry it in their signed custom object."""
    on_catalog_latest_changed(CatalogLatestChanged(version=event.version))


def on_visibility_changed(event: VisibilityChanged) -> None:
    """A catalog (or its publisher) became private or public: its targets move between the
    publisher's role and its private catalogs' role (``<publisher>.private``), re-signed."""
    if tuf.current("root") is None:
        return  # the repository is created, with every catalog as it is then, on first use
    tuf.tuf_publish(publishers=[event.publisher.slug])


def on_catalog_version_signature_requested(event: CatalogVersionSignatureRequested) -> None:
    """Sign a version published before signing existed, on the first request for its signature."""
    catalog_version_sign(version=event.version)


def on_oci_package_pushed(event: OciPackagePushed) -> None:
    """Sign a pushed kustomization package (cosign's layout, like a version's manifest)."""
    oci_manifest_sign(manifest=event.manifest)
