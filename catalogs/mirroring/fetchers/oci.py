"""OCI fetcher (oras): resolve the tag to its manifest digest, verify the KEP catalog layer.

References: ``oci://host[:port]/repo:tag`` or ``oci://host[:port]/repo@sha256:<hex>``. Cosign
simple-signing signatures are read from the ``sha256-<hex>.sig`` tag of the same repository.
"""

from __future__ import annotations

import hashlib
import json
import socket
from typing import Any
from urllib.parse import urljoin

import oras.auth
import oras.container
import oras.provider
import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util.connection import create_connection

from catalogs.distribution.manifests import CATALOG_LAYER_MEDIA_TYPE
from catalogs.exceptions import DigestMismatchError, FetchError
from catalogs.mirroring.fetchers.base import (
    CosignSignature,
    Fetched,
    FetchOptions,
    Limits,
    check_destination,
    credential_for,
    register,
    resolve_checked,
)

MANIFEST_MEDIA_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
INDEX_MEDIA_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
COSIGN_LAYER_MEDIA_TYPE = "application/vnd.dev.cosign.simplesigning.v1+json"
COSIGN_SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
MANIFEST_MAX_BYTES = 4 * 1024 * 1024


class _PinnedConnection(HTTPConnection):
    """Connects only to addresses it has just resolved and checked (no DNS-rebinding window).

    ``self.host`` stays the name, so the Host header, SNI and certificate checks use it.
    """

    limits: Limits

    def _new_conn(self) -> socket.socket:
        addresses = resolve_checked(self.host, self.port, limits=self.limits)
        error: OSError | None = None
        for address in addresses:
            try:
                return create_connection(
                    (address, self.port),
                    self.timeout,  # type: ignore[arg-type]
                    source_address=self.source_address,
                    socket_options=self.socket_options,
                )
            except TimeoutError as exc:
                raise ConnectTimeoutError(self, f"Connection to {self.host} timed out.") from exc
            except OSError as exc:
                error = exc
        raise NewConnectionError(self, f"Failed to establish a new connection: {error}")


class _PinnedHTTPSConnection(_PinnedConnection, HTTPSConnection):
    pass


class _PinnedAdapter(HTTPAdapter):
    """A requests adapter whose pools connect through ``_PinnedConnection``."""

    def __init__(self, limits: Limits):
        bound = {"limits": limits}
        http = type("PinnedHTTP", (_PinnedConnection,), bound)
        https = type("PinnedHTTPS", (_PinnedHTTPSConnection,), bound)
        self._pool_classes = {
            "http": type("PinnedHTTPPool", (HTTPConnectionPool,), {"ConnectionCls": http}),
            "https": type("PinnedHTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": https}),
        }
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = self._pool_classes


class _GuardedSession(requests.Session):
    """A requests session with a default timeout that re-checks every redirect's destination."""

    def __init__(self, limits: Limits):
        super().__init__()
        self.limits = limits
        self.max_redirects = limits.max_redirects
        self.trust_env = False
        adapter = _PinnedAdapter(limits)
        self.mount("https://", adapter)
        self.mount("http://", adapter)

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        kwargs.setdefault("timeout", self.limits.timeout)
        check_destination(url, limits=self.limits)
        return super().request(method, url, **kwargs)

    def get_redirect_target(self, resp: requests.Response) -> str | None:
        target = super().get_redirect_target(resp)
        if target:
            check_destination(urljoin(resp.url, target), limits=self.limits)
        return target


class _RegistryAuth(oras.auth.TokenAuth):
    """oras's token flow, and plain Basic for registries that challenge with Basic (htpasswd)."""

    def authenticate_request(
        self, original: requests.Response, headers: dict, refresh: bool = False
    ) -> tuple[dict, bool]:
        challenge = original.headers.get("Www-Authenticate", "")
        if challenge.lower().startswith("basic"):
            basic = getattr(self, "_basic_auth", None)
            if not basic:  # nothing to answer with (the realm is no token service to ask)
                return headers or {}, False
            return {**(headers or {}), "Authorization": f"Basic {basic}"}, True
        return super().authenticate_request(original, headers, refresh=refresh)


