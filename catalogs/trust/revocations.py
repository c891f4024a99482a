"""Revocation: revoke a function version or a runtime digest of a catalog.

Each revocation appends an entry and writes the next *sequence* of the catalog's revocation list:
a YAML document (``kind: RevocationList``) holding every entry so far, signed with the registry
key in the ``cosign sign-blob`` format (the same as ``catalog.yaml.sig``). Lists are never changed
or deleted; ``/c/<publisher>/<catalog>/revocations.yaml`` serves the newest, and
``.../revocations/<sequence>/revocations.yaml`` each older one. ``krm build`` reads the newest and
refuses what it names. The ``Revocation`` row is also the audit record (who, when, why).
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC
from typing import Any
from urllib.parse import urlsplit

import yaml
from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from catalogs import events
from catalogs.exceptions import AlreadyExistsError, InvalidInputError
from catalogs.publishing import blobstore
from catalogs.publishing.content import stored_content
from catalogs.publishing.models import Catalog, FunctionVersion
from catalogs.publishing.selectors import signed_in
from catalogs.publishing.services import Actor, publisher_check_can_write
from catalogs.trust import signing, tuf
from catalogs.trust.events import RevocationCreated
from catalogs.trust.models import Revocation, RevocationList, RevocationReason

API_VERSION = "config.kubernetes.io/v1alpha1"
KIND = "RevocationList"
OCI_ARTIFACT_TYPE = "application/vnd.dev.krm-catalog-registry.revocations.v1+yaml"
OCI_EMPTY_MEDIA_TYPE = "application/vnd.oci.empty.v1+json"
DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")


def _normalise_digest(value: str) -> str:
    text = value.strip().lower()
    if re.fullmatch(r"[0-9a-f]{64}", text):
        text = "sha256:" + text
    if not DIGEST_RE.fullmatch(text):
        raise InvalidInputError(
            f"Invalid runtime digest '{value}': expected sha256: and 64 hexadecimal characters."
        )
    return text


def runtime_digests(runtime: dict[str, Any]) -> set[str]:
    """Every ``sha256:<hex>`` a catalog runtime names (container, exec platforms, starlark)."""
    found: set[str] = set()
    container = runtime.get("container") or {}
    if container.get("sha256"):
        found.add("sha256:" + str(container["sha256"]).removeprefix("sha256:"))
    image = str(container.get("image") or "")
    if "@sha256:" in image:
        found.add(image.rsplit("@", 1)[1])
    for platform in (runtime.get("exec") or {}).get("platforms") or []:
        if platform.get("sha256"):
            found.add("sha256:" + str(platform["sha256"]).removeprefix("sha256:"))
    starlark = runtime.get("starlark")
    if isinstance(starlark, dict) and starlark.get("sha256"):
        found.add("sha256:" + str(starlark["sha256"]).removeprefix("sha256:"))
    return {d.lower() for d in found}


def _entry(row: Revocation) -> dict[str, Any]:
    entry: dict[str, Any] = {"sequence": row.sequence}
    if row.runtime_digest:
        entry["runtimeDigest"] = row.runtime_digest
    else:
        entry.update(group=row.group, kind=row.kind, version=row.version)
    entry["reason"] = row.reason
    if row.detail:
        entry["detail"] = row.detail
    if row.replacement:
        entry["replacement"] = row.replacement
    entry["revokedAt"] = row.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return entry


def revocation_list_document(*, catalog: Catalog, sequence: int) -> bytes:
    """The YAML of list ``sequence``: every entry of ``catalog`` up to that sequence."""
    rows = Revocation.objects.filter(catalog=catalog, sequence__lte=sequence).order_by("sequence")
    doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": catalog.name, "publisher": catalog.publisher.slug},
        "sequence": sequence,
        "issued": timezone.now().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "revocations": [_entry(r) for r in rows],
    }
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False).encode()


def _check_target(
    *, catalog: Catalog, group: str, kind: str, version: str, runtime_digest: str
) -> tuple[str, str, str, str]:
    """Exactly one target, and one that some version of ``catalog`` defines (no typos)."""
    group, kind, version = group.strip(), kind.strip(), version.strip()
    if runtime_digest.strip():
        if kind or version or group:
            raise InvalidInputError(
                "Revoke either a function version (group, kind, version) or a runtime digest, "
                "not both."
            )
        digest = _normalise_digest(runtime_digest)
        runtimes = FunctionVersion.objects.filter(catalog_version__catalog=catalog).values_list(
            "runtime", flat=True
        )
        if not any(digest in runtime_digests(r or {}) for r in runtimes):
            raise InvalidInputError(
                f"No version of catalog '{catalog}' has a runtime with digest {digest}."
            )
        return "", "", "", digest
    if not kind or not version:
        raise InvalidInputError(
            "Name the function version to revoke (kind and version, and its group), "
            "or a runtime digest."
        )
    defined = FunctionVersion.objects.filter(
        catalog_version__catalog=catalog, group=group, kind=kind, name=version
    ).exists()
    if not defined:
        raise InvalidInputError(
            f"No version of catalog '{catalog}' defines {group}/{version} {kind}."
        )
    return group, kind, version, ""


@transaction.atomic
def revocation_create(
    *,
    catalog: Catalog,
    actor: Actor,
    reason: str,
    group: str = "",
    kind: str = "",
    version: str = "",
    runtime_digest: str = "",
    detail: str = "",
    replacement: str = "",
) -> Revocation:
    """Revoke a function version or a runtime digest; publish and sign the next list sequence.

    Owners of the catalog's publisher and staff may (mirror catalogs: mirror operators).
    """
    publisher_check_can_write(publisher=catalog.publisher, actor=actor)
    if reason not in RevocationReason.values:
        raise InvalidInputError(
            f"Invalid reason '{reason}': use one of {', '.join(RevocationReason.values)}."
        )
    group, kind, version, digest = _check_target(
        catalog=catalog, group=group, kind=kind, version=version, runtime_digest=runtime_digest
    )
    if len(replacement) > 500:
        raise InvalidInputError("The replacement hint is at most 500 characters.")
    # One writer per catalog at a time: sequences are gapless and never reused.
    Catalog.objects.select_for_update().filter(pk=catalog.pk).first()
    existing = Revocation.objects.filter(
        catalog=catalog, group=group, kind=kind, version=version, runtime_digest=digest
    ).first()
    if existing is not None:
        raise AlreadyExistsError(f"Already revoked in list sequence {existing.sequence}.")
    last = RevocationList.objects.filter(catalog=catalog).order_by("-sequence").first()
    sequence = (last.sequence if last else 0) + 1
    row = Revocation.objects.create(
        catalog=catalog,
        sequence=sequence,
        group=group,
        kind=kind,
        version=version,
        runtime_digest=digest,
        reason=reason,
        detail=detail.strip(),
        replacement=replacement.strip(),
        created_by=actor if signed_in(actor) else None,
    )
    revocation_list_publish(catalog=catalog, sequence=sequence)
    events.emit(RevocationCreated(revocation=row))
    return row


def revocation_list_content(*, listed: RevocationList) -> bytes:
    """The exact YAML of list ``listed`` as served (from the object store, cached)."""
    return stored_content(digest=listed.digest)


def revocation_list_publish(
    *, catalog: Catalog, sequence: int, tuf_sign: bool = True
) -> RevocationList:
    """Write, sign and store list ``sequence`` (and, with OCI on, its referrer artifact); the
    list becomes the catalog's TUF target (signed now unless ``tuf_sign`` is False: the caller
    signs once for everything it changed)."""
    content = revocation_list_document(catalog=catalog, sequence=sequence)
    signature = signing.sign_bytes(content)
    # In the object store before the row that names it (StorageError: nothing recorded).
    digest = blobstore.blob_put(content=content)
    listed = RevocationList.objects.create(
        catalog=catalog,
        sequence=sequence,
        digest=digest,
        signature=signature.signature_b64,
        signing_key=signature.key,
    )
    if sequence > 0:
        # The empty list every catalog starts with is a TUF target, not an OCI artifact too.
        _oci_referrer_store(listed=listed)
    tuf.target_set(
        publisher=catalog.publisher, path=tuf.revocations_target_path(catalog), content=content
    )
    if tuf_sign:
        tuf.tuf_publish(publishers=[catalog.publisher.slug])
    return listed


def _oci_referrer_store(*, listed: RevocationList) -> str | None:
    """The list as an OCI artifact whose subject is the latest catalog version's manifest."""
    from catalogs.distribution.models import OciManifest
    from catalogs.distribution.services import oci_artifact_store

    catalog = listed.catalog
    if catalog.latest_version_id is None:
        return None
    manifest = OciManifest.objects.filter(catalog_version_id=catalog.latest_version_id).first()
    if manifest is None:
        return None
    content = revocation_list_content(listed=listed)
    empty = b"{}"
    empty_digest = "sha256:" + hashlib.sha256(empty).hexdigest()
    oci_manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": signing.OCI_MANIFEST_MEDIA_TYPE,
            "artifactType": OCI_ARTIFACT_TYPE,
            "config": {"mediaType": OCI_EMPTY_MEDIA_TYPE, "size": 2, "digest": empty_digest},
            "layers": [
                {
                    "mediaType": OCI_ARTIFACT_TYPE,
                    "size": len(content),
                    "digest": listed.digest,
                    "annotations": {
                        signing.COSIGN_SIGNATURE_ANNOTATION: listed.signature,
                        "org.opencontainers.image.title": "revocations.yaml",
                    },
                }
            ],
            "subject": {
                "mediaType": manifest.media_type,
                "size": manifest.size,
                "digest": manifest.digest,
            },
            "annotations": {
                signing.KEY_ID_ANNOTATION: listed.signing_key.key_id,
                "dev.krm-catalog-registry/revocation-sequence": str(listed.sequence),
            },
        },
        separators=(",", ":"),
    ).encode()
    return oci_artifact_store(
        catalog=catalog,
        manifest=oci_manifest,
        media_type=signing.OCI_MANIFEST_MEDIA_TYPE,
        blobs={empty_digest: empty, listed.digest: content},
        tags=[f"revocations-{listed.sequence}"],
    )


