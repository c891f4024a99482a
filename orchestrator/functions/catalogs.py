"""Catalog references, trust, fetching with an ETag cache, and the per-kustomization search set.

References (``catalogs:`` entries and ``--trusted-catalog`` values):

- a local path (relative to the kustomization, or to the working directory for the flag), or
  ``file://``;
- ``https://`` (``http://`` to loopback only), cached with ETag revalidation;
- ``git+https://host/repo.git//path/catalog.yaml?ref=REF`` and ``git+file://``; a plain local
  git path ``/path/repo//catalog.yaml?ref=REF`` (``//`` separates repository and file);
- ``oci://host/repo:tag`` or ``oci://host/repo@sha256:...`` (via ``oras``; the layer with the
  KEP's catalog media type).

Trust: a referenced catalog must be given with ``--trusted-catalog`` (compared after
normalisation: absolute real paths for local files, the exact text for URLs), or be the official
catalog from ``$XDG_CONFIG_HOME/krm/config.yaml`` (``officialCatalog: REF``), which is trusted
implicitly and searched first. Trust is never read from environment variables.

Registries that serve TUF metadata: a ``/c/…`` URL or ``oci://`` reference of such a registry is
verified through it (``orchestrator.functions.tufclient``): the bytes must be the signed target of
exactly that publisher's catalog path and version, and its signed revocation list must exist.
Everything below applies to the other catalogs.

Keys: ``--catalog-key FILE`` (repeatable) and the config file's ``trust:`` list (``- catalog: REF``
with ``key: FILE``, relative to the config file) name ECDSA P-256 public keys. A catalog with a
``key:`` of its own must be signed by it; every other catalog, when ``--catalog-key`` is given,
by one of those. Such a catalog is used only once its signature verified (see
``orchestrator.functions.signatures``); cached catalogs keep their signature and are re-verified
on every use.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from orchestrator.catalog import Catalog, CatalogError, FunctionDefinition, FunctionVersion
from orchestrator.errors import KrmError
from orchestrator.functions.fetch import FetchError, http_get, is_loopback, read_limited
from orchestrator.functions.options import FnOptions, FunctionError
from orchestrator.functions.signatures import (
    COSIGN_LAYER_MEDIA_TYPE,
    COSIGN_SIGNATURE_ANNOTATION,
    KEY_ID_ANNOTATION,
    MAX_SIGNATURE_BYTES,
    CatalogKey,
    SignatureMaterial,
    SignatureStatus,
    blob_signature_fetch,
    load_key,
    require,
    verify,
)

CATALOG_MEDIA_TYPE = "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"
MAX_CATALOG_BYTES = 5 * 1024 * 1024
CONFIG_NAME = "config.yaml"


class CatalogTrustError(KrmError):
    """A kustomization references a catalog the user did not trust."""


@dataclass(frozen=True)
class CatalogRef:
    """A parsed catalog reference: its kind, identity for trust, and where to get it."""

    raw: str
    kind: str  # file | url | git | oci
    key: str
    location: str  # file path, URL, repository URL/path, or OCI reference
    subpath: str = ""
    ref: str = ""

    def __str__(self) -> str:
        return self.raw


def _split_git(text: str) -> tuple[str, str, str]:
    """(repository, path inside it, ref) from ``repo//path?ref=REF``."""
    parts = urlsplit(text)
    query = parse_qs(parts.query)
    ref = (query.get("ref") or query.get("version") or [""])[0]
    base = text.split("?", 1)[0]
    scheme_end = base.find("://")
    start = scheme_end + 3 if scheme_end >= 0 else 0
    cut = base.find("//", start)
    if cut < 0:
        raise FunctionError(
            f"git catalog reference {text!r} needs '//' between the repository and the file, "
            "e.g. git+https://host/repo.git//catalog.yaml?ref=v1"
        )
    return base[:cut], base[cut + 2 :], ref


def _check_git_repo(repo: str, raw: str) -> None:
    """Only https, ssh, file and loopback http: git's other transports (ext::) run commands."""
    parts = urlsplit(repo)
    if parts.scheme == "http" and is_loopback(parts.hostname or ""):
        return
    if parts.scheme == "http":
        raise FunctionError(f"catalog {raw}: plain http is allowed only to loopback")
    if parts.scheme not in ("https", "ssh", "file"):
        raise FunctionError(
            f"catalog {raw}: unsupported git scheme {parts.scheme!r} (use https, ssh or file)"
        )


