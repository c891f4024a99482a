"""Writes: every change to the registry's records goes through one of these services.

``actor`` is the user acting (``request.user`` in views, possibly anonymous); ``None`` means a
trusted system caller such as a management command or a Celery task started by one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from catalogs import events
from catalogs.accounts.verification import user_check_verified
from catalogs.exceptions import (
    AlreadyExistsError,
    InvalidCatalogError,
    InvalidInputError,
    NotAllowedError,
    NotFoundError,
    ProblemDetail,
    QuotaExceededError,
    ReservedNameError,
)
from catalogs.oversized import OversizedDocument
from catalogs.publishing import blobstore, serving
from catalogs.publishing.confusables import slug_keys, slugs_confusable
from catalogs.publishing.documents import problems_located
from catalogs.publishing.events import (
    CatalogLatestChanged,
    CatalogVersionDeprecationChanged,
    CatalogVersionPublished,
    CatalogWriteRequested,
    VisibilityChanged,
)
from catalogs.publishing.models import (
    Catalog,
    CatalogVersion,
    FunctionDefinition,
    FunctionVersion,
    OwnerInvitation,
    OwnerInvitationStatus,
    Publisher,
    PublisherEvent,
    PublisherEventAction,
    Visibility,
)
from catalogs.publishing.selectors import (
    publisher_slug_is_reserved,
    publisher_storage_used,
    reserved_publisher_slugs,
    signed_in,
    user_is_mirror_operator,
    user_is_owner_or_staff,
    user_may_publish,
)
from orchestrator.catalog import Catalog as ParsedCatalog
from orchestrator.catalog import CatalogError, parse_catalog

# Who acts: a user (possibly anonymous) from a request, or None for a trusted system caller.
Actor = AuthUser | AnonymousUser | None


def _slug_checked(value: str, *, what: str) -> str:
    """Return ``value`` if it is a valid slug, else InvalidInputError naming ``what``."""
    try:
        validate_slug(value)
    except DjangoValidationError:
        raise InvalidInputError(
            f"Invalid {what} '{value}': use only letters, numbers, hyphens and underscores."
        )
    if len(value) > 100:
        raise InvalidInputError(f"Invalid {what} '{value}': at most 100 characters.")
    return value


def _check_can_write(*, publisher: Publisher, actor: Actor, robots: bool = True) -> None:
    """Raise NotAllowedError unless ``actor`` is a system caller, staff, an owner or (``robots``)
    one of the publisher's robot accounts.

    The mirror publisher is the registry's: only mirror operators change it, whoever owns it.
    """
    if actor is None:
        return
    if publisher.slug == settings.MIRROR_PUBLISHER_SLUG:
        if not user_is_mirror_operator(actor):
            raise NotAllowedError(
                f"Only staff or mirror operators may change the mirrored catalogs of publisher "
                f"'{publisher.slug}'."
            )
        return
    # Robot accounts publish (catalogs, versions); they never change the publisher's people.
    check = user_may_publish if robots else user_is_owner_or_staff
    if not check(publisher=publisher, user=actor):
        raise NotAllowedError(
            f"Only owners of publisher '{publisher.slug}' (or staff) may change it."
        )


def publisher_check_can_write(*, publisher: Publisher, actor: Actor) -> None:
    """NotAllowedError unless ``actor`` may change ``publisher`` and its catalogs.

    Views call it before reading the request body, so a refused user gets 403, never a 400.
    """
    _check_can_write(publisher=publisher, actor=actor)


def _users_by_name(usernames: list[str]) -> list[AuthUser]:
    """Users named in ``usernames``, or InvalidInputError listing the unknown names."""
    user_model = get_user_model()
    users = list(user_model.objects.filter(username__in=usernames))
    unknown = sorted(set(usernames) - {u.username for u in users})
    if unknown:
        raise InvalidInputError(f"Unknown user(s): {', '.join(unknown)}.")
    return users


def _check_slug_not_reserved(slug: str, *, system: bool) -> None:
    """Raise ReservedNameError if ``slug`` is reserved (a system caller may take all but one)."""
    if slug.lower() == settings.MIRROR_PUBLISHER_SLUG.lower():
        raise ReservedNameError(
            f"Publisher slug '{slug}' is reserved for mirrored catalogs: it is created by adding "
            "a mirror source (POST /api/v1/sources/), never by hand."
        )
    if not system and publisher_slug_is_reserved(slug):
        raise ReservedNameError(
            # The setting that lists them is the operator's business, not named to users.
            f"Publisher slug '{slug}' is reserved for the registry itself: choose another."
        )


def _check_slug_not_confusable(
    slug: str, *, system: bool, publisher: Publisher | None = None
) -> None:
    """ReservedNameError or AlreadyExistsError if ``slug`` looks like a reserved or taken slug.

    Look-alikes by Unicode TS #39's skeleton, case and separators (``catalogs.publishing
    .confusables``): ``0fficial``, ``officiaI`` and ``mirrors-`` are the reserved names,
    ``ACME`` and ``Acme`` are ``acme``.
    """
    reserved = [settings.MIRROR_PUBLISHER_SLUG] if system else sorted(reserved_publisher_slugs())
    for name in reserved:
        if slugs_confusable(slug, name):
            raise ReservedNameError(
                f"Publisher slug '{slug}' looks like '{name}', which is reserved for the registry "
                "itself: choose another."
            )
    taken = Publisher.objects.all()
    if publisher is not None:
        taken = taken.exclude(pk=publisher.pk)
    keys = slug_keys(slug)
    for name in taken.values_list("slug", flat=True).iterator(chunk_size=2000):
        if name == slug:
            raise AlreadyExistsError(f"Publisher '{slug}' already exists.")
        if not keys.isdisjoint(slug_keys(name)):
            raise AlreadyExistsError(
                f"Publisher slug '{slug}' looks like the existing publisher '{name}': choose "
                "another."
            )


def publisher_slug_check(
    *, slug: str, system: bool = False, publisher: Publisher | None = None
) -> str:
    """The lower-case form of ``slug`` if it may name a new publisher (or rename ``publisher``).

    A valid slug, not reserved (unless ``system``), and like no reserved or existing slug.
    """
    _slug_checked(slug, what="publisher slug")
    _check_slug_not_reserved(slug, system=system)
    _check_slug_not_confusable(slug, system=system, publisher=publisher)
    return slug.lower()


@transaction.atomic
def publisher_create(
    *, slug: str, display_name: str = "", actor: Actor, visibility: str = "public"
) -> Publisher:
    """Create a publisher (``private`` from the start when asked); an authenticated actor
    becomes its first owner.

    Reserved slugs (RESERVED_PUBLISHER_SLUGS) are the registry's: no user may take one; a system
    caller (``import_catalog``) creates it with no owner. The mirror publisher's slug is taken
    only by the first mirror source.
    """
    if actor is not None and not signed_in(actor):
        raise NotAllowedError("Log in to create a publisher.")
    user_check_verified(user=actor, what="create a publisher")
    slug = publisher_slug_check(slug=slug, system=actor is None)
    _visibility_check(slug, visibility)
    try:
        # A savepoint: a concurrent create of the same slug loses cleanly, not with a 500.
        with transaction.atomic():
            publisher = Publisher.objects.create(
                slug=slug, display_name=display_name or slug, visibility=visibility
            )
    except IntegrityError:
        raise AlreadyExistsError(f"Publisher '{slug}' already exists.")
    if signed_in(actor):
        publisher.owners.add(actor)
    _audit(publisher, actor, PublisherEventAction.PUBLISHER_CREATED, f"Publisher '{slug}' created.")
    return publisher


def _audit(publisher: Publisher | int, actor: Actor, action: str, detail: str) -> None:
    """One entry of the publisher's audit log."""
    PublisherEvent.objects.create(
        publisher_id=publisher if isinstance(publisher, int) else publisher.pk,
        actor=actor if signed_in(actor) else None,
        action=action,
        detail=detail,
    )


