"""Mirror sources and their sync runs: services (writes) and selectors (reads).

A sync fetches the source, checks the digest pin and the signature policy, validates the catalog,
optionally mirrors its runtime artifacts, and only then — in one transaction — stores the blobs
and publishes a new immutable version. On any failure the run records one reason and the
previously served version, blobs and records stay exactly as they were.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urljoin, urlsplit

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.urls import reverse
from django.utils import timezone

from catalogs import events
from catalogs.exceptions import (
    AlreadyExistsError,
    DigestMismatchError,
    FetchError,
    InvalidCatalogError,
    InvalidInputError,
    MirrorCatalogReadOnlyError,
    NotAllowedError,
    NotFoundError,
    StorageError,
    SyncError,
    SyncInProgressError,
)
from catalogs.jobs import job_enqueue_on_commit
from catalogs.mirroring import images as container_images
from catalogs.mirroring.drift import catalog_tag_drift_record
from catalogs.mirroring.events import MirrorDriftDetected, MirrorRunFailed
from catalogs.mirroring.fetchers import FetchOptions, Limits, fetch, fetcher_for
from catalogs.mirroring.fetchers.base import (
    COSIGN_BLOB_SIGNATURE_SUFFIX,
    SIGSTORE_BUNDLE_SUFFIX,
    destination_precheck,
    scheme_of,
    url_has_credentials,
    url_secret_query_names,
)
from catalogs.mirroring.fetchers.git import COMMIT_RE, parse_git_ref
from catalogs.mirroring.fetchers.https import HttpsSession
from catalogs.mirroring.fetchers.oci import OciClient, OciPackageRef, parse_oci_ref
from catalogs.mirroring.limits import mirror_limits
from catalogs.mirroring.models import DriftEvent, MirrorSource, RuntimeArtifact, SyncRun
from catalogs.mirroring.revocations import (
    RevocationCarryError,
    UpstreamList,
    upstream_list_carry,
    upstream_list_fetch,
    upstream_list_parse,
)
from catalogs.mirroring.signatures import (
    cosign_blob_verify,
    cosign_public_key_load,
    cosign_verify,
    sigstore_verify,
)
from catalogs.mirroring.upstream_trust import upstream_of, upstream_trust_check
from catalogs.publishing import blobstore, services
from catalogs.publishing.content import catalog_version_bytes
from catalogs.publishing.events import CatalogWriteRequested
from catalogs.publishing.models import Catalog, CatalogVersion, FunctionDefinition, Publisher
from catalogs.publishing.selectors import user_is_mirror_operator
from catalogs.publishing.services import Actor
from catalogs.ratelimits import Deferral, upstream_hosts_admit
from catalogs.trust import services as trust_services
from orchestrator.catalog import Catalog as ParsedCatalog
from orchestrator.catalog import dump_canonical

logger = logging.getLogger(__name__)

SHA256_RE = re.compile(r"sha256:[0-9a-f]{64}\Z")
ACTIVE = (SyncRun.Status.QUEUED, SyncRun.Status.RUNNING)
FINISHED = (SyncRun.Status.SUCCEEDED, SyncRun.Status.UNCHANGED, SyncRun.Status.FAILED)
# Guarded transitions of a run; RUNNING -> RUNNING is a redelivered job restarting after a crash.
TRANSITIONS: dict[str, set[str]] = {
    SyncRun.Status.QUEUED: {SyncRun.Status.RUNNING, SyncRun.Status.FAILED},
    SyncRun.Status.RUNNING: set(SyncRun.Status),
}


# ----------------------------------------------------------------------------- selectors


def mirror_source_list() -> QuerySet[MirrorSource]:
    """Every mirror source with its catalog and latest version."""
    return MirrorSource.objects.select_related("catalog__publisher", "catalog__latest_version")


def mirror_source_get(*, pk: int) -> MirrorSource:
    """The source ``pk`` or NotFoundError."""
    try:
        return mirror_source_list().get(pk=pk)
    except MirrorSource.DoesNotExist:
        raise NotFoundError(f"Mirror source {pk} does not exist.")


def mirror_source_get_by_name(*, name: str) -> MirrorSource:
    """The source named ``name`` or NotFoundError."""
    try:
        return mirror_source_list().get(name=name)
    except MirrorSource.DoesNotExist:
        raise NotFoundError(f"Mirror source '{name}' does not exist.")


def sync_run_list(*, source: MirrorSource) -> QuerySet[SyncRun]:
    """Runs of ``source``, newest first."""
    return SyncRun.objects.filter(source=source).select_related("source", "catalog_version")


def sync_run_get(*, pk: int) -> SyncRun:
    """The run ``pk`` or NotFoundError."""
    try:
        return SyncRun.objects.select_related("source", "catalog_version").get(pk=pk)
    except SyncRun.DoesNotExist:
        raise NotFoundError(f"Sync run {pk} does not exist.")


def mirror_sources_due(*, now=None) -> QuerySet[MirrorSource]:
    """Enabled sources whose interval has passed since their last sync and with no active run."""
    now = now or timezone.now()
    due = []
    for source in MirrorSource.objects.filter(enabled=True).exclude(runs__status__in=ACTIVE):
        last = source.last_synced_at
        if last is None or last + timedelta(minutes=source.interval_minutes) <= now:
            due.append(source.pk)
    return MirrorSource.objects.filter(pk__in=due)


def blob_storage_name(digest: str) -> str:
    """Where the blob ``sha256:<hex>`` lives in the default storage."""
    return f"{settings.MIRROR_BLOB_PREFIX}/{digest.removeprefix('sha256:')}"


def blob_url(digest: str) -> str:
    """The absolute URL the registry serves the blob ``sha256:<hex>`` at."""
    path = reverse("catalogs:blob", kwargs={"hexdigest": digest.removeprefix("sha256:")})
    return settings.REGISTRY_PUBLIC_URL.rstrip("/") + path


# ----------------------------------------------------------------------------- sources


def _check_operator(actor: Actor) -> None:
    if not user_is_mirror_operator(actor):
        raise NotAllowedError("Only staff or mirror operators may create, change or sync sources.")


def _source_checked(
    *,
    url: str,
    digest: str,
    cosign_public_key: str,
    sigstore_identity: str,
    sigstore_issuer: str,
    upstream_root_sha256: str = "",
    source_kind: str = MirrorSource.Kind.CATALOG,
    mirror_runtimes: bool = False,
) -> str:
    """Validate a source's URL, pin and signature policy; return the URL's kind."""
    if url_has_credentials(url):
        # Not echoed back: the message would show the secret wherever errors are shown.
        raise InvalidInputError(
            "A source URL must not contain a user name, password or token (user:secret@host): "
            "sources, runs and pages show their URL. Put credentials in the MIRROR_CREDENTIALS "
            'setting instead, per host: {"host": {"token": "..."}} or '
            '{"host": {"username": "...", "password": "..."}}.',
            field="url",
        )
    secret_names = url_secret_query_names(url)
    if secret_names:
        # The names only, never the values (the message is shown wherever errors are).
        names = ", ".join(f"{name}=" for name in secret_names)
        raise InvalidInputError(
            f"A source URL must not carry a token, key or signature in its query string "
            f"({names}): sources, runs and pages show their URL. Put credentials in the "
            'MIRROR_CREDENTIALS setting instead, per host: {"host": {"token": "..."}} or '
            '{"host": {"username": "...", "password": "..."}}.',
            field="url",
        )
    try:
        fetcher_for(url)
    except FetchError as exc:
        raise InvalidInputError(exc.message, field="url")
    scheme = scheme_of(url)
    kind = "oci" if scheme == "oci" else "https" if scheme == "https" else "git"
    if source_kind not in MirrorSource.Kind.values:
        raise InvalidInputError(
            f"kind must be one of {', '.join(MirrorSource.Kind.values)}, not {source_kind!r}.",
            field="kind",
        )
    if source_kind == MirrorSource.Kind.PACKAGE:
        if kind != "oci":
            raise InvalidInputError(
                "A kustomization package is an OCI artifact: its URL is oci://host/repository:tag "
                "or oci://host/repository@sha256:…",
                field="url",
            )
        if upstream_root_sha256 or mirror_runtimes or sigstore_identity or sigstore_issuer:
            raise InvalidInputError(
                "A package source is verified by its digest and, optionally, a cosign public key; "
                "upstream_root_sha256, a sigstore identity and mirror_runtimes are for catalogs."
            )
    try:
        if kind == "git":
            parse_git_ref(url)
        elif kind == "oci":
            parse_oci_ref(url)
    except FetchError as exc:
        raise InvalidInputError(exc.message, field="url")
    if digest:
        if kind == "git" and not COMMIT_RE.fullmatch(digest):
            raise InvalidInputError(
                "digest of a git source is the pinned commit: 40 lower-case hexadecimal "
                "characters.",
                field="digest",
            )
        if kind != "git" and not SHA256_RE.fullmatch(digest):
            raise InvalidInputError(
                "digest must be sha256: and 64 lower-case hexadecimal characters.",
                field="digest",
            )
    if cosign_public_key and (sigstore_identity or sigstore_issuer):
        raise InvalidInputError(
            "Choose one signature policy: a cosign public key or a sigstore identity."
        )
    if cosign_public_key:
        # OCI: cosign's signature artifact (sha256-<digest>.sig); https and git: the
        # `cosign sign-blob` signature beside the file (<file>.sig).
        try:
            cosign_public_key_load(cosign_public_key)
        except InvalidInputError as exc:
            raise InvalidInputError(exc.message, field="cosign_public_key")
    if bool(sigstore_identity) != bool(sigstore_issuer):
        raise InvalidInputError(
            "A sigstore policy needs both sigstore_identity and sigstore_issuer."
        )
    if sigstore_identity and kind == "oci":
        raise InvalidInputError(
            "A sigstore identity verifies https and git sources (a bundle beside the catalog); "
            "use a cosign public key for OCI sources.",
            field="sigstore_identity",
        )
    if upstream_root_sha256:
        if not re.fullmatch(r"[0-9a-f]{64}", upstream_root_sha256):
            raise InvalidInputError(
                "upstream_root_sha256 is the sha256 of the upstream's TUF root.json: "
                "64 lower-case hexadecimal characters.",
                field="upstream_root_sha256",
            )
        if upstream_of(url) is None:
            raise InvalidInputError(
                "upstream_root_sha256 pins the TUF root of a registry of this kind; the URL "
                "must name one of its catalogs (https://host/c/<publisher>/<catalog>/"
                "catalog.yaml or oci://host/<publisher>/<catalog>:tag)."
            )
    return kind


def _destination_checked(url: str) -> None:
    """The network policy and, for TLS, the certificate, checked as a sync's first connection
    checks them (``destination_precheck``): a refusal is InvalidInputError on ``url``; a host that
    cannot be resolved or reached now is left to the first sync, which reports it."""
    found = destination_precheck(url, limits=mirror_limits(credentials=False))
    if found.refused:
        raise InvalidInputError(found.refused, field="url")
    if found.unreachable:
        logger.info("mirror source %s not reachable at creation: %s", url, found.unreachable)


def _mirror_publisher() -> Publisher:
    publisher, created = Publisher.objects.get_or_create(
        slug=settings.MIRROR_PUBLISHER_SLUG,
        defaults={"display_name": "Mirrored catalogs"},
    )
    if not created and publisher.owners.exists():
        # Taken by a user before slugs were reserved: the registry owns it from now on.
        logger.warning(
            "Publisher '%s' had owners %s; removed (it belongs to the registry's mirrors).",
            publisher.slug,
            sorted(publisher.owners.values_list("username", flat=True)),
        )
        publisher.owners.clear()
    return publisher


@transaction.atomic
def mirror_source_create(
    *,
    name: str,
    url: str,
    actor: Actor,
    kind: str = MirrorSource.Kind.CATALOG,
    digest: str = "",
    cosign_public_key: str = "",
    sigstore_identity: str = "",
    sigstore_issuer: str = "",
    upstream_root_sha256: str = "",
    mirror_runtimes: bool = False,
    enabled: bool = True,
    interval_minutes: int | None = None,
) -> MirrorSource:
    """Create a source and the (empty) catalog it is served as, under the mirror publisher."""
    _check_operator(actor)
    services._slug_checked(name, what="source name")
    _source_checked(
        url=url,
        digest=digest,
        cosign_public_key=cosign_public_key,
        sigstore_identity=sigstore_identity,
        sigstore_issuer=sigstore_issuer,
        upstream_root_sha256=upstream_root_sha256,
        source_kind=kind,
        mirror_runtimes=mirror_runtimes,
    )
    if MirrorSource.objects.filter(name=name).exists():
        raise AlreadyExistsError(f"Mirror source '{name}' already exists.")
    _destination_checked(url)
    publisher = _mirror_publisher()
    catalog = services.catalog_create(
        publisher=publisher,
        name=name,
        description=f"Mirror of {url}",
        actor=None,
        for_mirror_source=True,
    )
    try:
        with transaction.atomic():
            return MirrorSource.objects.create(
                name=name,
                kind=kind,
                url=url,
                digest=digest,
                cosign_public_key=cosign_public_key,
                sigstore_identity=sigstore_identity,
                sigstore_issuer=sigstore_issuer,
                upstream_root_sha256=upstream_root_sha256,
                mirror_runtimes=mirror_runtimes,
                enabled=enabled,
                interval_minutes=interval_minutes or settings.MIRROR_DEFAULT_INTERVAL_MINUTES,
                catalog=catalog,
            )
    except IntegrityError:
        raise AlreadyExistsError(f"Mirror source '{name}' already exists.")


# What an operator may change on a source (the web form shows the same fields).
MIRROR_SOURCE_FIELDS = (
    "url",
    "digest",
    "cosign_public_key",
    "sigstore_identity",
    "sigstore_issuer",
    "upstream_root_sha256",
    "mirror_runtimes",
    "enabled",
    "interval_minutes",
)


@transaction.atomic
def mirror_source_update(*, source: MirrorSource, actor: Actor, **changes: Any) -> MirrorSource:
    """Change a source's URL, pin, policy, schedule or flags; the next sync re-verifies."""
    _check_operator(actor)
    unknown = sorted(set(changes) - set(MIRROR_SOURCE_FIELDS))
    if unknown:
        raise InvalidInputError(f"Cannot change: {', '.join(unknown)}.")
    locked = MirrorSource.objects.select_for_update().get(pk=source.pk)
    old_url = locked.url
    old_anchor = (locked.url, locked.cosign_public_key, locked.upstream_root_sha256)
    for key, value in changes.items():
        setattr(locked, key, value)
    _source_checked(
        url=locked.url,
        digest=locked.digest,
        cosign_public_key=locked.cosign_public_key,
        sigstore_identity=locked.sigstore_identity,
        sigstore_issuer=locked.sigstore_issuer,
        upstream_root_sha256=locked.upstream_root_sha256,
        source_kind=locked.kind,
        mirror_runtimes=locked.mirror_runtimes,
    )
    if locked.url != old_url:
        _destination_checked(locked.url)
    # What was verified before no longer speaks for the new settings: force a full sync.
    locked.last_digest = locked.last_etag = locked.last_modified = ""
    if (locked.url, locked.cosign_public_key, locked.upstream_root_sha256) != old_anchor:
        # The upstream's TUF root is pinned again, by the new settings.
        locked.upstream_tuf = {}
    locked.save()
    if locked.url != old_url:
        # The description made at creation names the URL; it must not keep the old one.
        Catalog.objects.filter(pk=locked.catalog_id, description=f"Mirror of {old_url}").update(
            description=f"Mirror of {locked.url}"
        )
    return locked


