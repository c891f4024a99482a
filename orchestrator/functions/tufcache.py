"""The warm path of TUF verification: reuse what ngclient verified while the registry's signed
state is byte for byte the same, without loading tuf or any cryptography.

After ngclient verified a catalog target (``orchestrator.functions.tufclient``), the trust store
keeps ``verified.json``: the sha256 of the timestamp.json it verified, the version of the root it
trusts, the earliest expiry among the metadata it used (root, timestamp, snapshot, targets, the
publisher's role), and the length and sha256 of each target it verified under that state.

A timestamp names its snapshot by version and hash, and the snapshot names every targets role
by version, so the same timestamp bytes mean the same signed state. A warm build therefore asks
the registry what ngclient asks first — the next root version (it must not exist: no rotation)
and the timestamp — and when the timestamp is the bytes verified before, nothing has expired and
the target files in the trust store still have the recorded length and sha256, uses them. Any
other answer (a new timestamp, a rotation, an error, a redirect, expiry, a missing record) goes
the whole way through ngclient, which then reports what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from typing import Any
from urllib.parse import quote, urlsplit

from orchestrator.functions.options import FnOptions

RECORD = "verified.json"
MAX_TIMESTAMP_BYTES = 16384  # ngclient's limit for timestamp.json


def registry_key(registry: str) -> str:
    """The trust store directory name of a registry: readable, and unique by a digest."""
    parts = urlsplit(registry)
    readable = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{parts.netloc}{parts.path}").strip("_")
    return f"{readable[:60]}-{hashlib.sha256(registry.encode()).hexdigest()[:12]}"


def store_directory(options: FnOptions, registry: str) -> str:
    """Where one registry's trust store entry lives: ``<cache>/tuf/<registry key>``."""
    return os.path.join(options.cache_root(), "tuf", registry_key(registry))


def is_pinned(options: FnOptions, registry: str) -> bool:
    """Whether the registry has an entry in the trust store."""
    return os.path.isfile(os.path.join(store_directory(options, registry), "trust.json"))


def probe_root(registry: str, options: FnOptions) -> bytes | None:
    """``<registry>/tuf/root.json`` of a registry never pinned; None when it serves none (404
    or any failure: an OCI host of another kind, say), without loading tuf."""
    from orchestrator.functions.fetch import FetchError, http_get

    try:
        resp = http_get(
            f"{registry}/tuf/root.json", options=options, max_bytes=512000, missing_ok=True
        )
    except FetchError:
        return None
    return resp.body if resp.status == 200 else None


def _get(conn: Any, path: str, limit: int) -> tuple[int, bytes]:
    conn.request("GET", path, headers={"Accept": "application/json"})
    resp = conn.getresponse()
    body = resp.read(limit + 1)
    return resp.status, body


def warm_targets(
    directory: str, registry: str, paths: list[str], options: FnOptions
) -> tuple[dict[str, bytes], dict[str, Any]] | None:
    """The bytes of ``paths``, and the record, when the registry's signed state is the one
    verified before; None when anything differs (the caller then verifies through ngclient)."""
    if options.offline:
        return None
    try:
        with open(os.path.join(directory, RECORD), encoding="utf-8") as f:
            record = json.load(f)
        if time.time() >= float(record["expires"]):
            return None
        wanted = {p: record["targets"][p] for p in paths}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    import http.client

    parts = urlsplit(registry)
    try:
        if parts.scheme == "https":
            from orchestrator.functions.fetch import _ssl_context

            conn: Any = http.client.HTTPSConnection(
                parts.netloc, timeout=30, context=_ssl_context(options)
            )
        elif parts.scheme == "http":
            from orchestrator.functions.fetch import is_loopback

            if not is_loopback(parts.hostname or ""):
                return None
            conn = http.client.HTTPConnection(parts.netloc, timeout=30)
        else:
            return None
        try:
            next_root = f"{parts.path}/tuf/{int(record['root']) + 1}.root.json"
            status, _ = _get(conn, next_root, 65536)
            if status != 404:
                return None  # a rotation (or an odd answer): ngclient's business
            status, body = _get(conn, f"{parts.path}/tuf/timestamp.json", MAX_TIMESTAMP_BYTES)
        finally:
            conn.close()
    except (OSError, http.client.HTTPException, ValueError):
        return None
    if status != 200 or hashlib.sha256(body).hexdigest() != record["timestamp"]:
        return None
    found: dict[str, bytes] = {}
    for path, info in wanted.items():
        try:
            with open(os.path.join(directory, "targets", quote(path, "")), "rb") as f:
                data = f.read(int(info["length"]) + 1)
        except OSError:
            return None
        if len(data) != info["length"] or hashlib.sha256(data).hexdigest() != info["sha256"]:
            return None
        found[path] = data
    _touch_refreshed(directory)
    return found, record


def _touch_refreshed(directory: str) -> None:
    """Note in trust.json that the registry's state was confirmed now (--offline says how old
    the metadata is from this)."""
    path = os.path.join(directory, "trust.json")
    try:
        with open(path, encoding="utf-8") as f:
            pin = json.load(f)
        pin["refreshed"] = time.time()
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(pin, f, indent=1)
        os.replace(path + ".tmp", path)
    except (OSError, ValueError):
        pass


def remember(
    directory: str,
    *,
    timestamp_sha256: str,
    root_version: int,
    expires: float,
    how: str,
    targets: dict[str, dict[str, Any]],
) -> None:
    """Record targets ngclient verified under this timestamp (merged with those recorded under
    the same timestamp before)."""
    path = os.path.join(directory, RECORD)
    merged: dict[str, Any] = {}
    try:
        with open(path, encoding="utf-8") as f:
            before = json.load(f)
        if before.get("timestamp") == timestamp_sha256 and before.get("root") == root_version:
            merged = dict(before.get("targets") or {})
            expires = min(expires, float(before.get("expires", expires)))
    except (OSError, ValueError):
        pass
    merged.update(targets)
    record = {
        "timestamp": timestamp_sha256,
        "root": root_version,
        "expires": expires,
        "how": how,
        "targets": merged,
    }
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)