@transaction.atomic
def publisher_update(
    *,
    publisher: Publisher,
    actor: Actor,
    display_name: str | None = None,
    owners: list[str] | None = None,
    visibility: str | None = None,
) -> Publisher:
    """Change a publisher's display name, its owners (by user name) and/or its visibility
    (``private`` hides it and every one of its catalogs from all but its owners and staff).

    Owners left out are removed; names that are not owners yet are invited (they own it once
    they accept: ``publishers.publisher_invitation_decide``). At least one current owner stays.
    """
    _check_can_write(publisher=publisher, actor=actor, robots=False)
    changes = []
    if owners is not None:
        if publisher_slug_is_reserved(publisher.slug):
            raise ReservedNameError(
                f"Publisher '{publisher.slug}' is reserved: it is owned by the registry, not by "
                "users."
            )
        if not owners:
            raise InvalidInputError("A publisher needs at least one owner.")
        users = _users_by_name(owners)
        current = {u.pk: u for u in publisher.owners.all()}
        keep = [u for u in users if u.pk in current]
        if not keep:
            raise InvalidInputError(
                "A publisher needs at least one owner: keep a current owner in the list "
                "(new owners are invited, and own it once they accept)."
            )
        removed = sorted(u.username for pk, u in current.items() if pk not in {k.pk for k in keep})
        if removed:
            publisher.owners.set(keep)
            changes.append(f"owners removed: {removed}")
        for user in users:
            if user.pk not in current:
                _owner_invite(publisher=publisher, user=user, actor=actor)
    if visibility is not None:
        _visibility_set(publisher=publisher, obj=publisher, visibility=visibility)
    if display_name is not None and display_name != publisher.display_name:
        changes.append(f"renamed from {publisher.display_name!r} to {display_name!r}")
        publisher.display_name = display_name
        publisher.save(update_fields=["display_name", "updated_at"])
    if changes:
        publisher_verified_clear(publisher=publisher, actor=actor, reason="; ".join(changes))
    return publisher