@transaction.atomic
def mirror_source_sync_request(
    *, source: MirrorSource, actor: Actor, enqueue: bool = True
) -> SyncRun:
    """Queue a sync of ``source`` (one at a time) and enqueue its job after commit.

    ``enqueue=False`` leaves the job to the caller (``sync_source`` runs it in the foreground).
    """
    _check_operator(actor)
    locked = MirrorSource.objects.select_for_update().get(pk=source.pk)
    active = SyncRun.objects.filter(source=locked, status__in=ACTIVE).first()
    stale_before = timezone.now() - timedelta(minutes=settings.MIRROR_RUN_STALE_MINUTES)
    if active is not None and _last_sign_of(active) < stale_before:
        # Its job was lost for good (not just redelivered late): end it so syncs can go on.
        _transition(
            active,
            SyncRun.Status.FAILED,
            reason=f"Abandoned: no result after {settings.MIRROR_RUN_STALE_MINUTES} minutes "
            "(the job was lost).",
            finished_at=timezone.now(),
        )
        active = None
    if active is not None:
        raise SyncInProgressError(
            f"Source '{locked.name}' already has run {active.pk} {active.status}."
        )
    run = SyncRun.objects.create(source=locked)
    if enqueue:
        job_enqueue_on_commit("catalogs.tasks.mirror_source_sync_task", run.pk)
    return run


