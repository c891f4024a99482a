"""The demo catalog: one runnable function of each runtime, served by the registry itself.

``manage.py load_demo`` (and ``scripts/serve.sh``) calls :func:`demo_load`. It stores in the
registry's own OCI repository ``/v2/demo/functions``:

- the container image of ``SetNamespace``, built here from Debian's ``busybox-static`` with
  ``umoci`` (a real image tool: ``init``, ``new``, ``insert``, ``config``) and tagged
  ``set-namespace``; built once, then reused, so a second ``load_demo`` changes nothing;
- the exec archive of ``SetLogger`` (a POSIX ``sh`` + ``awk`` program, tar.gz made
  reproducibly) and the starlark script of ``JavaApplication``, as the layers of an artifact
  tagged ``demo-runtimes`` (so that they are referenced, and served at
  ``/v2/demo/functions/blobs/sha256:<hex>`` like any blob);

then publishes ``catalogs/fixtures/demo-catalog.yaml`` with every runtime pointing at those
(``REGISTRY_PUBLIC_URL``, the image with its digest): ``krm build`` of a snippet copied from a
demo function page needs nothing but the registry. Without ``umoci`` or a static ``busybox`` the
image is not built and ``SetNamespace`` keeps a tag without digest (``krm`` then refuses to run
it); the command says so.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from django.conf import settings
from django.db import transaction

from catalogs.distribution import services as oci
from catalogs.distribution.models import OciTag
from catalogs.publishing import services as publishing
from catalogs.publishing.models import Catalog, CatalogVersion, Publisher

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DEMO_FILE = FIXTURES / "demo-catalog.yaml"
PROGRAMS = FIXTURES / "demo"
DEMO_PUBLISHER = "demo"
DEMO_CATALOG = "functions"
IMAGE_TAG = "set-namespace"
RUNTIMES_TAG = "demo-runtimes"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_EMPTY = "application/vnd.oci.empty.v1+json"
EMPTY_JSON = b"{}"
RUNTIMES_ARTIFACT = "application/vnd.krm.demo-runtimes.v1"
SANDBOX_USER = "65534:65534"


class DemoImageUnavailable(Exception):
    """``umoci`` or a static ``busybox`` is missing: the demo image cannot be built here."""


@dataclass(frozen=True)
class DemoResult:
    version: CatalogVersion
    created: bool
    image: str  # the image reference the catalog names ("" when it could not be built)
    notes: list[str]


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def demo_exec_archive() -> bytes:
    """SetLogger's exec archive: one executable ``set-logger``, reproducible bytes."""
    data = (PROGRAMS / "set-logger").read_bytes()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("set-logger")
        info.size, info.mode, info.mtime = len(data), 0o755, 0
        tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def _static_busybox() -> str:
    for candidate in ("/bin/busybox", "/usr/bin/busybox"):
        if os.path.isfile(candidate):
            with open(candidate, "rb") as f:
                head = f.read(1 << 20)
            # A dynamically linked ELF names its interpreter (ld-linux); a static one does not.
            if head.startswith(b"\x7fELF") and b"ld-linux" not in head:
                return candidate
    raise DemoImageUnavailable("no static busybox (Debian package busybox-static)")


def _umoci(*args: str) -> None:
    umoci = shutil.which("umoci")
    if umoci is None:
        raise DemoImageUnavailable("umoci is not on PATH (Debian package umoci)")
    rootless = ["--rootless"] if os.geteuid() != 0 and args[0] == "insert" else []
    proc = subprocess.run(
        [umoci, args[0], *rootless, *args[1:]], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise DemoImageUnavailable(f"umoci {args[0]} failed: {proc.stderr.strip()}")


def demo_image_build(scratch: str) -> tuple[bytes, dict[str, bytes]]:
    """Build SetNamespace's image with umoci: (manifest, {digest: blob}) of an OCI layout."""
    busybox = _static_busybox()
    root = Path(scratch) / "rootfs"
    (root / "bin").mkdir(parents=True)
    shutil.copy(busybox, root / "bin" / "busybox")
    for applet in ("sh", "awk"):
        (root / "bin" / applet).symlink_to("busybox")
    shutil.copy(PROGRAMS / "set-namespace", root / "bin" / "set-namespace")
    (root / "bin" / "set-namespace").chmod(0o755)
    layout = f"{scratch}/layout"
    image = f"{layout}:{IMAGE_TAG}"
    _umoci("init", "--layout", layout)
    _umoci("new", "--image", image)
    _umoci("insert", "--image", image, str(root / "bin"), "/bin")
    _umoci(
        "config",
        "--image",
        image,
        "--config.entrypoint",
        "/bin/set-namespace",
        "--config.user",
        SANDBOX_USER,
        "--config.env",
        "PATH=/bin",
        "--config.workingdir",
        "/",
    )
    index = json.loads(Path(layout, "index.json").read_text())
    [entry] = [
        m
        for m in index["manifests"]
        if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == IMAGE_TAG
    ]

    def blob(digest: str) -> bytes:
        return Path(layout, "blobs", "sha256", digest.removeprefix("sha256:")).read_bytes()

    manifest = blob(entry["digest"])
    parsed = json.loads(manifest)
    blobs = {d["digest"]: blob(d["digest"]) for d in [parsed["config"], *parsed["layers"]]}
    return manifest, blobs


@functools.cache
def _demo_image() -> tuple[bytes, dict[str, bytes]]:
    """The demo image, built once per process (a database reset does not rebuild it)."""
    with tempfile.TemporaryDirectory(prefix="krm-demo-image-") as scratch:
        return demo_image_build(scratch)


def _stored_image(catalog: Catalog) -> str | None:
    """The digest of the demo image already in the repository (a second load reuses it)."""
    tag = OciTag.objects.filter(catalog=catalog, name=IMAGE_TAG).select_related("manifest").first()
    return tag.manifest.digest if tag is not None else None


def _store_runtimes(catalog: Catalog, files: dict[str, bytes]) -> None:
    """The starlark script and the exec archive as the layers of one artifact manifest."""
    layers = [
        {"mediaType": "application/octet-stream", "digest": _sha(data), "size": len(data)}
        for data in files.values()
    ]
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": RUNTIMES_ARTIFACT,
        "config": {"mediaType": OCI_EMPTY, "digest": _sha(EMPTY_JSON), "size": len(EMPTY_JSON)},
        "layers": layers,
    }
    body = json.dumps(manifest, separators=(",", ":"), sort_keys=True).encode()
    oci.oci_artifact_store(
        catalog=catalog,
        manifest=body,
        media_type=OCI_MANIFEST,
        blobs={_sha(data): data for data in files.values()},
        tags=[RUNTIMES_TAG],
    )