class OciClient:
    """The few registry calls a sync needs, through oras's registry provider."""

    def __init__(self, host: str, *, limits: Limits):
        self.host = host
        self.limits = limits
        plain = host in limits.oci_plain_http_hosts
        self.registry = oras.provider.Registry(
            hostname=host, insecure=plain, tls_verify=limits.ca_bundle or True
        )
        session = _GuardedSession(limits)
        self.registry.session = session
        auth = _RegistryAuth()
        auth.session = session
        auth.prefix = self.registry.prefix
        auth._tls_verify = self.registry._tls_verify  # type: ignore[attr-defined]
        self.registry.auth = auth
        # MIRROR_CREDENTIALS for this registry (host:port or host); never part of a reference.
        # MIRROR_NETRC_FILE too, over TLS only (never in clear text to a plain-HTTP registry).
        self.credential = credential_for(f"https://{host}/", limits=limits, netrc=not plain)
        if self.credential is not None and self.credential.token:
            auth.set_token_auth(self.credential.token)
        elif self.credential is not None:
            auth.set_basic_auth(self.credential.username, self.credential.password)

    def _request(self, url: str, *, method: str = "GET", headers: dict | None = None, stream=False):
        # oras wraps do_request in a retry loop with multi-second sleeps; a sync owns its retries.
        do_request = oras.provider.Registry.do_request.__wrapped__  # type: ignore[attr-defined]
        try:
            return do_request(self.registry, url, method, headers=headers or {}, stream=stream)
        except requests.Timeout:
            raise FetchError(
                f"Timed out after {self.limits.timeout:g} s waiting for {url}"
            ) from None
        except requests.RequestException as exc:
            raise FetchError(f"Cannot read {url}: {exc}") from None
        except ValueError:
            # oras: the registry asked for authentication that the configured one cannot answer.
            hint = "add credentials for host" if self.credential is None else "check credentials of"
            raise FetchError(
                f"GET {url} requires authentication: {hint} '{self.host}' in MIRROR_CREDENTIALS"
            ) from None

    def container(self, name: str) -> oras.container.Container:
        """Parse ``repo[:tag|@digest]`` on this registry."""
        return oras.container.Container(name, registry=self.host)

    def manifest(self, container: oras.container.Container, *, missing_ok: bool = False):
        """(raw bytes, digest, parsed JSON) of a manifest, or None if missing and ``missing_ok``."""
        url = f"{self.registry.prefix}://{container.manifest_url()}"
        accept = ", ".join(MANIFEST_MEDIA_TYPES + INDEX_MEDIA_TYPES)
        response = self._request(url, headers={"Accept": accept})
        if response.status_code == 404 and missing_ok:
            return None
        if response.status_code != 200:
            raise FetchError(f"GET {url} answered HTTP {response.status_code}")
        raw = response.content
        if len(raw) > MANIFEST_MAX_BYTES:
            raise FetchError(f"Manifest at {url} is over {MANIFEST_MAX_BYTES} bytes")
        digest = "sha256:" + hashlib.sha256(raw).hexdigest()
        try:
            parsed = json.loads(raw)
        except ValueError:
            raise FetchError(f"Manifest at {url} is not JSON") from None
        return raw, digest, parsed

    def blob(self, container: oras.container.Container, layer: dict, *, max_bytes: int) -> bytes:
        """A layer's bytes, checked against its declared size and digest."""
        digest, size = str(layer.get("digest", "")), layer.get("size")
        if not isinstance(size, int) or size < 0 or not digest.startswith("sha256:"):
            raise FetchError(f"Layer {digest or '?'} has no valid sha256 digest and size")
        if size > max_bytes:
            raise FetchError(
                f"Layer {digest} is {size} bytes, over the size limit of {max_bytes} bytes"
            )
        url = f"{self.registry.prefix}://{container.get_blob_url(digest)}"
        response = self._request(url, stream=True)
        with response:
            if response.status_code != 200:
                raise FetchError(f"GET {url} answered HTTP {response.status_code}")
            body = bytearray()
            try:
                for chunk in response.iter_content(1024 * 1024):
                    body.extend(chunk)
                    if len(body) > size:
                        break
            except requests.RequestException as exc:
                raise FetchError(f"Cannot read {url}: {exc}") from None
        data = bytes(body)
        actual = "sha256:" + hashlib.sha256(data).hexdigest()
        if len(data) != size or actual != digest:
            raise DigestMismatchError(
                f"Layer digest mismatch: manifest declares {digest} ({size} bytes), "
                f"registry sent {actual} ({len(data)} bytes)"
            )
        return data

    def resolve(self, name: str) -> str:
        """The manifest digest a tag points at (for container image drift)."""
        container = self.container(name)
        url = f"{self.registry.prefix}://{container.manifest_url()}"
        accept = ", ".join(MANIFEST_MEDIA_TYPES + INDEX_MEDIA_TYPES)
        response = self._request(url, method="HEAD", headers={"Accept": accept})
        if response.status_code != 200:
            raise FetchError(f"HEAD {url} answered HTTP {response.status_code}")
        digest = response.headers.get("Docker-Content-Digest", "")
        if not digest:
            raise FetchError(f"HEAD {url} returned no Docker-Content-Digest")
        return digest