def _owner_invite(*, publisher: Publisher, user: AuthUser, actor: Actor) -> None:
    """Invite ``user`` to co-own ``publisher`` (once: a pending invitation is kept)."""
    _, created = OwnerInvitation.objects.get_or_create(
        publisher=publisher,
        invitee=user,
        status=OwnerInvitationStatus.PENDING,
        defaults={"invited_by": actor if signed_in(actor) else None},
    )
    if created:
        PublisherEvent.objects.create(
            publisher=publisher,
            actor=actor if signed_in(actor) else None,
            action=PublisherEventAction.OWNER_INVITED,
            detail=user.username,
        )


def publisher_verified_clear(*, publisher: Publisher, actor: Actor, reason: str) -> bool:
    """Take the verified badge away after a change of name or owners, in the audit log.

    The badge vouches for who a publisher is, as staff saw it: a new name or new owners need a
    new request. Returns whether there was a badge to clear.
    """
    cleared = Publisher.objects.filter(pk=publisher.pk, verified=True).update(
        verified=False, updated_at=timezone.now()
    )
    if cleared:
        publisher.verified = False
        PublisherEvent.objects.create(
            publisher=publisher,
            actor=actor if signed_in(actor) else None,
            action=PublisherEventAction.VERIFICATION_CLEARED,
            detail=reason,
        )
    return bool(cleared)


@transaction.atomic
def catalog_create(
    *,
    publisher: Publisher,
    name: str,
    description: str = "",
    actor: Actor,
    for_mirror_source: bool = False,
    visibility: str = "public",
) -> Catalog:
    """Create an empty catalog under ``publisher`` (``private`` from the start when asked).

    Under the mirror publisher only ``mirror_source_create`` (``for_mirror_source``) creates them.
    """
    _check_can_write(publisher=publisher, actor=actor)
    if publisher.slug == settings.MIRROR_PUBLISHER_SLUG and not for_mirror_source:
        raise NotAllowedError(
            f"Catalogs of publisher '{publisher.slug}' are created by adding a mirror source "
            "(POST /api/v1/sources/)."
        )
    # Lower case, as OCI repository names are (``<publisher>/<catalog>``).
    name = _slug_checked(name, what="catalog name").lower()
    _visibility_check(publisher.slug, visibility)
    try:
        with transaction.atomic():
            catalog = Catalog.objects.create(
                publisher=publisher, name=name, description=description, visibility=visibility
            )
            _audit(
                publisher,
                actor,
                PublisherEventAction.CATALOG_CREATED,
                f"Catalog '{publisher.slug}/{name}' created.",
            )
            return catalog
    except IntegrityError:
        raise AlreadyExistsError(f"Catalog '{publisher.slug}/{name}' already exists.")