def parse_ref(raw: str, base_dir: str) -> CatalogRef:
    """Parse a catalog reference; local paths are resolved against base_dir."""
    if not isinstance(raw, str) or not raw.strip():
        raise FunctionError(f"invalid catalog reference {raw!r}: expected a non-empty string")
    text = raw.strip()
    if text.startswith("oci://"):
        return CatalogRef(text, "oci", text, text[len("oci://") :])
    if text.startswith("git+"):
        repo, sub, ref = _split_git(text[4:])
        _check_git_repo(repo, text)
        # git+file:// is cloned into the cache like a remote (the same path as git+https).
        return CatalogRef(text, "git", text, repo, sub, ref)
    if text.startswith(("https://", "http://")):
        return CatalogRef(text, "url", text, text)
    if text.startswith("file://"):
        path = os.path.realpath(text[len("file://") :])
        return CatalogRef(text, "file", path, path)
    if "//" in text.split("?", 1)[0]:
        repo, sub, ref = _split_git(text)
        repo = os.path.realpath(os.path.join(base_dir, repo))
        key = f"{repo}//{sub}" + (f"?ref={ref}" if ref else "")
        return CatalogRef(text, "git", key, repo, sub, ref)
    path = os.path.realpath(os.path.join(base_dir, text))
    return CatalogRef(text, "file", path, path)


def config_path() -> str:
    """$XDG_CONFIG_HOME/krm/config.yaml (or ~/.config/krm/config.yaml)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "krm", CONFIG_NAME)


def _config_keys(doc: dict[str, Any], path: str) -> dict[str, list[CatalogKey]]:
    """The config file's ``trust:`` list: catalog ref key -> the keys that must sign it."""
    entries = doc.get("trust")
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise FunctionError(f"{path}: trust must be a list of {{catalog: REF, key: FILE}}")
    base = os.path.dirname(path)
    out: dict[str, list[CatalogKey]] = {}
    for i, entry in enumerate(entries):
        where = f"{path}: trust[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("catalog"), str):
            raise FunctionError(f"{where}: expected a mapping with catalog: REF and key: FILE")
        unknown = sorted(set(entry) - {"catalog", "key"})
        if unknown:
            raise FunctionError(f"{where}: unknown field(s) {', '.join(unknown)}")
        files = entry.get("key")
        if isinstance(files, str):
            files = [files]
        if not files or not all(isinstance(f, str) and f for f in files):
            raise FunctionError(f"{where}: key must be a public key file (or a list of them)")
        ref = parse_ref(entry["catalog"], base)
        out.setdefault(ref.key, []).extend(
            load_key(os.path.join(base, f), what=f"{where}.key") for f in files
        )
    return out


@dataclass
class TrustConfig:
    """Which catalogs the user trusts (--trusted-catalog values and the official catalog) and
    the keys that must sign them (--catalog-key and the config file's per-catalog keys)."""

    trusted: list[CatalogRef] = field(default_factory=list)
    official: CatalogRef | None = None
    keys: list[CatalogKey] = field(default_factory=list)
    catalog_keys: dict[str, list[CatalogKey]] = field(default_factory=dict)

    @classmethod
    def load(
        cls,
        trusted: list[str] | tuple[str, ...] = (),
        *,
        keys: list[str] | tuple[str, ...] = (),
        config: str | None = None,
        cwd: str | None = None,
    ) -> TrustConfig:
        """From --trusted-catalog and --catalog-key values (relative to cwd) and the config."""
        from orchestrator import yamlio

        cwd = cwd or os.getcwd()
        refs = [parse_ref(t, cwd) for t in trusted]
        loaded_keys = [load_key(os.path.join(cwd, k)) for k in keys]
        official = None
        catalog_keys: dict[str, list[CatalogKey]] = {}
        path = config or config_path()
        if os.path.isfile(path):
            doc = yamlio.load(read_limited(path, 1 << 20), source=path, fold=False)
            if doc is not None and not isinstance(doc, dict):
                raise FunctionError(f"{path}: expected a mapping with officialCatalog")
            value = (doc or {}).get("officialCatalog")
            if value:
                official = parse_ref(value, os.path.dirname(path))
            catalog_keys = _config_keys(doc or {}, path)
        return cls(trusted=refs, official=official, keys=loaded_keys, catalog_keys=catalog_keys)

    def keys_for(self, ref: CatalogRef) -> list[CatalogKey]:
        """The keys that must sign ``ref``: its own from the config, else every --catalog-key."""
        return self.catalog_keys.get(ref.key) or self.keys

    def is_trusted(self, ref: CatalogRef) -> bool:
        """Whether ref is the official catalog or one given with --trusted-catalog."""
        if self.official is not None and self.official.key == ref.key:
            return True
        return any(t.key == ref.key for t in self.trusted)


@dataclass
class LoadedCatalog:
    """A fetched, parsed catalog and where it came from."""

    ref: CatalogRef
    catalog: Catalog
    source: str  # file path or URL the bytes came from
    etag: str | None = None
    from_cache: bool = False
    signature: SignatureStatus | None = None
    revocations: Any = None  # orchestrator.functions.revocations.RevocationList | None
    bytes_digest: str = ""  # sha256:<hex> of the bytes as fetched
    # Verified through a registry's TUF metadata: the registry, the target path and version.
    registry: str = ""
    target: str = ""
    version: int | None = None
    # The publisher's deprecation of this version, signed in the registry's TUF metadata.
    deprecation: str = ""

    @property
    def base_dir(self) -> str | None:
        """Directory relative runtime URIs are resolved against (local catalogs only)."""
        if self.ref.kind == "file":
            return os.path.dirname(self.ref.location)
        return None