# ----------------------------------------------------------------------------- sync runs


def _last_sign_of(run: SyncRun) -> datetime:
    """When ``run`` last showed life: started (else queued), or due back from a deferral."""
    sign = run.started_at or run.queued_at
    return max(sign, run.deferred_until) if run.deferred_until else sign


def _transition(run: SyncRun, status: str, **fields: Any) -> None:
    if status not in TRANSITIONS.get(run.status, set()):
        raise SyncError(f"Sync run {run.pk} cannot go from {run.status} to {status}.")
    run.status = status
    for key, value in fields.items():
        setattr(run, key, value)
    run.save()
    if status == SyncRun.Status.FAILED:
        events.emit(MirrorRunFailed(run=run))


@dataclass
class _Staged:
    """A runtime artifact downloaded to a scratch file and verified, not yet stored."""

    uri: str
    digest: str
    size: int
    path: str


@dataclass
class _Outcome:
    content: bytes
    fetched_digest: str
    provenance: dict[str, Any]
    verification: dict[str, Any]
    function_count: int
    staged: list[_Staged]
    images: dict[str, str]
    etag: str = ""
    last_modified: str = ""
    not_modified: bool = False
    downloaded: int = 0  # bytes read upstream: the document plus runtime artifacts
    # Container images read and verified (catalogs/mirroring/images.py), stored at commit.
    container_images: list[container_images.StagedImage] = field(default_factory=list)
    # The upstream's revocation list, verified, carried in the commit that publishes.
    revocations: UpstreamList | None = None
    # The upstream's TUF metadata trusted now (kept on the source once the run commits).
    upstream_tuf: dict[str, Any] | None = None
    # A package source's manifest, blobs and files, verified, stored at commit.
    package: _PackageStaged | None = None


