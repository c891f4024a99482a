"""Media types and the manifest of a catalog version (built once, at publish time).

Pure functions of plain values, so the data migration that backfills older versions builds the
very same bytes as publishing does.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from typing import Any

# KEP-2906: the media type of a catalog's one layer in its OCI artifact.
CATALOG_LAYER_MEDIA_TYPE = "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"


OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MANIFEST_MEDIA_TYPES = (OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_MANIFEST_LIST)

# The OCI empty descriptor (image-spec "Guidance for an Empty Descriptor"): the bytes ``{}``.
EMPTY_MEDIA_TYPE = "application/vnd.oci.empty.v1+json"
EMPTY_BLOB = b"{}"
EMPTY_DIGEST = "sha256:" + hashlib.sha256(EMPTY_BLOB).hexdigest()
EMPTY_DESCRIPTOR = {
    "mediaType": EMPTY_MEDIA_TYPE,
    "digest": EMPTY_DIGEST,
    "size": 2,
    "data": "e30=",
}

# KEP-2906 "Use of OCI Artifacts" names the layer media types only; the artifact type is the
# catalog's name in the same vendor tree, without ``.layer`` and the ``+yaml`` suffix.
CATALOG_LAYER = CATALOG_LAYER_MEDIA_TYPE
CATALOG_ARTIFACT_TYPE = "application/vnd.cncf.kubernetes.krm-func-catalog.v1"
CATALOG_TITLE = "catalog.yaml"

DIGEST_RE = re.compile(r"^sha256:[a-f0-9]{64}$")
TAG_RE = re.compile(r"^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$")
VERSION_TAG_RE = re.compile(r"^v([1-9][0-9]{0,9})$")
LATEST = "latest"
# How deeply a manifest may nest objects and arrays: an image manifest or index nests four levels
# (annotations of a descriptor in a list); a deeper one is refused before anything else is read.
MANIFEST_MAX_DEPTH = 16


def sha256_digest(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    """The stored form of a manifest the registry writes: compact JSON, keys in a fixed order."""
    return json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode()


def catalog_version_manifest(
    *, digest: str, size: int, number: int, created: datetime, source: str
) -> bytes:
    """The image manifest of one catalog version: one catalog layer, the empty config."""
    created_text = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    return manifest_bytes(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "artifactType": CATALOG_ARTIFACT_TYPE,
            "config": EMPTY_DESCRIPTOR,
            "layers": [
                {
                    "mediaType": CATALOG_LAYER,
                    "digest": digest,
                    "size": size,
                    "annotations": {"org.opencontainers.image.title": CATALOG_TITLE},
                }
            ],
            "annotations": {
                "org.opencontainers.image.created": created_text,
                "org.opencontainers.image.source": source,
                "org.opencontainers.image.version": str(number),
            },
        }
    )


def descriptor_digests(manifest: dict[str, Any]) -> list[str]:
    """Digests a manifest references: config and layers, or an index's manifests (not subject)."""
    found = []
    config = manifest.get("config")
    if isinstance(config, dict):
        found.append(config.get("digest"))
    for key in ("layers", "manifests", "blobs"):
        for item in manifest.get(key) or []:
            if isinstance(item, dict):
                found.append(item.get("digest"))
    return [d for d in found if isinstance(d, str)]


# Kustomization packages: the artifact ``flux push artifact`` (and ``krm push``) writes, or a
# single-layer ``oras push`` of a gzipped tarball.
FLUX_CONFIG = "application/vnd.cncf.flux.config.v1+json"
FLUX_CONTENT = "application/vnd.cncf.flux.content.v1.tar+gzip"
OCI_TAR_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
PACKAGE_LAYERS = (FLUX_CONTENT, OCI_TAR_GZIP)


def is_package_manifest(parsed: dict[str, Any]) -> bool:
    """Whether a parsed manifest is a kustomization package: one layer of a package type."""
    layers = parsed.get("layers")
    return (
        parsed.get("mediaType") == OCI_MANIFEST
        and isinstance(layers, list)
        and len(layers) == 1
        and layers[0].get("mediaType") in PACKAGE_LAYERS
    )