@dataclass
class _Fetched:
    """A catalog's bytes as fetched, before anything trusts or parses them."""

    data: bytes
    source: str
    etag: str | None = None
    from_cache: bool = False
    material: SignatureMaterial | None = None
    # Writes a download to the cache; called only once the bytes verified and parsed, so a
    # broken or hostile catalog leaves the previous copy in place (for --offline, and the next try).
    save: Callable[[], None] = field(default=lambda: None)


def _trust_error(message: str) -> FunctionError:
    """A TrustError (tufclient is imported only now: a warm build never loads tuf)."""
    from orchestrator.functions.tufclient import TrustError

    return TrustError(message)


class CatalogStore:
    """Fetches catalogs once per build; ETag cache on disk under $XDG_CACHE_HOME/krm/catalogs."""

    def __init__(self, options: FnOptions):
        self.options = options
        self._loaded: dict[str, LoadedCatalog] = {}
        self._sessions: dict[str, Any] = {}  # registry -> tufclient.Session | None
        # registry -> the warm record (tufcache) its catalogs were confirmed by in this build
        self._warm: dict[str, dict[str, Any]] = {}

    def get(
        self, ref: CatalogRef, keys: list[CatalogKey] | None = None, *, report_only: bool = False
    ) -> LoadedCatalog:
        """The catalog for ref (fetched at most once per store).

        With ``keys`` its signature must verify with one of them before it is parsed or used.
        With ``report_only`` (``krm view catalog``) the signature is looked up and checked with
        ``keys``, and the outcome is reported in ``signature`` rather than raised.
        """
        loaded = self._loaded.get(ref.key)
        if loaded is None:
            try:
                loaded = self._get_tuf(ref, keys or [])
                if loaded is None:
                    loaded = self._get_plain(ref, keys, report_only)
            except CatalogError as exc:
                raise FunctionError(f"catalog {ref} is invalid:\n{exc}") from None
            except FunctionError:
                raise
            except KrmError as exc:
                raise FunctionError(f"cannot fetch catalog {ref}: {exc.message}") from None
            if self.options.lock_mode:
                from orchestrator.functions import lockfile

                lockfile.record_catalog(self.options, loaded)
            self._loaded[ref.key] = loaded
        return loaded

    def _get_plain(
        self, ref: CatalogRef, keys: list[CatalogKey] | None, report_only: bool
    ) -> LoadedCatalog:
        """A catalog outside a TUF registry: its cosign signature when a key applies."""
        want = bool(keys) or report_only
        fetched = self._fetch(ref, want)
        if ref.kind == "url":
            _refuse_html_page(fetched.data, ref.location)
        status = verify(fetched.material, fetched.data, keys or []) if want else None
        if keys and not report_only:
            assert status is not None
            require(status, ref.raw)
        parsed = self._parse(fetched.data, fetched.source)
        fetched.save()
        loaded = LoadedCatalog(
            ref,
            parsed,
            fetched.source,
            fetched.etag,
            fetched.from_cache,
            status,
            bytes_digest="sha256:" + hashlib.sha256(fetched.data).hexdigest(),
        )
        from orchestrator.functions import revocations

        loaded.revocations = revocations.load(
            ref.kind,
            ref.location,
            catalog=ref.raw,
            options=self.options,
            keys=keys or [],
            report_only=report_only,
        )
        return loaded

    def _tuf_session(self, registry: str, ref: CatalogRef, keys: list[CatalogKey]) -> Any:
        """The build's session with a registry's TUF metadata (None: it serves none)."""
        if registry not in self._sessions:
            from orchestrator.functions import tufcache

            first_root = None
            if not tufcache.is_pinned(self.options, registry):
                # Probed without loading tuf: most registries of other kinds answer 404.
                if not self.options.offline:
                    first_root = tufcache.probe_root(registry, self.options)
                if first_root is None:
                    self._sessions[registry] = None
                    return None
            from orchestrator.functions import lockfile, tufclient

            self._sessions[registry] = tufclient.open_session(
                registry,
                options=self.options,
                catalog=ref.raw,
                keys=keys,
                locked_root=lockfile.locked_root(self.options, registry),
                first_root=first_root,
            )
        return self._sessions[registry]

    def _get_tuf(self, ref: CatalogRef, keys: list[CatalogKey]) -> LoadedCatalog | None:
        """A catalog of a registry that serves TUF metadata, verified through it; None when
        the reference is not a registry catalog or the registry serves no TUF metadata."""
        if ref.kind not in ("url", "oci"):
            return None
        from orchestrator.functions import tufpaths

        target = (
            tufpaths.for_url(ref.location) if ref.kind == "url" else tufpaths.for_oci(ref.location)
        )
        if target is None:
            return None
        from orchestrator.functions import revocations

        warm = None
        if target.path and not keys and not self.options.lock_mode:
            from orchestrator.functions import tufcache

            warm = tufcache.warm_targets(
                tufcache.store_directory(self.options, target.registry),
                target.registry,
                [target.path, target.revocations],
                self.options,
            )
        if warm is not None:
            found, record = warm
            self._warm[target.registry] = record
            path, data, listed_bytes = target.path, found[target.path], found[target.revocations]
            source, version = f"{target.registry}/c/{path}", record["targets"][path].get("version")
            how = str(record.get("how", ""))
            deprecation = str(record["targets"][path].get("deprecation") or "")
        else:
            session = self._tuf_session(target.registry, ref, keys)
            if session is None:
                return None
            path, data, source, version = self._verify_tuf(ref, target, session, keys)
            how = session.pin.how
            deprecation = session.deprecation(path)
            listed_bytes = session.target_bytes(ref.raw, target.revocations, what="revocation list")
        parsed = self._parse(data, source)
        status = SignatureStatus(
            "verified",
            where=f"TUF target {path} of {target.registry}",
            detail=f"role {target.publisher}, root pinned by {how}",
        )
        listed_url = tufpaths.revocations_url(target.registry, target.publisher, target.catalog)
        sequence, entries = revocations.parse(listed_bytes, listed_url)
        loaded = LoadedCatalog(
            ref,
            parsed,
            source,
            signature=status,
            bytes_digest="sha256:" + hashlib.sha256(data).hexdigest(),
            registry=target.registry,
            target=target.version(version) if version is not None else path,
            version=version,
        )
        listed_status = SignatureStatus(
            "verified",
            where=f"TUF target {target.revocations} of {target.registry}",
            detail=status.detail,
        )
        loaded.revocations = revocations.RevocationList(
            listed_url, sequence, entries, fetched=time.time(), signature=listed_status
        )
        if deprecation:
            loaded.deprecation = deprecation
            _warn_deprecated(loaded)
        return loaded

    def runtime_verify(self, loaded: LoadedCatalog, uri: str, sha256: str | None) -> None:
        """A runtime artifact of a catalog verified through TUF, when that registry serves it
        (below ``/c/``): it must be a target of the catalog's publisher's role, and its bytes
        (fetched into the blob cache) that target's length and sha256. TrustError naming the
        artifact otherwise; nothing is unpacked or run. Artifacts elsewhere are pinned by the
        sha256 the verified catalog states (``fetch.fetch_blob``)."""
        if not loaded.registry or not loaded.target:
            return
        from orchestrator.functions import fetch, tufpaths

        publisher, catalog = loaded.target.split("/")[:2]
        path = tufpaths.runtime_target(loaded.registry, publisher, catalog, uri)
        if path is None:
            return
        name = loaded.ref.raw
        where = f"runtime artifact {uri} of catalog {name}"
        signed = self._runtime_target(loaded, path)
        if signed is None:
            raise _trust_error(
                f"{where}: registry {loaded.registry} signs no target {path}; it is not an "
                "artifact the registry serves for this catalog, so nothing was fetched or run"
            )
        length, digest = signed
        stated = fetch.normalise_sha256(sha256)
        if stated is not None and stated != digest:
            raise _trust_error(
                f"{where}: the catalog states sha256 {stated}, registry {loaded.registry} "
                f"signed {digest} for {path}; nothing was fetched or run"
            )
        try:
            blob = fetch.fetch_blob(uri, digest, options=self.options)
        except fetch.DigestMismatchError:
            raise _trust_error(
                f"{where} is not the one registry {loaded.registry} signed for {path} "
                f"(sha256 {digest}, {length} bytes): altered on the way or swapped on the "
                "registry; nothing was unpacked or run"
            ) from None
        if os.path.getsize(blob) != length:
            raise _trust_error(
                f"{where} is {os.path.getsize(blob)} bytes, registry {loaded.registry} signed "
                f"{length} for {path}; nothing was unpacked or run"
            )

    def _runtime_target(self, loaded: LoadedCatalog, path: str) -> tuple[int, str] | None:
        """(length, sha256) registry ``loaded.registry`` signs for ``path``, None when none:
        from the warm record its catalog was confirmed by in this build, else through ngclient
        (and recorded for the next warm build)."""
        record = self._warm.get(loaded.registry)
        known = (record or {}).get("targets", {}).get(path)
        if isinstance(known, dict) and "length" in known and "sha256" in known:
            return int(known["length"]), str(known["sha256"])
        session = self._tuf_session(loaded.registry, loaded.ref, [])
        if session is None:
            from orchestrator.functions import tufclient

            raise tufclient.TrustError(
                f"catalog {loaded.ref.raw}: registry {loaded.registry} no longer serves TUF "
                "metadata; no function from this catalog runs"
            )
        info = session.targetinfo(loaded.ref.raw, path)
        if info is None or "sha256" not in info.hashes:
            return None
        session.remember_target(path, info)
        return info.length, info.hashes["sha256"]

    def _verify_tuf(
        self, ref: CatalogRef, target: Any, session: Any, keys: list[CatalogKey]
    ) -> tuple[str, bytes, str, int | None]:
        """(target path, bytes, source, version number) of a catalog, checked by ngclient."""
        from orchestrator.functions import lockfile, tufclient

        session.refresh(ref.raw)
        session.check_anchor(ref.raw, keys)
        path = lockfile.locked_target(self.options, ref, target) or target.path
        if path:
            data = session.target_bytes(ref.raw, path)
            source = f"{target.registry}/c/{path}"
            version = target.number(path)
            if version is None:
                version = session.version_of(ref.raw, target, data)
        else:
            # A digest, a pushed tag or a sha256 URL: the bytes must be one signed version.
            fetched = self._fetch(ref, False)
            data, source = fetched.data, fetched.source
            version = session.version_of(ref.raw, target, data)
            if version is None:
                raise tufclient.TrustError(
                    f"catalog {ref}: its bytes (sha256:{hashlib.sha256(data).hexdigest()}) are "
                    f"not any version registry {target.registry} signed for "
                    f"{target.publisher}/{target.catalog}; no function from this catalog runs"
                )
            path = target.version(version)
            fetched.save()
        if version is not None and path == target.path:
            session.note_version(path, version)
        return path, data, source, version

    @staticmethod
    def _parse(data: bytes, source: str) -> Catalog:
        from orchestrator import catalog

        # Lenient: a function defined twice in one catalog resolves to the first (KEP-2906).
        return catalog.parse_catalog(data, source=source, strict=False)

    def _fetch(self, ref: CatalogRef, want_signature: bool) -> _Fetched:
        """The catalog's bytes and, if wanted, what its signature check needs."""
        if ref.kind == "file":
            data = read_limited(ref.location, MAX_CATALOG_BYTES)
            material = self._file_signature(ref.location + ".sig") if want_signature else None
            return _Fetched(data, ref.location, material=material)
        if ref.kind == "url":
            return self._fetch_url(ref.location, want_signature)
        if ref.kind == "git":
            return self._fetch_git(ref, want_signature)
        return self._fetch_oci(ref, want_signature)

    @staticmethod
    def _file_signature(path: str) -> SignatureMaterial:
        material = SignatureMaterial("blob", path)
        if os.path.isfile(path):
            material.found = True
            material.signature_b64 = read_limited(path, MAX_SIGNATURE_BYTES).decode(
                "ascii", "replace"
            )
        return material

    def _cache_dir(self, kind: str, key: str) -> str:
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        return os.path.join(self.options.cache_root(), kind, digest)

    def _fetch_url(self, url: str, want_signature: bool = False) -> _Fetched:
        directory = self._cache_dir("catalogs", url)
        body_path = os.path.join(directory, "catalog.yaml")
        meta_path = os.path.join(directory, "meta.json")
        sig_path = os.path.join(directory, "signature.json")
        meta: dict[str, Any] = {}
        if os.path.isfile(meta_path) and os.path.isfile(body_path):
            with open(meta_path, encoding="utf-8") as f:
                meta = json.load(f)
        cached_sig: SignatureMaterial | None = None
        if meta and os.path.isfile(sig_path):
            with open(sig_path, encoding="utf-8") as f:
                cached_sig = SignatureMaterial.from_json(json.load(f))
        if self.options.offline:
            if not meta:
                raise FetchError(f"{url} is not in the cache and --offline forbids downloading")
            material = cached_sig or (
                SignatureMaterial("blob", url + ".sig") if want_signature else None
            )
            data = read_limited(body_path, MAX_CATALOG_BYTES)
            return _Fetched(data, url, meta.get("etag"), True, material)
        headers = {"Accept": "application/yaml, text/yaml, */*"}
        if meta.get("etag"):
            headers["If-None-Match"] = meta["etag"]
        resp = http_get(url, options=self.options, max_bytes=MAX_CATALOG_BYTES, headers=headers)
        if resp.status == 304 and meta:
            data = read_limited(body_path, MAX_CATALOG_BYTES)
            material = cached_sig if cached_sig is not None and cached_sig.found else None
            if want_signature and material is None:
                material = blob_signature_fetch(url, self.options)
                _write_json(sig_path, material.to_json())
            # The cached signature is re-verified by the caller, like a fresh one.
            return _Fetched(data, url, meta.get("etag"), True, material if want_signature else None)
        body = resp.body
        assert body is not None
        material = blob_signature_fetch(url, self.options) if want_signature else None

        def save() -> None:
            os.makedirs(directory, exist_ok=True)
            tmp = body_path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(body)
            os.replace(tmp, body_path)
            if material is not None:
                _write_json(sig_path, material.to_json())
            elif os.path.exists(sig_path):
                os.remove(sig_path)  # it signed the bytes this download replaced
            _write_json(meta_path, {"url": url, "etag": resp.etag, "fetched": time.time()})

        return _Fetched(body, url, resp.etag, False, material, save)

    def _git(self, args: list[str], *, what: str) -> bytes:
        env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
        proc = subprocess.run(
            ["git", "-c", "protocol.file.allow=always", *args],
            capture_output=True,
            env=env,
            timeout=300,
            check=False,
        )
        if proc.returncode != 0:
            detail = proc.stderr.decode("utf-8", errors="replace").strip()
            raise FetchError(f"{what}: {detail or 'git failed'}")
        return proc.stdout

    def _fetch_git(self, ref: CatalogRef, want_signature: bool = False) -> _Fetched:
        repo = ref.location
        rev = ref.ref or "HEAD"
        if "://" not in repo and os.path.isdir(repo):
            git_dir = repo  # a local repository is read in place
            prefix = ["-C", git_dir]
        else:
            git_dir = self._cache_dir("git", repo) + ".git"
            if not os.path.isdir(git_dir):
                if self.options.offline:
                    raise FetchError(f"{repo} is not in the cache and --offline forbids cloning")
                self._git(["clone", "--bare", "--quiet", repo, git_dir], what=f"cloning {repo}")
            elif not self.options.offline:
                self._git(
                    [
                        "--git-dir",
                        git_dir,
                        "fetch",
                        "--quiet",
                        "--prune",
                        "origin",
                        "+refs/heads/*:refs/heads/*",
                        "+refs/tags/*:refs/tags/*",
                    ],
                    what=f"fetching {repo}",
                )
            prefix = ["--git-dir", git_dir]
        commit = (
            self._git(
                [*prefix, "rev-parse", "--verify", f"{rev}^{{commit}}"],
                what=f"{ref}: no such ref {rev!r}",
            )
            .decode()
            .strip()
        )
        data = self._git(
            [*prefix, "show", f"{commit}:{ref.subpath}"],
            what=f"{ref}: no file {ref.subpath!r} at {rev}",
        )
        if len(data) > MAX_CATALOG_BYTES:
            raise FetchError(f"{ref}: over the limit of {MAX_CATALOG_BYTES} bytes")
        material = None
        if want_signature:
            # The signature file beside the catalog, at the same commit.
            material = SignatureMaterial("blob", f"{ref.subpath}.sig at {commit}")
            try:
                sig = self._git([*prefix, "show", f"{commit}:{ref.subpath}.sig"], what="")
            except FetchError:
                sig = None
            if sig is not None:
                material.found = True
                material.signature_b64 = sig[:MAX_SIGNATURE_BYTES].decode("ascii", "replace")
        return _Fetched(data, ref.raw, commit, material=material)

    def _fetch_oci(self, ref: CatalogRef, want_signature: bool = False) -> _Fetched:
        directory = self._cache_dir("oci", ref.location)
        body_path = os.path.join(directory, "catalog.yaml")
        sig_path = os.path.join(directory, "signature.json")
        pinned = "@sha256:" in ref.location
        if (self.options.offline or pinned) and os.path.isfile(body_path):
            with open(os.path.join(directory, "digest"), encoding="utf-8") as f:
                cached = _Fetched(
                    read_limited(body_path, MAX_CATALOG_BYTES), ref.raw, f.read().strip(), True
                )
            if not want_signature:
                return cached
            material = None
            if os.path.isfile(sig_path):  # kept with the catalog, re-verified by the caller
                with open(sig_path, encoding="utf-8") as f:
                    material = SignatureMaterial.from_json(json.load(f))
            if material is not None and (material.found or self.options.offline):
                cached.material = material
                return cached
            if self.options.offline:
                cached.material = SignatureMaterial("cosign", f"{ref.raw} (cosign .sig tag)")
                return cached
            # Not signed when cached: look again (it may have been signed since).
        if self.options.offline:
            raise FetchError(f"{ref} is not in the cache and --offline forbids downloading")
        import oras.defaults
        import oras.provider  # heavy; only OCI references pay for it

        host = ref.location.split("/", 1)[0]
        loopback = is_loopback(host.rsplit(":", 1)[0])
        client = oras.provider.Registry(
            hostname=host, insecure=loopback, tls_verify=self.options.ca_file or True
        )
        material = None
        try:
            container = client.get_container(ref.location)
            _oci_login(client, host, container.api_prefix, loopback=loopback)
            raw = self._oci_manifest(client, container)
            assert raw is not None
            manifest_digest = "sha256:" + hashlib.sha256(raw).hexdigest()
            if pinned:  # a digest reference is only as good as checking the bytes against it
                want = ref.location.rsplit("@", 1)[1]
                if manifest_digest != want:
                    raise FetchError(f"{ref}: manifest digest mismatch (got {manifest_digest})")
            manifest = json.loads(raw)
            layers = manifest.get("layers") or []
            layer = next((x for x in layers if x.get("mediaType") == CATALOG_MEDIA_TYPE), None)
            if layer is None:
                raise FetchError(f"{ref}: no layer of media type {CATALOG_MEDIA_TYPE}")
            if int(layer.get("size", 0)) > MAX_CATALOG_BYTES:
                raise FetchError(f"{ref}: over the limit of {MAX_CATALOG_BYTES} bytes")
            resp = client.get_blob(ref.location, layer["digest"])
            resp.raise_for_status()
            data = resp.content
            if want_signature:
                material = self._oci_signatures(client, container, raw, manifest_digest)
        except FetchError:
            raise
        except Exception as exc:  # oras/requests raise many types; report them as one line
            raise FetchError(f"{ref}: {exc}") from None
        actual = "sha256:" + hashlib.sha256(data).hexdigest()
        if actual != layer["digest"]:
            raise FetchError(f"{ref}: layer digest mismatch ({actual} != {layer['digest']})")

        def save() -> None:
            os.makedirs(directory, exist_ok=True)
            for path, content in ((body_path, data), (os.path.join(directory, "digest"), actual)):
                with open(path + ".tmp", "wb") as f:
                    f.write(content if isinstance(content, bytes) else content.encode())
                os.replace(path + ".tmp", path)
            if material is not None:
                _write_json(sig_path, material.to_json())
            elif os.path.exists(sig_path):
                os.remove(sig_path)

        return _Fetched(data, ref.raw, actual, False, material, save)

    @staticmethod
    def _oci_manifest(client: Any, container: Any, *, missing_ok: bool = False) -> bytes | None:
        import oras.defaults

        accept = ", ".join(oras.defaults.default_manifest_accepted_media_types)
        resp = client.do_request(
            f"{client.prefix}://{container.manifest_url()}", "GET", headers={"Accept": accept}
        )
        if resp.status_code == 404 and missing_ok:
            return None
        resp.raise_for_status()
        if len(resp.content) > 4 * 1024 * 1024:
            raise FetchError(f"manifest {container.uri} is over 4 MiB")
        content: bytes = resp.content
        return content

    def _oci_signatures(
        self, client: Any, container: Any, manifest: bytes, manifest_digest: str
    ) -> SignatureMaterial:
        """cosign's simple-signing signatures at ``sha256-<hex>.sig`` of the same repository."""
        tag = manifest_digest.replace(":", "-") + ".sig"
        name = f"{container.registry}/{container.api_prefix}:{tag}"
        material = SignatureMaterial(
            "cosign",
            f"oci://{name}",
            manifest=manifest,
            manifest_digest=manifest_digest,
            reference=f"{container.registry}/{container.api_prefix}",
        )
        sig_container = client.get_container(name)
        raw = self._oci_manifest(client, sig_container, missing_ok=True)
        if raw is None:
            return material
        sig_manifest = json.loads(raw)
        material.stated_key_id = str(
            (sig_manifest.get("annotations") or {}).get(KEY_ID_ANNOTATION, "")
        )
        for layer in sig_manifest.get("layers") or []:
            if not isinstance(layer, dict) or layer.get("mediaType") != COSIGN_LAYER_MEDIA_TYPE:
                continue
            signature = (layer.get("annotations") or {}).get(COSIGN_SIGNATURE_ANNOTATION)
            if not signature or int(layer.get("size", 0)) > MAX_SIGNATURE_BYTES:
                continue
            resp = client.get_blob(sig_container, layer["digest"])
            resp.raise_for_status()
            payload = resp.content
            if "sha256:" + hashlib.sha256(payload).hexdigest() != layer["digest"]:
                continue  # a payload that is not what its manifest names counts as absent
            material.cosign.append((payload, str(signature)))
        material.found = bool(material.cosign)
        return material