@dataclass
class _PackageStaged:
    """A kustomization package read upstream and verified (digests, signature, tree)."""

    manifest: bytes
    media_type: str
    blobs: dict[str, bytes]
    tag: str
    files: list[list[Any]]


def sync_run_admit(*, run_pk: int) -> Deferral | None:
    """Take the upstream host's rate-limit slot for run ``run_pk``, or defer the run.

    A deferred run stays queued (or running, for a redelivered job); ``deferrals`` counts the
    deferrals and ``deferred_until`` says when its job comes back. A finished run is admitted
    (``sync_run_execute`` leaves it alone).
    """
    run = SyncRun.objects.select_related("source").get(pk=run_pk)
    if run.status in FINISHED:
        return None
    deferral = upstream_hosts_admit(urls=[run.source.url])
    if deferral is None:
        return None
    SyncRun.objects.filter(pk=run_pk).update(
        deferrals=F("deferrals") + 1,
        deferred_until=timezone.now() + timedelta(seconds=deferral.retry_after),
    )
    logger.info("sync run %s deferred: %s", run_pk, deferral.message)
    return deferral


def sync_run_execute(
    *, run_pk: int, progress: Callable[[str, int, int], None] | None = None
) -> SyncRun:
    """Run the sync ``run_pk``: a finished run is left alone, so a redelivered job is harmless."""
    with transaction.atomic():
        run = SyncRun.objects.select_for_update().get(pk=run_pk)
        if run.status in FINISHED:
            return run
        source = MirrorSource.objects.select_for_update().get(pk=run.source_id)
        _transition(
            run, SyncRun.Status.RUNNING, started_at=timezone.now(), attempts=run.attempts + 1
        )
    with tempfile.TemporaryDirectory(prefix="krm-sync-") as scratch:
        try:
            outcome = _sync_fetch_and_verify(source=source, scratch=scratch, progress=progress)
            return _sync_commit(run_pk=run.pk, outcome=outcome)
        except RevocationCarryError as exc:
            return _sync_fail(
                run_pk=run.pk, reason=exc.message, provenance={"revocations": exc.outcome}
            )
        except (SyncError, StorageError) as exc:
            return _sync_fail(run_pk=run.pk, reason=exc.message)
        except Exception as exc:  # noqa: BLE001  (a run must end with a reason, whatever broke)
            logger.exception("sync run %s failed unexpectedly", run.pk)
            return _sync_fail(run_pk=run.pk, reason=f"Internal error: {type(exc).__name__}: {exc}")


def _sync_fail(*, run_pk: int, reason: str, provenance: dict[str, Any] | None = None) -> SyncRun:
    with transaction.atomic():
        run = SyncRun.objects.select_for_update().get(pk=run_pk)
        extra = {"provenance": {**(run.provenance or {}), **provenance}} if provenance else {}
        _transition(run, SyncRun.Status.FAILED, reason=reason, finished_at=timezone.now(), **extra)
        MirrorSource.objects.filter(pk=run.source_id).update(last_synced_at=run.finished_at)
    return run


def _pin_of(source: MirrorSource) -> str:
    if source.digest:
        return source.digest
    if source.url.startswith("oci://") and "@" in source.url:
        return source.url.rpartition("@")[2]
    return ""


