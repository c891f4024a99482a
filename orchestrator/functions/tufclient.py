"""Catalogs verified through a registry's TUF metadata (python-tuf's ngclient), and the trust store.

A registry of this kind is a TUF repository: metadata at ``<registry>/tuf/`` (consistent
snapshots), targets at ``<registry>/c/`` by their plain paths (see
:mod:`orchestrator.functions.tufpaths`). What the signed metadata names is what a catalog must
be: the bytes of exactly that publisher's catalog path, the latest version at the latest
pointer, and a revocation list that exists and is current. The top-level ``targets`` role
delegates each publisher's paths to a role named after the publisher, so a publisher who holds
its own key signs its own catalogs and the registry's key alone cannot speak for it.

The trust store lives under ``$XDG_CACHE_HOME/krm/tuf/<registry>/``, one directory per registry
(never shared, so one registry's metadata cannot poison another's):

- ``trust.json``: the registry's URL, the root that was pinned (version, sha256, and how: a root
  file or ``--root-sha256`` given to ``krm trust add``, ``--catalog-key``, ``krm.lock``, or
  first use) and when the metadata was last refreshed;
- ``metadata/``: ngclient's trusted metadata (root history, timestamp, snapshot, targets roles);
- ``targets/``: target files already verified (re-checked against the metadata on each use).

- ``verified.json``: what ngclient verified under the current timestamp, for warm builds
  (:mod:`orchestrator.functions.tufcache`).

A registry is pinned on first use when nothing else anchors it, like SSH's known_hosts; from
then on a root can only change by a rotation the pinned root signed. A registry that was never
pinned and serves nothing at ``/tuf/root.json`` (404 or any failure) is not a TUF registry: its
catalogs keep the rules of :mod:`orchestrator.functions.signatures`. ``tuf`` is imported by this
module only, and this module only when a registry's signed state changed since the last build.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

from orchestrator.functions import tufcache
from orchestrator.functions.fetch import FetchError, http_get
from orchestrator.functions.options import FnOptions, FunctionError
from orchestrator.functions.signatures import CatalogKey
from orchestrator.functions.tufpaths import RegistryTarget

# securesystemslib.signer imports every signer it has, and the cloud ones import their SDK
# when it is installed (boto3 alone is half a second). A client only verifies: those SDKs are
# made unimportable while tuf loads, and importable again right after.
_SIGNING_SDKS = ("boto3", "botocore", "google.cloud", "azure", "hvac", "pkcs11")
_blocked = [name for name in _SIGNING_SDKS if name not in sys.modules]
for _name in _blocked:
    sys.modules[_name] = None  # type: ignore[assignment]
try:
    from tuf.api import exceptions as tuf_errors
    from tuf.api.metadata import Metadata, Root, TargetFile, Targets
    from tuf.ngclient import Updater, UpdaterConfig
    from tuf.ngclient.fetcher import FetcherInterface
finally:
    for _name in _blocked:
        del sys.modules[_name]

MAX_METADATA_BYTES = 8 * 1024 * 1024
TRUST_FILE = "trust.json"


# The role of a public publisher's private catalogs, served only to its members (docs/trust.md).
PRIVATE_ROLE = ".private"
# A hashed bin of a publisher's role (PEP 458): ``<publisher>.bin-<hex prefix>``.
BIN_INFIX = ".bin-"


class TrustError(FunctionError):
    """TUF metadata or a target that does not verify, or a trust store that cannot be used."""


def _age(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 120:
        return f"{int(seconds)} seconds"
    if seconds < 7200:
        return f"{int(seconds // 60)} minutes"
    if seconds < 172800:
        return f"{int(seconds // 3600)} hours"
    return f"{int(seconds // 86400)} days"


def _warn(text: str) -> None:
    # The engine has no warning channel below the build facade; these go straight to stderr.
    sys.stderr.write(f"Warning: {text}\n")


def target_deprecation(info: TargetFile) -> str:
    """The deprecation a registry signed in a target's custom object ('' for none)."""
    custom = info.custom
    message = custom.get("deprecation") if isinstance(custom, dict) else None
    return message if isinstance(message, str) else ""