def _oci_login(client: Any, host: str, repository: str, *, loopback: bool) -> None:
    """Give oras-py the docker config's credentials for ``host`` (krm's one reader of it,
    ``oci.credentials``) and, when the registry offers the token flow, a pull token at once.

    oras-py answers only a 401 with them; a registry that tells outsiders a private repository
    does not exist (404, as the KRM registry does) never sends one. So, like containers/image,
    ask ``/v2/`` for the challenge first, and only when there are credentials to send.
    """
    from oras.auth.utils import parse_auth_header

    from orchestrator.functions.oci import credentials

    creds = credentials(host)
    if creds is None:
        return
    client.auth.set_basic_auth(*creds)
    scheme = "http" if loopback else "https"
    try:
        ping = client.session.get(f"{scheme}://{host}/v2/", verify=client._tls_verify, timeout=60)
    except Exception as exc:  # requests raises many types; one line for the user
        raise FetchError(f"oci://{host}: {exc}") from None
    challenge = ping.headers.get("Www-Authenticate", "")
    if not challenge.lower().startswith("bearer "):
        return  # Basic, or none: oras-py sends Basic itself after a 401
    parsed = parse_auth_header(challenge)
    parsed.scope = f"repository:{repository}:pull"
    token = client.auth.request_token(parsed)
    if not token:
        raise FetchError(
            f"oci://{host}/{repository}: the registry's token service refused the credentials "
            f"for {host} in {_docker_config_path()}"
        )
    client.auth.set_token_auth(token)