def _sync_fetch_and_verify(
    *, source: MirrorSource, scratch: str, progress: Callable[[str, int, int], None] | None
) -> _Outcome:
    """Everything that reads the network, before anything is written."""
    if source.kind == MirrorSource.Kind.PACKAGE:
        return _package_fetch_and_verify(source=source, progress=progress)
    limits = mirror_limits()
    has_version = source.catalog.latest_version_id is not None
    wants_signature = bool(source.cosign_public_key or source.sigstore_identity)
    options = FetchOptions(
        etag=source.last_etag if has_version else "",
        last_modified=source.last_modified if has_version else "",
        signatures=wants_signature,
    )
    if progress:
        progress("fetch", 0, 1)
    fetched = fetch(source.url, limits=limits, options=options)
    if progress:
        progress("fetch", 1, 1)
    provenance = dict(fetched.provenance)
    base = _Outcome(
        content=b"",
        fetched_digest=fetched.digest or source.last_digest,
        provenance=provenance,
        verification={},
        function_count=0,
        staged=[],
        images={},
        etag=str(provenance.get("etag", "")),
        last_modified=str(provenance.get("last_modified", "")),
    )
    if fetched.not_modified:
        return _upstream_checked(
            _unchanged(base, source=source, limits=limits), source, None, limits, scratch
        )
    pin = _pin_of(source)
    if pin and pin != fetched.digest:
        if COMMIT_RE.fullmatch(pin):
            ref = parse_git_ref(source.url).ref
            raise DigestMismatchError(
                f"Git ref '{ref}' is at commit {fetched.digest}, not the pinned commit {pin}."
            )
        raise DigestMismatchError(
            f"Digest pin mismatch: pinned {pin}, upstream has {fetched.digest}."
        )
    if has_version and fetched.digest == source.last_digest:
        return _upstream_checked(
            _unchanged(base, source=source, limits=limits), source, None, limits, scratch
        )
    trusted = upstream_trust_check(
        source=source, content=fetched.content, limits=limits, scratch=scratch
    )
    if trusted is not None:
        # A registry of this kind with TUF metadata: what it signed is what is mirrored, and
        # the cosign key, when given, anchored its root (see upstream_trust).
        verification = trusted.verification
    elif source.cosign_public_key and source.url.startswith("oci://"):
        verification = cosign_verify(
            public_key_pem=source.cosign_public_key,
            signatures=fetched.cosign_signatures,
            manifest_digest=fetched.digest,
        )
    elif source.cosign_public_key:
        where = (
            source.url + COSIGN_BLOB_SIGNATURE_SUFFIX
            if source.url.startswith("https://")
            else f"{parse_git_ref(source.url).path}{COSIGN_BLOB_SIGNATURE_SUFFIX} at commit "
            f"{fetched.digest}"
        )
        verification = cosign_blob_verify(
            public_key_pem=source.cosign_public_key,
            content=fetched.content,
            signature=fetched.blob_signature,
            where=where,
        )
    elif source.sigstore_identity:
        where = (
            source.url + SIGSTORE_BUNDLE_SUFFIX
            if source.url.startswith("https://")
            else f"{parse_git_ref(source.url).path}{SIGSTORE_BUNDLE_SUFFIX} at commit "
            f"{fetched.digest}"
        )
        verification = sigstore_verify(
            content=fetched.content,
            bundle=fetched.sigstore_bundle,
            identity=source.sigstore_identity,
            issuer=source.sigstore_issuer,
            where=where,
        )
    else:
        verification = {"type": "none"}
    parsed = _catalog_parsed(fetched.content)
    content = fetched.content
    staged: list[_Staged] = []
    images: dict[str, str] = {}
    mirrored: list[container_images.StagedImage] = []
    if source.mirror_runtimes:
        doc = parsed.to_dict()
        staged = _runtime_artifacts_stage(
            doc=doc, base_url=source.url, scratch=scratch, limits=limits, progress=progress
        )
        mirrored = container_images.container_images_stage(
            doc=doc,
            catalog=source.catalog,
            scratch=scratch,
            limits=limits,
            cosign_public_key=source.cosign_public_key,
            progress=progress,
        )
        downloaded = {b.digest: b for image in mirrored for b in image.blobs if b.path}
        staged += [
            _Staged(uri=b.uri, digest=b.digest, size=b.size, path=b.path)
            for b in downloaded.values()
        ]
        images = container_images.tag_digests(mirrored)
        if mirrored:
            provenance["images"] = container_images.image_records(mirrored)
        content = dump_canonical(doc).encode("utf-8")
        # Blob URLs are longer than most upstream ones: the rewrite must still be publishable.
        _catalog_parsed(content, rewritten=True)
    provenance["verification"] = verification["type"]
    return _Outcome(
        content=content,
        fetched_digest=fetched.digest,
        provenance=provenance,
        verification=verification,
        function_count=len(parsed.functions),
        staged=staged,
        images=images,
        etag=base.etag,
        last_modified=base.last_modified,
        downloaded=len(fetched.content) + sum(s.size for s in staged),
        container_images=mirrored,
        revocations=_upstream_list(trusted, source),
        upstream_tuf=trusted.state if trusted is not None else None,
    )


def _package_fetch_and_verify(
    *, source: MirrorSource, progress: Callable[[str, int, int], None] | None
) -> _Outcome:
    """A package source: the manifest read by tag or digest and checked against the pin, the
    cosign signature checked when the source has a key, then the blobs read and checked against
    their digests and the tree checked by the push path's rules (``oci_package_files``)."""
    from catalogs.distribution.errors import OciError
    from catalogs.distribution.models import OciPackage
    from catalogs.distribution.services import oci_manifest_parse, oci_package_files

    if progress:
        progress("fetch", 0, 1)
    upstream = OciPackageRef(source.url, limits=mirror_limits())
    provenance = upstream.provenance()
    pin = _pin_of(source)
    if pin and pin != upstream.digest:
        raise DigestMismatchError(
            f"Digest pin mismatch: pinned {pin}, upstream has {upstream.digest}."
        )
    base = _Outcome(
        content=b"",
        fetched_digest=upstream.digest,
        provenance=provenance,
        verification=source.verification,
        function_count=0,
        staged=[],
        images={},
    )
    served = OciPackage.objects.filter(
        manifest__catalog_id=source.catalog_id, manifest__digest=upstream.digest
    ).exists()
    if served and source.last_digest == upstream.digest:
        if progress:
            progress("fetch", 1, 1)
        base.not_modified = True
        return base
    try:
        oci_manifest_parse(manifest=upstream.raw, media_type=upstream.media_type)
    except OciError as exc:
        raise SyncError(f"Package {source.url} refused: {exc.message}")
    if source.cosign_public_key:
        verification = cosign_verify(
            public_key_pem=source.cosign_public_key,
            signatures=upstream.signatures(),
            manifest_digest=upstream.digest,
        )
    else:
        verification = {"type": "none"}
    blobs = upstream.blobs(max_bytes=int(settings.OCI_UPLOAD_MAX_BYTES))
    if progress:
        progress("fetch", 1, 1)
    try:
        files = oci_package_files(content=blobs[str(upstream.layer["digest"])])
    except OciError as exc:
        raise SyncError(f"Package {source.url} refused: {exc.message}")
    provenance["verification"] = verification["type"]
    base.verification = verification
    base.downloaded = len(upstream.raw) + sum(len(b) for b in blobs.values())
    base.package = _PackageStaged(
        manifest=upstream.raw,
        media_type=upstream.media_type,
        blobs=blobs,
        tag=upstream.tag,
        files=files,
    )
    return base


