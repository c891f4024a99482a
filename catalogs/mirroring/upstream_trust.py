"""Mirrors of a registry of this kind verify the upstream's TUF metadata (python-tuf's ngclient).

An https source ``https://host/c/<publisher>/<catalog>/…catalog.yaml`` or an OCI source
``oci://host/<publisher>/<catalog>[:tag|@digest]`` whose host serves ``/tuf/root.json`` is a TUF
repository (docs/trust.md): the catalog's bytes must be the target the upstream signed for it
(the latest pointer, version ``n`` for ``versions/<n>/`` and tag ``v<n>``, else one of the
catalog's signed versions), and its revocation list is a signed target too, which must exist.

The upstream's root is pinned on the first sync, like ``krm`` does: by the source's
``upstream_root_sha256`` when one is configured, by its ``cosign_public_key`` when that key is a
root key that signed the root, else on first use. What was trusted after a good sync (the pinned
root, the newest root, timestamp and snapshot) is kept on the source (``upstream_tuf``) and
starts the next sync, so a root changed without a signed rotation, an older timestamp or
snapshot, and expired metadata are all refused. A host that serves no TUF metadata (404 at
``/tuf/root.json``) and was never pinned is not a TUF registry: its catalogs keep the cosign
rules (``catalogs.mirroring.signatures``).

Downloads go through the mirror's network rules: https with the pinned-DNS session (allowed
networks, redirects checked, size limits), plain http only to MIRROR_OCI_PLAIN_HTTP_HOSTS.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from cryptography.hazmat.primitives import serialization
from django.conf import settings
from tuf.api import exceptions as tuf_errors
from tuf.api.metadata import Metadata, Root, Targets
from tuf.ngclient import Updater, UpdaterConfig
from tuf.ngclient.fetcher import FetcherInterface

from catalogs.exceptions import FetchError, RegistryError, SignatureError
from catalogs.mirroring.fetchers.base import Limits
from catalogs.mirroring.revocations import RevocationCarryError
from orchestrator.functions import tufpaths

MAX_METADATA_BYTES = 8 * 1024 * 1024
MAX_LIST_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Upstream:
    """The registry a source's URL belongs to, and the target its catalog bytes must be."""

    registry: str  # scheme://host[:port][/prefix]
    publisher: str
    catalog: str
    path: str  # the target path, or "" when the bytes must be one of the catalog's versions

    @property
    def latest(self) -> str:
        """The catalog's latest pointer."""
        return f"{self.publisher}/{self.catalog}/catalog.yaml"

    @property
    def revocations(self) -> str:
        """The catalog's revocation list."""
        return f"{self.publisher}/{self.catalog}/{tufpaths.REVOCATIONS}"


def upstream_of(url: str, *, plain_http_hosts: tuple[str, ...] = ()) -> Upstream | None:
    """The upstream registry of a source URL shaped like one of this kind, else None."""
    if url.startswith("https://"):
        found = tufpaths.for_url(url)
    elif url.startswith("oci://"):
        location = url[len("oci://") :]
        found = tufpaths.for_oci(location)
        if found is not None:
            host = location.partition("/")[0]
            scheme = "http" if host in plain_http_hosts else "https"
            found = tufpaths.RegistryTarget(
                f"{scheme}://{host}", found.publisher, found.catalog, found.path
            )
    else:
        return None
    if found is None:
        return None
    return Upstream(found.registry, found.publisher, found.catalog, found.path)


def _get(url: str, limits: Limits, *, max_bytes: int) -> bytes | None:
    """GET ``url`` under the mirror's network rules; None on 404, FetchError otherwise."""
    import httpx

    from catalogs.mirroring.fetchers.base import check_destination
    from catalogs.mirroring.fetchers.https import HttpsSession

    if url.startswith("https://"):
        body = bytearray()
        with HttpsSession(limits=limits) as session:
            got = session.get(url, sink=body.extend, max_bytes=max_bytes, missing_ok=True)
        return None if got is None else bytes(body)
    check_destination(url, limits=limits)  # plain http: an operator-allowed OCI host
    try:
        with httpx.stream(
            "GET", url, timeout=limits.timeout, follow_redirects=False, trust_env=False
        ) as resp:
            if resp.status_code == 404:
                return None
            if resp.status_code != 200:
                raise FetchError(f"{url}: HTTP {resp.status_code}")
            body = bytearray()
            for chunk in resp.iter_bytes():
                body.extend(chunk)
                if len(body) > max_bytes:
                    raise FetchError(f"{url}: over the limit of {max_bytes} bytes")
            return bytes(body)
    except httpx.HTTPError as exc:
        raise FetchError(f"{url}: {exc}") from None