def _docker_config_path() -> str:
    from orchestrator.functions.oci import docker_config_path

    return docker_config_path()


def _write_json(path: str, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(path + ".tmp", path)


def _refuse_html_page(data: bytes, url: str) -> None:
    """A web page given for a catalog (the registry's catalog page, say): name the catalog URL
    its ``<link rel="alternate" type="application/yaml">`` points at, rather than a YAML error."""
    from html.parser import HTMLParser
    from urllib.parse import urljoin

    head = data[:1024].lstrip().lower()
    if not (head.startswith(b"<!doctype html") or head.startswith(b"<html")):
        return
    found: list[str] = []

    class Links(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            a = dict(attrs)
            rel = (a.get("rel") or "").lower().split()
            if tag == "link" and "alternate" in rel and a.get("type") == "application/yaml":
                found.append(urljoin(url, a.get("href") or ""))

    Links().feed(data.decode("utf-8", errors="replace"))
    if found:
        raise FetchError(f"{url} is an HTML page; the catalog is at {found[0]}")
    raise FetchError(f"{url} is an HTML page, not a catalog; give the URL of its catalog YAML")


def store_for(options: FnOptions) -> CatalogStore:
    """The build's catalog store (one per FnOptions, so one per build)."""
    store = getattr(options, "_catalog_store", None)
    if store is None:
        store = CatalogStore(options)
        object.__setattr__(options, "_catalog_store", store)
    return store


@dataclass
class Match:
    """A catalog function that matched a config's group, kind and version."""

    catalog: LoadedCatalog
    function: FunctionDefinition
    version: FunctionVersion


class CatalogSet:
    """The catalogs one kustomization searches, in KEP-2906 order."""

    def __init__(
        self, refs: list[CatalogRef], store: CatalogStore, trust: TrustConfig | None = None
    ):
        self.refs = refs
        self.store = store
        self.trust = trust

    @classmethod
    def for_kustomization(
        cls,
        refs: list[Any],
        *,
        kustomization_dir: str,
        trust: TrustConfig,
        options: FnOptions,
        source: str | None = None,
    ) -> CatalogSet:
        """Official catalog, then the referenced ones (each must be trusted), then --trusted."""
        if refs is None:
            refs = []
        if not isinstance(refs, list):
            raise FunctionError(f"catalogs must be a list of references, got {refs!r}")
        ordered: list[CatalogRef] = []
        if trust.official is not None:
            ordered.append(trust.official)
        for raw in refs:
            ref = parse_ref(raw, kustomization_dir)
            if not trust.is_trusted(ref):
                # Local paths are suggested absolute: the flag is relative to the working dir.
                flag = ref.location if ref.kind == "file" else ref.raw
                raise CatalogTrustError(
                    f"catalog {raw} is not trusted: pass --trusted-catalog={flag} "
                    "after reviewing it with 'krm view catalog'",
                    file=source,
                )
            ordered.append(ref)
        ordered.extend(trust.trusted)
        seen: set[str] = set()
        unique = [r for r in ordered if not (r.key in seen or seen.add(r.key))]  # type: ignore[func-returns-value]
        return cls(unique, store_for(options), trust)

    def find(self, group: str, kind: str, version: str) -> Match | None:
        """First match in search order; a catalog that cannot be fetched fails the search."""
        for i, ref in enumerate(self.refs):
            keys = self.trust.keys_for(ref) if self.trust is not None else []
            loaded = self.store.get(ref, keys)
            found = loaded.catalog.find(group, kind, version)
            if found is not None:
                match = Match(loaded, found[0], found[1])
                from orchestrator.functions.collisions import check_later

                check_later(match, self.refs[i + 1 :], self, group, kind, version)
                return match
        return None


def _warn_deprecated(loaded: LoadedCatalog) -> None:
    """One line on stderr: the version still builds, as npm's deprecate does."""
    from orchestrator import terminal

    which = f"version {loaded.version}" if loaded.version is not None else "this version"
    sys.stderr.write(
        f"Warning: catalog {terminal.field(str(loaded.ref))}: {which} is deprecated by its "
        f"publisher: {terminal.field(loaded.deprecation)}\n"
    )