def _visibility_check(publisher_slug: str, visibility: str, *, setting: bool = False) -> None:
    """InvalidInputError for an unknown visibility, or a private one under the mirrors (where
    ``setting`` one, whichever, is refused too)."""
    if visibility not in Visibility.values:
        raise InvalidInputError(
            f"Visibility {visibility!r} is not one of: {', '.join(Visibility.values)}."
        )
    if (setting or visibility == Visibility.PRIVATE) and (
        publisher_slug.lower() == settings.MIRROR_PUBLISHER_SLUG.lower()
    ):
        raise InvalidInputError(
            f"The mirrored catalogs of publisher '{publisher_slug}' are public: a mirror cannot "
            "be made private."
        )


@transaction.atomic
def _visibility_set(*, publisher: Publisher, obj: Publisher | Catalog, visibility: str) -> None:
    """Set ``obj``'s visibility (``public`` or ``private``); the serving caches of this process
    forget what they knew of the publisher's catalogs at once."""
    _visibility_check(publisher.slug, visibility, setting=True)
    if obj.visibility == visibility:
        return
    obj.visibility = visibility
    obj.save(update_fields=["visibility", "updated_at"])
    names = list(Catalog.objects.filter(publisher=publisher).values_list("name", flat=True))
    serving.serving_visibility_changed(publisher_slug=publisher.slug, catalog_names=names)
    events.emit(VisibilityChanged(publisher=publisher))
    # After the commit too: a request between this write and the commit may have read the old
    # visibility back into this process's memory.
    transaction.on_commit(
        lambda: serving.serving_visibility_changed(
            publisher_slug=publisher.slug, catalog_names=names
        )
    )


def catalog_update(
    *,
    catalog: Catalog,
    actor: Actor,
    description: str | None = None,
    visibility: str | None = None,
    latest_version: int | None = None,
) -> Catalog:
    """Change a catalog's description, its visibility, or which version is latest
    (``catalog_latest_set``); its versions never change."""
    _check_can_write(publisher=catalog.publisher, actor=actor)
    if visibility is not None:
        _visibility_set(publisher=catalog.publisher, obj=catalog, visibility=visibility)
    if latest_version is not None:
        catalog_latest_set(catalog=catalog, number=latest_version, actor=actor)
    if description is not None:
        catalog.description = description
        catalog.save(update_fields=["description", "updated_at"])
    return catalog


def _invalid(problems: list[ProblemDetail]) -> InvalidCatalogError:
    count = len(problems)
    return InvalidCatalogError(
        f"The catalog document is invalid ({count} problem{'s' if count != 1 else ''}).", problems
    )


def catalog_document_parse(*, content: bytes | str | OversizedDocument) -> ParsedCatalog:
    """Parse and validate a catalog document, or InvalidCatalogError listing every problem."""
    limit = settings.CATALOG_MAX_BYTES
    if isinstance(content, OversizedDocument):
        # Same words as orchestrator.catalog's own size check, which never saw these bytes.
        message = f"catalog is {content.size} bytes, over the limit of {limit} bytes"
        raise _invalid([ProblemDetail(path="", message=message)])
    try:
        return parse_catalog(content, max_bytes=limit, strict=True)
    except CatalogError as err:
        problems = [
            ProblemDetail(path=p.path, message=p.message, line=p.line, column=p.column)
            for p in err.problems
        ]
        text = content.decode("utf-8", errors="replace") if isinstance(content, bytes) else content
        # Every problem with the line it is on (from its path), top to bottom, for API and web.
        raise _invalid(problems_located(text, problems))


def _search_text(*parts: Any) -> str:
    """Lower-cased words of ``parts`` for substring search."""
    words: list[str] = []
    for part in parts:
        if isinstance(part, list | tuple):
            words.extend(str(p) for p in part)
        elif part:
            words.append(str(part))
    return " ".join(words).lower()


@dataclass(frozen=True)
class PreparedDocument:
    """A parsed, validated catalog document with its canonical bytes and unsaved function rows.

    Built outside any transaction (parsing 4,000 functions takes a while), so that a publish
    holds the database's write lock only to insert.
    """

    parsed: ParsedCatalog
    canonical: bytes
    digest: str
    # One (definition, its versions) per function; foreign keys are set at insert time.
    rows: list[tuple[FunctionDefinition, list[FunctionVersion]]]