class _MirrorFetcher(FetcherInterface):
    """ngclient's downloads through ``_get``: a 404 is DownloadHTTPError(404), as it expects."""

    def __init__(self, limits: Limits):
        self.limits = limits

    def _fetch(self, url: str) -> Iterator[bytes]:
        try:
            data = _get(url, self.limits, max_bytes=MAX_METADATA_BYTES)
        except RegistryError as exc:
            raise tuf_errors.DownloadError(exc.message) from None
        if data is None:
            raise tuf_errors.DownloadHTTPError(f"{url}: HTTP 404", 404)
        return iter((data,))


@dataclass
class UpstreamVerified:
    """What a good check of a TUF upstream gives the sync: the verification record for
    provenance, the signed revocation list to carry, and the trusted state to keep."""

    verification: dict[str, Any]
    revocations: bytes
    revocations_url: str
    state: dict[str, Any]


def _der_of_pem(pem: str) -> bytes | None:
    try:
        key = serialization.load_pem_public_key(pem.strip().encode())
    except (ValueError, TypeError):
        return None
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _root_signed_by(md: Any, pem: str) -> bool:
    """Whether the key ``pem`` is a root key of ``md`` and signed it."""
    wanted = _der_of_pem(pem)
    root = md.signed
    for keyid in root.roles[Root.type].keyids:
        key = root.keys.get(keyid)
        if key is None or keyid not in md.signatures:
            continue
        if _der_of_pem(str(key.keyval.get("public", ""))) != wanted:
            continue
        try:
            key.verify_signature(md.signatures[keyid], md.signed_bytes)
        except Exception:  # noqa: BLE001  (securesystemslib's UnverifiedSignatureError & co.)
            continue
        return True
    return False


def _root_checked(data: bytes, where: str) -> Any:
    """``data`` as a root that verifies with its own keys; SignatureError otherwise."""
    try:
        md = Metadata.from_bytes(data)
        if not isinstance(md.signed, Root):
            raise ValueError(f"a {md.signed.type} role, not root")
        md.signed.verify_delegate(Root.type, md.signed_bytes, md.signatures)
    except (ValueError, KeyError, TypeError, tuf_errors.RepositoryError) as exc:
        raise SignatureError(f"{where} is not a valid TUF root: {exc}") from None
    return md


def _pin(*, source: Any, upstream: Upstream, limits: Limits) -> tuple[bytes, dict] | None:
    """The root to start from and how it was pinned: the one kept from the last good sync,
    else the upstream's, checked against the configured digest or key; None when the upstream
    serves no TUF metadata and was never pinned."""
    state = source.upstream_tuf or {}
    wanted = source.upstream_root_sha256
    if state.get("registry") == upstream.registry and state.get("root"):
        pinned = state["pinned"]
        if not wanted or pinned.get("sha256") == wanted:
            return state["root"].encode(), pinned
    where = f"{upstream.registry}/tuf/root.json"
    data = _get(where, limits, max_bytes=MAX_METADATA_BYTES)
    if data is None:
        if wanted:
            raise SignatureError(
                f"Upstream registry {upstream.registry} serves no TUF metadata ({where}: HTTP "
                f"404), but the source pins its TUF root (sha256:{wanted})."
            )
        return None
    md = _root_checked(data, where)
    if wanted:
        if hashlib.sha256(data).hexdigest() != wanted:
            # A root rotated since the digest was taken: find that version, then follow the
            # signed rotations from it.
            for version in range(md.signed.version - 1, 0, -1):
                older = _get(
                    f"{upstream.registry}/tuf/{version}.root.json",
                    limits,
                    max_bytes=MAX_METADATA_BYTES,
                )
                if older is not None and hashlib.sha256(older).hexdigest() == wanted:
                    data = older
                    md = _root_checked(data, f"{upstream.registry}/tuf/{version}.root.json")
                    break
            else:
                raise SignatureError(
                    f"The TUF root of upstream registry {upstream.registry} (version "
                    f"{md.signed.version}, sha256:{hashlib.sha256(data).hexdigest()}) is not "
                    f"the one the source pins (sha256:{wanted}), nor a rotation from it."
                )
        how = "configured root digest"
    elif source.cosign_public_key:
        if not _root_signed_by(md, source.cosign_public_key):
            raise SignatureError(
                f"The TUF root of upstream registry {upstream.registry} (version "
                f"{md.signed.version}) is not signed by the source's cosign public key: that "
                "key is not a root key of the upstream."
            )
        how = "cosign public key"
    else:
        how = "first use"
    pinned = {
        "version": md.signed.version,
        "sha256": hashlib.sha256(data).hexdigest(),
        "how": how,
    }
    return data, pinned


