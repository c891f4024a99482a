"""Kustomization trees packaged as OCI artifacts: ``oci://`` bases, components, build targets.

A reference ``oci://HOST/REPO:TAG`` or ``oci://HOST/REPO@sha256:<hex>`` (optionally followed by
``//DIR``, a directory inside the tree) names an OCI artifact in the format ``flux push artifact``
writes: an image manifest with one layer of media type
``application/vnd.cncf.flux.content.v1.tar+gzip`` (config ``application/vnd.cncf.flux.config.v1+
json``). A manifest with one ``application/vnd.oci.image.layer.v1.tar+gzip`` layer (``oras push``
of a tarball) is accepted too. The layer is a gzipped tar of the tree, files at its root.

Pulls go through the engine's OCI client (:mod:`orchestrator.functions.oci`: credentials from the
docker config, plain http only to loopback, the manifest checked against the digest asked for,
the layer against the digest and size its manifest names) and the layer is unpacked by the exec
archives' hardened unpacker (:func:`orchestrator.functions.fetch.unpack_tar`: nothing outside the
tree, no link out of it, no special files, entry and byte limits), into
``$XDG_CACHE_HOME/krm/oci/trees/<manifest hex>``, renamed into place only when complete. A
reference by digest is served from there with no request at all; a tag is resolved with one
manifest request per build, and its tree fetched only when the manifest is new; ``--offline``
uses the manifest the tag named last time. The unpacked tree is a remote base: files there are
restricted to the tree, and bases inside it may not leave it.

With ``--base-key FILE`` (``FnOptions.base_keys``) an artifact is used only when a cosign
simple-signing payload at ``sha256-<manifest hex>.sig`` of its repository, signed by one of the
keys, names its manifest digest and repository (what this project's registry stores for every
package, and ``cosign sign --key`` writes). Without it, an artifact from a registry of this
project's kind whose TUF root is pinned here must be signed so by the online key that root names
(refreshed through TUF, as catalogs are); from other registries only the digests are checked.
"""

from __future__ import annotations

import os

from orchestrator.remote import RemoteError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from orchestrator.functions.oci import ImageRef
    from orchestrator.functions.options import FnOptions

SCHEME = "oci://"
FLUX_CONTENT = "application/vnd.cncf.flux.content.v1.tar+gzip"
FLUX_CONFIG = "application/vnd.cncf.flux.config.v1+json"
OCI_TAR_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
TREE_LAYERS = (FLUX_CONTENT, OCI_TAR_GZIP)


def is_oci(path: str) -> bool:
    """Whether ``path`` is an ``oci://`` reference."""
    return path[:6].lower() == SCHEME


class OciSpec:
    """An ``oci://`` reference: the artifact and a directory inside its tree."""

    __slots__ = ("raw", "ref", "subdir")

    def __init__(self, raw: str, ref: ImageRef, subdir: str) -> None:
        self.raw = raw
        self.ref = ref
        self.subdir = subdir

    @property
    def repository(self) -> str:
        """``oci://HOST/REPO`` (the ``repo:`` of origin annotations)."""
        return f"{SCHEME}{self.ref.registry}/{self.ref.repository}"

    @property
    def reference(self) -> str:
        """The tag or digest asked for (the ``ref:`` of origin annotations)."""
        return self.ref.digest or self.ref.tag or "latest"