def normalise_registry(url: str) -> str:
    """``scheme://host[:port][/prefix]`` without a trailing slash; TrustError when not a URL."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("https", "http") or not parts.netloc or parts.query:
        raise TrustError(f"{url!r} is not a registry URL (https://host[:port][/path])")
    path = parts.path.rstrip("/")
    if path.endswith("/tuf"):
        path = path[: -len("/tuf")]
    return f"{parts.scheme}://{parts.netloc.lower()}{path}"


@dataclass
class Pin:
    """A registry in the trust store: the root pinned, how, and the last refresh."""

    registry: str
    version: int
    sha256: str
    how: str
    pinned_at: float
    refreshed: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """For trust.json."""
        return {
            "registry": self.registry,
            "root": {"version": self.version, "sha256": self.sha256},
            "how": self.how,
            "pinnedAt": self.pinned_at,
            "refreshed": self.refreshed,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Pin:
        """The inverse of to_json."""
        return cls(
            registry=str(data["registry"]),
            version=int(data["root"]["version"]),
            sha256=str(data["root"]["sha256"]),
            how=str(data.get("how", "")),
            pinned_at=float(data.get("pinnedAt", 0)),
            refreshed=float(data.get("refreshed", 0)),
        )


class TrustStore:
    """Per-registry trusted TUF metadata under ``<cache>/tuf``."""

    def __init__(self, options: FnOptions):
        self.root = os.path.join(options.cache_root(), "tuf")

    def directory(self, registry: str) -> str:
        """Where one registry's metadata and targets live."""
        return os.path.join(self.root, tufcache.registry_key(registry))

    def load(self, registry: str) -> Pin | None:
        """The registry's pin, or None when it was never pinned."""
        path = os.path.join(self.directory(registry), TRUST_FILE)
        if not os.path.isfile(path):
            return None
        try:
            with open(path, encoding="utf-8") as f:
                pin = Pin.from_json(json.load(f))
        except (OSError, ValueError, KeyError, TypeError):
            raise TrustError(
                f"the trust store entry of registry {registry} ({path}) is damaged; "
                f"run 'krm trust remove {registry}' and pin it again"
            ) from None
        if pin.registry != registry:
            raise TrustError(f"the trust store entry {path} belongs to {pin.registry}")
        return pin

    def save(self, pin: Pin) -> None:
        """Write trust.json atomically."""
        directory = self.directory(pin.registry)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, TRUST_FILE)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(pin.to_json(), f, indent=1)
        os.replace(path + ".tmp", path)

    def entries(self) -> list[Pin]:
        """Every pinned registry, by URL."""
        pins = []
        if os.path.isdir(self.root):
            for name in sorted(os.listdir(self.root)):
                path = os.path.join(self.root, name, TRUST_FILE)
                if os.path.isfile(path):
                    try:
                        with open(path, encoding="utf-8") as f:
                            pins.append(Pin.from_json(json.load(f)))
                    except (OSError, ValueError, KeyError, TypeError):
                        continue  # damaged: load() names it when the registry is used
        return sorted(pins, key=lambda p: p.registry)

    def remove(self, registry: str) -> bool:
        """Forget a registry; False when it was not pinned."""
        directory = self.directory(registry)
        if not os.path.isdir(directory):
            return False
        shutil.rmtree(directory)
        return True


