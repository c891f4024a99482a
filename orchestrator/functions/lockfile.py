"""``krm.lock``: the catalogs and function runtimes a build used, pinned for reproducible builds.

``krm build --lock`` writes ``krm.lock`` next to the kustomization: every catalog the build
loaded (its reference, the sha256 of its bytes and, for a catalog verified through a registry's
TUF metadata, the registry, the signed target and version number), every function resolved
from a catalog (its runtime kind and digest), and the TUF root trusted for each registry.
``krm build --locked`` uses exactly that, like ``cargo --locked`` or ``npm ci``: a registry
catalog is read at its locked version (not at the latest pointer), a registry not pinned yet is
pinned to the locked root, and any difference (another digest, runtime or root, a catalog or
function missing from the lock, or one the lock names that the build did not use) is an error
before any function from the catalog runs.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from orchestrator.functions.options import FnOptions, FunctionError

LOCK_NAME = "krm.lock"
API_VERSION = "config.kubernetes.io/v1alpha1"
KIND = "KrmLock"


class LockError(FunctionError):
    """A build that differs from its krm.lock, or a krm.lock that cannot be read."""


class LockState:
    """What one build recorded, and (for --locked) what krm.lock pins."""

    def __init__(self, mode: str, path: str):
        self.mode = mode  # "write" | "check"
        self.path = path
        self.base = os.path.dirname(os.path.abspath(path))
        self.catalogs: dict[str, dict[str, Any]] = {}
        self.functions: dict[str, dict[str, Any]] = {}
        self.registries: dict[str, dict[str, Any]] = {}
        self.locked: dict[str, Any] = {"catalogs": {}, "functions": {}, "registries": {}}
        if mode == "check":
            self._read()

    def _read(self) -> None:
        from orchestrator import yamlio

        if not os.path.isfile(self.path):
            raise LockError(
                f"krm build --locked: there is no {self.path} (krm build --lock writes it)"
            )
        with open(self.path, encoding="utf-8") as f:
            doc = yamlio.load(f.read(), source=self.path, fold=False)
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            raise LockError(f"{self.path}: not a krm.lock (expected kind {KIND})")
        try:
            self.locked["catalogs"] = {c["ref"]: c for c in doc.get("catalogs") or []}
            self.locked["functions"] = {_function_id(f): f for f in doc.get("functions") or []}
            self.locked["registries"] = {r["url"]: r for r in doc.get("registries") or []}
        except (KeyError, TypeError):
            raise LockError(f"{self.path}: malformed entry (run krm build --lock again)") from None

    def ref_id(self, ref: Any) -> str:
        """How a catalog reference is written in the lock (local files relative to it)."""
        if ref.kind == "file":
            return os.path.relpath(ref.key, self.base)
        return str(ref.key)


def _function_id(entry: dict[str, Any]) -> str:
    return f"{entry['catalog']} {entry['apiVersion']} {entry['kind']}"


def state(options: FnOptions) -> LockState | None:
    """The build's lock state (None without --lock/--locked); one per FnOptions."""
    if not options.lock_mode:
        return None
    found = getattr(options, "_lock_state", None)
    if found is None:
        found = LockState(options.lock_mode, options.lock_file or LOCK_NAME)
        object.__setattr__(options, "_lock_state", found)
    assert isinstance(found, LockState)
    return found


def locked_root(options: FnOptions, registry: str) -> tuple[int, str] | None:
    """--locked: the root krm.lock pins for ``registry`` (the anchor when it is not pinned)."""
    lock = state(options)
    if lock is None or lock.mode != "check":
        return None
    entry = lock.locked["registries"].get(registry)
    if entry is None:
        return None
    return int(entry["root"]["version"]), str(entry["root"]["sha256"])


def locked_target(options: FnOptions, ref: Any, target: Any) -> str | None:
    """--locked: the TUF target krm.lock pins for a registry catalog (its locked version)."""
    lock = state(options)
    if lock is None or lock.mode != "check":
        return None
    entry = lock.locked["catalogs"].get(lock.ref_id(ref))
    if entry is None:
        raise LockError(
            f"catalog {ref} is not in {lock.path}; krm build --locked uses only what it pins "
            "(run krm build --lock to update it)"
        )
    if entry.get("registry") != target.registry or not entry.get("target"):
        raise LockError(
            f"catalog {ref}: {lock.path} pins it outside registry {target.registry}'s TUF "
            "metadata (run krm build --lock to update it)"
        )
    return str(entry["target"])


def _differs(lock: LockState, what: str, now: dict[str, Any], pinned: dict[str, Any]) -> None:
    for key in sorted(set(now) | set(pinned)):
        if now.get(key) != pinned.get(key):
            raise LockError(
                f"{what} differs from {lock.path}: {key} is {now.get(key)!r}, locked "
                f"{pinned.get(key)!r}; krm build --locked refuses any difference (run krm "
                "build --lock to update it)"
            )