def parse_oci(raw: str) -> OciSpec:
    """Parse ``oci://HOST/REPO[:TAG][@sha256:HEX][//DIR]``; RemoteError says what is wrong."""
    from orchestrator.functions.fetch import FetchError
    from orchestrator.functions.oci import ImageRef, parse_image

    text = raw[len(SCHEME) :]
    text, _, subdir = text.partition("//")
    subdir = subdir.strip("/")
    parts = [p for p in subdir.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise RemoteError(f"remote '{raw}': the directory {subdir!r} leaves the artifact's tree")
    host, _, rest = text.partition("/")
    if not host or not rest:
        raise RemoteError(f"remote '{raw}': expected oci://HOST/REPOSITORY[:TAG|@sha256:DIGEST]")
    try:
        # The first component is always the host (as for helm and flux), dotted or not: the
        # rest is parsed under a stand-in host that the docker rules read as one.
        parsed = parse_image(f"registry.invalid/{rest}")
    except FetchError as exc:
        raise RemoteError(
            f"remote '{raw}': {exc.message.replace('registry.invalid/', host + '/')}"
        ) from None
    ref = ImageRef(host.lower(), parsed.repository, parsed.tag, parsed.digest)
    if ref.tag is None and ref.digest is None:
        ref = ImageRef(ref.registry, ref.repository, "latest", None)
    return OciSpec(raw, ref, "/".join(parts))


def cache_root(options: FnOptions) -> str:
    """``<krm cache>/oci``."""
    return os.path.join(options.cache_root(), "oci")


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


class OciCache:
    """Unpacked trees of artifacts by manifest digest, and the manifest each tag named last."""

    def __init__(self, options: FnOptions) -> None:
        self.options = options
        self.root = cache_root(options)

    def _tree(self, digest: str) -> str:
        return os.path.join(self.root, "trees", digest.removeprefix("sha256:"))

    def _ref_file(self, spec: OciSpec) -> str:
        import hashlib

        key = f"{spec.ref.registry}/{spec.ref.repository}:{spec.ref.tag}".encode()
        return os.path.join(self.root, "refs", hashlib.sha256(key).hexdigest())

    def tree(self, spec: OciSpec) -> tuple[str, str]:
        """(the unpacked tree's directory, its manifest digest), pulled if needed; with
        ``--base-key``, only once its signature verified."""
        tree, digest = self._tree_of(spec)
        if self.options.base_keys:
            from orchestrator.functions.signatures import load_key

            keys = [load_key(path, what="--base-key") for path in self.options.base_keys]
            self._verify(spec, digest, keys, "a --base-key applies to it")
        else:
            registry_keys = self._registry_keys(spec)
            if registry_keys is not None:
                registry = registry_keys[0]
                self._verify(
                    spec,
                    digest,
                    registry_keys[1],
                    f"registry {registry} is pinned in the trust store and its TUF root names "
                    "the key that signs its packages",
                )
        return tree, digest

    def _registry_keys(self, spec: OciSpec) -> tuple[str, list[Any]] | None:
        """(registry URL, its online keys) when the artifact's registry is one of this kind
        whose TUF root is pinned here (by ``krm trust add``, a catalog, or krm.lock): its root,
        refreshed and verified by TUF, names the key its package signatures are made with."""
        from orchestrator.functions import tufcache, tufpaths

        registry = tufpaths.oci_registry(spec.ref.registry)
        if not tufcache.is_pinned(self.options, registry):
            return None
        from orchestrator.functions import tufclient

        try:
            session = tufclient.open_session(registry, options=self.options, catalog=spec.raw)
            if session is None:
                return None
            session.refresh(spec.raw)
            keys = tufclient.online_keys(session)
        except tufclient.TrustError as exc:
            reason = exc.message.removeprefix(f"catalog {spec.raw}: ")
            raise RemoteError(f"remote '{spec.raw}': {reason}") from None
        return registry, keys

    def _verify(self, spec: OciSpec, digest: str, keys: list[Any], because: str) -> None:
        """Refuse the artifact unless a cosign signature of its manifest digest, stored at
        ``sha256-<hex>.sig`` of its repository, verifies with one of ``keys`` (fetched each
        build; from the cache with ``--offline``)."""
        import json

        from orchestrator.functions.signatures import SignatureMaterial, cosign_verify

        path = os.path.join(self.root, "signatures", digest.removeprefix("sha256:") + ".json")
        tag = digest.replace(":", "-") + ".sig"
        where = f"{SCHEME}{spec.ref.registry}/{spec.ref.repository}:{tag}"
        if self.options.offline:
            try:
                with open(path, encoding="utf-8") as f:
                    material = SignatureMaterial.from_json(json.load(f))
            except (OSError, ValueError, KeyError):
                raise RemoteError(
                    f"remote '{spec.raw}': its signature is not in the cache ({self.root}) and "
                    f"--offline forbids fetching it ({because})"
                ) from None
        else:
            material = self._signatures(spec, digest, tag, where)
            _write(path, json.dumps(material.to_json()))
        status = cosign_verify(material, keys, what="artifact")
        if status.status == "verified":
            return
        if status.status == "missing":
            reason = f"has no signature ({where} not found)"
        else:
            reason = f"has a bad signature: {status.detail} ({where})"
        raise RemoteError(f"remote '{spec.raw}': {reason}; {because}, so it is not used")

    def _signatures(self, spec: OciSpec, digest: str, tag: str, where: str) -> Any:
        """cosign's simple-signing payloads at ``tag`` (none when the tag does not exist)."""
        import io
        import json

        from orchestrator.functions.fetch import FetchError
        from orchestrator.functions.oci import NotFoundError, RegistryClient
        from orchestrator.functions.signatures import (
            COSIGN_LAYER_MEDIA_TYPE,
            COSIGN_SIGNATURE_ANNOTATION,
            MAX_SIGNATURE_BYTES,
            SignatureMaterial,
        )

        material = SignatureMaterial(
            "cosign",
            where,
            manifest_digest=digest,
            reference=f"{spec.ref.registry}/{spec.ref.repository}",
        )
        try:
            with RegistryClient(spec.ref, options=self.options) as client:
                try:
                    data, _, _ = client.manifest(tag)
                except NotFoundError:
                    return material
                try:
                    layers = json.loads(data).get("layers") or []
                except (ValueError, AttributeError):
                    layers = []
                for layer in layers if isinstance(layers, list) else []:
                    if not isinstance(layer, dict):
                        continue
                    signature = (layer.get("annotations") or {}).get(COSIGN_SIGNATURE_ANNOTATION)
                    size = layer.get("size")
                    if (
                        layer.get("mediaType") != COSIGN_LAYER_MEDIA_TYPE
                        or not isinstance(signature, str)
                        or not isinstance(size, int)
                        or not 0 <= size <= MAX_SIGNATURE_BYTES
                        or not str(layer.get("digest", "")).startswith("sha256:")
                    ):
                        continue
                    sink = io.BytesIO()
                    client.blob(str(layer["digest"]), size, sink)  # digest and size checked
                    material.cosign.append((sink.getvalue(), signature))
        except FetchError as exc:
            raise RemoteError(f"remote '{spec.raw}': its signature: {exc.message}") from None
        material.found = bool(material.cosign)
        return material

    def _tree_of(self, spec: OciSpec) -> tuple[str, str]:
        digest = spec.ref.digest
        if digest is not None:
            tree = self._tree(digest)
            if os.path.isdir(tree):
                return tree, digest
            if self.options.offline:
                raise RemoteError(
                    f"remote '{spec.raw}': {digest} is not in the cache ({self.root}) and "
                    "--offline forbids pulling it"
                )
            return self._pull(spec, digest), digest
        ref_file = self._ref_file(spec)
        if self.options.offline:
            try:
                with open(ref_file, encoding="utf-8") as f:
                    known = f.read().strip()
            except OSError:
                known = ""
            if not known or not os.path.isdir(self._tree(known)):
                raise RemoteError(
                    f"remote '{spec.raw}': tag {spec.ref.tag!r} is not in the cache "
                    f"({self.root}) and --offline forbids resolving it"
                )
            return self._tree(known), known
        tree, digest = self._pull_tag(spec)
        _write(ref_file, digest)
        return tree, digest

    def _pull_tag(self, spec: OciSpec) -> tuple[str, str]:
        from orchestrator.functions.fetch import FetchError
        from orchestrator.functions.oci import RegistryClient

        try:
            with RegistryClient(spec.ref, options=self.options) as client:
                assert spec.ref.tag is not None
                data, media_type, digest = client.manifest(spec.ref.tag)
                tree = self._tree(digest)
                if not os.path.isdir(tree):
                    self._unpack(spec, client, data, media_type, digest)
        except FetchError as exc:
            raise RemoteError(f"remote '{spec.raw}': {exc.message}") from None
        return tree, digest

    def _pull(self, spec: OciSpec, digest: str) -> str:
        from orchestrator.functions.fetch import FetchError
        from orchestrator.functions.oci import RegistryClient

        try:
            with RegistryClient(spec.ref, options=self.options) as client:
                data, media_type, _ = client.manifest(digest)  # checked against ``digest``
                return self._unpack(spec, client, data, media_type, digest)
        except FetchError as exc:
            raise RemoteError(f"remote '{spec.raw}': {exc.message}") from None

    def _layer(self, spec: OciSpec, data: bytes, media_type: str) -> dict[str, Any]:
        """The tree's layer descriptor from a manifest's bytes, or a RemoteError saying why not."""
        import json

        from orchestrator.functions.fetch import normalise_sha256
        from orchestrator.functions.oci import INDEX_TYPES, MANIFEST_TYPES

        try:
            doc = json.loads(data)
        except ValueError:
            raise RemoteError(f"remote '{spec.raw}': the manifest is not JSON") from None
        if not isinstance(doc, dict):
            raise RemoteError(f"remote '{spec.raw}': the manifest is not a JSON object")
        kind = doc.get("mediaType") or media_type
        if kind in INDEX_TYPES or "manifests" in doc:
            raise RemoteError(
                f"remote '{spec.raw}': an image index, not an artifact of a kustomization tree "
                f"(one layer of {FLUX_CONTENT})"
            )
        if kind and kind not in MANIFEST_TYPES:
            raise RemoteError(f"remote '{spec.raw}': unsupported manifest media type {kind!r}")
        layers = doc.get("layers")
        found = [
            str(layer.get("mediaType")) if isinstance(layer, dict) else repr(layer)
            for layer in (layers if isinstance(layers, list) else [])
        ]
        if len(found) != 1 or found[0] not in TREE_LAYERS:
            raise RemoteError(
                f"remote '{spec.raw}': a kustomization artifact has exactly one layer of media "
                f"type {FLUX_CONTENT} or {OCI_TAR_GZIP} (found {found or 'none'})"
            )
        assert isinstance(layers, list)
        layer: dict[str, Any] = layers[0]
        digest, size = layer.get("digest"), layer.get("size")
        if not isinstance(digest, str) or not digest.startswith("sha256:"):
            raise RemoteError(f"remote '{spec.raw}': the layer's digest {digest!r} is not sha256")
        if normalise_sha256(digest) is None:
            raise RemoteError(f"remote '{spec.raw}': the layer's digest {digest!r} is not sha256")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise RemoteError(f"remote '{spec.raw}': the layer has no valid size")
        if size > self.options.max_download:
            raise RemoteError(
                f"remote '{spec.raw}': the layer is {size} bytes, over the limit of "
                f"{self.options.max_download} bytes"
            )
        return layer

    def _unpack(self, spec: OciSpec, client: Any, data: bytes, media_type: str, digest: str) -> str:
        """Fetch the verified layer and unpack it into ``trees/<digest hex>``."""
        import shutil
        import tempfile

        from orchestrator.functions.fetch import unpack_tar

        layer = self._layer(spec, data, media_type)
        trees = os.path.join(self.root, "trees")
        os.makedirs(trees, exist_ok=True)
        work = tempfile.mkdtemp(dir=trees, prefix=".partial-")
        try:
            blob = os.path.join(work, "layer")
            with open(blob, "wb") as sink:
                client.blob(layer["digest"], layer["size"], sink)  # size and digest checked
            tree = os.path.join(work, "tree")
            os.mkdir(tree, 0o755)
            unpack_tar(blob, tree, f"{spec.raw} (layer {layer['digest']})", self.options)
            final = self._tree(digest)
            try:
                os.rename(tree, final)
            except OSError:
                if not os.path.isdir(final):  # not a concurrent build that filed it first
                    raise
            return final
        finally:
            shutil.rmtree(work, ignore_errors=True)


def oci_tree(spec: OciSpec, options: FnOptions) -> tuple[str, str]:
    """(the directory of ``spec``'s unpacked tree, its manifest digest)."""
    return OciCache(options).tree(spec)