class _Fetcher(FetcherInterface):
    """ngclient's downloads with krm's rules (https, or http to loopback only, at every
    redirect; the CA bundle of --ca-file or SSL_CERT_FILE), over one urllib3 pool per build:
    ngclient loads urllib3 anyway, and one TLS context serves every request."""

    def __init__(self, options: FnOptions):
        self.options = options
        self.timestamp: bytes | None = None  # the last timestamp.json served, for messages
        self._pools: dict[str, Any] = {}  # scheme -> urllib3.PoolManager

    def _request(self, url: str) -> Any:
        import urllib3

        from orchestrator.functions.fetch import (
            MAX_REDIRECTS,
            _ssl_context,
            access_hint,
            check_url,
            netrc_authorization,
            same_origin,
        )

        try:
            authorization = netrc_authorization(url)
        except FetchError as exc:
            raise tuf_errors.DownloadError(exc.message) from None
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            scheme = current.split(":", 1)[0]
            if scheme not in self._pools:
                # The TLS context (loading the CA bundle) only once an https URL needs it.
                tls = {"ssl_context": _ssl_context(self.options)} if scheme == "https" else {}
                self._pools[scheme] = urllib3.PoolManager(
                    retries=False, timeout=urllib3.Timeout(connect=30.0, read=60.0), **tls
                )
            try:
                check_url(current)
                # ~/.netrc credentials go to the first URL's host only, never after a redirect.
                headers = {}
                if authorization is not None and same_origin(current, url):
                    headers["Authorization"] = authorization
                resp = self._pools[scheme].request(
                    "GET", current, preload_content=False, redirect=False, headers=headers
                )
            except FetchError as exc:
                raise tuf_errors.DownloadError(exc.message) from None
            except urllib3.exceptions.HTTPError as exc:
                raise tuf_errors.DownloadError(f"downloading {url}: {exc}") from None
            if resp.status in (301, 302, 303, 307, 308):
                location = resp.headers.get("location", "")
                # Read the body off a kept-alive connection before it goes back to the pool.
                resp.drain_conn()
                resp.release_conn()
                current = urljoin(current, location)
                continue
            if resp.status != 200:
                resp.drain_conn()
                resp.release_conn()
                message = f"{url}: HTTP {resp.status}"
                if resp.status in (401, 403, 404):
                    message += ": " + access_hint(current, sent="Authorization" in headers)
                raise tuf_errors.DownloadHTTPError(message, resp.status)
            return resp
        raise tuf_errors.DownloadError(f"downloading {url}: more than {MAX_REDIRECTS} redirects")

    def _fetch(self, url: str) -> Iterator[bytes]:
        resp = self._request(url)
        return self._chunks(resp, url)

    def _chunks(self, resp: Any, url: str) -> Iterator[bytes]:
        import urllib3

        kept: list[bytes] = []
        try:
            for chunk in resp.stream(1 << 16):
                if url.endswith("/timestamp.json"):
                    kept.append(chunk)
                yield chunk
        except urllib3.exceptions.HTTPError as exc:
            raise tuf_errors.DownloadError(f"downloading {url}: {exc}") from None
        finally:
            resp.release_conn()
        if kept:
            self.timestamp = b"".join(kept)


class _OfflineFetcher(FetcherInterface):
    """For --offline: the cached timestamp is "served" again, nothing else exists."""

    def __init__(self, metadata_dir: str):
        self.metadata_dir = metadata_dir
        self.timestamp: bytes | None = None

    def _fetch(self, url: str) -> Iterator[bytes]:
        if url.endswith("/timestamp.json"):
            with open(os.path.join(self.metadata_dir, "timestamp.json"), "rb") as f:
                self.timestamp = f.read()
            return iter((self.timestamp,))
        raise tuf_errors.DownloadHTTPError(f"{url}: not in the cache (--offline)", 404)


def fetch_root(registry: str, options: FnOptions, version: int | None = None) -> bytes | None:
    """``<registry>/tuf/root.json`` (or ``<V>.root.json``); None on a 404."""
    name = "root.json" if version is None else f"{version}.root.json"
    resp = http_get(
        f"{registry}/tuf/{name}", options=options, max_bytes=MAX_METADATA_BYTES, missing_ok=True
    )
    if resp.status == 404:
        return None
    return resp.body


def check_root(data: bytes, where: str) -> Metadata[Root]:
    """``data`` as root metadata that verifies with its own keys; TrustError otherwise."""
    try:
        md = Metadata[Root].from_bytes(data)
        if not isinstance(md.signed, Root):
            raise ValueError(f"a {md.signed.type} role, not root")
        md.signed.verify_delegate(Root.type, md.signed_bytes, md.signatures)
    except (ValueError, KeyError, TypeError, tuf_errors.RepositoryError) as exc:
        raise TrustError(f"{where} is not a valid TUF root: {exc}") from None
    return md