def _seed(directory: str, state: dict[str, Any], registry: str) -> None:
    """The metadata trusted after the last good sync, for rollback protection."""
    os.makedirs(directory, exist_ok=True)
    if state.get("registry") != registry:
        return
    for role in ("timestamp", "snapshot"):
        if state.get(role):
            with open(os.path.join(directory, f"{role}.json"), "w", encoding="utf-8") as f:
                f.write(state[role])


def _read(directory: str, role: str) -> str:
    with open(os.path.join(directory, f"{role}.json"), encoding="utf-8") as f:
        return f.read()


def _refresh_failed(upstream: Upstream, exc: BaseException, how: str) -> SignatureError:
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, tuf_errors.ExpiredMetadataError):
        return SignatureError(
            f"The TUF metadata of upstream registry {upstream.registry} has expired ({reason}): "
            "it (or something between it and this registry) serves frozen metadata."
        )
    if isinstance(exc, tuf_errors.DownloadHTTPError) and exc.status_code == 404:
        return SignatureError(
            f"Upstream registry {upstream.registry} serves no TUF metadata ({reason}), but its "
            f"root is pinned (by {how}); refusing to fall back to unverified catalogs."
        )
    if isinstance(exc, tuf_errors.BadVersionNumberError):
        return SignatureError(
            f"The TUF metadata of upstream registry {upstream.registry} went back to an older "
            f"version ({reason})."
        )
    if isinstance(exc, tuf_errors.UnsignedMetadataError):
        return SignatureError(
            f"The TUF metadata of upstream registry {upstream.registry} is not signed by the "
            f"keys of the root pinned (by {how}): {reason}."
        )
    if isinstance(exc, tuf_errors.DownloadError):
        return SignatureError(
            f"Cannot fetch the TUF metadata of upstream registry {upstream.registry}: {reason}"
        )
    return SignatureError(
        f"The TUF metadata of upstream registry {upstream.registry} does not verify: {reason}"
    )


def _versions_signed(directory: str, upstream: Upstream) -> dict[str, Any]:
    """The catalog's version targets the publisher's role signs (ngclient loaded it)."""
    path = os.path.join(directory, quote(upstream.publisher, "") + ".json")
    with open(path, "rb") as f:
        role = Metadata[Targets].from_bytes(f.read()).signed
    prefix = f"{upstream.publisher}/{upstream.catalog}/versions/"
    return {p: t for p, t in role.targets.items() if p.startswith(prefix)}