@transaction.atomic
def revocation_list_import(*, catalog: Catalog, entries: list[dict[str, Any]]) -> int:
    """Carry an upstream list into a mirror catalog: entries not yet here are appended (one new
    sequence for all of them); the number appended. A system service (mirror sync)."""
    Catalog.objects.select_for_update().filter(pk=catalog.pk).first()
    have = {
        (r.group, r.kind, r.version, r.runtime_digest)
        for r in Revocation.objects.filter(catalog=catalog)
    }
    last = RevocationList.objects.filter(catalog=catalog).order_by("-sequence").first()
    sequence = (last.sequence if last else 0) + 1
    added = 0
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        digest = str(entry.get("runtimeDigest") or "").lower()
        key = (
            "" if digest else str(entry.get("group") or ""),
            "" if digest else str(entry.get("kind") or ""),
            "" if digest else str(entry.get("version") or ""),
            digest,
        )
        reason = str(entry.get("reason") or "")
        if key in have or reason not in RevocationReason.values:
            continue
        if digest and not DIGEST_RE.fullmatch(digest):
            continue
        if not digest and not (key[1] and key[2]):
            continue
        have.add(key)
        Revocation.objects.create(
            catalog=catalog,
            sequence=sequence,
            group=key[0],
            kind=key[1],
            version=key[2],
            runtime_digest=digest,
            reason=reason,
            detail=str(entry.get("detail") or "")[:10000],
            replacement=str(entry.get("replacement") or "")[:500],
        )
        added += 1
    if added:
        revocation_list_publish(catalog=catalog, sequence=sequence)
    return added


