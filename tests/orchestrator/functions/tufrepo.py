"""A registry of this kind for tests: a TUF repository written with python-tuf's Metadata API.

Files are served as a registry serves them (``/tuf/<V>.<role>.json``, ``/tuf/timestamp.json``,
``/tuf/root.json``, targets at ``/c/<path>``, ``/signing-key.pub``) through the test's local
HTTP server (a dict of path -> bytes), and a :class:`Proxy` on loopback forwards to it while
rewriting what an attacker on the path would rewrite.

Roles: root (the registry key, ECDSA P-256, which is also ``/signing-key.pub``), targets
(the registry key) delegating each publisher's paths to a terminating role named after it, signed
by the publisher's own key when it has one and by the registry key otherwise; snapshot and
timestamp (the registry key).
"""

from __future__ import annotations

import datetime
import hashlib
import http.server
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from securesystemslib.signer import CryptoSigner, Signer
from tuf.api.metadata import (
    DelegatedRole,
    Delegations,
    Metadata,
    MetaFile,
    Root,
    Snapshot,
    TargetFile,
    Targets,
    Timestamp,
)
from tuf.api.serialization.json import JSONSerializer

CATALOG = """apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: {name}
spec:
  krmFunctions:
  - group: example.com
    names:
      kind: Labeler
    publisher: {publisher}
    versions:
    - name: v1
      runtime:
        exec:
          platforms:
          - bin: bin/fn
            os: {os}
            arch: {arch}
            uri: {uri}
            sha256: "{sha}"
"""
EMPTY_REVOCATIONS = (
    b"apiVersion: config.kubernetes.io/v1alpha1\nkind: RevocationList\nsequence: 0\n"
)


def _in(days: float) -> datetime.datetime:
    return (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=days)).replace(
        microsecond=0
    )


def revocations(sequence: int, entries: list[dict[str, Any]]) -> bytes:
    """A revocation list document."""
    import yaml

    return yaml.safe_dump(
        {
            "apiVersion": "config.kubernetes.io/v1alpha1",
            "kind": "RevocationList",
            "sequence": sequence,
            "revocations": entries,
        }
    ).encode()


