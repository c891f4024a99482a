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
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction
from django.db.models import Max

from catalogs.exceptions import (
    AlreadyExistsError,
    InvalidCatalogError,
    InvalidInputError,
    MirrorCatalogReadOnlyError,
    NotAllowedError,
    ProblemDetail,
)
from catalogs.models import (
    Catalog,
    CatalogVersion,
    FunctionDefinition,
    FunctionVersion,
    MirrorSource,
    Publisher,
    SyncRun,
)
from catalogs.selectors import user_is_owner_or_staff
from orchestrator.catalog import Catalog as ParsedCatalog
from orchestrator.catalog import CatalogError, parse_catalog

# Who acts: a user (possibly anonymous) from a request, or None for a trusted system caller.
Actor = AbstractBaseUser | AnonymousUser | None


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


def _check_can_write(*, publisher: Publisher, actor: Actor) -> None:
    """Raise NotAllowedError unless ``actor`` is a system caller, staff or an owner."""
    if actor is None:
        return
    if not user_is_owner_or_staff(publisher=publisher, user=actor):
        raise NotAllowedError(
            f"Only owners of publisher '{publisher.slug}' (or staff) may change it."
        )


def _users_by_name(usernames: list[str]) -> list[AbstractBaseUser]:
    """Users named in ``usernames``, or InvalidInputError listing the unknown names."""
    user_model = get_user_model()
    users = list(user_model.objects.filter(username__in=usernames))
    unknown = sorted(set(usernames) - {u.username for u in users})
    if unknown:
        raise InvalidInputError(f"Unknown user(s): {', '.join(unknown)}.")
    return users


@transaction.atomic
def publisher_create(*, slug: str, display_name: str = "", actor: Actor) -> Publisher:
    """Create a publisher; an authenticated actor becomes its first owner."""
    if actor is not None and not getattr(actor, "is_authenticated", False):
        raise NotAllowedError("Log in to create a publisher.")
    _slug_checked(slug, what="publisher slug")
    try:
        # A savepoint: a concurrent create of the same slug loses cleanly, not with a 500.
        with transaction.atomic():
            publisher = Publisher.objects.create(slug=slug, display_name=display_name or slug)
    except IntegrityError:
        raise AlreadyExistsError(f"Publisher '{slug}' already exists.")
    if actor is not None:
        publisher.owners.add(actor)
    return publisher


@transaction.atomic
def publisher_update(
    *,
    publisher: Publisher,
    actor: Actor,
    display_name: str | None = None,
    owners: list[str] | None = None,
) -> Publisher:
    """Change a publisher's display name and/or replace its owners (by user name)."""
    _check_can_write(publisher=publisher, actor=actor)
    if owners is not None:
        if not owners:
            raise InvalidInputError("A publisher needs at least one owner.")
        publisher.owners.set(_users_by_name(owners))
    if display_name is not None:
        publisher.display_name = display_name
        publisher.save(update_fields=["display_name", "updated_at"])
    return publisher


@transaction.atomic
def catalog_create(
    *, publisher: Publisher, name: str, description: str = "", actor: Actor
) -> Catalog:
    """Create an empty catalog under ``publisher``."""
    _check_can_write(publisher=publisher, actor=actor)
    _slug_checked(name, what="catalog name")
    try:
        with transaction.atomic():
            return Catalog.objects.create(publisher=publisher, name=name, description=description)
    except IntegrityError:
        raise AlreadyExistsError(f"Catalog '{publisher.slug}/{name}' already exists.")


@transaction.atomic
def catalog_update(*, catalog: Catalog, actor: Actor, description: str | None = None) -> Catalog:
    """Change a catalog's description (its versions never change)."""
    _check_can_write(publisher=catalog.publisher, actor=actor)
    if description is not None:
        catalog.description = description
        catalog.save(update_fields=["description", "updated_at"])
    return catalog


@dataclass(frozen=True)
class OversizedDocument:
    """A request body over CATALOG_MAX_BYTES, known only by its size (its bytes were not kept)."""

    size: int


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
        raise _invalid(
            [
                ProblemDetail(path=p.path, message=p.message, line=p.line, column=p.column)
                for p in err.problems
            ]
        )


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


