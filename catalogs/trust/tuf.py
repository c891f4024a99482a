"""The registry as a TUF repository, written with python-tuf's Metadata API.

The layout is the contract of docs/trust.md (what ``krm`` reads with python-tuf's ngclient):

- ``root``: the registry's online key (the ECDSA P-256 key of ``catalogs.trust.signing``, served
  at ``/signing-key.pub``) and any offline root keys (``TRUST_ROOT_KEY_FILES``), with
  ``TRUST_ROOT_THRESHOLD`` signatures required; consistent snapshots. Every version is kept.
- ``targets`` (online key): one delegation per publisher, a terminating role named after the
  publisher's slug for the paths ``<publisher>/*``, ``<publisher>/*/*``, ``<publisher>/*/*/*/*``,
  to the registry's online key, or to the publisher's own keys once it registered some.
- one role per publisher: every catalog version, the latest pointer, the revocation list and
  the runtime artifacts the registry serves for its catalogs (``TufTarget`` rows), signed by
  the online key; a publisher holding keys uploads its role signed by them
  (``tuf_role_upload``), and the registry never signs that role.
- ``snapshot`` and ``timestamp`` (online key); the timestamp expires after
  ``TRUST_TIMESTAMP_TTL`` seconds and is re-signed before that (``tuf_refresh``).

Every write takes the repository's lock (the newest root row, ``SELECT … FOR UPDATE``) and runs
in the caller's transaction, so a publish and the metadata that signs it commit together; the
first root version is a get-or-create on the (role, version) constraint (``_root_ensure``).
"""

from __future__ import annotations