def record_catalog(options: FnOptions, loaded: Any) -> None:
    """Note a catalog the build loaded; --locked: it must be exactly the locked one."""
    lock = state(options)
    if lock is None:
        return
    ref_id = lock.ref_id(loaded.ref)
    entry: dict[str, Any] = {"ref": ref_id, "digest": loaded.bytes_digest}
    if loaded.registry:
        entry.update(registry=loaded.registry, target=loaded.target, version=loaded.version)
        store = getattr(options, "_catalog_store", None)
        session = store._sessions.get(loaded.registry) if store is not None else None
        if session is not None:
            version, sha = session.root()
            root = {"url": loaded.registry, "root": {"version": version, "sha256": sha}}
            if lock.mode == "check":
                pinned = lock.locked["registries"].get(loaded.registry)
                if pinned is None:
                    raise LockError(
                        f"catalog {loaded.ref}: registry {loaded.registry} is not in "
                        f"{lock.path} (run krm build --lock to update it)"
                    )
                _check_root(lock, session, loaded, pinned)
                root = pinned
            lock.registries[loaded.registry] = root
    if lock.mode == "check":
        pinned = lock.locked["catalogs"].get(ref_id)
        if pinned is None:
            raise LockError(
                f"catalog {loaded.ref} is not in {lock.path}; krm build --locked uses only "
                "what it pins (run krm build --lock to update it)"
            )
        _differs(lock, f"catalog {loaded.ref}", entry, pinned)
    lock.catalogs[ref_id] = entry


def _check_root(lock: LockState, session: Any, loaded: Any, pinned: dict[str, Any]) -> None:
    """The trust store must hold the locked root version, byte for byte."""
    version, sha = int(pinned["root"]["version"]), str(pinned["root"]["sha256"])
    data = session.root_bytes(version)
    if data is None or hashlib.sha256(data).hexdigest() != sha:
        found = "another root" if data is not None else "no such root"
        raise LockError(
            f"catalog {loaded.ref}: the trust store holds {found} as version {version} of "
            f"registry {loaded.registry}'s TUF root, not the one {lock.path} pins "
            f"(sha256:{sha}); no function from this catalog runs"
        )


def runtime_digest(spec: dict[str, Any]) -> str:
    """The digest a chosen runtime is pinned by: the artifact's own, else the spec's."""
    from orchestrator.functions.revocations import runtime_digests

    digests = sorted(runtime_digests(spec))
    if digests:
        return ",".join(digests)
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return "spec-sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def record_function(
    options: FnOptions, *, catalog: Any, api_version: str, kind: str, runtime: str, spec: Any
) -> None:
    """Note a function resolved from a catalog; --locked: its runtime must be the locked one
    (checked before it runs)."""
    lock = state(options)
    if lock is None:
        return
    entry = {
        "apiVersion": api_version,
        "kind": kind,
        "catalog": lock.ref_id(catalog.ref),
        "runtime": runtime,
        "digest": runtime_digest(spec),
    }
    key = _function_id(entry)
    if lock.mode == "check":
        pinned = lock.locked["functions"].get(key)
        if pinned is None:
            raise LockError(
                f"{api_version} {kind} from catalog {catalog.ref} is not in {lock.path}; "
                "krm build --locked uses only what it pins (run krm build --lock to update it)"
            )
        what = f"the runtime of {api_version} {kind} (catalog {catalog.ref})"
        _differs(lock, what, entry, pinned)
    lock.functions[key] = entry


def finish(options: FnOptions) -> None:
    """After a build: --lock writes krm.lock; --locked refuses a lock naming unused entries."""
    lock = state(options)
    if lock is None:
        return
    if lock.mode == "check":
        for what, now in (("catalog", lock.catalogs), ("function", lock.functions)):
            unused = sorted(set(lock.locked[f"{what}s"]) - set(now))
            if unused:
                raise LockError(
                    f"{lock.path} pins {what} {unused[0]}, which this build did not use; "
                    "krm build --locked refuses any difference (run krm build --lock to "
                    "update it)"
                )
        return
    from orchestrator import yamlio

    doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "registries": [lock.registries[k] for k in sorted(lock.registries)],
        "catalogs": [lock.catalogs[k] for k in sorted(lock.catalogs)],
        "functions": [lock.functions[k] for k in sorted(lock.functions)],
    }
    text = "# Written by krm build --lock; krm build --locked uses exactly this.\n"
    text += yamlio.dump(doc)
    tmp = lock.path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, lock.path)
