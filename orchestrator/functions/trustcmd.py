"""``krm trust add|list|remove``: pinning a registry's TUF root in the trust store by hand.

``add`` pins the root given as a file (``--root``), the root the registry serves whose sha256
is given (``--root-sha256``, any version of its history), or, with neither, the root it serves
now (trust on first use, said so). The registry's metadata is then refreshed once through the
pinned root, so a root that does not lead to the registry's current metadata is refused and
nothing stays pinned.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re

from orchestrator.functions.fetch import FetchError, read_limited
from orchestrator.functions.options import FnOptions
from orchestrator.functions.tufclient import (
    MAX_METADATA_BYTES,
    TrustError,
    TrustStore,
    check_root,
    fetch_root,
    normalise_registry,
    open_session,
    pin_registry,
)


def _root_by_digest(registry: str, digest: str, options: FnOptions) -> bytes:
    """The root the registry serves (now or earlier in its history) whose sha256 is digest."""
    current = fetch_root(registry, options)
    if current is None:
        raise TrustError(f"registry {registry} serves no TUF metadata ({registry}/tuf/root.json)")
    if hashlib.sha256(current).hexdigest() == digest:
        return current
    version = check_root(current, f"{registry}/tuf/root.json").signed.version
    for older in range(version - 1, 0, -1):
        data = fetch_root(registry, options, older)
        if data is not None and hashlib.sha256(data).hexdigest() == digest:
            return data
    raise TrustError(
        f"registry {registry} serves no root with sha256:{digest} (its root.json, version "
        f"{version}, is sha256:{hashlib.sha256(current).hexdigest()}); nothing was pinned"
    )


def add(
    registry: str, *, root_file: str | None, root_sha256: str | None, options: FnOptions
) -> str:
    """Pin ``registry``'s root; the line ``krm trust add`` prints."""
    registry = normalise_registry(registry)
    store = TrustStore(options)
    pinned = store.load(registry)
    if pinned is not None:
        raise TrustError(
            f"registry {registry} is already pinned (root version {pinned.version}, "
            f"sha256:{pinned.sha256}, by {pinned.how}); 'krm trust remove {registry}' first to "
            "pin another root"
        )
    try:
        if root_file:
            root = read_limited(root_file, MAX_METADATA_BYTES)
            check_root(root, root_file)
            how = f"root file {os.path.abspath(root_file)}"
        elif root_sha256:
            digest = root_sha256.lower().removeprefix("sha256:")
            if not re.fullmatch(r"[0-9a-f]{64}", digest):
                raise TrustError(f"--root-sha256 {root_sha256!r} is not 64 hexadecimal digits")
            root = _root_by_digest(registry, digest, options)
            how = f"--root-sha256 {digest}"
        else:
            fetched = fetch_root(registry, options)
            if fetched is None:
                raise TrustError(
                    f"registry {registry} serves no TUF metadata ({registry}/tuf/root.json)"
                )
            root = fetched
            how = "first use (krm trust add)"
    except FetchError as exc:
        raise TrustError(f"cannot fetch the TUF root of {registry}: {exc.message}") from None
    pin = pin_registry(store, registry, root, how=how, options=options)
    try:
        session = open_session(registry, options=options, catalog=registry)
        assert session is not None
        session.refresh(registry)
        version, sha = session.root()
    except BaseException:
        store.remove(registry)  # a root that does not verify the registry stays unpinned
        raise
    rotated = f"; trusted now: version {version}, sha256:{sha}" if version != pin.version else ""
    return (
        f"pinned registry {registry}: TUF root version {pin.version}, sha256:{pin.sha256} "
        f"(by {how}){rotated}\n"
    )


def remove(registry: str, *, options: FnOptions) -> str:
    """Forget ``registry``; the line ``krm trust remove`` prints."""
    registry = normalise_registry(registry)
    if not TrustStore(options).remove(registry):
        raise TrustError(f"registry {registry} is not in the trust store")
    return f"removed registry {registry} from the trust store\n"


def _when(seconds: float) -> str:
    if not seconds:
        return "-"
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def listing(*, options: FnOptions) -> str:
    """The table ``krm trust list`` prints."""
    pins = TrustStore(options).entries()
    if not pins:
        return "(no registries pinned)\n"
    rows = [("REGISTRY", "ROOT", "SHA256", "PINNED BY", "REFRESHED")]
    rows += [(p.registry, f"v{p.version}", p.sha256[:16], p.how, _when(p.refreshed)) for p in pins]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n"
        for row in rows
    )