def _public_der(pem: str) -> bytes | None:
    from cryptography.hazmat.primitives import serialization

    try:
        key = serialization.load_pem_public_key(pem.encode())
    except (ValueError, TypeError):
        return None
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _der(key: CatalogKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    der: bytes = key.key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return der


def root_key_of(md: Metadata[Root], keys: Sequence[CatalogKey]) -> CatalogKey | None:
    """The one of ``keys`` that is a root key of ``md`` and signed it, if any."""
    root = md.signed
    wanted = {_der(k): k for k in keys}
    for keyid in root.roles[Root.type].keyids:
        key = root.keys.get(keyid)
        if key is None or keyid not in md.signatures:
            continue
        der = _public_der(str(key.keyval.get("public", "")))
        if der is None or der not in wanted:
            continue
        try:
            key.verify_signature(md.signatures[keyid], md.signed_bytes)
        except Exception:  # securesystemslib's UnverifiedSignatureError and friends
            continue
        return wanted[der]
    return None


def online_keys(session: Session) -> list[CatalogKey]:
    """The registry's online signing keys (those of the ``targets`` role) in the root that
    ``session`` refreshed and verified: the key its cosign signatures are made with."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from orchestrator.functions.signatures import key_id_of

    path = os.path.join(session.directory, "metadata", "root.json")
    with open(path, "rb") as f:
        root = Metadata[Root].from_bytes(f.read()).signed
    out = []
    for keyid in root.roles["targets"].keyids:
        key = root.keys.get(keyid)
        pem = str(key.keyval.get("public", "")) if key is not None else ""
        try:
            public = serialization.load_pem_public_key(pem.encode())
        except (ValueError, TypeError):
            continue  # not an ECDSA PEM key (e.g. a publisher's ed25519 key): cosign uses P-256
        if isinstance(public, ec.EllipticCurvePublicKey):
            where = f"the TUF root of {session.registry}"
            out.append(CatalogKey(where, public, key_id_of(public)))
    return out


def pin_registry(
    store: TrustStore, registry: str, root: bytes, *, how: str, options: FnOptions
) -> Pin:
    """Start the registry's trust store from ``root`` (already checked by the caller)."""
    md = check_root(root, f"the root of {registry}")
    directory = store.directory(registry)
    if os.path.isdir(directory):
        shutil.rmtree(directory)
    os.makedirs(os.path.join(directory, "metadata"))
    os.makedirs(os.path.join(directory, "targets"))
    # The Updater writes root_history/<V>.root.json and the root.json link it starts from later.
    _updater(store, registry, options, bootstrap=root)
    pin = Pin(registry, md.signed.version, hashlib.sha256(root).hexdigest(), how, time.time())
    store.save(pin)
    return pin


def _updater(
    store: TrustStore,
    registry: str,
    options: FnOptions,
    *,
    bootstrap: bytes | None = None,
    fetcher: FetcherInterface | None = None,
) -> Updater:
    directory = store.directory(registry)
    try:
        return Updater(
            os.path.join(directory, "metadata"),
            f"{registry}/tuf/",
            os.path.join(directory, "targets"),
            f"{registry}/c/",
            fetcher or _Fetcher(options),
            # Targets are served at their plain URLs; consistent snapshots cover metadata only.
            UpdaterConfig(prefix_targets_with_hash=False),
            bootstrap=bootstrap,
        )
    except (OSError, tuf_errors.RepositoryError) as exc:
        raise TrustError(
            f"the trust store of registry {registry} ({directory}) cannot be used: {exc}; "
            f"run 'krm trust remove {registry}' and pin it again"
        ) from None


def _expires(data: bytes | None) -> datetime.datetime | None:
    if not data:
        return None
    try:
        return Metadata.from_bytes(data).signed.expires
    except Exception:  # only for the message: an unreadable timestamp has no expiry to show
        return None


@dataclass
class Session:
    """One registry's verified TUF metadata for one build (refreshed once)."""

    registry: str
    pin: Pin
    store: TrustStore
    options: FnOptions
    updater: Updater
    fetcher: Any
    refreshed: bool = False
    notes: list[str] = field(default_factory=list)
    _downloads: dict[str, bytes] = field(default_factory=dict)
    _versions: dict[str, int] = field(default_factory=dict)

    @property
    def directory(self) -> str:
        """The registry's trust store directory."""
        return self.store.directory(self.registry)

    def refresh(self, catalog: str) -> None:
        """Refresh root, timestamp, snapshot and targets once; TrustError naming ``catalog``."""
        if self.refreshed:
            return
        try:
            self.updater.refresh()
        except tuf_errors.ExpiredMetadataError as exc:
            raise TrustError(self._stale(catalog, str(exc))) from None
        except (tuf_errors.RepositoryError, tuf_errors.DownloadError, OSError) as exc:
            raise TrustError(self._refresh_failed(catalog, exc)) from None
        self.refreshed = True
        if not self.options.offline:
            self.pin.refreshed = time.time()
            self.store.save(self.pin)

    def _stale(self, catalog: str, detail: str) -> str:
        expires = _expires(self.fetcher.timestamp)
        if self.options.offline:
            when = _age(time.time() - self.pin.refreshed)
            return (
                f"catalog {catalog}: the cached TUF metadata of registry {self.registry} "
                f"(refreshed {when} ago) had already expired then: {detail}"
            )
        if expires is not None and "timestamp" in detail:
            now = datetime.datetime.now(datetime.UTC)
            how_stale = _age((now - expires).total_seconds())
            return (
                f"catalog {catalog}: the TUF metadata of registry {self.registry} is stale: "
                f"its timestamp expired {how_stale} ago ({expires.isoformat()}); the registry "
                "(or something between it and you) serves frozen metadata, so no function "
                "from this catalog runs (--offline builds from the metadata cached earlier)"
            )
        return (
            f"catalog {catalog}: the TUF metadata of registry {self.registry} has expired "
            f"({detail}); no function from this catalog runs"
        )

    def _refresh_failed(self, catalog: str, exc: BaseException) -> str:
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, tuf_errors.DownloadHTTPError) and exc.status_code == 404:
            return (
                f"catalog {catalog}: registry {self.registry} serves no TUF metadata "
                f"({reason}), but its root is pinned in the trust store; refusing to fall "
                f"back to unverified catalogs ('krm trust remove {self.registry}' forgets it)"
            )
        if isinstance(exc, tuf_errors.DownloadError):
            return f"catalog {catalog}: cannot fetch the TUF metadata of {self.registry}: {reason}"
        if isinstance(exc, tuf_errors.UnsignedMetadataError | tuf_errors.BadVersionNumberError):
            kind = (
                "went back to an older version"
                if isinstance(exc, tuf_errors.BadVersionNumberError)
                else "is not signed by the keys of the root pinned"
            )
            return (
                f"catalog {catalog}: the TUF metadata served for registry {self.registry} "
                f"{kind} ({reason}; root pinned by {self.pin.how}); a root that changed "
                "without a rotation signed by the pinned one is refused, and no function "
                "from this catalog runs"
            )
        return (
            f"catalog {catalog}: the TUF metadata of registry {self.registry} does not "
            f"verify: {reason}"
        )

    def targetinfo(self, catalog: str, path: str) -> TargetFile | None:
        """The signed TargetFile for ``path`` (None when no role signs it)."""
        self.refresh(catalog)
        try:
            return self.updater.get_targetinfo(path)
        except tuf_errors.UnsignedMetadataError as exc:
            role = path.split("/", 1)[0]
            raise TrustError(
                f"catalog {catalog}: the TUF metadata of publisher {role} (role {role!r}) on "
                f"registry {self.registry} is not signed by the key(s) that role requires "
                f"({exc}); when a publisher holds its own key, the registry's key alone cannot "
                "sign for it, so no function from this catalog runs"
            ) from None
        except (tuf_errors.RepositoryError, tuf_errors.DownloadError, OSError) as exc:
            raise TrustError(self._refresh_failed(catalog, exc)) from None

    def target_bytes(self, catalog: str, path: str, *, what: str = "catalog") -> bytes:
        """The bytes of target ``path``, verified against the signed length and hashes."""
        if path in self._downloads:
            return self._downloads[path]
        info = self.targetinfo(catalog, path)
        if info is None:
            raise TrustError(
                f"catalog {catalog}: {path} is not a target signed on registry "
                f"{self.registry}; no function from this catalog runs"
                if what == "catalog"
                else f"catalog {catalog}: registry {self.registry} signs no revocation list "
                f"for it ({path}); a catalog verified through TUF must have one, so the build "
                "stops rather than run without its revocations"
            )
        cached = self.updater.find_cached_target(info)
        if cached is None:
            if self.options.offline:
                raise TrustError(
                    f"catalog {catalog}: {path} is not in the cache and --offline forbids "
                    "downloading"
                )
            url = f"{self.registry}/c/{path}"
            try:
                cached = self.updater.download_target(info)
            except (
                tuf_errors.LengthOrHashMismatchError,
                tuf_errors.DownloadLengthMismatchError,
            ):
                raise TrustError(
                    f"catalog {catalog}: the {what} served at {url} is not the one registry "
                    f"{self.registry} signed for {path} (another catalog's, an older version, "
                    "or altered on the way); no function from this catalog runs"
                ) from None
            except tuf_errors.DownloadHTTPError as exc:
                # The catalog itself may be private; its revocation list is not, once it came.
                hint = (
                    str(exc).partition(f"HTTP {exc.status_code}: ")[2] if what == "catalog" else ""
                )
                raise TrustError(
                    f"catalog {catalog}: the signed {what} {path} cannot be fetched from "
                    f"{url} (HTTP {exc.status_code}{': ' + hint if hint else ''}); "
                    + (
                        "no function from this catalog runs"
                        if what == "catalog"
                        else "a missing revocation list is an error, not an empty one"
                    )
                ) from None
            except tuf_errors.DownloadError as exc:
                raise TrustError(f"catalog {catalog}: cannot fetch {url}: {exc}") from None
        with open(cached, "rb") as f:
            data = f.read()
        self._downloads[path] = data
        self._remember(path, info)
        return data

    def deprecation(self, path: str) -> str:
        """The publisher's deprecation message signed with target ``path`` ('' for none)."""
        info = self.updater.get_targetinfo(path)
        return target_deprecation(info) if info is not None else ""

    def note_version(self, path: str, version: int) -> None:
        """The version number the latest pointer ``path`` stands for (kept for warm builds)."""
        self._versions[path] = version
        info = self.updater.get_targetinfo(path)
        if info is not None:
            self._remember(path, info)

    def remember_target(self, path: str, info: TargetFile) -> None:
        """Record a target ngclient verified (a runtime artifact's) for warm builds."""
        self._remember(path, info)

    def _remember(self, path: str, info: TargetFile) -> None:
        """Record a verified target for warm builds (tufcache), under the current timestamp."""
        sha = info.hashes.get("sha256")
        if self.options.offline or not sha:
            return
        metadata = os.path.join(self.directory, "metadata")
        expires: list[float] = []
        timestamp_sha = ""
        role = path.split("/", 1)[0]
        names = ["root", "timestamp", "snapshot", "targets", quote(role, "")]
        # A public publisher's private catalogs' role, when this member's client loaded it.
        if os.path.isfile(os.path.join(metadata, f"{quote(role + PRIVATE_ROLE, '')}.json")):
            names.append(quote(role + PRIVATE_ROLE, ""))
        for name in names:
            try:
                with open(os.path.join(metadata, f"{name}.json"), "rb") as f:
                    data = f.read()
            except OSError:
                return
            if name == "timestamp":
                timestamp_sha = hashlib.sha256(data).hexdigest()
            expires.append(Metadata.from_bytes(data).signed.expires.timestamp())
        entry: dict[str, Any] = {"length": info.length, "sha256": sha}
        deprecation = target_deprecation(info)
        if deprecation:
            entry["deprecation"] = deprecation
        if path in self._versions:
            entry["version"] = self._versions[path]
        tufcache.remember(
            self.directory,
            timestamp_sha256=timestamp_sha,
            root_version=self.root()[0],
            expires=min(expires),
            how=self.pin.how,
            targets={path: entry},
        )

    def _role_targets(self, catalog: str, target: RegistryTarget) -> dict[str, TargetFile]:
        """The targets the publisher's role signs (loaded and verified by ngclient first)."""
        self.targetinfo(catalog, target.latest)
        found: dict[str, TargetFile] = {}
        # The publisher's role, and its private catalogs' role (loaded by ngclient, for a
        # member, when the latest pointer was found there).
        for role in (target.publisher + PRIVATE_ROLE, target.publisher):
            path = os.path.join(self.directory, "metadata", quote(role, "") + ".json")
            try:
                with open(path, "rb") as f:
                    md = Metadata[Targets].from_bytes(f.read())
            except (OSError, ValueError):
                continue
            found.update(md.signed.targets)
            # Hashed bins (PEP 458): every bin, each verified by ngclient as it loads it.
            delegated = md.signed.delegations.roles if md.signed.delegations else None
            for name in sorted(delegated or {}):
                if name.startswith(role + BIN_INFIX):
                    try:
                        found.update(self.updater._load_targets(name, role).targets)
                    except (tuf_errors.RepositoryError, tuf_errors.DownloadError) as exc:
                        raise TrustError(self._refresh_failed(catalog, exc)) from None
        return found

    def version_of(self, catalog: str, target: RegistryTarget, data: bytes) -> int | None:
        """The number of the signed version of ``target``'s catalog whose bytes are ``data``."""
        digest = hashlib.sha256(data).hexdigest()
        prefix = f"{target.publisher}/{target.catalog}/versions/"
        best = None
        for path, info in self._role_targets(catalog, target).items():
            if not path.startswith(prefix) or not path.endswith("/catalog.yaml"):
                continue
            number = path[len(prefix) : -len("/catalog.yaml")]
            if not number.isdigit() or info.length != len(data):
                continue
            if info.hashes.get("sha256") == digest:
                best = max(best or 0, int(number))
        return best

    def root(self) -> tuple[int, str]:
        """The version and sha256 of the root trusted now (after any signed rotation)."""
        path = os.path.join(self.directory, "metadata", "root.json")
        with open(path, "rb") as f:
            data = f.read()
        return Metadata[Root].from_bytes(data).signed.version, hashlib.sha256(data).hexdigest()

    def root_bytes(self, version: int) -> bytes | None:
        """Root version ``version`` as kept in the trust store's history, if it is there."""
        path = os.path.join(self.directory, "metadata", "root_history", f"{version}.root.json")
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            return f.read()

    def check_anchor(self, catalog: str, keys: Sequence[CatalogKey]) -> None:
        """With --catalog-key: one of the keys must be a root key of the root trusted now."""
        if not keys:
            return
        path = os.path.join(self.directory, "metadata", "root.json")
        with open(path, "rb") as f:
            md = Metadata[Root].from_bytes(f.read())
        if root_key_of(md, keys) is None:
            raise TrustError(
                f"catalog {catalog}: the TUF root of registry {self.registry} "
                f"(version {md.signed.version}) is not signed by "
                + ", ".join(map(str, keys))
                + "; no function from this catalog runs"
            )


