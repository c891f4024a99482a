"""Container images of a mirrored catalog: pulled from their registries, verified, and served by
this registry, so that an air-gapped cluster builds with nothing but the registry.

A sync of a source with "mirror runtimes" calls :func:`container_images_stage` before anything
is written: for every container image the catalog names, the manifest or index, every
platform's manifest, the configs and the layers are read from the image's registry, each one
checked against the digest that names it (and the image's cosign signature when the source has
a key); blobs go to scratch files. The served catalog's ``image:`` becomes
``<registry host>/<publisher>/<catalog>/<repository>@sha256:<digest>``. In the sync's commit
transaction the blobs become runtime artifacts of the new version (as exec binaries do) and
:func:`container_images_store` stores the manifests byte for byte in the catalog's repository,
so ``/v2/<publisher>/<catalog>/<repository>/manifests/sha256:…`` serves them. Any failure fails
the run before the commit: the previous version and its images stay served.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.core.files.storage import default_storage

from catalogs.distribution import manifests as m
from catalogs.distribution.services import oci_image_manifest_store
from catalogs.exceptions import DigestMismatchError, FetchError, SyncError
from catalogs.mirroring.fetchers import Limits
from catalogs.mirroring.fetchers.oci import OciClient, _cosign_signatures
from catalogs.mirroring.models import RuntimeArtifact
from catalogs.mirroring.signatures import cosign_verify
from catalogs.publishing.models import Catalog, CatalogVersion
from orchestrator.functions.fetch import FetchError as EngineFetchError
from orchestrator.functions.oci import ImageRef, parse_image

INDEX_TYPES = (m.OCI_INDEX, m.DOCKER_MANIFEST_LIST)
IMAGE_TYPES = (m.OCI_MANIFEST, m.DOCKER_MANIFEST)
# An index may name indexes (nested platforms, attestations); deeper than this is refused.
MAX_INDEX_DEPTH = 2
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
CHUNK = 1024 * 1024


@dataclass(frozen=True)
class ImageBlob:
    """A config or layer: where it came from, its digest and size, and its scratch file ("" when
    the registry already stores these bytes)."""

    uri: str
    digest: str
    size: int
    path: str = ""


@dataclass(frozen=True)
class ImageManifest:
    """A manifest or index exactly as its registry sent it."""

    digest: str
    media_type: str
    content: bytes


@dataclass
class StagedImage:
    """One image of the catalog, read and verified, ready to store."""

    reference: str  # as the upstream catalog names it
    mirrored: str  # as the served catalog names it
    digest: str  # of the manifest or index the reference resolves to
    manifests: list[ImageManifest] = field(default_factory=list)  # children before parents
    blobs: list[ImageBlob] = field(default_factory=list)
    verification: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """Bytes of its config and layers, all platforms."""
        return sum(b.size for b in self.blobs)

    def record(self) -> dict[str, Any]:
        """What the run's provenance says about it."""
        return {
            "mirrored": self.mirrored,
            "digest": self.digest,
            "manifests": len(self.manifests),
            "blobs": len(self.blobs),
            "bytes": self.size,
            "verification": self.verification,
        }