def catalog_document_prepare(
    *, content: bytes | str | OversizedDocument, served: bytes | None = None
) -> PreparedDocument:
    """Parse and validate ``content`` and build its rows, or InvalidCatalogError (no DB access).

    The bytes served are the canonical form, or ``served`` as given (an OCI push's layer).
    """
    parsed = catalog_document_parse(content=content)
    canonical = parsed.canonical_bytes() if served is None else served
    # Hash the bytes we serve, so X-Content-Digest always equals sha256(body).
    digest = "sha256:" + hashlib.sha256(canonical).hexdigest()
    return PreparedDocument(
        parsed=parsed, canonical=canonical, digest=digest, rows=_function_rows(parsed)
    )


def _function_rows(parsed: ParsedCatalog) -> list[tuple[FunctionDefinition, list[FunctionVersion]]]:
    """Unsaved function definition and version rows of a parsed document."""
    rows = []
    for position, fn in enumerate(parsed.functions):
        definition = FunctionDefinition(
            position=position,
            group=fn.group or "",
            kind=fn.kind or "",
            description=fn.description or "",
            publisher=fn.publisher or "",
            home=fn.home or "",
            maintainers=list(fn.maintainers or []),
            tags=list(fn.tags or []),
        )
        tags = [str(t) for t in fn.tags or []]
        search_text = _search_text(fn.group, fn.kind, fn.description, fn.publisher, tags)
        versions = []
        for number, fv in enumerate(fn.versions):
            kinds = list(fv.runtime_kinds or [])
            versions.append(
                FunctionVersion(
                    group=definition.group,
                    kind=definition.kind,
                    name=fv.name or "",
                    position=number,
                    runtime=dict(fv.runtime or {}),
                    schema=fv.schema,
                    idempotent=fv.idempotent,
                    usage=fv.usage or "",
                    examples=list(fv.examples or []),
                    license=fv.license or "",
                    maintainers=list(fv.maintainers or []),
                    runtime_kinds=kinds,
                    requires_network=bool(fv.requires_network),
                    requires_storage_mount=bool(fv.requires_storage_mount),
                    tags_index="".join(f"|{t.lower()}" for t in tags) + "|",
                    runtime_kinds_index="".join(f"|{k.lower()}" for k in kinds) + "|",
                    search_text=search_text,
                )
            )
        rows.append((definition, versions))
    return rows


def _functions_create(*, version: CatalogVersion, prepared: PreparedDocument) -> None:
    """Insert the function definition and version rows of a newly published version."""
    for definition, _ in prepared.rows:
        # pk reset: the same prepared rows may be inserted again after a rolled-back attempt.
        definition.pk = None
        definition.catalog_version = version
    FunctionDefinition.objects.bulk_create([definition for definition, _ in prepared.rows])
    rows = []
    for definition, versions in prepared.rows:
        for fv in versions:
            fv.pk = None
            fv.function = definition
            fv.catalog_version = version
            rows.append(fv)
    FunctionVersion.objects.bulk_create(rows)


def _check_may_publish(*, catalog: Catalog, sync_run: Any) -> None:
    """Ask the apps above whether ``catalog`` may take a version now (a mirror's catalog takes
    versions only from its own running sync run); a refusal raises their domain error."""
    events.emit(CatalogWriteRequested(catalog=catalog, context=sync_run))


def catalog_version_publish(
    *,
    catalog: Catalog,
    content: bytes | str | OversizedDocument | PreparedDocument,
    actor: Actor,
    sync_run: Any = None,
    oci_manifest: bytes | None = None,
) -> tuple[CatalogVersion, bool]:
    """Publish ``content`` as the next immutable version; the same content returns the existing one.

    Returns ``(version, created)``. Nothing is written unless the document is valid. A mirror's
    catalog takes versions only from ``sync_run``, a running sync of its own source. With
    ``oci_manifest`` (an OCI push), ``content`` is that manifest's layer: served as it is. The
    document is parsed and validated before the transaction starts: the write lock (on SQLite, the
    whole database's) is held only for the inserts.
    """
    _check_can_write(publisher=catalog.publisher, actor=actor)
    _check_may_publish(catalog=catalog, sync_run=sync_run)
    if isinstance(content, PreparedDocument):
        prepared = content
    else:
        # A pushed manifest names its layer's digest: those bytes are served, not re-serialised.
        served = content if oci_manifest is not None and isinstance(content, bytes) else None
        prepared = catalog_document_prepare(content=content, served=served)
    # The bytes are in the object store before any row names them (a refused write raises
    # StorageError here: nothing is published). Outside the transaction: no lock is held.
    blobstore.blob_put(content=prepared.canonical, digest=prepared.digest)
    with transaction.atomic():
        return _catalog_version_insert(
            catalog=catalog,
            prepared=prepared,
            actor=actor,
            sync_run=sync_run,
            oci_manifest=oci_manifest,
        )