def _package_commit(*, run: SyncRun, source: MirrorSource, outcome: _Outcome) -> SyncRun:
    """Store a verified package in the mirror's repository (signed by trust, as a push is),
    move its tag, and record a drift event when the upstream tag moved."""
    from catalogs.distribution.services import oci_package_mirror_store

    package = outcome.package
    assert package is not None
    oci_package_mirror_store(
        catalog=source.catalog,
        manifest=package.manifest,
        media_type=package.media_type,
        blobs=package.blobs,
        tag=package.tag,
        files=package.files,
    )
    catalog_tag_drift_record(source=source, run=run, digest=outcome.fetched_digest)
    now = timezone.now()
    source.last_digest = outcome.fetched_digest
    source.last_synced_at = now
    source.verification = outcome.verification
    source.save()
    _transition(
        run,
        SyncRun.Status.SUCCEEDED,
        digest=outcome.fetched_digest,
        bytes=outcome.downloaded,
        artifact_count=len(package.blobs),
        provenance=outcome.provenance,
        verification=outcome.verification,
        finished_at=now,
    )
    return run


def _upstream_list(trusted: Any, source: MirrorSource) -> UpstreamList:
    """The upstream's revocation list: the TUF target already verified, else fetched now."""
    if trusted is not None:
        return upstream_list_parse(
            content=trusted.revocations, url=trusted.revocations_url, how="tuf"
        )
    return upstream_list_fetch(source=source)


def _upstream_checked(
    base: _Outcome, source: MirrorSource, content: bytes | None, limits: Limits, scratch: str
) -> _Outcome:
    """An unchanged catalog still carries the upstream's list, through TUF when it has it."""
    trusted = upstream_trust_check(source=source, content=content, limits=limits, scratch=scratch)
    base.revocations = _upstream_list(trusted, source)
    base.upstream_tuf = trusted.state if trusted is not None else None
    return base


def _catalog_parsed(content: bytes, *, rewritten: bool = False) -> ParsedCatalog:
    """Validate a catalog document; SyncError naming its first problems otherwise."""
    try:
        return services.catalog_document_parse(content=content)
    except InvalidCatalogError as exc:
        details = "; ".join(
            f"{p.path or '(document)'}: {p.message}"
            + (f" (line {p.line})" if p.line is not None else "")
            for p in exc.problems[:5]
        )
        if rewritten:
            raise SyncError(
                f"With its runtime URIs pointed at this registry, the catalog is invalid: {details}"
            )
        raise SyncError(f"{exc.message} {details}")


def _unchanged(base: _Outcome, *, source: MirrorSource, limits: Limits) -> _Outcome:
    """Nothing new upstream; image tags can still move, so re-resolve them when mirroring."""
    base.not_modified = True
    latest = source.catalog.latest_version
    if source.mirror_runtimes and latest is not None:
        served = services.catalog_document_parse(content=catalog_version_bytes(version=latest))
        base.images = _container_images_resolve(
            doc=served.to_dict(),
            limits=limits,
            provenance=base.provenance,
            # Mirrored images are served pinned: resolve the upstream tags they came from.
            also=container_images.mirrored_tag_references(version=latest),
        )
    return base


def _record_images(*, source: MirrorSource, run: SyncRun, images: dict[str, str]) -> None:
    """Store resolved image digests and raise a drift event for every tag that moved."""
    for image, digest in images.items():
        old = source.image_digests.get(image)
        if old and old != digest:
            drift = DriftEvent.objects.create(
                source=source, run=run, image=image, old_digest=old, new_digest=digest
            )
            events.emit(MirrorDriftDetected(drift=drift))
    source.image_digests = {**source.image_digests, **images}


