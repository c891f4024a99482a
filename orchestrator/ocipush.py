"""``krm push``: a kustomization tree packaged as a Flux-format OCI artifact and pushed.

The artifact is what ``flux push artifact`` writes and :mod:`orchestrator.ocibase` pulls: an
image manifest whose config has media type ``application/vnd.cncf.flux.config.v1+json`` and
whose one layer (``application/vnd.cncf.flux.content.v1.tar+gzip``) is a reproducible gzipped tar
of the tree. Pushed with the engine's OCI client (credentials from the docker config).
"""

from __future__ import annotations

import os

from orchestrator.ocibase import FLUX_CONFIG, FLUX_CONTENT, is_oci, parse_oci
from orchestrator.remote import RemoteError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from orchestrator.functions.options import FnOptions

SKIPPED_DIRS = (".git",)


def tree_pack(directory: str) -> bytes:
    """A gzipped tar of ``directory``'s files and directories, the same bytes for the same tree
    (sorted, no owners, times zero). A symbolic link or special file is refused: the artifact
    holds what the tree holds, nothing a link would pull in."""
    import gzip
    import io
    import stat
    import tarfile

    if not os.path.isdir(directory):
        what = "is not a directory" if os.path.exists(directory) else "does not exist"
        raise RemoteError(f"cannot push '{directory}': it {what}")
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for root, dirs, files in os.walk(directory):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            rel_root = os.path.relpath(root, directory)
            for name in [*sorted(files), *dirs]:
                path = os.path.join(root, name)
                rel = name if rel_root == "." else f"{rel_root}/{name}"
                st = os.lstat(path)
                info = tarfile.TarInfo(rel)
                info.mtime = 0
                if stat.S_ISDIR(st.st_mode):
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o755
                    tar.addfile(info)
                elif stat.S_ISREG(st.st_mode):
                    info.size = st.st_size
                    info.mode = 0o755 if st.st_mode & 0o111 else 0o644
                    with open(path, "rb") as f:
                        tar.addfile(info, f)
                else:
                    kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "a special file"
                    raise RemoteError(
                        f"cannot push '{directory}': '{rel}' is {kind}; an artifact holds only "
                        "regular files and directories"
                    )
    return buf.getvalue()


def artifact_build(layer: bytes, *, source: str = "", revision: str = "") -> tuple[bytes, bytes]:
    """(manifest, config) of a Flux-format artifact whose one layer is ``layer``."""
    import hashlib
    import json

    config = b"{}"
    annotations = {"org.opencontainers.image.created": "1970-01-01T00:00:00Z"}
    if source:
        annotations["org.opencontainers.image.source"] = source
    if revision:
        annotations["org.opencontainers.image.revision"] = revision
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": FLUX_CONFIG,
            "digest": "sha256:" + hashlib.sha256(config).hexdigest(),
            "size": len(config),
        },
        "layers": [
            {
                "mediaType": FLUX_CONTENT,
                "digest": "sha256:" + hashlib.sha256(layer).hexdigest(),
                "size": len(layer),
            }
        ],
        "annotations": annotations,
    }
    return json.dumps(manifest, separators=(",", ":")).encode(), config


def tree_push(
    directory: str,
    raw: str,
    options: FnOptions,
    *,
    source: str = "",
    revision: str = "",
) -> str:
    """Pack ``directory`` as a Flux-format artifact, push it to ``raw`` (``oci://HOST/REPO:TAG``)
    with the docker config's credentials, and return the manifest's digest."""
    from orchestrator.functions.fetch import FetchError
    from orchestrator.functions.oci import MANIFEST_TYPES, RegistryClient

    if not is_oci(raw):
        raise RemoteError(f"cannot push to '{raw}': expected oci://HOST/REPOSITORY:TAG")
    spec = parse_oci(raw)
    if spec.subdir:
        raise RemoteError(f"cannot push to '{raw}': a push target names no directory ('//')")
    if spec.ref.digest is not None:
        raise RemoteError(f"cannot push to '{raw}': push to a tag (the digest is computed)")
    from orchestrator.fs import find_kustomization

    find_kustomization(directory)  # a kustomization tree, with its one kustomization file
    layer = tree_pack(directory)
    manifest, config = artifact_build(layer, source=source, revision=revision)
    try:
        with RegistryClient(spec.ref, options=options, actions="pull,push") as client:
            client.push_blob(config)
            client.push_blob(layer)
            assert spec.ref.tag is not None
            return client.push_manifest(spec.ref.tag, manifest, MANIFEST_TYPES[0])
    except FetchError as exc:
        raise RemoteError(f"cannot push to '{raw}': {exc.message}") from None