def parse_oci_ref(ref: str) -> tuple[str, str]:
    """``oci://host/repo:tag`` -> (host, ``repo:tag``), or FetchError."""
    rest = ref[len("oci://") :]
    host, sep, name = rest.partition("/")
    if not sep or not host or not name:
        raise FetchError(f"OCI source '{ref}' must look like oci://host/repository:tag")
    return host, name


@register("oci")
def fetch_oci(ref: str, *, limits: Limits, options: FetchOptions | None = None) -> Fetched:
    """Fetch the catalog layer of an OCI artifact; the digest is the manifest digest."""
    options = options or FetchOptions()
    host, name = parse_oci_ref(ref)
    client = OciClient(host, limits=limits)
    container = client.container(name)
    found = client.manifest(container)
    assert found is not None
    _raw, manifest_digest, manifest = found
    if container.digest and container.digest != manifest_digest:
        raise DigestMismatchError(
            f"Manifest digest mismatch: asked for {container.digest}, registry sent "
            f"{manifest_digest}"
        )
    media_type = manifest.get("mediaType", "")
    if media_type in INDEX_MEDIA_TYPES:
        raise FetchError(f"{ref} is an image index, not a catalog artifact manifest")
    layers = [x for x in manifest.get("layers") or [] if isinstance(x, dict)]
    catalog_layers = [x for x in layers if x.get("mediaType") == CATALOG_LAYER_MEDIA_TYPE]
    if len(catalog_layers) != 1:
        seen = ", ".join(sorted({str(x.get("mediaType")) for x in layers})) or "no layers"
        raise FetchError(
            f"{ref} must have exactly one layer of media type {CATALOG_LAYER_MEDIA_TYPE}; "
            f"found: {seen}"
        )
    layer = catalog_layers[0]
    content = client.blob(container, layer, max_bytes=limits.max_bytes)
    signatures: tuple[CosignSignature, ...] = ()
    if options.signatures:
        signatures = _cosign_signatures(client, container, manifest_digest)
    provenance = {
        "registry": host,
        "repository": container.api_prefix,
        "tag": container.tag if not container.digest else "",
        "manifest_digest": manifest_digest,
        "layer_digest": layer["digest"],
        "layer_size": layer["size"],
    }
    return Fetched(
        content=content,
        digest=manifest_digest,
        provenance=provenance,
        cosign_signatures=signatures,
    )