def _runtime_references(doc: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """(holder, key) of every exec platform and starlark script in ``doc`` with a ``uri``."""
    found = []
    for function in doc["spec"]["krmFunctions"]:
        for version in function["versions"]:
            runtime = version.get("runtime") or {}
            for platform in (runtime.get("exec") or {}).get("platforms") or []:
                found.append(platform)
            starlark = runtime.get("starlark")
            if isinstance(starlark, dict) and starlark.get("uri"):
                found.append(starlark)
    return [(holder, "uri") for holder in found]


def _runtime_artifacts_stage(
    *,
    doc: dict[str, Any],
    base_url: str,
    scratch: str,
    limits: Limits,
    progress: Callable[[str, int, int], None] | None,
) -> list[_Staged]:
    """Download every runtime artifact once, verify its sha256, and point ``doc`` at blob URLs."""
    references = _runtime_references(doc)
    wanted: dict[str, str | None] = {}  # absolute URI -> declared sha256 (first declaration)
    resolved: list[tuple[dict[str, Any], str]] = []
    for holder, key in references:
        uri = str(holder[key])
        absolute = urljoin(base_url, uri) if base_url.startswith("https://") else uri
        if urlsplit(absolute).scheme != "https":
            raise FetchError(f"Runtime artifact URI '{uri}' is not an https:// URL.")
        declared = holder.get("sha256")
        declared = f"sha256:{declared}" if declared else None
        if absolute in wanted and declared and wanted[absolute] and wanted[absolute] != declared:
            raise DigestMismatchError(
                f"Runtime artifact {absolute} is declared with two sha256 values "
                f"({wanted[absolute]} and {declared})."
            )
        wanted.setdefault(absolute, declared)
        resolved.append((holder, absolute))
    limits_artifact = Limits(**{**limits.__dict__, "max_bytes": settings.MIRROR_ARTIFACT_MAX_BYTES})
    uris = list(wanted)
    total = len(uris)
    done = 0

    def download(index: int, uri: str) -> _Staged:
        path = os.path.join(scratch, f"artifact-{index}")
        with open(path, "wb") as out:
            result = session.get(uri, sink=out.write, max_bytes=limits_artifact.max_bytes)
        assert result is not None
        _status, digest, _headers, _final = result
        return _Staged(uri=uri, digest=digest, size=os.path.getsize(path), path=path)

    results: list[_Staged] = []
    with HttpsSession(limits=limits_artifact) as session:
        workers = max(1, int(settings.MIRROR_DOWNLOAD_CONCURRENCY))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(download, i, uri) for i, uri in enumerate(uris)]
            try:
                for future in futures:
                    results.append(future.result())
                    done += 1
                    if progress:
                        progress("artifacts", done, total)
            finally:
                for future in futures:
                    future.cancel()
    for staged in results:
        declared = wanted[staged.uri]
        if declared and declared != staged.digest:
            raise DigestMismatchError(
                f"Runtime artifact {staged.uri} has {staged.digest}, the catalog declares "
                f"{declared}."
            )
    by_uri = {s.uri: s for s in results}
    for holder, absolute in resolved:
        staged = by_uri[absolute]
        holder["uri"] = blob_url(staged.digest)
        holder["sha256"] = staged.digest.removeprefix("sha256:")
    return results


def _container_images_resolve(
    *,
    doc: dict[str, Any],
    limits: Limits,
    provenance: dict[str, Any],
    also: list[str] | None = None,
) -> dict[str, str]:
    """Resolve each tagged container image (of ``doc``, and ``also``) to its digest at its
    registry (best effort)."""
    images: dict[str, str] = {}
    errors: dict[str, str] = {}
    named = [
        container["image"]
        for function in doc["spec"]["krmFunctions"]
        for version in function["versions"]
        if (container := (version.get("runtime") or {}).get("container"))
    ]
    for image in [*named, *(also or [])]:
        if "@" in image or image in images:
            continue
        host, sep, name = image.partition("/")
        if not sep or not ("." in host or ":" in host or host == "localhost"):
            host, name = "registry-1.docker.io", image if sep else f"library/{image}"
        if ":" not in name.rpartition("/")[2]:
            name += ":latest"
        try:
            images[image] = OciClient(host, limits=limits).resolve(name)
        except SyncError as exc:
            errors[image] = exc.message
    if errors:
        # Unreachable image registries do not block the catalog: the digest is informative.
        provenance["image_errors"] = errors
    return images


def _store_blobs(staged: list[_Staged], created: list[str]) -> dict[str, str]:
    """Copy verified artifacts into the object store; names new to it go in ``created``."""
    names = {}
    for item in staged:
        if item.digest in names:
            continue
        name = blobstore.blob_name(item.digest)
        existed = default_storage.exists(name)
        names[item.digest] = blobstore.blob_put_file(
            path=item.path, digest=item.digest, size=item.size
        )
        if not existed:
            created.append(name)
    return names


def _carry(*, source: MirrorSource, outcome: _Outcome) -> None:
    """Carry the upstream's revocation list and keep its TUF state (in the commit)."""
    if outcome.revocations is not None:
        outcome.provenance["revocations"] = upstream_list_carry(
            source=source, upstream=outcome.revocations
        )
    if outcome.upstream_tuf is not None:
        source.upstream_tuf = outcome.upstream_tuf