def _check_storage_quota(*, publisher_id: int, adding: int, actor: Actor) -> None:
    """QuotaExceededError when a user's publish would take the publisher over its storage quota.

    System callers (imports, mirror syncs) and staff are not held to it.
    """
    if not signed_in(actor) or actor.is_staff:
        return
    limit = settings.PUBLISHER_STORAGE_MAX_BYTES
    used = publisher_storage_used(publisher_id=publisher_id)
    if used + adding > limit:
        raise QuotaExceededError(
            f"This version ({adding} bytes) would take the publisher's catalogs to "
            f"{used + adding} bytes, over its storage quota of {limit} bytes "
            "(PUBLISHER_STORAGE_MAX_BYTES); ask the registry's staff for more."
        )


def _catalog_version_insert(
    *,
    catalog: Catalog,
    prepared: PreparedDocument,
    actor: Actor,
    sync_run: Any,
    oci_manifest: bytes | None = None,
) -> tuple[CatalogVersion, bool]:
    """The write half of a publish, inside the caller's transaction."""
    # Lock the catalog row: concurrent publishes get consecutive numbers, never a duplicate.
    locked = Catalog.objects.select_for_update().get(pk=catalog.pk)
    # Again under the lock: a source may have been attached since the check above.
    _check_may_publish(catalog=locked, sync_run=sync_run)
    existing = CatalogVersion.objects.filter(catalog=locked, digest=prepared.digest).first()
    if existing is not None:
        return existing, False
    _check_storage_quota(
        publisher_id=locked.publisher_id, adding=len(prepared.canonical), actor=actor
    )

    number = (locked.versions.aggregate(n=Max("number"))["n"] or 0) + 1
    version = CatalogVersion.objects.create(
        catalog=locked,
        number=number,
        digest=prepared.digest,
        size=len(prepared.canonical),
        document_name=str(prepared.parsed.name or ""),
        created_by=actor if signed_in(actor) else None,
    )
    _functions_create(version=version, prepared=prepared)
    locked.latest_version = version
    locked.save(update_fields=["latest_version", "updated_at"])
    catalog.latest_version = version
    serving.serving_latest_changed(publisher_slug=catalog.publisher.slug, catalog_name=locked.name)
    # In the same transaction: distribution stores its OCI manifest, trust signs it, so nothing
    # serves it unsigned (a mirror's run verified its upstream signature before it published).
    events.emit(
        CatalogVersionPublished(
            version=version, content=prepared.canonical, oci_manifest=oci_manifest
        )
    )
    _audit(
        locked.publisher_id,
        actor,
        PublisherEventAction.VERSION_PUBLISHED,
        f"Version {number} of '{catalog.publisher.slug}/{locked.name}' published "
        f"({prepared.digest}).",
    )
    return version, True