def open_session(
    registry: str,
    *,
    options: FnOptions,
    catalog: str,
    keys: Sequence[CatalogKey] = (),
    locked_root: tuple[int, str] | None = None,
    first_root: bytes | None = None,
) -> Session | None:
    """The registry's session: pinned already, or pinned now (by ``keys``, ``locked_root`` or on
    first use, from ``first_root`` when the caller fetched it); None when the registry serves no
    TUF metadata and was never pinned."""
    store = TrustStore(options)
    pin = store.load(registry)
    if pin is None:
        if options.offline:
            return None
        try:
            root = first_root or fetch_root(registry, options)
        except FetchError:
            # Never pinned, and no answer: not known as a TUF registry (an OCI host of another
            # kind, say); its catalogs keep the older rules, and their fetch reports the host.
            return None
        if root is None:
            return None
        where = f"{registry}/tuf/root.json"
        md = check_root(root, f"catalog {catalog}: {where}")
        if locked_root is not None:
            version, sha = locked_root
            if md.signed.version != version:
                root = fetch_root(registry, options, version) or b""
            if hashlib.sha256(root).hexdigest() != sha:
                raise TrustError(
                    f"catalog {catalog}: the TUF root of registry {registry} (version {version}) "
                    f"is not the one krm.lock pins (sha256:{sha}); no function from this "
                    "catalog runs"
                )
            how = "krm.lock"
        elif keys:
            key = root_key_of(md, keys)
            if key is None:
                raise TrustError(
                    f"catalog {catalog}: the TUF root {where} is not signed by "
                    + ", ".join(map(str, keys))
                    + "; no function from this catalog runs"
                )
            how = f"--catalog-key {key.key_id}"
        else:
            how = "first use"
        pin = pin_registry(store, registry, root, how=how, options=options)
        if how == "first use":
            _warn(
                f"trusting registry {registry} on first use: pinned its TUF root (version "
                f"{pin.version}, sha256:{pin.sha256}); 'krm trust add {registry} --root-sha256 "
                "<digest>' pins one you have checked"
            )
    fetcher: Any
    if options.offline:
        metadata = os.path.join(store.directory(registry), "metadata")
        if not pin.refreshed or not os.path.isfile(os.path.join(metadata, "timestamp.json")):
            raise TrustError(
                f"catalog {catalog}: --offline, and no TUF metadata of registry {registry} "
                "is cached yet"
            )
        fetcher = _OfflineFetcher(metadata)
        updater = _updater(store, registry, options, fetcher=fetcher)
        # Checked as of when it was fetched: --offline accepts cached metadata and says its age.
        updater._trusted_set.reference_time = datetime.datetime.fromtimestamp(
            pin.refreshed, datetime.UTC
        )
        _warn(
            f"--offline: using the TUF metadata of registry {registry} refreshed "
            f"{_age(time.time() - pin.refreshed)} ago"
        )
    else:
        fetcher = _Fetcher(options)
        updater = _updater(store, registry, options, fetcher=fetcher)
    session = Session(registry, pin, store, options, updater, fetcher)
    return session