def catalog_document_prepare(*, content: bytes | str | OversizedDocument) -> PreparedDocument:
    """Parse and validate ``content`` and build its rows, or InvalidCatalogError (no DB access)."""
    parsed = catalog_document_parse(content=content)
    canonical = parsed.canonical_bytes()
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


def _check_not_mirror(*, catalog: Catalog, sync_run: SyncRun | None) -> None:
    """Raise MirrorCatalogReadOnlyError for a mirror's catalog unless ``sync_run`` is its sync."""
    source = MirrorSource.objects.filter(catalog_id=catalog.pk).only("pk", "name", "url").first()
    if source is None:
        return
    # Only a running run of this very source may publish: what upstream serves, verified.
    if (
        sync_run is not None
        and sync_run.source_id == source.pk
        and sync_run.status == SyncRun.Status.RUNNING
    ):
        return
    raise MirrorCatalogReadOnlyError(
        f"Catalog '{catalog}' is a mirror of source '{source.name}' ({source.url}): it changes "
        "only through that source's sync runs."
    )


def catalog_version_publish(
    *,
    catalog: Catalog,
    content: bytes | str | OversizedDocument | PreparedDocument,
    actor: Actor,
    sync_run: SyncRun | None = None,
) -> tuple[CatalogVersion, bool]:
    """Publish ``content`` as the next immutable version; the same content returns the existing one.

    Returns ``(version, created)``. Nothing is written unless the document is valid. A mirror's
    catalog takes versions only from ``sync_run``, a running sync of its own source. The document
    is parsed and validated before the transaction starts: the write lock (on SQLite, the whole
    database's) is held only for the inserts.
    """
    _check_can_write(publisher=catalog.publisher, actor=actor)
    _check_not_mirror(catalog=catalog, sync_run=sync_run)
    if isinstance(content, PreparedDocument):
        prepared = content
    else:
        prepared = catalog_document_prepare(content=content)
    with transaction.atomic():
        return _catalog_version_insert(
            catalog=catalog, prepared=prepared, actor=actor, sync_run=sync_run
        )


def _catalog_version_insert(
    *, catalog: Catalog, prepared: PreparedDocument, actor: Actor, sync_run: SyncRun | None
) -> tuple[CatalogVersion, bool]:
    """The write half of a publish, inside the caller's transaction."""
    # Lock the catalog row: concurrent publishes get consecutive numbers, never a duplicate.
    locked = Catalog.objects.select_for_update().get(pk=catalog.pk)
    # Again under the lock: a source may have been attached since the check above.
    _check_not_mirror(catalog=locked, sync_run=sync_run)
    existing = (
        CatalogVersion.objects.filter(catalog=locked, digest=prepared.digest)
        .defer("content")
        .first()
    )
    if existing is not None:
        return existing, False

    number = (locked.versions.aggregate(n=Max("number"))["n"] or 0) + 1
    version = CatalogVersion.objects.create(
        catalog=locked,
        number=number,
        content=prepared.canonical,
        digest=prepared.digest,
        size=len(prepared.canonical),
        document_name=str(prepared.parsed.name or ""),
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    _functions_create(version=version, prepared=prepared)
    locked.latest_version = version
    locked.save(update_fields=["latest_version", "updated_at"])
    catalog.latest_version = version
    return version, True


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
    owner: AbstractBaseUser | None,
    description: str,
) -> tuple[CatalogVersion, bool]:
    """The write half of an import: one transaction, so a refused publish creates nothing."""
    publisher = Publisher.objects.filter(slug=publisher_slug).first()
    if publisher is None:
        publisher = publisher_create(slug=publisher_slug, display_name=publisher_slug, actor=None)
    if owner is not None:
        publisher.owners.add(owner)
    catalog = Catalog.objects.filter(publisher=publisher, name=catalog_name).first()
    if catalog is None:
        catalog = catalog_create(
            publisher=publisher, name=catalog_name, description=description, actor=None
        )
    return catalog_version_publish(catalog=catalog, content=prepared, actor=None)
