"""Revocation lists: what a catalog's publisher has withdrawn, and refusing it before it runs.

A registry catalog ``https://host/c/<publisher>/<catalog>/catalog.yaml`` (also ``versions/N/`` and
``sha256/<hex>/`` URLs, however percent-encoded, and ``oci://host/<publisher>/<catalog>``) has its
list at ``https://host/c/<publisher>/<catalog>/revocations.yaml`` and the signature at
``revocations.yaml.sig`` (``cosign sign-blob`` format, the registry key). A local catalog file
may have a ``revocations.yaml`` beside it. A 404 means the catalog has none. (A registry that
serves TUF metadata signs its lists as TUF targets instead, and a missing one is an error: see
``orchestrator.functions.tufclient``.)

The list is cached under ``$XDG_CACHE_HOME/krm/revocations`` and revalidated with ETag, like
catalogs; ``--offline`` uses the cache and says how old it is. Lists are append-only: a list
whose ``sequence`` is lower than the cached one is refused (a rollback), and a list that was seen
once and is now missing keeps being honoured from the cache. When a signing key applies to the
catalog, the list's signature must verify with it: a bad or missing signature is an error, never
an empty list.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from orchestrator.functions.fetch import FetchError, http_get, read_limited
from orchestrator.functions.options import FnOptions, FunctionError
from orchestrator.functions.signatures import (
    MAX_SIGNATURE_BYTES,
    CatalogKey,
    SignatureMaterial,
    SignatureStatus,
    blob_signature_fetch,
    verify,
)

KIND = "RevocationList"
MAX_LIST_BYTES = 1024 * 1024
FILE_NAME = "revocations.yaml"


class RevocationListError(FunctionError):
    """A revocation list that is invalid, rolled back, or whose signature does not verify."""


class RevokedError(FunctionError):
    """A build needs a function version or runtime its catalog revoked."""


@dataclass(frozen=True)
class Revocation:
    """One entry: a function version (group, kind, version) or a runtime digest, and why."""

    sequence: int
    reason: str
    group: str = ""
    kind: str = ""
    version: str = ""
    runtime_digest: str = ""
    detail: str = ""
    replacement: str = ""
    revoked_at: str = ""

    @property
    def target(self) -> str:
        """What is revoked, as users write it."""
        if self.runtime_digest:
            return f"runtime {self.runtime_digest}"
        api_version = f"{self.group}/{self.version}" if self.group else self.version
        return f"{api_version} {self.kind}"

    def because(self) -> str:
        """The reason, its detail and the replacement hint, in one phrase."""
        text = self.reason + (f" ({self.detail})" if self.detail else "")
        if self.replacement:
            text += f"; use instead: {self.replacement}"
        return text


@dataclass
class RevocationList:
    """A catalog's list as fetched (or read from the cache) and checked."""

    where: str
    sequence: int
    entries: list[Revocation]
    fetched: float = 0.0
    from_cache: bool = False
    signature: SignatureStatus | None = None
    notes: list[str] = field(default_factory=list)

    def find_version(self, group: str, kind: str, version: str) -> Revocation | None:
        """The entry revoking this function version, if any."""
        for e in self.entries:
            if not e.runtime_digest and (e.group, e.kind, e.version) == (group, kind, version):
                return e
        return None

    def find_digest(self, digests: set[str]) -> Revocation | None:
        """The entry revoking any of ``digests`` (``sha256:<hex>``), if any."""
        for e in self.entries:
            if e.runtime_digest and e.runtime_digest in digests:
                return e
        return None


def list_location(kind: str, location: str) -> str | None:
    """Where the list of a catalog at ``location`` (a URL, OCI reference or file path) lives,
    if anywhere; URLs are mapped after percent-decoding, so their spelling does not matter."""
    if kind == "file":
        return os.path.join(os.path.dirname(location), FILE_NAME)
    from orchestrator.functions import tufpaths

    if kind == "url":
        target = tufpaths.for_url(location)
    elif kind == "oci":
        target = tufpaths.for_oci(location)
    else:
        return None
    if target is None:
        return None
    return tufpaths.revocations_url(target.registry, target.publisher, target.catalog)