import datetime
import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone
from securesystemslib.signer import CryptoSigner, Key, Signer, SSlibKey
from tuf.api import exceptions as tuf_errors
from tuf.api.metadata import (
    TOP_LEVEL_ROLE_NAMES,
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

from catalogs.exceptions import InvalidInputError, NotFoundError, StateConflictError
from catalogs.publishing.models import Catalog, CatalogVersion, Publisher, Visibility
from catalogs.trust import signing
from catalogs.trust.models import PublisherKey, TufMetadata, TufTarget

logger = logging.getLogger(__name__)

SERIALIZER = JSONSerializer(compact=True)
TOP_LEVEL = (Root.type, Targets.type, Snapshot.type, Timestamp.type)
# Versions of a non-root role kept after a newer one (clients in the middle of an update).
KEEP_VERSIONS = 20


def role_paths(slug: str) -> list[str]:
    """The target patterns delegated to a publisher (TUF matches segment by segment)."""
    return [f"{slug}/*", f"{slug}/*/*", f"{slug}/*/*/*/*"]


def _now() -> datetime.datetime:
    return timezone.now().astimezone(datetime.UTC).replace(microsecond=0)


def _in(seconds: float) -> datetime.datetime:
    return _now() + datetime.timedelta(seconds=seconds)


def _ttl(role: str) -> int:
    if role == Timestamp.type:
        return int(settings.TRUST_TIMESTAMP_TTL)
    if role == Snapshot.type:
        return int(settings.TRUST_SNAPSHOT_TTL)
    if role == Root.type:
        return int(settings.TRUST_ROOT_TTL)
    return int(settings.TRUST_TARGETS_TTL)


def _due(row: TufMetadata | None, role: str) -> bool:
    """Whether ``row`` must be re-signed: missing, or past half of its role's lifetime."""
    if row is None:
        return True
    return row.expires - timezone.now() <= datetime.timedelta(seconds=_ttl(role) / 2)


# --- Keys. ---


def online_signer() -> CryptoSigner:
    """The registry's online key (``/signing-key.pub``) as a TUF signer."""
    key, _row = signing.signing_key_current()
    return CryptoSigner(key, SSlibKey.from_crypto(key.public_key()))


def signer_from_pem(pem: bytes, where: str) -> CryptoSigner:
    """A private key PEM (ECDSA P-256 or ed25519) as a TUF signer."""
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise InvalidInputError(f"{where} is not an unencrypted PEM private key: {exc}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey):
        raise InvalidInputError(f"{where} must be an ECDSA P-256 or ed25519 private key.")
    return CryptoSigner(key, SSlibKey.from_crypto(key.public_key()))


def public_key_parse(pem: str) -> SSlibKey:
    """A public key PEM (ECDSA P-256 or ed25519) as a TUF key; InvalidInputError otherwise."""
    try:
        key = serialization.load_pem_public_key(pem.strip().encode())
    except (ValueError, TypeError):
        raise InvalidInputError(
            "The public key is not a PEM public key (-----BEGIN PUBLIC KEY-----)."
        ) from None
    if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        return SSlibKey.from_crypto(key)
    if isinstance(key, ed25519.Ed25519PublicKey):
        return SSlibKey.from_crypto(key)
    raise InvalidInputError("The public key must be an ECDSA P-256 or ed25519 key.")


def configured_root_signers() -> list[CryptoSigner]:
    """The offline root keys mounted now (``TRUST_ROOT_KEY_FILES``), for a root ceremony."""
    signers = []
    for path in settings.TRUST_ROOT_KEY_FILES:
        try:
            with open(path, "rb") as f:
                pem = f.read(64 * 1024)
        except OSError as exc:
            raise InvalidInputError(
                f"Cannot read root key file {path}: {exc.strerror}; nothing was changed."
            ) from None
        signers.append(signer_from_pem(pem, f"Root key file {path}"))
    return signers


# --- Reading and storing metadata. ---


def current(role: str) -> TufMetadata | None:
    """The newest version of ``role``, or None."""
    return TufMetadata.objects.filter(role=role).order_by("-version").first()


def metadata_get(role: str, version: int | None = None) -> TufMetadata:
    """Version ``version`` of ``role`` (the newest when None); NotFoundError when absent."""
    rows = TufMetadata.objects.filter(role=role)
    row = rows.filter(version=version).first() if version is not None else current(role)
    if row is None:
        raise NotFoundError(f"No TUF metadata {version or ''}.{role}.json.".replace(" .", " "))
    return row


def _parsed(row: TufMetadata) -> Metadata[Any]:
    return Metadata.from_bytes(row.data.encode())


def _store(role: str, md: Metadata[Any], *, uploaded: bool = False, data: bytes = b"") -> int:
    row = TufMetadata.objects.create(
        role=role,
        version=md.signed.version,
        data=(data or md.to_bytes(SERIALIZER)).decode(),
        expires=md.signed.expires,
        uploaded=uploaded,
    )
    if role != Root.type:
        TufMetadata.objects.filter(role=role, version__lte=row.version - KEEP_VERSIONS).delete()
    return row.version


def _sign(md: Metadata[Any], signers: Iterable[Signer]) -> Metadata[Any]:
    md.signatures.clear()
    for signer in signers:
        md.sign(signer, append=True)
    return md


def _lock() -> TufMetadata | None:
    """Serialise writers of the repository on its newest root row (None: no repository yet)."""
    return (
        TufMetadata.objects.select_for_update().filter(role=Root.type).order_by("-version").first()
    )


# --- Root. ---


def _root_build(
    *, version: int, online: CryptoSigner, others: list[CryptoSigner], threshold: int
) -> Metadata[Root]:
    root = Root(version=version, expires=_in(_ttl(Root.type)), consistent_snapshot=True)
    for role in TOP_LEVEL:
        root.add_key(online.public_key, role)
    for signer in others:
        root.add_key(signer.public_key, Root.type)
    keys = len(root.roles[Root.type].keyids)
    if not 1 <= threshold <= keys:
        raise InvalidInputError(
            f"The root threshold must be between 1 and the number of root keys ({keys}), "
            f"not {threshold}."
        )
    root.roles[Root.type].threshold = threshold
    return Metadata(root)


def root_rotate(
    *,
    signers: list[CryptoSigner] | None = None,
    threshold: int | None = None,
    old_signers: Iterable[Signer] = (),
) -> int:
    """Write the next root version: the online key and ``signers`` (default: the configured
    root keys) with ``threshold``, signed by the new keys and by ``old_signers`` plus whichever
    of the new keys the old root also holds; refused unless a threshold of the previous root
    signed it (a rotation the clients' pinned root vouches for). Returns the new version."""
    with transaction.atomic():
        lock = _lock()
        online = online_signer()
        others = configured_root_signers() if signers is None else signers
        wanted = threshold if threshold is not None else int(settings.TRUST_ROOT_THRESHOLD)
        md = _root_build(
            version=(lock.version if lock else 0) + 1, online=online, others=others,
            threshold=wanted,
        )  # fmt: skip
        by_id: dict[str, Signer] = {s.public_key.keyid: s for s in [online, *others]}
        for signer in old_signers:
            by_id.setdefault(signer.public_key.keyid, signer)
        _sign(md, by_id.values())
        # Only signatures of keys of the new or the old root are kept.
        md.signatures = {
            k: v
            for k, v in md.signatures.items()
            if k in md.signed.keys or (lock is not None and k in _parsed(lock).signed.keys)
        }
        if lock is not None:
            previous = _parsed(lock).signed
            try:
                previous.verify_delegate(Root.type, md.signed_bytes, md.signatures)
            except tuf_errors.UnsignedMetadataError:
                raise InvalidInputError(
                    f"The new root is not signed by a threshold of the keys of root version "
                    f"{previous.version} ({previous.roles[Root.type].threshold} of "
                    f"{len(previous.roles[Root.type].keyids)}); give its keys "
                    "(TRUST_ROOT_KEY_FILES); nothing was changed."
                ) from None
        try:
            md.signed.verify_delegate(Root.type, md.signed_bytes, md.signatures)
        except tuf_errors.UnsignedMetadataError:
            raise InvalidInputError(
                "The new root is not signed by a threshold of its own keys; nothing was changed."
            ) from None
        version = _store(Root.type, md)
        if lock is not None:
            # The top-level roles (and the publishers' roles the registry signs, when its
            # online key changed) are signed again under the new root's keys.
            previous_online = _parsed(lock).signed.roles[Timestamp.type].keyids
            rotated = previous_online != [online.public_key.keyid]
            slugs = Publisher.objects.filter(tuf_targets__isnull=False).distinct()
            _publish(
                publishers=slugs.values_list("slug", flat=True) if rotated else (),
                force_targets=True,
                force_roles=rotated,
            )
        return version


def root_rotation_check(*, signers: Iterable[Signer]) -> None:
    """InvalidInputError unless ``signers`` reach the current root's threshold."""
    row = current(Root.type)
    if row is None:
        return
    root = _parsed(row).signed
    held = {s.public_key.keyid for s in signers} & set(root.roles[Root.type].keyids)
    if len(held) < root.roles[Root.type].threshold:
        raise InvalidInputError(
            f"Root version {root.version} needs {root.roles[Root.type].threshold} of its keys to "
            f"sign a rotation, and {len(held)} are at hand; mount the offline root keys "
            "(TRUST_ROOT_KEY_FILES); nothing was changed."
        )


def _root_ensure() -> TufMetadata:
    """The newest root, created (version 1, the configured keys) when the repository is new,
    locked for this transaction.

    Two first writers at once (two first publishes) both find no root row to lock: the unique
    (role, version) constraint lets one create root version 1. On PostgreSQL the other's insert
    waits for that transaction and then fails; its savepoint is rolled back and it locks, and
    goes on under, the root the first one committed (a get-or-create on the constraint). On
    SQLite (``transaction_mode: IMMEDIATE``) the second writer waits for the whole first one.
    """
    row = _lock()
    if row is None:
        try:
            root_rotate()  # its own savepoint: a failed insert leaves this transaction usable
        except IntegrityError:
            if current(Root.type) is None:
                raise
            logger.info("TUF root version 1 was created by a concurrent transaction")
        row = _lock()
        assert row is not None
    return row


def root_resign_if_due() -> int | None:
    """A new root version before the current one expires, when the keys at hand can sign it."""
    row = current(Root.type)
    if row is None or not _due(row, Root.type):
        return None
    try:
        return root_rotate(threshold=_parsed(row).signed.roles[Root.type].threshold)
    except InvalidInputError as err:
        logger.warning("TUF root version %s expires at %s: %s", row.version, row.expires, err)
        return None


# --- Targets. ---


def target_set(*, publisher: Publisher, path: str, content: bytes | None = None,
               length: int = 0, sha256: str = "",
               custom: dict[str, Any] | None = None) -> None:  # fmt: skip
    """Record (or update) target ``path``: ``content``'s length and sha256, or the given ones,
    and what its signed ``custom`` object says (nothing by default)."""
    if content is not None:
        length, sha256 = len(content), hashlib.sha256(content).hexdigest()
    TufTarget.objects.update_or_create(
        path=path,
        defaults={
            "publisher": publisher, "length": length, "sha256": sha256, "custom": custom or {},
        },
    )  # fmt: skip


def catalog_version_targets_set(*, version: CatalogVersion) -> None:
    """The version's target and, when it is the latest, the catalog's latest pointer."""
    catalog = version.catalog
    base = f"{catalog.publisher.slug}/{catalog.name}"
    sha = version.digest.removeprefix("sha256:")
    # A deprecation is signed with the target, so krm sees it fresh even for a pinned version.
    custom = {"deprecation": version.deprecation} if version.deprecation else {}
    target_set(
        publisher=catalog.publisher,
        path=f"{base}/versions/{version.number}/catalog.yaml",
        length=version.size,
        sha256=sha,
        custom=custom,
    )
    if catalog.latest_version_id == version.pk:
        target_set(
            publisher=catalog.publisher, path=f"{base}/catalog.yaml", length=version.size,
            sha256=sha, custom=custom,
        )  # fmt: skip


def runtime_artifact_target_path(catalog: Catalog, digest: str) -> str:
    """The target path of a runtime artifact (exec archive or binary, starlark script) the
    registry serves for ``catalog``: ``<publisher>/<catalog>/blobs/sha256/<hex>``."""
    return f"{catalog.publisher.slug}/{catalog.name}/blobs/sha256/{digest.removeprefix('sha256:')}"


def runtime_artifact_targets_set(*, catalog: Catalog, artifacts: Iterable[tuple[str, int]]) -> None:
    """Record the runtime artifacts (``(sha256:<hex>, size)``) ``catalog`` serves as targets of
    its publisher's role (signed by the next ``tuf_publish``)."""
    for digest, size in artifacts:
        target_set(
            publisher=catalog.publisher,
            path=runtime_artifact_target_path(catalog, digest),
            length=size,
            sha256=digest.removeprefix("sha256:"),
        )


def revocations_target_path(catalog: Catalog) -> str:
    """The target path of ``catalog``'s revocation list."""
    return f"{catalog.publisher.slug}/{catalog.name}/revocations.yaml"


PRIVATE_SUFFIX = ".private"
# A hashed bin of a publisher's role: ``<publisher>.bin-<hex prefix>`` (PEP 458).
BIN_INFIX = ".bin-"
_BIN_WIDTHS = {16: 1, 256: 2, 4096: 3}


def role_publisher(role: str) -> str:
    """The publisher a delegated role belongs to (its own, its private or one of its bins)."""
    return role.split(".", 1)[0]


def _bins() -> list[tuple[str, str]]:
    """(role name suffix, hex prefix) of every hashed bin (``TRUST_HASHED_BINS``)."""
    count = int(settings.TRUST_HASHED_BINS)
    width = _BIN_WIDTHS.get(count)
    if width is None:
        raise InvalidInputError(f"TRUST_HASHED_BINS must be 16, 256 or 4096, not {count}.")
    return [(f"{BIN_INFIX}{i:0{width}x}", f"{i:0{width}x}") for i in range(count)]


def _bin_of(path: str, width: int) -> str:
    """The hex prefix of the bin ``path`` falls in (TUF hashes the target path)."""
    return hashlib.sha256(path.encode()).hexdigest()[:width]


def private_role(slug: str) -> str:
    """The role of a public publisher's private catalogs (a slug never holds a dot)."""
    return slug + PRIVATE_SUFFIX


def _private_names(publisher: Publisher) -> set[str]:
    """The private catalogs of a public publisher (a private publisher's role is served only
    to its members already: all its targets stay in it)."""
    return _private_names_of([publisher]).get(publisher.pk, set())


def _private_names_of(publishers: Iterable[Publisher]) -> dict[int, set[str]]:
    """``_private_names`` of many publishers in one query (by publisher id; absent: none)."""
    public = [p.pk for p in publishers if p.visibility != Visibility.PRIVATE]
    found: dict[int, set[str]] = {}
    rows = Catalog.objects.filter(publisher_id__in=public, visibility=Visibility.PRIVATE)
    for publisher_id, name in rows.values_list("publisher_id", "name"):
        found.setdefault(publisher_id, set()).add(name)
    return found


def has_private_role(publisher: Publisher) -> bool:
    """Whether ``publisher``'s private catalogs have a role of their own now."""
    return bool(_private_names(publisher))


def _publisher_role(
    publisher: Publisher, version: int, *, private: bool = False, hidden: set[str] | None = None
) -> Targets:
    """The targets of ``publisher``'s public catalogs, or (``private``) of its private ones
    (``hidden``: its private catalogs' names, when the caller knows them)."""
    role = Targets(version=version, expires=_in(_ttl(Targets.type)))
    if hidden is None:
        hidden = _private_names(publisher)
    for target in TufTarget.objects.filter(publisher=publisher).order_by("path"):
        if (target.path.split("/")[1] in hidden) != private:
            continue
        role.targets[target.path] = TargetFile(
            length=target.length,
            hashes={"sha256": target.sha256},
            path=target.path,
            unrecognized_fields={"custom": target.custom} if target.custom else None,
        )
    return role


def publisher_role_template(*, publisher: Publisher, private: bool = False) -> Metadata[Targets]:
    """The publisher's role (or its private catalogs' role) as the registry would have it now,
    unsigned, for the publisher to sign with its own key: the next version, every target it
    serves there."""
    name = private_role(publisher.slug) if private else publisher.slug
    row = current(name)
    return Metadata(_publisher_role(publisher, (row.version if row else 0) + 1, private=private))


def _publisher_keys(publisher_ids: Iterable[int] | None = None) -> dict[int, list[PublisherKey]]:
    rows = PublisherKey.objects.order_by("keyid")
    if publisher_ids is not None:
        rows = rows.filter(publisher_id__in=list(publisher_ids))
    found: dict[int, list[PublisherKey]] = {}
    for row in rows:
        found.setdefault(row.publisher_id, []).append(row)
    return found


def _delegations(online: Signer) -> Delegations:
    """Every publisher with targets or keys, delegated to its keys or the online key."""
    keys: dict[str, Key] = {online.public_key.keyid: online.public_key}
    roles: dict[str, DelegatedRole] = {}
    own = _publisher_keys()
    with_targets = set(TufTarget.objects.values_list("publisher_id", flat=True).distinct())
    ids = with_targets | set(own)
    publishers = list(
        Publisher.objects.filter(pk__in=ids).order_by("slug").only("pk", "slug", "visibility")
    )
    private_names = _private_names_of(publishers)
    for publisher in publishers:
        if publisher.slug in TOP_LEVEL_ROLE_NAMES:
            logger.warning(
                "publisher %r is named after a TUF top-level role: not delegated", publisher.slug
            )
            continue
        held = own.get(publisher.pk) or []
        for row in held:
            keys[row.keyid] = Key.from_dict(row.keyid, dict(row.key))
        keyids = [row.keyid for row in held] or [online.public_key.keyid]
        hidden = private_names.get(publisher.pk)
        # The private catalogs' role follows the public one, for the same paths: a target not
        # in the public role is looked up there (whose metadata only members are served).
        roles[publisher.slug] = DelegatedRole(
            name=publisher.slug,
            keyids=keyids,
            threshold=1,
            terminating=not hidden,
            paths=role_paths(publisher.slug),
        )
        if hidden:
            roles[private_role(publisher.slug)] = DelegatedRole(
                name=private_role(publisher.slug),
                keyids=keyids,
                threshold=1,
                terminating=True,
                paths=role_paths(publisher.slug),
            )
    return Delegations(keys=keys, roles=roles)


# --- Writing the repository. ---


def _publish(
    *,
    publishers: Iterable[str],
    force_targets: bool = False,
    uploaded: dict[str, int] | None = None,
    force_roles: bool = False,
) -> None:
    """Sign what changed: the publishers' roles (those the registry signs), the top-level
    targets when its delegations changed, then snapshot and timestamp. Under the lock."""
    online = online_signer()
    changed: dict[str, int] = dict(uploaded or {})
    slugs = sorted(set(publishers))
    held = {
        p.slug: p
        for p in Publisher.objects.filter(slug__in=slugs)
        if p.slug not in TOP_LEVEL_ROLE_NAMES
    }
    own = _publisher_keys(p.pk for p in held.values())
    private_names = _private_names_of(held.values())
    private_rows = set(
        TufMetadata.objects.filter(role__in=[private_role(slug) for slug in held])
        .values_list("role", flat=True)
        .distinct()
    )
    wanted: set[str] = set()  # the roles the top-level targets must delegate
    for slug, publisher in held.items():
        wanted.add(slug)
        names = private_names.get(publisher.pk, set())
        if names:
            wanted.add(private_role(slug))
        if own.get(publisher.pk):
            continue  # its own keys sign its roles: the registry never does
        for name, private in ((slug, False), (private_role(slug), True)):
            if private and not names and name not in private_rows:
                continue
            row = current(name)
            version = (row.version if row else 0) + 1
            md = Metadata(_publisher_role(publisher, version, private=private, hidden=names))
            if not private and len(md.signed.targets) > int(settings.TRUST_HASHED_BINS_THRESHOLD):
                md = _binned(slug, md, online, changed, force=force_roles)
            before = _parsed(row).signed if row is not None else None
            unchanged = (
                before is not None
                and before.targets == md.signed.targets
                and _delegations_dict(before) == _delegations_dict(md.signed)
            )
            if unchanged and not force_roles and not _due(row, Targets.type):
                continue
            changed[name] = _store(name, _sign(md, [online]))
    top_row = current(Targets.type)
    top_version = None
    top_current = _parsed(top_row).signed if top_row is not None else None
    need_top = force_targets or top_current is None or _due(top_row, Targets.type)
    if not need_top and top_current is not None:
        delegated = (top_current.delegations.roles if top_current.delegations else {}) or {}
        need_top = any(name not in delegated for name in wanted) or any(
            private_role(slug) in delegated and private_role(slug) not in wanted for slug in held
        )
    if need_top:
        delegations = _delegations(online)
        if (
            top_current is None
            or force_targets
            or _due(top_row, Targets.type)
            or top_current.delegations is None
            or top_current.delegations.to_dict() != delegations.to_dict()
        ):
            top = Targets(
                version=(top_current.version if top_current else 0) + 1,
                expires=_in(_ttl(Targets.type)),
            )
            top.delegations = delegations
            top_version = _store(Targets.type, _sign(Metadata(top), [online]))
    _snapshot_timestamp(online, changed, top_version)


def _delegations_dict(role: Targets) -> dict[str, Any] | None:
    return role.delegations.to_dict() if role.delegations is not None else None


def _binned(
    slug: str, md: Metadata[Targets], online: Signer, changed: dict[str, int], *, force: bool
) -> Metadata[Targets]:
    """Hashed bins (PEP 458) for a role with many targets: each bin signed when its targets
    changed (or it is due), recorded in ``changed``; returns the role delegating to them, with
    no targets of its own. The bins are not terminating: a path in none of them goes on to the
    publisher's private role."""
    bins = _bins()
    width = len(bins[0][1])
    grouped: dict[str, dict[str, TargetFile]] = {prefix: {} for _, prefix in bins}
    for path, info in md.signed.targets.items():
        grouped[_bin_of(path, width)][path] = info
    role = Targets(version=md.signed.version, expires=md.signed.expires)
    role.delegations = Delegations(keys={online.public_key.keyid: online.public_key}, roles={})
    for suffix, prefix in bins:
        name = slug + suffix
        role.delegations.roles[name] = DelegatedRole(  # type: ignore[index]
            name=name,
            keyids=[online.public_key.keyid],
            threshold=1,
            terminating=False,
            path_hash_prefixes=[prefix],
        )
        row = current(name)
        if (
            row is not None
            and not force
            and not _due(row, Targets.type)
            and _parsed(row).signed.targets == grouped[prefix]
        ):
            continue
        part = Targets(version=(row.version if row else 0) + 1, expires=_in(_ttl(Targets.type)))
        part.targets = grouped[prefix]
        changed[name] = _store(name, _sign(Metadata(part), [online]))
    return Metadata(role)


def _snapshot_timestamp(online: Signer, changed: dict[str, int], top_version: int | None) -> None:
    snap_row = current(Snapshot.type)
    ts_row = current(Timestamp.type)
    if (
        snap_row is not None
        and not changed
        and top_version is None
        and not _due(snap_row, Snapshot.type)
    ):
        if _due(ts_row, Timestamp.type):
            _timestamp(online, snap_row)
        return
    if snap_row is not None:
        previous = _parsed(snap_row).signed
        meta = dict(previous.meta)
        number = previous.version + 1
    else:
        meta, number = {}, 1
    if top_version is not None:
        meta["targets.json"] = MetaFile(version=top_version)
    elif "targets.json" not in meta:
        row = current(Targets.type)
        assert row is not None, "the top-level targets role is written first"
        meta["targets.json"] = MetaFile(version=row.version)
    for role, version in changed.items():
        meta[f"{role}.json"] = MetaFile(version=version)
    snapshot = Snapshot(version=number, expires=_in(_ttl(Snapshot.type)), meta=meta)
    md = _sign(Metadata(snapshot), [online])
    _store(Snapshot.type, md)
    _timestamp(online, TufMetadata.objects.get(role=Snapshot.type, version=number))


def _timestamp(online: Signer, snap_row: TufMetadata) -> None:
    data = snap_row.data.encode()
    row = current(Timestamp.type)
    timestamp = Timestamp(
        version=(row.version if row else 0) + 1,
        expires=_in(_ttl(Timestamp.type)),
        snapshot_meta=MetaFile(
            version=snap_row.version,
            length=len(data),
            hashes={"sha256": hashlib.sha256(data).hexdigest()},
        ),
    )
    _store(Timestamp.type, _sign(Metadata(timestamp), [online]))


@transaction.atomic
def tuf_publish(*, publishers: Iterable[str]) -> None:
    """Sign the metadata of ``publishers``' changed targets (in the caller's transaction)."""
    _root_ensure()
    _publish(publishers=publishers)


@transaction.atomic
def tuf_refresh() -> bool:
    """Re-sign what expires within half its lifetime (timestamp, snapshot, targets, the roles
    the registry signs, root when its keys are at hand). True when anything was signed."""
    if current(Root.type) is None:
        return False
    before = current(Timestamp.type)
    root_resign_if_due()
    _root_ensure()
    due = [
        role_publisher(row.role)  # a private role or a bin is its publisher's to re-sign
        for row in TufMetadata.objects.filter(
            expires__lte=timezone.now() + datetime.timedelta(seconds=_ttl(Targets.type) / 2),
            uploaded=False,
        ).exclude(role__in=TOP_LEVEL)
    ]
    _publish(publishers=[*due, *_pending()])
    after = current(Timestamp.type)
    return before is None or after is None or before.version != after.version


def _pending() -> list[str]:
    """Publishers with a target recorded after their role was last signed (targets a data
    migration recorded, say): their roles are signed by the next refresh."""
    changed = dict(
        TufTarget.objects.values_list("publisher__slug").annotate(latest=Max("updated_at"))
    )
    signed: dict[str, datetime.datetime] = {}
    rows = TufMetadata.objects.exclude(role__in=TOP_LEVEL).values_list("role")
    for role, at in rows.annotate(latest=Max("created_at")):
        slug = role_publisher(role)  # its role, its private role or one of its bins
        if slug in changed and (slug not in signed or at > signed[slug]):
            signed[slug] = at
    return sorted(slug for slug, at in changed.items() if slug not in signed or at > signed[slug])


def timestamp_refresh_if_due() -> None:
    """On demand (the embedded default): a timestamp past half its lifetime is re-signed."""
    row = current(Timestamp.type)
    if row is not None and _due(row, Timestamp.type):
        tuf_refresh()


# --- Publisher keys and the roles they sign. ---


@dataclass(frozen=True)
class RoleUploaded:
    """A publisher's role, signed by its own key, accepted and served."""

    role: str
    version: int


@transaction.atomic
def publisher_key_add(*, publisher: Publisher, public_key_pem: str, actor: Any) -> PublisherKey:
    """Register a public key of ``publisher``: from now on its role is delegated to its keys."""
    from catalogs.exceptions import AlreadyExistsError

    if publisher.slug in TOP_LEVEL_ROLE_NAMES:
        raise InvalidInputError(
            f"Publisher '{publisher.slug}' is named after a TUF top-level role and cannot hold "
            "a delegated role."
        )
    key = public_key_parse(public_key_pem)
    _root_ensure()
    if PublisherKey.objects.filter(publisher=publisher, keyid=key.keyid).exists():
        raise AlreadyExistsError(f"Publisher '{publisher.slug}' already holds key {key.keyid}.")
    row = PublisherKey.objects.create(
        publisher=publisher,
        keyid=key.keyid,
        key=key.to_dict(),
        public_key_pem=public_key_pem.strip() + "\n",
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    _publish(publishers=(), force_targets=True)
    return row


@transaction.atomic
def tuf_role_upload(*, publisher: Publisher, data: bytes, private: bool = False) -> RoleUploaded:
    """Accept ``publisher``'s role metadata (or, ``private``, its private catalogs' role) signed
    by its own keys; snapshot and timestamp then name it. Every target it lists must be one the
    registry serves in that role, byte for byte."""
    name = private_role(publisher.slug) if private else publisher.slug
    if not PublisherKey.objects.filter(publisher=publisher).exists():
        raise StateConflictError(
            f"Publisher '{name}' holds no keys of its own: the registry signs its role. "
            "Register a key first (POST /api/v1/publishers/<publisher>/keys/)."
        )
    try:
        md = Metadata.from_bytes(data)
    except Exception as exc:  # noqa: BLE001  (python-tuf raises DeserializationError and others)
        raise InvalidInputError(f"Not TUF metadata: {exc}") from None
    if not isinstance(md.signed, Targets):
        raise InvalidInputError(f"Expected targets metadata, got a {md.signed.type} role.")
    _root_ensure()
    top_row = current(Targets.type)
    assert top_row is not None
    top = _parsed(top_row).signed
    try:
        top.verify_delegate(name, md.signed_bytes, md.signatures)
    except (tuf_errors.UnsignedMetadataError, ValueError) as exc:
        raise InvalidInputError(
            f"The role is not signed by a key publisher '{name}' registered ({exc})."
        ) from None
    row = current(name)
    if row is not None and md.signed.version <= row.version:
        raise StateConflictError(
            f"Version {md.signed.version} of role '{name}' is not newer than the one served "
            f"({row.version}); sign version {row.version + 1}."
        )
    if md.signed.expires <= _now():
        raise InvalidInputError(f"The role expired at {md.signed.expires.isoformat()}.")
    if md.signed.delegations is not None:
        raise InvalidInputError("A publisher's role delegates nothing further.")
    served = {
        path: (info.length, info.hashes.get("sha256"))
        for path, info in _publisher_role(publisher, 1, private=private).targets.items()
    }
    for path, info in md.signed.targets.items():
        if served.get(path) != (info.length, info.hashes.get("sha256")):
            raise InvalidInputError(
                f"Target {path} is not what the registry serves (length {info.length}, "
                f"sha256 {info.hashes.get('sha256')}); fetch the role template again and sign it."
            )
    version = _store(name, md, uploaded=True, data=data)
    _publish(publishers=(), uploaded={name: version})
    return RoleUploaded(name, version)