def catalog_latest_set(*, catalog: Catalog, number: int, actor: Actor) -> CatalogVersion:
    """Make version ``number`` of ``catalog`` its latest again (an owner going back on a publish):
    ``catalog.yaml``, the OCI tag ``latest`` and the TUF latest pointer name it from now on.

    The versions stay as they are (numbers only grow); the next publish becomes latest as usual.
    Setting the version that is already latest changes nothing.
    """
    _check_can_write(publisher=catalog.publisher, actor=actor)
    with transaction.atomic():
        locked = Catalog.objects.select_for_update().get(pk=catalog.pk)
        # A mirror's catalog follows its upstream only: its mirroring refuses the write.
        _check_may_publish(catalog=locked, sync_run=None)
        version = CatalogVersion.objects.filter(catalog=locked, number=number).first()
        if version is None:
            raise NotFoundError(f"Catalog '{catalog}' has no version {number}.")
        if locked.latest_version_id == version.pk:
            return version
        previous = locked.latest_version.number if locked.latest_version else None
        locked.latest_version = version
        locked.save(update_fields=["latest_version", "updated_at"])
        catalog.latest_version = version
        version.catalog = locked
        serving.serving_latest_changed(
            publisher_slug=catalog.publisher.slug, catalog_name=locked.name
        )
        events.emit(CatalogLatestChanged(version=version))
        _audit(
            locked.publisher_id,
            actor,
            PublisherEventAction.LATEST_SET,
            f"Version {number} of '{catalog}' made latest again (was {previous}).",
        )
    return version


DEPRECATION_MAX_CHARS = 1000


def catalog_version_deprecate(
    *, version: CatalogVersion, message: str, actor: Actor
) -> CatalogVersion:
    """Deprecate ``version`` with ``message`` (npm's ``deprecate``), or withdraw its deprecation
    with an empty one. The version stays served and verifiable; pages, the API and ``krm`` show
    the message to whoever still uses it."""
    catalog = version.catalog
    _check_can_write(publisher=catalog.publisher, actor=actor)
    message = message.strip()
    if len(message) > DEPRECATION_MAX_CHARS:
        raise InvalidInputError(
            f"deprecation: at most {DEPRECATION_MAX_CHARS} characters, not {len(message)}."
        )
    if any(ord(c) < 32 and c not in "\n\t" for c in message):
        raise InvalidInputError("deprecation: control characters are not allowed.")
    with transaction.atomic():
        locked = CatalogVersion.objects.select_for_update().get(pk=version.pk)
        if locked.deprecation == message:
            return version
        version.deprecation = message
        version.deprecated_at = timezone.now() if message else None
        version.save(update_fields=["deprecation", "deprecated_at"])
        events.emit(CatalogVersionDeprecationChanged(version=version))
        if message:
            _audit(
                catalog.publisher_id,
                actor,
                PublisherEventAction.VERSION_DEPRECATED,
                f"Version {version.number} of '{catalog}' deprecated: {message}",
            )
        else:
            _audit(
                catalog.publisher_id,
                actor,
                PublisherEventAction.VERSION_UNDEPRECATED,
                f"Version {version.number} of '{catalog}' no longer deprecated.",
            )
    return version


def catalog_import(
    *,
    publisher_slug: str,
    catalog_name: str,
    content: bytes | str,
    owner_username: str | None = None,
    description: str = "",
) -> tuple[CatalogVersion, bool]:
    """Publish from the command line: create the publisher and catalog if absent, then publish."""
    owner = _users_by_name([owner_username])[0] if owner_username else None
    if owner is not None and publisher_slug_is_reserved(publisher_slug):
        raise ReservedNameError(
            f"Publisher '{publisher_slug}' is reserved: it is owned by the registry, so --owner "
            "cannot be given."
        )
    # Parsed before the transaction, like any publish; a bad document creates nothing.
    prepared = catalog_document_prepare(content=content)
    with transaction.atomic():
        return _catalog_import_write(
            publisher_slug=publisher_slug,
            catalog_name=catalog_name,
            prepared=prepared,
            owner=owner,
            description=description,
        )


def _catalog_import_write(
    *,
    publisher_slug: str,
    catalog_name: str,
    prepared: PreparedDocument,
    owner: AuthUser | None,
    description: str,
) -> tuple[CatalogVersion, bool]:
    """The write half of an import: one transaction, so a refused publish creates nothing."""
    publisher = Publisher.objects.filter(slug=publisher_slug.lower()).first()
    if publisher is None:
        publisher = publisher_create(slug=publisher_slug, display_name=publisher_slug, actor=None)
    if owner is not None:
        publisher.owners.add(owner)
    catalog = Catalog.objects.filter(publisher=publisher, name=catalog_name.lower()).first()
    if catalog is None:
        catalog = catalog_create(
            publisher=publisher, name=catalog_name, description=description, actor=None
        )
    return catalog_version_publish(catalog=catalog, content=prepared, actor=None)