def _sync_commit(*, run_pk: int, outcome: _Outcome) -> SyncRun:
    """Store blobs, publish the version and finish the run, all in one transaction."""
    created_files: list[str] = []
    try:
        with transaction.atomic():
            run = SyncRun.objects.select_for_update().get(pk=run_pk)
            source = MirrorSource.objects.select_for_update().get(pk=run.source_id)
            now = timezone.now()
            if outcome.not_modified:
                _carry(source=source, outcome=outcome)
                _transition(
                    run,
                    SyncRun.Status.UNCHANGED,
                    digest=outcome.fetched_digest,
                    provenance=outcome.provenance,
                    verification=source.verification,
                    catalog_version_id=source.catalog.latest_version_id,
                    # What the served (unchanged) version holds, not the 0 of a skipped parse.
                    function_count=FunctionDefinition.objects.filter(
                        catalog_version_id=source.catalog.latest_version_id
                    ).count(),
                    finished_at=now,
                )
                _record_images(source=source, run=run, images=outcome.images)
                source.last_synced_at = now
                source.save(
                    update_fields=["last_synced_at", "image_digests", "upstream_tuf", "updated_at"]
                )
                return run
            if outcome.package is not None:
                return _package_commit(run=run, source=source, outcome=outcome)
            names = _store_blobs(outcome.staged, created_files)
            catalog = Catalog.objects.select_related("publisher").get(pk=source.catalog_id)
            # The exec and starlark artifacts served for this catalog are TUF targets of its
            # publisher's role, signed with the version that names them (image blobs are
            # pinned by their manifests' digests instead).
            image_blobs = {b.digest for image in outcome.container_images for b in image.blobs}
            trust_services.runtime_artifact_targets_record(
                catalog=catalog,
                artifacts=sorted(
                    {(s.digest, s.size) for s in outcome.staged if s.digest not in image_blobs}
                ),
            )
            version, created = services.catalog_version_publish(
                catalog=catalog, content=outcome.content, actor=None, sync_run=run
            )
            seen: set[str] = set()
            for item in outcome.staged:
                if item.digest in seen:
                    continue
                seen.add(item.digest)
                artifact, _ = RuntimeArtifact.objects.get_or_create(
                    digest=item.digest,
                    defaults={
                        "size": item.size,
                        "storage_name": names[item.digest],
                        "source_uri": item.uri,
                    },
                )
                artifact.catalog_versions.add(version)
            container_images.container_images_store(
                catalog=catalog, version=version, images=outcome.container_images
            )
            # In the transaction that publishes: a list that cannot be carried publishes nothing.
            _carry(source=source, outcome=outcome)
            _record_images(source=source, run=run, images=outcome.images)
            catalog_tag_drift_record(source=source, run=run, digest=outcome.fetched_digest)
            source.last_digest = outcome.fetched_digest
            source.last_etag = outcome.etag
            source.last_modified = outcome.last_modified
            source.last_synced_at = now
            source.verification = outcome.verification
            source.save()
            _transition(
                run,
                SyncRun.Status.SUCCEEDED if created else SyncRun.Status.UNCHANGED,
                digest=outcome.fetched_digest,
                bytes=outcome.downloaded,
                function_count=outcome.function_count,
                artifact_count=len(seen),
                provenance=outcome.provenance,
                verification=outcome.verification,
                catalog_version=version,
                finished_at=now,
            )
            return run
    except BaseException:
        for name in created_files:
            default_storage.delete(name)
        raise


# ----------------------------------------------------------------------------- blob GC


BlobCollection = blobstore.StorageCollection


def _referenced_digests() -> set[str]:
    """Every digest a row names: versions, revocation lists, OCI manifests and blobs, artifacts."""
    from catalogs.distribution.models import OciBlob, OciManifest
    from catalogs.trust.models import RevocationList

    digests: set[str] = set()
    for model in (CatalogVersion, RevocationList, OciManifest, OciBlob, RuntimeArtifact):
        digests.update(model.objects.values_list("digest", flat=True).distinct())
    return digests


def _is_referenced(name: str) -> bool:
    """Whether a row names the object ``name`` (asked again right before deleting it)."""
    from catalogs.distribution.models import OciBlob, OciManifest, OciUpload
    from catalogs.trust.models import RevocationList

    prefix = blobstore.UPLOAD_PREFIX + "/"
    if name.startswith(prefix):
        try:
            upload_id = uuid.UUID(name.removeprefix(prefix))
        except ValueError:
            return False  # not a session's name: nothing can refer to it
        return OciUpload.objects.filter(uuid=upload_id).exists()
    digest = "sha256:" + name.rsplit("/", 1)[-1]
    if RuntimeArtifact.objects.filter(Q(storage_name=name) | Q(digest=digest)).exists():
        return True
    return any(
        model.objects.filter(digest=digest).exists()
        for model in (CatalogVersion, RevocationList, OciManifest, OciBlob)
    )


def blob_garbage_collect(
    *,
    grace: timedelta | None = None,
    dry_run: bool = False,
    upload_age: timedelta | None = None,
) -> blobstore.StorageCollection:
    """The one garbage collection of stored bytes, for every storage backend (local, S3).

    First the database side: OCI upload sessions idle for ``upload_age`` (OCI_UPLOAD_GC_MINUTES)
    and uploaded
    OCI blobs no manifest references (``oci_uploads_gc``). Then the store: objects under the
    blob and upload prefixes that no row names and that are older than ``grace``
    (BLOB_GC_GRACE_MINUTES) are deleted. Bytes are always written before the row that names
    them commits, so a process that dies in between leaves such an object; the grace period
    keeps those of publishes, syncs and uploads still running. Uses the Django storage API only.
    """
    from catalogs.distribution.models import OciUpload
    from catalogs.distribution.services import oci_uploads_gc

    if grace is None:
        grace = timedelta(minutes=settings.BLOB_GC_GRACE_MINUTES)
    sessions = oci_blobs = 0
    if not dry_run:
        sessions, oci_blobs = oci_uploads_gc(older_than=upload_age)
    names = {blobstore.blob_name(d) for d in _referenced_digests()}
    names.update(RuntimeArtifact.objects.values_list("storage_name", flat=True))
    deleted, young = blobstore.storage_garbage_collect(
        referenced_names=names,
        is_referenced=_is_referenced,
        live_uploads=[str(u) for u in OciUpload.objects.values_list("uuid", flat=True)],
        grace=grace,
        dry_run=dry_run,
    )
    return blobstore.StorageCollection(
        deleted=deleted, kept_young=young, sessions=sessions, oci_blobs=oci_blobs
    )


def on_catalog_write_requested(event: CatalogWriteRequested) -> None:
    """Refuse a new version of a mirror's catalog unless it comes from a running sync of its own
    source (MirrorCatalogReadOnlyError): a mirror changes only through its sync runs."""
    catalog, sync_run = event.catalog, event.context
    source = MirrorSource.objects.filter(catalog_id=catalog.pk).only("pk", "name", "url").first()
    if source is None:
        return
    # Only a running run of this very source may publish: what upstream serves, verified.
    if (
        isinstance(sync_run, SyncRun)
        and sync_run.source_id == source.pk
        and sync_run.status == SyncRun.Status.RUNNING
    ):
        return
    raise MirrorCatalogReadOnlyError(
        f"Catalog '{catalog}' is a mirror of source '{source.name}' ({source.url}): it changes "
        "only through that source's sync runs."
    )