def upstream_trust_check(
    *, source: Any, content: bytes | None, limits: Limits, scratch: str
) -> UpstreamVerified | None:
    """Verify ``content`` (None: the catalog did not change) and fetch the revocation list
    through the upstream's TUF metadata; None when the upstream is not a TUF registry.
    SignatureError (a SyncError) names what does not verify."""
    upstream = upstream_of(source.url, plain_http_hosts=tuple(settings.MIRROR_OCI_PLAIN_HTTP_HOSTS))
    if upstream is None:
        return None
    pinned_root = _pin(source=source, upstream=upstream, limits=limits)
    if pinned_root is None:
        return None
    root, pinned = pinned_root
    state = source.upstream_tuf or {}
    metadata = os.path.join(scratch, "tuf-metadata")
    targets = os.path.join(scratch, "tuf-targets")
    os.makedirs(targets, exist_ok=True)
    same_pin = pinned.get("sha256") == state.get("pinned", {}).get("sha256")
    _seed(metadata, state if same_pin else {}, upstream.registry)
    try:
        updater = Updater(
            metadata,
            f"{upstream.registry}/tuf/",
            targets,
            f"{upstream.registry}/c/",
            _MirrorFetcher(limits),
            UpdaterConfig(prefix_targets_with_hash=False),
            bootstrap=root,
        )
        updater.refresh()
        latest = updater.get_targetinfo(upstream.latest)
        path = upstream.path
        info = updater.get_targetinfo(path) if path else None
        listed = updater.get_targetinfo(upstream.revocations)
    except (tuf_errors.RepositoryError, tuf_errors.DownloadError, OSError) as exc:
        raise _refresh_failed(upstream, exc, pinned["how"]) from None
    record: dict[str, Any] = {
        "type": "tuf",
        "registry": upstream.registry,
        "root": {**pinned, "trusted_version": updater._trusted_set.root.version},
        "timestamp_version": updater._trusted_set.timestamp.version,
    }
    if content is not None:
        digest = hashlib.sha256(content).hexdigest()
        if path and info is None:
            raise SignatureError(
                f"{path} is not a target signed on upstream registry {upstream.registry}."
            )
        if not path:
            if latest is None:
                raise SignatureError(
                    f"{upstream.latest} is not a target signed on upstream registry "
                    f"{upstream.registry}."
                )
            matches = [
                p
                for p, t in _versions_signed(metadata, upstream).items()
                if t.length == len(content) and t.hashes.get("sha256") == digest
            ]
            if not matches:
                raise SignatureError(
                    f"The catalog fetched from {source.url} (sha256:{digest}) is none of the "
                    f"versions of {upstream.publisher}/{upstream.catalog} that upstream "
                    f"registry {upstream.registry} signed."
                )
            # The newest of the signed versions with these bytes.
            path = max(matches, key=lambda p: int(p.split("/")[-2]))
        elif info is not None and (info.length, info.hashes.get("sha256")) != (
            len(content),
            digest,
        ):
            raise SignatureError(
                f"The catalog fetched from {source.url} (sha256:{digest}, {len(content)} bytes) "
                f"is not the one upstream registry {upstream.registry} signed for {path} "
                f"(sha256:{info.hashes.get('sha256')}, {info.length} bytes): another catalog's, "
                "an older version, or altered on the way."
            )
        record.update(target=path, sha256=f"sha256:{digest}")
    list_url = tufpaths.revocations_url(upstream.registry, upstream.publisher, upstream.catalog)
    if listed is None:
        raise RevocationCarryError(
            {
                "url": list_url,
                "status": f"refused: upstream registry {upstream.registry} signs no revocation "
                f"list for {upstream.publisher}/{upstream.catalog} ({upstream.revocations}); a "
                "catalog verified through TUF must have one",
            }
        )
    try:
        stored = updater.download_target(listed, os.path.join(scratch, "revocations.yaml"))
    except (tuf_errors.LengthOrHashMismatchError, tuf_errors.DownloadLengthMismatchError):
        raise RevocationCarryError(
            {
                "url": list_url,
                "status": f"refused: not the list upstream registry {upstream.registry} signed "
                f"for {upstream.revocations} (another catalog's, an older one, or altered on "
                "the way)",
            }
        ) from None
    except tuf_errors.DownloadError as exc:
        raise RevocationCarryError(
            {"url": list_url, "status": f"failed: {exc}; a missing list is not an empty one"}
        ) from None
    with open(stored, "rb") as f:
        revocations = f.read()
    record["revocations"] = {
        "target": upstream.revocations,
        "sha256": "sha256:" + hashlib.sha256(revocations).hexdigest(),
    }
    new_state = {
        "registry": upstream.registry,
        "pinned": pinned,
        "root": _read(metadata, "root"),
        "timestamp": _read(metadata, "timestamp"),
        "snapshot": _read(metadata, "snapshot"),
    }
    return UpstreamVerified(record, revocations, list_url, new_state)
