"""Writes of the OCI side: storing artifacts and catalog-version manifests, pushes, uploads.

``oci_artifact_store`` is the one way anything lands in a repository (a version's manifest, a
pushed referrer, a cosign signature stored by the signing code); its signature stays stable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q, Sum
from django.urls import reverse
from django.utils import timezone

from catalogs.api.parsers import json_depth
from catalogs.distribution import manifests as m
from catalogs.distribution.errors import (
    BlobTooLargeError,
    BlobUploadInvalidError,
    DeniedError,
    DigestInvalidError,
    ManifestBlobUnknownError,
    ManifestInvalidError,
    ManifestTooLargeError,
    RangeInvalidError,
    SizeInvalidError,
    TagInvalidError,
    TooManyRequestsError,
)
from catalogs.distribution.models import OciBlob, OciManifest, OciTag, OciUpload
from catalogs.distribution.selectors import oci_repository_blobs_present
from catalogs.exceptions import InvalidCatalogError, NotAllowedError
from catalogs.publishing import blobstore
from catalogs.publishing.events import CatalogLatestChanged, CatalogVersionPublished
from catalogs.publishing.models import Catalog, CatalogVersion
from catalogs.publishing.selectors import publisher_storage_used, user_may_publish

RESERVED_TAG_HELP = "'latest' and 'v<n>' name catalog versions"


def _check_digest(digest: str) -> str:
    if not m.DIGEST_RE.match(digest or ""):
        raise DigestInvalidError(
            f"invalid digest {digest!r}: expected sha256:<64 lowercase hex>",
            detail={"digest": digest},
        )
    return digest


def _check_tag(tag: str) -> str:
    if not m.TAG_RE.match(tag):
        raise TagInvalidError(
            f"invalid tag {tag!r}: at most 128 of [a-zA-Z0-9_.-], not starting with '.' or '-'",
            detail={"tag": tag},
        )
    return tag


def _descriptor_checked(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ManifestInvalidError(f"{where} is not a descriptor object")
    media_type = value.get("mediaType")
    if not isinstance(media_type, str) or not media_type:
        raise ManifestInvalidError(f"{where}.mediaType is missing")
    digest = value.get("digest")
    if not isinstance(digest, str) or not m.DIGEST_RE.match(digest):
        raise ManifestInvalidError(f"{where}.digest {digest!r} is not a sha256 digest")
    size = value.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ManifestInvalidError(f"{where}.size {size!r} is not a non-negative integer")
    return value


def _check_counts(data: dict[str, Any]) -> None:
    """Refuse a manifest with more descriptors or annotations than the settings allow.

    Checked before any descriptor is looked at, so the cost of a refusal does not grow with the
    number of layers.
    """
    limit = settings.OCI_MANIFEST_MAX_DESCRIPTORS
    count = 0
    for key in ("layers", "manifests", "blobs"):
        value = data.get(key)
        count += len(value) if isinstance(value, list) else 0
    count += sum(1 for key in ("config", "subject") if key in data)
    if count > limit:
        raise ManifestInvalidError(
            f"manifest has {count} descriptors, over the limit of {limit} "
            "(config, layers, manifests and subject together)",
            detail={"descriptors": count, "limit": limit},
        )
    notes_limit = settings.OCI_MANIFEST_MAX_ANNOTATIONS
    maps = [("annotations", data.get("annotations"))]
    for key in ("config", "subject"):
        if isinstance(data.get(key), dict):
            maps.append((f"{key}.annotations", data[key].get("annotations")))
    for key in ("layers", "manifests", "blobs"):
        value = data.get(key)
        for i, item in enumerate(value if isinstance(value, list) else []):
            if isinstance(item, dict):
                maps.append((f"{key}[{i}].annotations", item.get("annotations")))
    total = 0
    for where, notes in maps:
        if notes is None:
            continue
        if not isinstance(notes, dict) or not all(isinstance(v, str) for v in notes.values()):
            raise ManifestInvalidError(f"{where} must be an object of strings")
        total += len(notes)
    if total > notes_limit:
        raise ManifestInvalidError(
            f"manifest has {total} annotations, over the limit of {notes_limit}",
            detail={"annotations": total, "limit": notes_limit},
        )


def oci_manifest_parse(*, manifest: bytes, media_type: str) -> dict[str, Any]:
    """Validate an OCI image manifest or index, or raise MANIFEST_INVALID saying why."""
    limit = settings.OCI_MANIFEST_MAX_BYTES
    if len(manifest) > limit:
        raise ManifestTooLargeError(
            f"manifest is {len(manifest)} bytes, over the limit of {limit} bytes"
        )
    try:
        data = json.loads(manifest)
    except RecursionError:
        data = None  # deeper than the interpreter's recursion limit: refused just below
    except (ValueError, UnicodeDecodeError) as exc:
        raise ManifestInvalidError(f"manifest is not valid JSON: {exc}")
    if isinstance(data, dict):
        # The counts first: they cost nothing, and bound what the depth check then walks.
        _check_counts(data)
    if data is None or json_depth(data) > m.MANIFEST_MAX_DEPTH:
        raise ManifestInvalidError(
            f"manifest nests objects and arrays deeper than {m.MANIFEST_MAX_DEPTH} levels",
            detail={"limit": m.MANIFEST_MAX_DEPTH},
        )
    if not isinstance(data, dict):
        raise ManifestInvalidError("manifest is not a JSON object")
    if data.get("schemaVersion") != 2:
        raise ManifestInvalidError(f"schemaVersion must be 2, got {data.get('schemaVersion')!r}")
    declared = data.get("mediaType")
    media_type = (media_type or "").split(";")[0].strip()
    if declared and media_type and declared != media_type:
        raise ManifestInvalidError(
            f"manifest mediaType {declared!r} does not match Content-Type {media_type!r}"
        )
    kind = declared or media_type
    if kind == m.OCI_MANIFEST:
        _descriptor_checked(data.get("config"), "config")
        layers = data.get("layers")
        if not isinstance(layers, list):
            raise ManifestInvalidError("layers must be a list")
        for i, layer in enumerate(layers):
            _descriptor_checked(layer, f"layers[{i}]")
    elif kind == m.OCI_INDEX:
        children = data.get("manifests")
        if not isinstance(children, list):
            raise ManifestInvalidError("manifests must be a list")
        for i, child in enumerate(children):
            _descriptor_checked(child, f"manifests[{i}]")
    else:
        raise ManifestInvalidError(
            f"unsupported manifest media type {kind!r}: use {m.OCI_MANIFEST} or {m.OCI_INDEX}"
        )
    if "subject" in data:
        _descriptor_checked(data["subject"], "subject")
    data["mediaType"] = kind
    return data


def _blob_put(*, catalog: Catalog, digest: str, content: bytes) -> None:
    """Store ``content`` as blob ``digest`` of ``catalog`` (once), after checking the digest."""
    actual = m.sha256_digest(content)
    if actual != digest:
        raise DigestInvalidError(
            f"provided digest {digest} did not match uploaded content ({actual})",
            detail={"expected": digest, "actual": actual},
        )
    if digest == m.EMPTY_DIGEST:
        return  # served from a constant in every repository
    # Stored (and checked) before the row that names it, whether or not the row exists yet.
    blobstore.blob_put(content=content, digest=digest)
    OciBlob.objects.get_or_create(catalog=catalog, digest=digest, defaults={"size": len(content)})


def _tag_set(*, catalog: Catalog, name: str, manifest: OciManifest) -> None:
    OciTag.objects.update_or_create(catalog=catalog, name=name, defaults={"manifest": manifest})


def _manifest_row(
    *, catalog: Catalog, content: bytes, parsed: dict[str, Any], version: CatalogVersion | None
) -> OciManifest:
    digest = m.sha256_digest(content)
    config = parsed.get("config") or {}
    blobstore.blob_put(content=content, digest=digest)
    row, created = OciManifest.objects.get_or_create(
        catalog=catalog,
        digest=digest,
        defaults={
            "media_type": parsed["mediaType"],
            "size": len(content),
            "subject_digest": (parsed.get("subject") or {}).get("digest", ""),
            # The referrers API's rule: artifactType, else the config's media type.
            "artifact_type": parsed.get("artifactType") or config.get("mediaType", ""),
            "annotations": parsed.get("annotations") or {},
            "references": m.descriptor_digests(parsed),
            "catalog_version": version,
        },
    )
    if not created and version is not None and row.catalog_version_id is None:
        row.catalog_version = version
        row.save(update_fields=["catalog_version"])
    return row


@transaction.atomic
def oci_artifact_store(
    *, catalog: Catalog, manifest: bytes, media_type: str, blobs: dict[str, bytes], tags: list[str]
) -> str:
    """Store an OCI artifact in ``catalog``'s repository and return its manifest digest.

    ``blobs`` (keyed ``sha256:<hex>``) are stored first; every descriptor the manifest names must
    then be in the repository (``subject`` excepted, as the spec allows). The manifest's
    ``subject`` and ``artifactType`` are recorded for the referrers API. A system service: callers
    check permissions. ``latest`` and ``v<n>`` are reserved for catalog versions.
    """
    parsed = oci_manifest_parse(manifest=manifest, media_type=media_type)
    for tag in tags:
        _check_tag(tag)
        if tag == m.LATEST or m.VERSION_TAG_RE.match(tag):
            raise DeniedError(f"tag {tag!r} is reserved: {RESERVED_TAG_HELP}")
    for digest, content in blobs.items():
        _blob_put(catalog=catalog, digest=_check_digest(digest), content=content)
    _check_references(catalog=catalog, parsed=parsed)
    row = _manifest_row(catalog=catalog, content=manifest, parsed=parsed, version=None)
    for tag in tags:
        _tag_set(catalog=catalog, name=tag, manifest=row)
    return row.digest


@transaction.atomic
def oci_image_manifest_store(*, catalog: Catalog, manifest: bytes, media_type: str) -> OciManifest:
    """Store a mirrored container image's manifest or index byte for byte in ``catalog``'s
    repository (OCI or Docker schema 2: the bytes are the digest).

    A system service for mirror syncs, which verified the bytes against their digest upstream
    and checked their shape; every blob and child manifest they name must already be in the
    repository (MANIFEST_BLOB_UNKNOWN otherwise). No tag: mirrored images are pulled by digest.
    """
    parsed = json.loads(manifest)
    if not isinstance(parsed, dict):
        raise ManifestInvalidError("manifest is not a JSON object")
    parsed = {**parsed, "mediaType": media_type}
    _check_references(catalog=catalog, parsed=parsed)
    return _manifest_row(catalog=catalog, content=manifest, parsed=parsed, version=None)


def _check_references(*, catalog: Catalog, parsed: dict[str, Any]) -> None:
    """Every descriptor names something in the repository: two queries, whatever their number."""
    children = {d.get("digest") for d in parsed.get("manifests") or [] if isinstance(d, dict)}
    digests = m.descriptor_digests(parsed)
    wanted_blobs = [d for d in digests if d not in children]
    known = oci_repository_blobs_present(catalog=catalog, digests=wanted_blobs)
    if children:
        known |= set(
            OciManifest.objects.filter(catalog=catalog, digest__in=children).values_list(
                "digest", flat=True
            )
        )
    for digest in digests:
        if digest not in known:
            raise ManifestBlobUnknownError(
                f"manifest references {digest}, unknown to repository {catalog}",
                detail={"digest": digest},
            )


def catalog_version_source_url(*, version: CatalogVersion) -> str:
    """Where a version comes from: its mirror source, or its HTTPS URL on this registry."""
    # The mirroring app's source of this catalog, read through the catalog's reverse relation.
    mirror_url = (
        Catalog.objects.filter(pk=version.catalog_id, mirror_source__isnull=False)
        .values_list("mirror_source__url", flat=True)
        .first()
    )
    if mirror_url:
        return mirror_url
    catalog = version.catalog
    path = reverse(
        "catalogs:version",
        kwargs={
            "publisher": catalog.publisher.slug,
            "catalog": catalog.name,
            "number": version.number,
        },
    )
    return settings.REGISTRY_PUBLIC_URL.rstrip("/") + path


def oci_catalog_version_store(
    *, version: CatalogVersion, pushed_manifest: bytes | None = None
) -> OciManifest:
    """Store the manifest of a newly published version and tag it ``v<n>`` and ``latest``.

    Called by ``catalog_version_publish`` in its transaction. The manifest is the one pushed
    (its layer is the version's bytes) or else built here, once: its digest never changes.
    """
    catalog = version.catalog
    if pushed_manifest is None:
        content = m.catalog_version_manifest(
            digest=version.digest,
            size=version.size,
            number=version.number,
            created=version.created_at,
            source=catalog_version_source_url(version=version),
        )
    else:
        content = pushed_manifest
    parsed = json.loads(content)
    parsed.setdefault("mediaType", m.OCI_MANIFEST)
    row = _manifest_row(catalog=catalog, content=content, parsed=parsed, version=version)
    _tag_set(catalog=catalog, name=f"v{version.number}", manifest=row)
    if catalog.latest_version_id in (None, version.pk):
        _tag_set(catalog=catalog, name=m.LATEST, manifest=row)
    return row


def oci_catalog_versions_backfill() -> int:
    """Build and store manifests of versions that have none (published before OCI distribution
    existed)."""
    count = 0
    missing = CatalogVersion.objects.filter(oci_manifest__isnull=True).select_related(
        "catalog__publisher"
    )
    for version in missing.order_by("catalog_id", "number"):
        with transaction.atomic():
            oci_catalog_version_store(version=version)
        count += 1
    return count


# ----------------------------------------------------------------------------- push


def _check_push(*, catalog: Catalog, actor: Any) -> None:
    """Owners of the publisher (or staff) may push; nobody pushes into a mirror."""
    if not user_may_publish(publisher=catalog.publisher, user=actor):
        raise DeniedError(
            f"requested access to the resource is denied: only owners of publisher "
            f"'{catalog.publisher.slug}' (or staff) may push to {catalog}"
        )
    source = (
        Catalog.objects.filter(pk=catalog.pk, mirror_source__isnull=False)
        .values_list("mirror_source__name", "mirror_source__url")
        .first()
    )
    if source is not None:
        raise DeniedError(
            f"Catalog '{catalog}' is a mirror of source '{source[0]}' ({source[1]}): it changes "
            "only through that source's sync runs."
        )


@dataclass(frozen=True)
class Pushed:
    """What a manifest push stored: its digest, subject and the version it published (if any)."""

    digest: str
    subject: str = ""
    version: CatalogVersion | None = None


@transaction.atomic
def oci_manifest_push(
    *, catalog: Catalog, reference: str, manifest: bytes, media_type: str, actor: Any
) -> Pushed:
    """A manifest PUT: a catalog (one catalog layer) is published; a referrer is stored."""
    from catalogs.publishing import services  # services imports this module for its publish hook

    _check_push(catalog=catalog, actor=actor)
    parsed = oci_manifest_parse(manifest=manifest, media_type=media_type)
    digest = m.sha256_digest(manifest)
    tag = ""
    if reference.startswith("sha256:"):
        if _check_digest(reference) != digest:
            raise DigestInvalidError(
                f"manifest digest {digest} does not match the reference {reference}",
                detail={"expected": reference, "actual": digest},
            )
    else:
        tag = _check_tag(reference)

    subject = (parsed.get("subject") or {}).get("digest", "")
    if subject:
        stored = oci_artifact_store(
            catalog=catalog,
            manifest=manifest,
            media_type=parsed["mediaType"],
            blobs={},
            tags=[tag] if tag else [],
        )
        return Pushed(stored, subject=subject)

    if m.is_package_manifest(parsed):
        return _package_push(
            catalog=catalog, manifest=manifest, parsed=parsed, tag=tag, actor=actor
        )
    layers = parsed.get("layers") if parsed["mediaType"] == m.OCI_MANIFEST else None
    if not layers or len(layers) != 1 or layers[0]["mediaType"] != m.CATALOG_LAYER:
        found = [layer.get("mediaType") for layer in layers or []]
        raise ManifestInvalidError(
            f"a catalog manifest has exactly one layer of media type {m.CATALOG_LAYER}, a "
            f"kustomization package one of {' or '.join(m.PACKAGE_LAYERS)} "
            f"(found {found or 'none'}); other artifacts need a subject",
            detail={"layers": found},
        )
    _check_references(catalog=catalog, parsed=parsed)
    layer = layers[0]
    content = _layer_bytes(catalog=catalog, digest=layer["digest"])
    if len(content) != layer["size"]:
        raise ManifestInvalidError(
            f"layer size {layer['size']} does not match its blob ({len(content)} bytes)"
        )

    locked = Catalog.objects.select_for_update().get(pk=catalog.pk)
    next_number = (locked.versions.aggregate(n=Max("number"))["n"] or 0) + 1
    existing = CatalogVersion.objects.filter(catalog=locked, digest=layer["digest"]).first()
    wanted = m.VERSION_TAG_RE.match(tag)
    if wanted:
        number = int(wanted.group(1))
        allowed = existing.number if existing is not None else next_number
        if number != allowed:
            raise DeniedError(
                f"tag {tag!r} is immutable: {RESERVED_TAG_HELP}; "
                + (
                    f"this catalog is already version {allowed}"
                    if existing is not None
                    else f"the next version is v{allowed} (or push to 'latest')"
                ),
                detail={"tag": tag, "expected": f"v{allowed}"},
            )
    try:
        version, created = services.catalog_version_publish(
            catalog=catalog, content=content, actor=actor, oci_manifest=manifest
        )
    except NotAllowedError as exc:
        raise DeniedError(exc.message)
    except InvalidCatalogError as exc:
        # Same message and problems as the API's 400 answer for the same document.
        raise ManifestInvalidError(
            exc.message, detail={"problems": [p.as_dict() for p in exc.problems]}
        )
    if not created:
        # The same bytes are an existing version: keep the pushed manifest beside it.
        _check_references(catalog=catalog, parsed=parsed)
        row = _manifest_row(catalog=catalog, content=manifest, parsed=parsed, version=None)
    else:
        row = version.oci_manifest
        # Its bytes are now the version's own content; the uploaded copy is not needed.
        OciBlob.objects.filter(catalog=catalog, digest=layer["digest"]).delete()
    if tag and tag != m.LATEST and not wanted:
        _tag_set(catalog=catalog, name=tag, manifest=row)
    return Pushed(row.digest, version=version)


def oci_package_files(*, content: bytes) -> list[list[Any]]:
    """``[[path, size], ...]`` of a package layer's regular files, sorted; MANIFEST_INVALID
    saying why when the layer is not a gzipped tar of a tree that stays inside itself.

    The same rules as the engine's unpacker (``orchestrator.functions.fetch``): relative names
    without ``..``, links whose target stays inside, no devices; entries and the bytes the files
    hold are limited (``OCI_PACKAGE_MAX_FILES``, ``OCI_PACKAGE_MAX_UNPACKED_BYTES``).
    """
    import gzip
    import io
    import tarfile
    import zlib

    max_files = settings.OCI_PACKAGE_MAX_FILES
    max_bytes = settings.OCI_PACKAGE_MAX_UNPACKED_BYTES
    files: dict[str, int] = {}
    total = 0
    count = 0

    def refuse(reason: str) -> ManifestInvalidError:
        return ManifestInvalidError(f"the package layer {reason}", detail={"reason": reason})

    try:
        with (
            gzip.GzipFile(fileobj=io.BytesIO(content)) as gz,
            tarfile.open(fileobj=gz, mode="r|") as tar,
        ):
            for member in tar:
                count += 1
                if count > max_files:
                    raise refuse(f"has over {max_files} entries (OCI_PACKAGE_MAX_FILES)")
                name = member.name.replace("\\", "/")
                parts = [p for p in name.split("/") if p not in ("", ".")]
                if name.startswith("/") or ".." in parts or "\x00" in name:
                    raise refuse(f"holds an unsafe path {member.name!r}")
                path = "/".join(parts)
                if member.issym():
                    target = [p for p in member.linkname.split("/") if p not in ("", ".")]
                    ups = 0
                    while ups < len(target) and target[ups] == "..":
                        ups += 1
                    if (
                        member.linkname.startswith("/")
                        or ups > len(parts) - 1
                        or ".." in target[ups:]
                    ):
                        raise refuse(f"holds a link {member.name!r} that points outside it")
                elif member.islnk():
                    if member.linkname.strip("/") not in files:
                        raise refuse(f"holds a hard link {member.name!r} to no file before it")
                elif member.isreg():
                    total += member.size
                    if total > max_bytes:
                        raise refuse(
                            f"unpacks to over {max_bytes} bytes (OCI_PACKAGE_MAX_UNPACKED_BYTES)"
                        )
                    files[path] = member.size
                    # Read through: a truncated or corrupt stream fails here, not at a pull.
                    source = tar.extractfile(member)
                    if source is not None:
                        while source.read(1 << 16):
                            pass
                elif not member.isdir():
                    raise refuse(f"holds a special file {member.name!r}")
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise refuse(f"is not a gzipped tar archive: {exc}")
    return [[path, files[path]] for path in sorted(files)]


def _package_push(
    *, catalog: Catalog, manifest: bytes, parsed: dict[str, Any], tag: str, actor: Any
) -> Pushed:
    """Store a kustomization package (a Flux-format artifact): its tree checked, its files
    recorded for the page; trust signs it (``OciPackagePushed``)."""
    from catalogs import events
    from catalogs.distribution.events import OciPackagePushed
    from catalogs.distribution.models import OciPackage

    _check_references(catalog=catalog, parsed=parsed)
    layer = parsed["layers"][0]
    content = _layer_bytes(catalog=catalog, digest=layer["digest"])
    if len(content) != layer["size"]:
        raise ManifestInvalidError(
            f"layer size {layer['size']} does not match its blob ({len(content)} bytes)"
        )
    files = oci_package_files(content=content)
    digest = oci_artifact_store(
        catalog=catalog,
        manifest=manifest,
        media_type=parsed["mediaType"],
        blobs={},
        tags=[tag] if tag else [],
    )
    row = OciManifest.objects.get(catalog=catalog, digest=digest)
    user = actor if getattr(actor, "is_authenticated", False) else None
    _, created = OciPackage.objects.get_or_create(
        manifest=row,
        defaults={"layer_digest": layer["digest"], "files": files, "pushed_by": user},
    )
    if created:
        events.emit(OciPackagePushed(manifest=row))
    return Pushed(digest)


@transaction.atomic
def oci_package_mirror_store(
    *,
    catalog: Catalog,
    manifest: bytes,
    media_type: str,
    blobs: dict[str, bytes],
    tag: str,
    files: list[list[Any]],
) -> OciManifest:
    """Store a kustomization package mirrored from an upstream registry, byte for byte, in its
    mirror's repository and point ``tag`` at it (a tag that moved upstream moves here).

    A system service for mirror syncs: the caller read the manifest and blobs by digest, checked
    the tree with ``oci_package_files`` and any upstream signature. The package is then what a
    push makes of it: recorded for the page and signed by trust (``OciPackagePushed``). The
    mirror's repository has no catalog versions, so any tag, ``latest`` included, names the
    package.
    """
    from catalogs import events
    from catalogs.distribution.events import OciPackagePushed
    from catalogs.distribution.models import OciPackage

    parsed = oci_manifest_parse(manifest=manifest, media_type=media_type)
    if not m.is_package_manifest(parsed):
        raise ManifestInvalidError("not a kustomization package: one layer of a package type")
    if tag:
        _check_tag(tag)
    for digest, content in blobs.items():
        _blob_put(catalog=catalog, digest=_check_digest(digest), content=content)
    _check_references(catalog=catalog, parsed=parsed)
    row = _manifest_row(catalog=catalog, content=manifest, parsed=parsed, version=None)
    if tag:
        _tag_set(catalog=catalog, name=tag, manifest=row)
    _, created = OciPackage.objects.get_or_create(
        manifest=row,
        defaults={"layer_digest": parsed["layers"][0]["digest"], "files": files},
    )
    if created:
        events.emit(OciPackagePushed(manifest=row))
    return row


def _layer_bytes(*, catalog: Catalog, digest: str) -> bytes:
    known = (
        OciBlob.objects.filter(catalog=catalog, digest=digest).exists()
        or CatalogVersion.objects.filter(catalog=catalog, digest=digest).exists()
    )
    content = blobstore.blob_read(digest) if known else None
    if content is None:
        raise ManifestBlobUnknownError(
            f"manifest references {digest}, unknown to repository {catalog}",
            detail={"digest": digest},
        )
    return content


# ----------------------------------------------------------------------------- blob uploads


def _check_size(size: int) -> None:
    limit = settings.OCI_UPLOAD_MAX_BYTES
    if size > limit:
        raise BlobTooLargeError(
            f"blob is over the upload limit of {limit} bytes", detail={"limit": limit}
        )


def _check_upload_quota(*, user: Any, adding: int = 0, upload: OciUpload | None = None) -> None:
    """TOOMANYREQUESTS when ``user``'s open upload sessions are at their count or byte quota."""
    if user is None:
        return
    sessions = OciUpload.objects.filter(user=user)
    if upload is None:
        limit = settings.OCI_UPLOAD_SESSIONS_PER_USER
        if sessions.count() >= limit:
            raise TooManyRequestsError(
                f"you have {limit} upload sessions open, the most allowed "
                "(OCI_UPLOAD_SESSIONS_PER_USER): finish or cancel one, or wait for the "
                f"garbage collection of idle ones ({settings.OCI_UPLOAD_GC_MINUTES} minutes)",
                detail={"limit": limit},
            )
        return
    limit = settings.OCI_UPLOAD_BYTES_PER_USER
    held = sessions.aggregate(n=Sum("size"))["n"] or 0
    if held + adding > limit:
        raise TooManyRequestsError(
            f"your open upload sessions would hold {held + adding} bytes, over the quota of "
            f"{limit} bytes (OCI_UPLOAD_BYTES_PER_USER): finish or cancel a session first",
            detail={"limit": limit},
        )


def _check_publisher_storage(*, catalog: Catalog, adding: int) -> None:
    """TOOMANYREQUESTS when an upload would take the publisher over its storage quota."""
    limit = settings.PUBLISHER_STORAGE_MAX_BYTES
    blobs = OciBlob.objects.filter(catalog__publisher_id=catalog.publisher_id).aggregate(
        n=Sum("size")
    )["n"]
    used = publisher_storage_used(publisher_id=catalog.publisher_id) + int(blobs or 0)
    if used + adding > limit:
        raise TooManyRequestsError(
            f"this blob ({adding} bytes) would take publisher '{catalog.publisher.slug}' to "
            f"{used + adding} bytes, over its storage quota of {limit} bytes "
            "(PUBLISHER_STORAGE_MAX_BYTES)",
            detail={"limit": limit},
        )


@transaction.atomic
def oci_upload_start(*, catalog: Catalog, actor: Any) -> OciUpload:
    """Open an upload session in ``catalog``'s repository (POST .../blobs/uploads/)."""
    _check_push(catalog=catalog, actor=actor)
    user = actor if getattr(actor, "is_authenticated", False) else None
    _check_upload_quota(user=user)
    return OciUpload.objects.create(catalog=catalog, user=user)


@transaction.atomic
def oci_blob_upload(*, catalog: Catalog, digest: str, content: bytes, actor: Any) -> str:
    """A monolithic upload (POST with ?digest=): store the blob at once."""
    _check_push(catalog=catalog, actor=actor)
    _check_size(len(content))
    _check_publisher_storage(catalog=catalog, adding=len(content))
    _blob_put(catalog=catalog, digest=_check_digest(digest), content=content)
    return digest


def _parse_content_range(value: str) -> tuple[int, int]:
    text = value.strip().removeprefix("bytes").strip(" =")
    start, sep, end = text.partition("-")
    if not sep or not start.isdigit() or not end.isdigit() or int(end) < int(start):
        raise BlobUploadInvalidError(f"invalid Content-Range {value!r}: expected <start>-<end>")
    return int(start), int(end)


@transaction.atomic
def oci_upload_append(*, upload: OciUpload, content: bytes, content_range: str = "") -> OciUpload:
    """Append a chunk (PATCH); chunks come in order, else 416 with nothing appended."""
    locked = OciUpload.objects.select_for_update().get(pk=upload.pk)
    if content_range:
        start, end = _parse_content_range(content_range)
        if start != locked.size:
            raise RangeInvalidError(
                f"chunk starts at {start}, the upload has {locked.size} bytes",
                detail={"size": locked.size},
            )
        if end - start + 1 != len(content):
            raise SizeInvalidError(
                f"Content-Range {content_range!r} does not match the chunk's {len(content)} bytes"
            )
    _check_size(locked.size + len(content))
    if content:
        _check_upload_quota(user=locked.user, adding=len(content), upload=locked)
        # The bytes so far, then the row's size: an update lost after the write is cut off.
        so_far = blobstore.upload_read(upload_id=str(locked.uuid), size=locked.size)
        blobstore.upload_write(upload_id=str(locked.uuid), content=so_far + content)
        OciUpload.objects.filter(pk=locked.pk).update(
            size=locked.size + len(content), updated_at=timezone.now()
        )
        locked.refresh_from_db()
    return locked


@transaction.atomic
def oci_upload_finish(
    *, upload: OciUpload, digest: str, content: bytes = b"", content_range: str = ""
) -> str:
    """Close a session (PUT ?digest=): the whole blob must hash to ``digest``."""
    _check_digest(digest)
    upload = oci_upload_append(upload=upload, content=content, content_range=content_range)
    data = blobstore.upload_read(upload_id=str(upload.uuid), size=upload.size)
    _check_publisher_storage(catalog=upload.catalog, adding=len(data))
    _blob_put(catalog=upload.catalog, digest=digest, content=data)
    upload_id = str(upload.uuid)
    upload.delete()
    transaction.on_commit(lambda: blobstore.upload_delete(upload_id))
    return digest


@transaction.atomic
def oci_upload_cancel(*, upload: OciUpload) -> None:
    """Drop an upload session (DELETE)."""
    OciUpload.objects.filter(pk=upload.pk).delete()
    upload_id = str(upload.uuid)
    transaction.on_commit(lambda: blobstore.upload_delete(upload_id))


@transaction.atomic
def oci_uploads_gc(*, older_than: timedelta | None = None) -> tuple[int, int]:
    """Delete upload sessions and uploaded blobs that no manifest references, once stale.

    Returns ``(sessions, blobs)`` deleted. Staleness (``OCI_UPLOAD_GC_MINUTES`` by default)
    gives a client time to push the manifest after its blobs. A session is also deleted once
    older than ``OCI_UPLOAD_MAX_MINUTES`` since it opened, however recently it was written to:
    a client cannot keep one from the GC for ever.
    """
    if older_than is None:
        older_than = timedelta(minutes=settings.OCI_UPLOAD_GC_MINUTES)
    now = timezone.now()
    cutoff = now - older_than
    opened_before = now - timedelta(minutes=settings.OCI_UPLOAD_MAX_MINUTES)
    # Their bytes (``uploads/<uuid>``) go with the storage GC's next pass over the store.
    sessions, _ = OciUpload.objects.filter(
        Q(updated_at__lt=cutoff) | Q(created_at__lt=opened_before)
    ).delete()
    referenced: dict[int, set[str]] = {}
    for catalog_id, references in OciManifest.objects.values_list("catalog_id", "references"):
        referenced.setdefault(catalog_id, set()).update(references or [])
    stale = [
        pk
        for pk, catalog_id, digest in OciBlob.objects.filter(created_at__lt=cutoff).values_list(
            "pk", "catalog_id", "digest"
        )
        if digest not in referenced.get(catalog_id, ())
    ]
    blobs, _ = OciBlob.objects.filter(pk__in=stale).delete()
    return sessions, blobs


def on_catalog_latest_changed(event: CatalogLatestChanged) -> None:
    """An older version was made latest again: the tag ``latest`` names its manifest."""
    version = event.version
    manifest = OciManifest.objects.filter(catalog_version=version).first()
    if manifest is None:  # published before OCI distribution existed: store it now
        manifest = oci_catalog_version_store(version=version)
    _tag_set(catalog=version.catalog, name=m.LATEST, manifest=manifest)


def on_catalog_version_published(event: CatalogVersionPublished) -> None:
    """Store a new version's OCI manifest and move its tags, in its publishing transaction."""
    oci_catalog_version_store(version=event.version, pushed_manifest=event.oci_manifest)