# --- Selectors. ---


def revocation_list(*, catalog: Catalog) -> QuerySet[Revocation]:
    """Every revocation of ``catalog``, oldest first."""
    return Revocation.objects.filter(catalog=catalog).select_related("created_by")


def revocation_list_get(*, catalog: Catalog, sequence: int | None = None) -> RevocationList | None:
    """List ``sequence`` of ``catalog`` (the newest when None), or None."""
    lists = RevocationList.objects.filter(catalog=catalog).select_related("signing_key")
    if sequence is not None:
        return lists.filter(sequence=sequence).first()
    return lists.order_by("-sequence").first()


def revocations_url_for(catalog_url: str) -> str | None:
    """``…/c/<publisher>/<catalog>/revocations.yaml`` for a catalog URL of this registry's shape."""
    parts = urlsplit(catalog_url)
    match = re.match(
        r"^(?P<base>.*/c/[-\w]+/[-\w]+)/(?:versions/\d+/|sha256/[0-9a-fA-F]{64}/)?catalog\.yaml$",
        parts.path,
    )
    if parts.scheme not in ("http", "https") or match is None:
        return None
    return f"{parts.scheme}://{parts.netloc}{match['base']}/revocations.yaml"


def revocation_public_url(catalog: Catalog) -> str:
    """Where this registry serves ``catalog``'s newest list."""
    base = settings.REGISTRY_PUBLIC_URL.rstrip("/")
    return f"{base}/c/{catalog.publisher.slug}/{catalog.name}/revocations.yaml"