def _cosign_signatures(
    client: OciClient, container: oras.container.Container, manifest_digest: str
) -> tuple[CosignSignature, ...]:
    """Every simple-signing signature stored at the ``sha256-<hex>.sig`` tag (none if absent)."""
    tag = manifest_digest.replace(":", "-") + ".sig"
    sig_container = client.container(f"{container.api_prefix}:{tag}")
    found = client.manifest(sig_container, missing_ok=True)
    if found is None:
        return ()
    _raw, _digest, manifest = found
    out = []
    for layer in manifest.get("layers") or []:
        if not isinstance(layer, dict) or layer.get("mediaType") != COSIGN_LAYER_MEDIA_TYPE:
            continue
        signature = (layer.get("annotations") or {}).get(COSIGN_SIGNATURE_ANNOTATION)
        if not signature:
            continue
        payload = client.blob(sig_container, layer, max_bytes=MANIFEST_MAX_BYTES)
        out.append(CosignSignature(payload=payload, signature_b64=signature))
    return tuple(out)


# ----------------------------------------------------------------------------- packages

# Flux's artifact format (``flux push artifact``) and oras's plain tar+gzip layer.
PACKAGE_LAYER_MEDIA_TYPES = (
    "application/vnd.cncf.flux.content.v1.tar+gzip",
    "application/vnd.oci.image.layer.v1.tar+gzip",
)
PACKAGE_CONFIG_MAX_BYTES = 64 * 1024


class OciPackageRef:
    """A kustomization package upstream (``oci://host/repo:tag`` or ``@sha256:…``): its
    manifest first, read and digest-checked; its blobs only when the sync wants them."""

    def __init__(self, ref: str, *, limits: Limits):
        self.ref = ref
        self.limits = limits
        self.host, name = parse_oci_ref(ref)
        self.client = OciClient(self.host, limits=limits)
        self.container = self.client.container(name)
        self.tag = "" if self.container.digest else str(self.container.tag or "")
        found = self.client.manifest(self.container)
        assert found is not None
        self.raw, self.digest, self.parsed = found
        if self.container.digest and self.container.digest != self.digest:
            raise DigestMismatchError(
                f"Manifest digest mismatch: asked for {self.container.digest}, registry sent "
                f"{self.digest}"
            )
        if not isinstance(self.parsed, dict):
            raise FetchError(f"{ref}: the manifest is not a JSON object")
        self.media_type = str(self.parsed.get("mediaType") or MANIFEST_MEDIA_TYPES[0])
        layers = self.parsed.get("layers")
        if (
            self.media_type != MANIFEST_MEDIA_TYPES[0]
            or not isinstance(layers, list)
            or len(layers) != 1
            or not isinstance(layers[0], dict)
            or layers[0].get("mediaType") not in PACKAGE_LAYER_MEDIA_TYPES
        ):
            found_types = [
                x.get("mediaType") for x in layers or [] if isinstance(x, dict)
            ] or "no layers"
            raise FetchError(
                f"{ref} is not a kustomization package: an OCI manifest with exactly one layer "
                f"of media type {' or '.join(PACKAGE_LAYER_MEDIA_TYPES)} (found {found_types})"
            )
        self.layer: dict[str, Any] = layers[0]

    def blobs(self, *, max_bytes: int) -> dict[str, bytes]:
        """The config and the layer, each checked against the size and digest the manifest
        declares (``DigestMismatchError`` otherwise)."""
        out: dict[str, bytes] = {}
        config = self.parsed.get("config")
        if isinstance(config, dict):
            out[str(config.get("digest"))] = self.client.blob(
                self.container, config, max_bytes=PACKAGE_CONFIG_MAX_BYTES
            )
        out[str(self.layer["digest"])] = self.client.blob(
            self.container, self.layer, max_bytes=max_bytes
        )
        return out

    def signatures(self) -> tuple[CosignSignature, ...]:
        """cosign simple-signing signatures of the manifest (``sha256-<hex>.sig``)."""
        return _cosign_signatures(self.client, self.container, self.digest)

    def provenance(self) -> dict[str, Any]:
        return {
            "registry": self.host,
            "repository": self.container.api_prefix,
            "tag": self.tag,
            "manifest_digest": self.digest,
            "layer_digest": self.layer.get("digest"),
            "layer_size": self.layer.get("size"),
        }