def _container_references(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``runtime.container`` mapping of ``doc`` that names an image."""
    found = []
    for function in doc["spec"]["krmFunctions"]:
        for version in function["versions"]:
            container = (version.get("runtime") or {}).get("container")
            if isinstance(container, dict) and container.get("image"):
                found.append(container)
    return found


def _parsed_reference(image: str, declared: str | None) -> tuple[ImageRef, str | None]:
    """The image's reference and the digest it must resolve to (from ``@`` or ``sha256``)."""
    try:
        ref = parse_image(image)
    except EngineFetchError as exc:
        raise FetchError(f"Container image {image!r} cannot be mirrored: {exc}") from None
    if declared is not None and not _HEX64.fullmatch(declared):
        raise FetchError(
            f"Container image {image}: its sha256 {declared!r} is not 64 lower-case hexadecimal "
            "characters."
        )
    wanted = f"sha256:{declared}" if declared else None
    if ref.digest and wanted and ref.digest != wanted:
        raise DigestMismatchError(
            f"Container image {image} names digest {ref.digest} but its sha256 says {wanted}."
        )
    return ref, ref.digest or wanted


def _media_type(parsed: dict[str, Any], where: str) -> str:
    """The manifest's media type: its own field, else what its keys say (OCI allows none)."""
    media_type = parsed.get("mediaType")
    if media_type is None:
        media_type = m.OCI_INDEX if "manifests" in parsed else m.OCI_MANIFEST
    if media_type not in INDEX_TYPES + IMAGE_TYPES:
        raise FetchError(
            f"{where} has media type {media_type!r}, not an image manifest or index "
            f"({', '.join(INDEX_TYPES + IMAGE_TYPES)})."
        )
    return str(media_type)


def _descriptor(value: Any, where: str) -> dict[str, Any]:
    """A descriptor with a sha256 digest and a size, or FetchError naming ``where``."""
    if not isinstance(value, dict):
        raise FetchError(f"{where} is not a descriptor object.")
    digest, size = value.get("digest"), value.get("size")
    if not isinstance(digest, str) or not m.DIGEST_RE.match(digest):
        raise FetchError(f"{where} has no sha256 digest (digest {digest!r}).")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise FetchError(f"{where} has no valid size (size {size!r}).")
    return value


def _manifest_checked(parsed: Any, where: str) -> tuple[str, list[dict[str, Any]]]:
    """(media type, descriptors it names) of a manifest (config + layers) or an index."""
    if not isinstance(parsed, dict) or parsed.get("schemaVersion") != 2:
        raise FetchError(f"{where} is not a schema 2 manifest or index.")
    media_type = _media_type(parsed, where)
    key = "manifests" if media_type in INDEX_TYPES else "layers"
    items = parsed.get(key)
    if not isinstance(items, list):
        raise FetchError(f"{where} has no {key} list.")
    limit = settings.OCI_MANIFEST_MAX_DESCRIPTORS
    count = len(items) + (1 if key == "layers" else 0)  # a manifest's config is one too
    if count > limit:
        what = "a config and layers" if key == "layers" else "manifests"
        raise FetchError(
            f"{where} names {count} descriptors ({what}), over the limit of {limit} "
            "(OCI_MANIFEST_MAX_DESCRIPTORS)."
        )
    found = [_descriptor(item, f"{where} {key}[{i}]") for i, item in enumerate(items)]
    if key == "layers":
        found.insert(0, _descriptor(parsed.get("config"), f"{where} config"))
    return media_type, found


class _ImageReader:
    """Reads one image (all platforms) from one repository of one registry."""

    def __init__(self, ref: ImageRef, *, limits: Limits):
        self.ref = ref
        self.client = OciClient(ref.api_host, limits=limits)
        self.manifests: dict[str, ImageManifest] = {}
        self.blobs: dict[str, int] = {}  # digest -> declared size, in the order first named

    def name(self, reference: str) -> str:
        sep = "@" if reference.startswith("sha256:") else ":"
        return f"{self.ref.registry}/{self.ref.repository}{sep}{reference}"

    def manifest(self, reference: str, *, expected: str | None, depth: int) -> str:
        """Read the manifest ``reference`` and everything below it; return its digest."""
        where = f"Manifest {self.name(reference)}"
        container = self.client.container(f"{self.ref.repository}@{reference}")
        if not reference.startswith("sha256:"):
            container = self.client.container(f"{self.ref.repository}:{reference}")
        found = self.client.manifest(container)
        assert found is not None
        raw, digest, parsed = found
        if expected is not None and digest != expected:
            raise DigestMismatchError(
                f"{where}: the registry sent a manifest with digest {digest}, not {expected}."
            )
        if digest in self.manifests:
            return digest
        media_type, descriptors = _manifest_checked(parsed, where)
        if media_type in INDEX_TYPES:
            if depth >= MAX_INDEX_DEPTH:
                raise FetchError(f"{where} nests indexes deeper than {MAX_INDEX_DEPTH} levels.")
            for child in descriptors:
                self.manifest(child["digest"], expected=child["digest"], depth=depth + 1)
        else:
            for blob in descriptors:
                self.blobs.setdefault(blob["digest"], blob["size"])
        self.manifests[digest] = ImageManifest(digest, media_type, raw)  # after its children
        return digest

    def download(self, digest: str, size: int, path: str) -> None:
        """Stream blob ``digest`` to ``path``, refusing other bytes than its declared ones."""
        container = self.client.container(f"{self.ref.repository}@{digest}")
        url = f"{self.client.registry.prefix}://{container.get_blob_url(digest)}"
        what = f"Blob {digest} of {self.ref.registry}/{self.ref.repository}"
        response = self.client._request(url, stream=True)
        hasher, written = hashlib.sha256(), 0
        with response, open(path, "wb") as out:
            if response.status_code != 200:
                raise FetchError(f"{what}: GET {url} answered HTTP {response.status_code}.")
            try:
                for chunk in response.iter_content(CHUNK):
                    written += len(chunk)
                    if written > size:
                        break
                    hasher.update(chunk)
                    out.write(chunk)
            except requests.RequestException as exc:
                raise FetchError(f"{what}: cannot read {url}: {exc}") from None
        actual = "sha256:" + hasher.hexdigest()
        if written != size or actual != digest:
            sent = f"more than {size}" if written > size else str(written)
            raise DigestMismatchError(
                f"{what}: the manifest declares {size} bytes, the registry sent {sent} bytes "
                f"with digest {actual if written <= size else '(not computed)'}; refused."
            )


@contextmanager
def _about(image: str) -> Iterator[None]:
    """Name ``image`` in a sync error raised inside: the run's one reason says which failed."""
    try:
        yield
    except SyncError as exc:
        raise type(exc)(f"Container image {image}: {exc.message}") from None


def _already_stored(digests: list[str]) -> set[str]:
    """Which blobs this registry already keeps as runtime artifacts (not downloaded again)."""
    rows = RuntimeArtifact.objects.filter(digest__in=digests).values_list("digest", "storage_name")
    return {digest for digest, name in rows if default_storage.exists(name)}


def container_images_stage(
    *,
    doc: dict[str, Any],
    catalog: Catalog,
    scratch: str,
    limits: Limits,
    cosign_public_key: str = "",
    progress: Callable[[str, int, int], None] | None = None,
) -> list[StagedImage]:
    """Read and verify every container image ``doc`` names; point ``doc`` at this registry.

    Raises a SyncError (FetchError, DigestMismatchError, SignatureError) naming the image and
    the reason; nothing is stored here.
    """
    holders = _container_references(doc)
    if not holders:
        return []
    host = urlsplit(settings.REGISTRY_PUBLIC_URL).netloc
    repository = f"{catalog.publisher.slug}/{catalog.name}"
    max_bytes = int(settings.MIRROR_IMAGE_MAX_BYTES)
    wanted: dict[str, str | None] = {}  # image -> declared sha256 hex (first declaration)
    for holder in holders:
        image, declared = str(holder["image"]), holder.get("sha256")
        declared = str(declared) if declared else None
        if image in wanted and declared and wanted[image] and wanted[image] != declared:
            raise DigestMismatchError(
                f"Container image {image} is declared with two sha256 values "
                f"({wanted[image]} and {declared})."
            )
        if not wanted.get(image):
            wanted[image] = declared
    staged: dict[str, StagedImage] = {}
    readers: list[tuple[_ImageReader, StagedImage]] = []
    for index, (image, declared) in enumerate(wanted.items()):
        if progress:
            progress("images", index, len(wanted))
        ref, pin = _parsed_reference(image, declared)
        with _about(image):
            reader = _ImageReader(ref, limits=limits)
            digest = reader.manifest(pin or ref.tag or "latest", expected=pin, depth=0)
            verification: dict[str, Any] = {"type": "digest"}
            if cosign_public_key:
                signatures = _cosign_signatures(
                    reader.client, reader.client.container(ref.repository), digest
                )
                verification = cosign_verify(
                    public_key_pem=cosign_public_key,
                    signatures=signatures,
                    manifest_digest=digest,
                )
        total = sum(reader.blobs.values())
        if total > max_bytes:
            raise FetchError(
                f"Container image {image} is {total} bytes (configs and layers of every "
                f"platform), over the limit of {max_bytes} bytes (MIRROR_IMAGE_MAX_BYTES)."
            )
        item = StagedImage(
            reference=image,
            mirrored=f"{host}/{repository}/{ref.repository}@{digest}",
            digest=digest,
            manifests=list(reader.manifests.values()),
            verification=verification,
        )
        staged[image] = item
        readers.append((reader, item))
    if progress:
        progress("images", len(wanted), len(wanted))
    # Each blob once, even when several images share it; none this registry already keeps.
    every = [d for reader, _ in readers for d in reader.blobs]
    present = _already_stored(every)
    downloaded: dict[str, str] = {}
    count = len(set(every) - present)
    for reader, item in readers:
        for digest, size in reader.blobs.items():
            uri = f"oci://{reader.ref.registry}/{reader.ref.repository}@{digest}"
            if digest in present:
                item.blobs.append(ImageBlob(uri=uri, digest=digest, size=size))
                continue
            if digest not in downloaded:
                path = os.path.join(scratch, f"image-blob-{digest.removeprefix('sha256:')}")
                with _about(item.reference):
                    reader.download(digest, size, path)
                downloaded[digest] = path
                if progress:
                    progress("image blobs", len(downloaded), count)
            item.blobs.append(ImageBlob(uri=uri, digest=digest, size=size, path=downloaded[digest]))
    for holder in holders:
        item = staged[str(holder["image"])]
        holder["image"] = item.mirrored
        holder["sha256"] = item.digest.removeprefix("sha256:")
    return list(staged.values())


def container_images_store(
    *, catalog: Catalog, version: CatalogVersion, images: list[StagedImage]
) -> None:
    """In the sync's commit transaction, after the version and its downloaded blobs are stored:
    link the blobs the registry already kept to ``version`` and store every manifest (children
    before the index naming them) in ``catalog``'s repository."""
    reused = {b.digest for image in images for b in image.blobs if not b.path}
    for artifact in RuntimeArtifact.objects.filter(digest__in=reused):
        artifact.catalog_versions.add(version)
    for image in images:
        for manifest in image.manifests:
            oci_image_manifest_store(
                catalog=catalog, manifest=manifest.content, media_type=manifest.media_type
            )


def mirrored_images(*, version: CatalogVersion | None) -> dict[str, dict[str, Any]]:
    """Upstream image reference -> what the sync publishing ``version`` mirrored (its run's
    provenance: served reference, digest, counts, verification); empty when none."""
    if version is None:
        return {}
    for provenance in version.sync_runs.order_by("pk").values_list("provenance", flat=True):
        images = (provenance or {}).get("images")
        if isinstance(images, dict):
            return images
    return {}


def mirrored_tag_references(*, version: CatalogVersion | None) -> list[str]:
    """The upstream image references by tag that the sync publishing ``version`` mirrored: an
    unchanged upstream catalog still has its tags resolved again, to see them move (drift)."""
    return [ref for ref in mirrored_images(version=version) if "@" not in ref]


def image_records(images: list[StagedImage]) -> dict[str, Any]:
    """The run's provenance entry: upstream reference -> what was mirrored."""
    return {image.reference: image.record() for image in images}


def tag_digests(images: list[StagedImage]) -> dict[str, str]:
    """Upstream references by tag -> the digest they resolved to (the source's image_digests)."""
    return {i.reference: i.digest for i in images if "@" not in i.reference}