def demo_document(*, base_url: str, image: str, image_digest: str | None) -> bytes:
    """The demo catalog with every runtime pointing at the registry at ``base_url``."""
    doc: dict[str, Any] = yaml.safe_load(DEMO_FILE.read_text())
    archive = demo_exec_archive()
    script = (PROGRAMS / "java-application.star").read_bytes()

    def blob_url(data: bytes) -> str:
        return f"{base_url}/v2/{DEMO_PUBLISHER}/{DEMO_CATALOG}/blobs/{_sha(data)}"

    for fn in doc["spec"]["krmFunctions"]:
        for version in fn["versions"]:
            runtime = version["runtime"]
            if "container" in runtime:
                runtime["container"]["image"] = image
                if image_digest:
                    runtime["container"]["sha256"] = image_digest.removeprefix("sha256:")
            for platform in (runtime.get("exec") or {}).get("platforms") or []:
                platform["uri"] = blob_url(archive)
                platform["sha256"] = _sha(archive).removeprefix("sha256:")
            if "starlark" in runtime:
                runtime["starlark"] = {
                    "uri": blob_url(script),
                    "sha256": _sha(script).removeprefix("sha256:"),
                }
    return yaml.safe_dump(doc, sort_keys=False).encode()


def demo_load() -> DemoResult:
    """Store the demo runtimes in the registry and publish the demo catalog (idempotent)."""
    base_url = settings.REGISTRY_PUBLIC_URL.rstrip("/")
    host = urlsplit(base_url).netloc
    image = f"{host}/{DEMO_PUBLISHER}/{DEMO_CATALOG}:{IMAGE_TAG}"
    notes: list[str] = []
    with transaction.atomic():
        publisher = Publisher.objects.filter(slug=DEMO_PUBLISHER).first()
        if publisher is None:
            publisher = publishing.publisher_create(
                slug=DEMO_PUBLISHER, display_name=DEMO_PUBLISHER, actor=None
            )
        catalog = Catalog.objects.filter(publisher=publisher, name=DEMO_CATALOG).first()
        if catalog is None:
            catalog = publishing.catalog_create(
                publisher=publisher,
                name=DEMO_CATALOG,
                description="Demo catalog of Example Co's KRM functions.",
                actor=None,
            )
        _store_runtimes(
            catalog,
            {
                "java-application.star": (PROGRAMS / "java-application.star").read_bytes(),
                "set-logger.tar.gz": demo_exec_archive(),
            },
        )
        digest = _stored_image(catalog)
        if digest is None:
            try:
                manifest, blobs = _demo_image()
                digest = oci.oci_artifact_store(
                    catalog=catalog,
                    manifest=manifest,
                    media_type=OCI_MANIFEST,
                    blobs=blobs,
                    tags=[IMAGE_TAG],
                )
            except DemoImageUnavailable as exc:
                notes.append(
                    f"The demo container image was not built ({exc}): SetNamespace names "
                    f"{image} without a digest, which krm refuses to run."
                )
        content = demo_document(base_url=base_url, image=image, image_digest=digest)
    version, created = publishing.catalog_import(
        publisher_slug=DEMO_PUBLISHER, catalog_name=DEMO_CATALOG, content=content
    )
    return DemoResult(version=version, created=created, image=image, notes=notes)