def parse(data: bytes, where: str) -> tuple[int, list[Revocation]]:
    """``(sequence, entries)`` of a list document; RevocationListError naming what is wrong."""
    from orchestrator import yamlio

    try:
        doc = yamlio.load(data.decode("utf-8"), source=where, fold=False)
    except Exception as exc:  # yamlio raises several error types; one line is enough here
        raise RevocationListError(f"revocation list {where} is not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise RevocationListError(f"revocation list {where}: expected a mapping of kind {KIND}")
    sequence = doc.get("sequence")
    items = doc.get("revocations") or []
    if not isinstance(sequence, int) or isinstance(sequence, bool) or sequence < 0:
        raise RevocationListError(f"revocation list {where}: sequence must be an integer >= 0")
    if not isinstance(items, list):
        raise RevocationListError(f"revocation list {where}: revocations must be a list")
    entries = []
    for i, item in enumerate(items):
        at = f"revocation list {where}: revocations[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("reason"), str):
            raise RevocationListError(f"{at}: expected a mapping with a reason")
        digest = str(item.get("runtimeDigest") or "").lower()
        if not digest and not (item.get("kind") and item.get("version")):
            raise RevocationListError(f"{at}: names neither kind and version nor runtimeDigest")
        entries.append(
            Revocation(
                sequence=int(item.get("sequence") or 0),
                reason=item["reason"],
                group="" if digest else str(item.get("group") or ""),
                kind="" if digest else str(item["kind"]),
                version="" if digest else str(item["version"]),
                runtime_digest=digest,
                detail=str(item.get("detail") or ""),
                replacement=str(item.get("replacement") or ""),
                revoked_at=str(item.get("revokedAt") or ""),
            )
        )
    return sequence, entries


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{int(seconds)} seconds"
    if seconds < 7200:
        return f"{int(seconds // 60)} minutes"
    if seconds < 172800:
        return f"{int(seconds // 3600)} hours"
    return f"{int(seconds // 86400)} days"


def _write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def _warn(text: str) -> None:
    # The engine has no warning channel below the build facade; these go straight to stderr
    # (escaped: the text quotes the revocation list).
    from orchestrator.terminal import lines

    sys.stderr.write(lines(f"Warning: {text}\n"))


def load(
    kind: str,
    location: str,
    *,
    catalog: str,
    options: FnOptions,
    keys: list[CatalogKey],
    report_only: bool = False,
) -> RevocationList | None:
    """The checked list of the catalog ``catalog`` (None when it has none).

    With ``keys`` the list's signature must verify with one of them (else RevocationListError);
    with ``report_only`` (``krm view catalog``) the outcome is reported in ``signature`` instead.
    """
    where = list_location(kind, location)
    if where is None:
        return None
    if kind == "file":
        if not os.path.isfile(where):
            return None
        data = read_limited(where, MAX_LIST_BYTES)
        material = SignatureMaterial("blob", where + ".sig")
        if os.path.isfile(where + ".sig"):
            material.found = True
            material.signature_b64 = read_limited(where + ".sig", MAX_SIGNATURE_BYTES).decode(
                "ascii", "replace"
            )
        listed = _checked(data, where, material, keys, catalog, report_only)
        listed.fetched = os.stat(where).st_mtime
        return listed
    # An OCI reference's list is on the same host, at the registry's https path; an OCI host
    # that is not a registry of this kind may answer that path with any error: no list.
    return _load_url(
        where,
        catalog=catalog,
        options=options,
        keys=keys,
        report_only=report_only,
        lenient=kind == "oci",
    )


def _checked(
    data: bytes,
    where: str,
    material: SignatureMaterial | None,
    keys: list[CatalogKey],
    catalog: str,
    report_only: bool,
) -> RevocationList:
    status = verify(material, data, keys) if (keys or report_only) else None
    if keys and not report_only and status is not None and status.status != "verified":
        if status.status == "missing":
            why = f"has no signature ({status.where} not found)"
        else:
            why = f"has a bad signature: {status.detail} ({status.where})"
        raise RevocationListError(
            f"revocation list {where} of catalog {catalog} {why}; a signing key applies to the "
            "catalog, so the build stops rather than run without its revocations"
        )
    sequence, entries = parse(data, where)
    return RevocationList(where, sequence, entries, signature=status)


def _load_url(
    url: str,
    *,
    catalog: str,
    options: FnOptions,
    keys: list[CatalogKey],
    report_only: bool,
    lenient: bool = False,
) -> RevocationList | None:
    digest = hashlib.sha256(url.encode()).hexdigest()[:32]
    directory = os.path.join(options.cache_root(), "revocations", digest)
    body_path = os.path.join(directory, FILE_NAME)
    meta_path = os.path.join(directory, "meta.json")
    sig_path = os.path.join(directory, "signature.json")
    meta: dict[str, Any] = {}
    if os.path.isfile(meta_path) and os.path.isfile(body_path):
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
    cached_sig = None
    if meta and os.path.isfile(sig_path):
        with open(sig_path, encoding="utf-8") as f:
            cached_sig = SignatureMaterial.from_json(json.load(f))

    def from_cache(note: str) -> RevocationList:
        data = read_limited(body_path, MAX_LIST_BYTES)
        material = cached_sig or SignatureMaterial("blob", url + ".sig")
        listed = _checked(data, url, material, keys, catalog, report_only)
        listed.fetched, listed.from_cache = float(meta.get("fetched", 0)), True
        if note:
            age = _age(max(0.0, time.time() - listed.fetched))
            listed.notes.append(note.format(age=age, sequence=listed.sequence))
        return listed

    if options.offline:
        if not meta:
            _warn(
                f"--offline: no cached revocation list for catalog {catalog}; "
                "its revocations are not checked"
            )
            return None
        listed = from_cache(
            "--offline: using the revocation list of catalog {catalog} (sequence {sequence}) "
            "cached {age} ago".replace("{catalog}", catalog)
        )
        for note in listed.notes:
            _warn(note)
        return listed
    headers = {"Accept": "application/yaml, */*"}
    if meta.get("etag"):
        headers["If-None-Match"] = meta["etag"]
    try:
        resp = http_get(
            url, options=options, max_bytes=MAX_LIST_BYTES, headers=headers, missing_ok=True
        )
    except FetchError as exc:
        if lenient and not meta:
            return None
        raise RevocationListError(
            f"cannot fetch the revocation list of catalog {catalog}: {exc.message}"
        ) from None
    if resp.status == 404:
        if meta:  # append-only: a list seen once never stops applying
            listed = from_cache(
                "the revocation list of catalog {catalog} is gone from the registry; "
                "honouring the cached one (sequence {sequence}, {age} old)".replace(
                    "{catalog}", catalog
                )
            )
            for note in listed.notes:
                _warn(note)
            return listed
        return None
    want_sig = bool(keys) or report_only
    if resp.status == 304 and meta:
        if want_sig and (cached_sig is None or not cached_sig.found):
            cached_sig = blob_signature_fetch(url, options)
            _write(sig_path, json.dumps(cached_sig.to_json()).encode())
        meta["fetched"] = time.time()
        _write(meta_path, json.dumps(meta).encode())
        return from_cache("")
    assert resp.body is not None
    material = blob_signature_fetch(url, options) if want_sig else None
    listed = _checked(resp.body, url, material, keys, catalog, report_only)
    if meta and listed.sequence < int(meta.get("sequence", 0)):
        raise RevocationListError(
            f"revocation list {url} of catalog {catalog} went back from sequence "
            f"{meta['sequence']} to {listed.sequence}; revocation lists are append-only"
        )
    _write(body_path, resp.body)
    if material is not None:
        _write(sig_path, json.dumps(material.to_json()).encode())
    elif os.path.exists(sig_path):
        os.remove(sig_path)
    listed.fetched = time.time()
    _write(
        meta_path,
        json.dumps(
            {"url": url, "etag": resp.etag, "fetched": listed.fetched, "sequence": listed.sequence}
        ).encode(),
    )
    return listed


def runtime_digests(spec: dict[str, Any]) -> set[str]:
    """The ``sha256:<hex>`` digests one chosen runtime spec names."""
    found: set[str] = set()
    if not isinstance(spec, dict):
        return found
    if spec.get("sha256"):
        found.add("sha256:" + str(spec["sha256"]).lower().removeprefix("sha256:"))
    image = str(spec.get("image") or "")
    if "@sha256:" in image:
        found.add(image.rsplit("@", 1)[1].lower())
    return found


def refuse_revoked(
    listed: RevocationList | None,
    *,
    catalog: str,
    group: str,
    kind: str,
    version: str,
    spec: dict[str, Any],
) -> None:
    """RevokedError when the list revokes this function version or the chosen runtime."""
    if listed is None:
        return
    entry = listed.find_version(group, kind, version) or listed.find_digest(runtime_digests(spec))
    if entry is None:
        return
    api_version = f"{group}/{version}" if group else version
    what = "is revoked" if not entry.runtime_digest else f"has a revoked {entry.target}"
    raise RevokedError(
        f"{api_version} {kind} from catalog {catalog} {what}: {entry.because()} "
        f"(revocation list sequence {entry.sequence}, {listed.where}); it is not run"
    )