class Repo:
    """The registry's TUF repository and the files it serves."""

    def __init__(self, files: dict[str, bytes]):
        self.files = files  # the HTTP server's path -> bytes
        self.key = CryptoSigner.generate_ecdsa()
        self.publisher_keys: dict[str, Signer] = {}
        # publisher -> target path -> bytes
        self.content: dict[str, dict[str, bytes]] = {}
        self.versions: dict[str, int] = {}
        self.timestamp_expires: datetime.datetime | None = None
        # A role signed by these signers instead of its own (an attacker with the registry key).
        self.sign_role_with: dict[str, list[Signer]] = {}
        root = Root(expires=_in(365), consistent_snapshot=True)
        for role in (Root.type, Targets.type, Snapshot.type, Timestamp.type):
            root.add_key(self.key.public_key, role)
        self.root = Metadata(root)
        self.root.sign(self.key)
        self.root_bytes = self.root.to_bytes(JSONSerializer())
        self.files["/tuf/1.root.json"] = self.root_bytes
        self.files["/tuf/root.json"] = self.root_bytes
        self.files["/signing-key.pub"] = self.key.public_key.keyval["public"].encode()
        self.role_versions: dict[str, int] = {}
        self.snapshot_version = 0
        self.timestamp_version = 0

    def publisher(self, name: str, *, own_key: bool = False) -> None:
        """Register a publisher (with a key of its own: ed25519)."""
        self.content.setdefault(name, {})
        if own_key:
            self.publisher_keys[name] = CryptoSigner.generate_ed25519()

    def put(self, path: str, data: bytes, *, sign: bool = True) -> None:
        """Serve ``data`` at ``/c/<path>`` (and sign it as a target unless ``sign`` is False)."""
        self.files[f"/c/{path}"] = data
        if sign:
            self.content[path.split("/", 1)[0]][path] = data

    def publish_catalog(self, publisher: str, catalog: str, data: bytes) -> int:
        """A new version: ``versions/<n>/catalog.yaml`` and the latest pointer; a first version
        gets an empty revocation list."""
        number = self.versions.get(f"{publisher}/{catalog}", 0) + 1
        self.versions[f"{publisher}/{catalog}"] = number
        self.put(f"{publisher}/{catalog}/versions/{number}/catalog.yaml", data)
        self.put(f"{publisher}/{catalog}/catalog.yaml", data)
        if f"{publisher}/{catalog}/revocations.yaml" not in self.content[publisher]:
            self.put(f"{publisher}/{catalog}/revocations.yaml", EMPTY_REVOCATIONS)
        return number

    def _signed(self, md: Metadata[Any], signers: list[Signer]) -> bytes:
        md.signatures.clear()
        for signer in signers:
            md.sign(signer, append=True)
        return md.to_bytes(JSONSerializer())

    def publish(self) -> None:
        """Sign and serve new delegated targets, targets, snapshot and timestamp metadata."""
        snapshot = Snapshot(version=self.snapshot_version + 1, expires=_in(30))
        top = Targets(version=self.role_versions.get(Targets.type, 0) + 1, expires=_in(30))
        top.delegations = Delegations(keys={}, roles={})
        for publisher in sorted(self.content):
            signer = self.publisher_keys.get(publisher, self.key)
            key = signer.public_key
            top.delegations.keys[key.keyid] = key
            assert top.delegations.roles is not None
            top.delegations.roles[publisher] = DelegatedRole(
                name=publisher,
                keyids=[key.keyid],
                threshold=1,
                terminating=True,
                paths=[f"{publisher}/*", f"{publisher}/*/*", f"{publisher}/*/*/*/*"],
            )
            version = self.role_versions.get(publisher, 0) + 1
            self.role_versions[publisher] = version
            role = Targets(version=version, expires=_in(30))
            for path, data in self.content[publisher].items():
                role.targets[path] = TargetFile.from_data(path, data, ["sha256"])
            signers = self.sign_role_with.get(publisher, [signer])
            self.files[f"/tuf/{version}.{publisher}.json"] = self._signed(Metadata(role), signers)
            snapshot.meta[f"{publisher}.json"] = MetaFile(version=version)
        self.role_versions[Targets.type] = top.version
        self.files[f"/tuf/{top.version}.targets.json"] = self._signed(Metadata(top), [self.key])
        snapshot.meta["targets.json"] = MetaFile(version=top.version)
        self.snapshot_version = snapshot.version
        snap_bytes = self._signed(Metadata(snapshot), [self.key])
        self.files[f"/tuf/{snapshot.version}.snapshot.json"] = snap_bytes
        self.timestamp_version += 1
        timestamp = Timestamp(
            version=self.timestamp_version,
            expires=self.timestamp_expires or _in(1),
            snapshot_meta=MetaFile(
                version=snapshot.version,
                length=len(snap_bytes),
                hashes={"sha256": hashlib.sha256(snap_bytes).hexdigest()},
            ),
        )
        self.files["/tuf/timestamp.json"] = self._signed(Metadata(timestamp), [self.key])

    def rotate_root(self, new_key: Signer, *, signed_by_old: bool = True) -> bytes:
        """Root version n+1 with ``new_key`` for every role (signed by both, or only the new)."""
        root = self.root.signed
        new = Root(version=root.version + 1, expires=_in(365), consistent_snapshot=True)
        for role in (Root.type, Targets.type, Snapshot.type, Timestamp.type):
            new.add_key(new_key.public_key, role)
        md = Metadata(new)
        md.sign(new_key)
        if signed_by_old:
            md.sign(self.key, append=True)
        data = md.to_bytes(JSONSerializer())
        self.files[f"/tuf/{new.version}.root.json"] = data
        self.files["/tuf/root.json"] = data
        self.root, self.key = md, new_key  # type: ignore[assignment]
        return data


class Proxy:
    """A loopback HTTP proxy in front of ``upstream``: ``rewrite`` maps a path to the bytes to
    answer with (None: 404), or to a callable(upstream bytes) -> bytes."""

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.rewrite: dict[str, bytes | None | Callable[[bytes], bytes]] = {}
        # Set: answer every request from this dict (another server's files) instead.
        self.impostor: dict[str, bytes] | None = None
        self.seen: list[str] = []
        state = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                path = self.path.split("?", 1)[0]
                state.seen.append(path)
                rule = state.rewrite.get(path, "pass")
                status, body = 200, b""
                if state.impostor is not None and path not in state.rewrite:
                    found = state.impostor.get(path)
                    status, body = (200, found) if found is not None else (404, b"")
                elif rule is None:
                    status = 404
                elif isinstance(rule, bytes):
                    body = rule
                else:
                    try:
                        with urllib.request.urlopen(state.upstream + self.path) as resp:
                            body = resp.read()
                    except urllib.error.HTTPError as exc:
                        status = exc.code
                    if status == 200 and callable(rule):
                        body = rule(body)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
