"""Reads of the OCI side: repositories, manifests by tag or digest, blobs, tags, referrers.

Blob and manifest reads are the serving fast path: one indexed query (plain SQL, written once),
and none at all for immutable content already served once by this process.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from catalogs.distribution.errors import NameUnknownError
from catalogs.distribution.manifests import EMPTY_BLOB, EMPTY_DIGEST
from catalogs.distribution.models import OciBlob, OciManifest, OciTag
from catalogs.mirroring.models import RuntimeArtifact
from catalogs.publishing.content import ContentCache, stored_bytes_checked
from catalogs.publishing.models import Catalog, CatalogVersion, Publisher


def oci_repository_get(*, publisher_slug: str, catalog_name: str) -> Catalog:
    """The catalog behind repository ``publisher/catalog``, or NameUnknownError."""
    catalog = (
        Catalog.objects.select_related("publisher")
        .filter(publisher__slug=publisher_slug, name=catalog_name)
        .first()
    )
    if catalog is None:
        raise NameUnknownError(
            f"repository name not known to registry: {publisher_slug}/{catalog_name}",
            detail={"name": f"{publisher_slug}/{catalog_name}"},
        )
    return catalog


def oci_repository_exists(*, publisher_slug: str, catalog_name: str) -> bool:
    """Whether repository ``publisher/catalog`` exists."""
    return Catalog.objects.filter(publisher__slug=publisher_slug, name=catalog_name).exists()


@dataclass(frozen=True)
class Blob:
    """A blob found in a repository: its bytes, or the storage name of a mirrored artifact."""

    digest: str
    size: int
    content: bytes | None = None
    storage_name: str = ""


@dataclass(frozen=True)
class Manifest:
    """A stored manifest: bytes, digest and media type."""

    digest: str
    media_type: str
    content: bytes


_P, _C, _V = (m._meta.db_table for m in (Publisher, Catalog, CatalogVersion))
_B, _M, _T = (m._meta.db_table for m in (OciBlob, OciManifest, OciTag))
_RA = RuntimeArtifact._meta.db_table
_RAV = RuntimeArtifact.catalog_versions.through._meta.db_table
_REPO = f"JOIN {_C} c ON c.id = x.catalog_id JOIN {_P} p ON p.id = c.publisher_id"
_WHERE = "p.slug = %s AND c.name = %s"
# Kind 1: catalog bytes of a version; 2: a stored blob; 3: a mirrored runtime artifact (a file).
# The rows give sizes; the bytes of all three are in the object store by digest.
_SQL_BLOB = (
    f"SELECT 1, NULL, x.size FROM {_V} x {_REPO} WHERE {_WHERE} AND x.digest = %s "
    f"UNION ALL SELECT 2, NULL, x.size FROM {_B} x {_REPO} "
    f"WHERE {_WHERE} AND x.digest = %s "
    f"UNION ALL SELECT 3, a.storage_name, a.size FROM {_RA} a "
    f"JOIN {_RAV} l ON l.runtimeartifact_id = a.id JOIN {_V} x ON x.id = l.catalogversion_id "
    f"{_REPO} WHERE {_WHERE} AND a.digest = %s"
)
_SQL_MANIFEST_BY_DIGEST = (
    f"SELECT x.digest, x.media_type, x.size FROM {_M} x {_REPO} WHERE {_WHERE} AND x.digest = %s"
)
_SQL_MANIFEST_BY_TAG = (
    f"SELECT m.digest, m.media_type, m.size FROM {_T} x JOIN {_M} m ON m.id = x.manifest_id "
    f"{_REPO} WHERE {_WHERE} AND x.name = %s"
)

# (publisher, catalog, digest) -> Blob, for blobs that can never go away (catalog bytes and
# mirrored artifacts; uploaded blobs can be garbage-collected, so they are not cached).
_blob_cache: dict[tuple[str, str, str], Blob] = {}
_blob_bytes = ContentCache(max_bytes=64 * 1024 * 1024)
_BLOB_CACHE_MAX = 10_000
# (publisher, catalog, digest) -> Manifest: a digest names its bytes, so this never goes stale.
_manifest_cache: dict[tuple[str, str, str], Manifest] = {}


def oci_blob_find(
    *, publisher_slug: str, catalog_name: str, digest: str, load: bool = True
) -> Blob | None:
    """The blob ``digest`` of repository ``publisher/catalog`` or None (no repo check).

    With ``load=False`` only whether it exists and its size (no bytes read from the store).
    """
    key = (publisher_slug, catalog_name, digest)
    cached = _blob_cache.get(key)
    if cached is not None:
        content = _blob_bytes.get(digest) if cached.storage_name == "" else None
        if content is not None or cached.storage_name:
            return Blob(digest, cached.size, content, cached.storage_name)
    if digest == EMPTY_DIGEST:
        # Every repository holds the empty config its manifests name (pushed or not).
        return Blob(digest, len(EMPTY_BLOB), EMPTY_BLOB)
    params = (publisher_slug, catalog_name, digest) * 3
    with connection.cursor() as cursor:
        cursor.execute(_SQL_BLOB, params)
        row = cursor.fetchone()
    if row is None:
        return None
    kind, storage_name, size = row
    if not load:
        return Blob(digest, int(size), None, storage_name or "")
    if kind == 3:
        blob = Blob(digest, int(size), None, storage_name or "")
    else:
        content = _blob_bytes.get(digest) or stored_bytes_checked(digest=digest, size=int(size))
        blob = Blob(digest, int(size), content, "")
    if kind != 2 and len(_blob_cache) < _BLOB_CACHE_MAX:
        _blob_cache[key] = Blob(digest, blob.size, None, blob.storage_name)
        if blob.content is not None:
            _blob_bytes.put(digest, blob.content)
    return blob


def oci_manifest_find(*, publisher_slug: str, catalog_name: str, reference: str) -> Manifest | None:
    """The manifest of a repository by digest (cached) or by tag (one query), or None."""
    if reference.startswith("sha256:"):
        key = (publisher_slug, catalog_name, reference)
        cached = _manifest_cache.get(key)
        if cached is not None:
            return cached
        sql = _SQL_MANIFEST_BY_DIGEST
    else:
        sql = _SQL_MANIFEST_BY_TAG
    with connection.cursor() as cursor:
        cursor.execute(sql, (publisher_slug, catalog_name, reference))
        row = cursor.fetchone()
    if row is None:
        return None
    cached = _manifest_cache.get((publisher_slug, catalog_name, row[0]))
    if cached is not None:
        return cached
    manifest = Manifest(row[0], row[1], stored_bytes_checked(digest=row[0], size=int(row[2])))
    if len(_manifest_cache) < _BLOB_CACHE_MAX:
        _manifest_cache[(publisher_slug, catalog_name, manifest.digest)] = manifest
    return manifest


def oci_manifest_versions(keys: set[tuple[str, str, str]]) -> dict[tuple[str, str, str], int]:
    """The catalog version each (publisher, catalog, manifest digest) is, for those that are one
    (pull counting; a signature or referrer manifest is none): one query for every key."""
    rows = OciManifest.objects.filter(
        digest__in={digest for _, _, digest in keys}, catalog_version__isnull=False
    ).values_list("catalog__publisher__slug", "catalog__name", "digest", "catalog_version_id")
    return {
        (publisher, catalog, digest): version_id
        for publisher, catalog, digest, version_id in rows
        if (publisher, catalog, digest) in keys
    }


def oci_repository_blobs_present(*, catalog: Catalog, digests: list[str]) -> set[str]:
    """Which of ``digests`` are blobs of ``catalog``'s repository: one query for all of them."""
    wanted = sorted({d for d in digests if d != EMPTY_DIGEST})
    found = {EMPTY_DIGEST} if EMPTY_DIGEST in digests else set()
    if not wanted:
        return found
    marks = ", ".join(["%s"] * len(wanted))
    sql = (
        f"SELECT x.digest FROM {_V} x WHERE x.catalog_id = %s AND x.digest IN ({marks}) "
        f"UNION SELECT x.digest FROM {_B} x WHERE x.catalog_id = %s AND x.digest IN ({marks}) "
        f"UNION SELECT a.digest FROM {_RA} a "
        f"JOIN {_RAV} l ON l.runtimeartifact_id = a.id JOIN {_V} x ON x.id = l.catalogversion_id "
        f"WHERE x.catalog_id = %s AND a.digest IN ({marks})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [catalog.pk, *wanted] * 3)
        found.update(row[0] for row in cursor.fetchall())
    return found


def oci_tag_list(*, catalog: Catalog, last: str = "", n: int | None = None) -> list[str]:
    """Tags of ``catalog``'s repository in ASCII order, after ``last``, at most ``n``."""
    qs = OciTag.objects.filter(catalog=catalog).order_by("name").values_list("name", flat=True)
    if last:
        qs = qs.filter(name__gt=last)
    if n is not None:
        qs = qs[:n]
    return list(qs)


def oci_referrer_list(*, catalog: Catalog, digest: str, artifact_type: str = "") -> list[dict]:
    """Descriptors of the manifests in ``catalog``'s repository whose subject is ``digest``."""
    qs = OciManifest.objects.filter(catalog=catalog, subject_digest=digest).order_by(
        "created_at", "pk"
    )
    if artifact_type:
        qs = qs.filter(artifact_type=artifact_type)
    descriptors = []
    for media_type, size, found, artifact, notes in qs.values_list(
        "media_type", "size", "digest", "artifact_type", "annotations"
    ):
        descriptor: dict = {"mediaType": media_type, "size": size, "digest": found}
        if artifact:
            descriptor["artifactType"] = artifact
        if notes:
            descriptor["annotations"] = notes
        descriptors.append(descriptor)
    return descriptors


def oci_caches_clear() -> None:
    """Forget what this process cached (tests; a database restored from a backup)."""
    _blob_cache.clear()
    _manifest_cache.clear()
    ContentCache.__init__(_blob_bytes, max_bytes=_blob_bytes.max_bytes)


def oci_blob_cached(publisher_slug: str, catalog_name: str, digest: str) -> bytes | None:
    """The bytes of a blob this process already served from this repository, or None."""
    if (publisher_slug, catalog_name, digest) not in _blob_cache:
        return None
    return _blob_bytes.get(digest)


@dataclass(frozen=True)
class PackageListed:
    """A kustomization package of a repository, for its page: tags, digest, files, signature."""

    digest: str
    tags: list[str]
    files: list[list[object]]
    size: int
    created_at: object
    pushed_by: str
    signed: bool


def oci_package_list(*, catalog: Catalog) -> list[PackageListed]:
    """The kustomization packages pushed to ``catalog``'s repository, newest first (three
    queries, whatever their number)."""
    from catalogs.distribution.models import OciPackage

    packages = list(
        OciPackage.objects.filter(manifest__catalog=catalog)
        .select_related("manifest", "pushed_by")
        .order_by("-created_at", "-pk")
    )
    digests = [p.manifest.digest for p in packages]
    tags: dict[int, list[str]] = {}
    for manifest_id, name in OciTag.objects.filter(
        catalog=catalog, manifest_id__in=[p.manifest_id for p in packages]
    ).values_list("manifest_id", "name"):
        tags.setdefault(manifest_id, []).append(name)
    signed = set(
        OciManifest.objects.filter(catalog=catalog, subject_digest__in=digests)
        .filter(tags__name__endswith=".sig")
        .values_list("subject_digest", flat=True)
    )
    return [
        PackageListed(
            digest=p.manifest.digest,
            tags=sorted(tags.get(p.manifest_id, [])),
            files=p.files,
            size=sum(int(str(f[1])) for f in p.files),
            created_at=p.created_at,
            pushed_by=p.pushed_by.get_username() if p.pushed_by else "",
            signed=p.manifest.digest in signed,
        )
        for p in packages
    ]
