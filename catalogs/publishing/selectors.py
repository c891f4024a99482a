"""Reads: lookups by natural key, permission checks, function search and the serving fast path."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.db import connection
from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from catalogs.exceptions import NotFoundError
from catalogs.publishing import content as stored
from catalogs.publishing.models import (
    Catalog,
    CatalogQuerySet,
    CatalogVersion,
    CatalogVersionPulls,
    FunctionDefinition,
    FunctionVersion,
    Publisher,
    SigningKey,
    Visibility,
)

if TYPE_CHECKING:
    from typing_extensions import TypeIs


def signed_in(user: AuthUser | AnonymousUser | None) -> TypeIs[AuthUser]:
    """Whether ``user`` is a signed-in user (``None`` is the system, AnonymousUser nobody)."""
    return user is not None and bool(getattr(user, "is_authenticated", False))


def user_is_owner_or_staff(*, publisher: Publisher, user: AuthUser | AnonymousUser | None) -> bool:
    """Whether ``user`` may write to ``publisher`` (an owner, or staff)."""
    if user is None or not signed_in(user):
        return False
    if user.is_staff:
        return True
    return publisher.owners.filter(pk=user.pk).exists()


def user_may_publish(*, publisher: Publisher, user: AuthUser | AnonymousUser | None) -> bool:
    """Whether ``user`` may publish to ``publisher``: an owner, staff, or one of its robots."""
    if user_is_owner_or_staff(publisher=publisher, user=user):
        return True
    if user is None or not signed_in(user):
        return False
    return publisher.robots.filter(user_id=user.pk).exists()


def user_is_mirror_operator(user: AuthUser | AnonymousUser | None) -> bool:
    """Staff, or users holding ``mirroring.operate_mirrors``; ``None`` (the system) is one too."""
    if user is None:
        return True
    if not signed_in(user):
        return False
    return bool(user.is_staff or user.has_perm("mirroring.operate_mirrors"))


def reserved_publisher_slugs() -> frozenset[str]:
    """Slugs no user may take: RESERVED_PUBLISHER_SLUGS and the mirror publisher's."""
    slugs = [*settings.RESERVED_PUBLISHER_SLUGS, settings.MIRROR_PUBLISHER_SLUG]
    return frozenset(s.strip().lower() for s in slugs if s.strip())


def publisher_slug_is_reserved(slug: str) -> bool:
    """Whether ``slug`` is kept for the registry itself."""
    return slug.lower() in reserved_publisher_slugs()


# --- Visibility: the one rule of who sees a private publisher or catalog. ---
# A public object is seen by everyone. A private publisher, and every catalog of it, and a
# private catalog, are seen by the publisher's owners and by staff only; everyone else is told
# it does not exist (404, never 403: a refusal would confirm the name). Every read a request
# makes goes through ``viewer=`` below, or through ``catalog_visible``/``publisher_visible``.
# ``viewer=None`` is the system (services, tasks), which sees everything.

Viewer = AuthUser | AnonymousUser | None
PRIVATE = Visibility.PRIVATE


def _sees_everything(viewer: Viewer) -> bool:
    return viewer is None or (signed_in(viewer) and viewer.is_staff)


def _owned_publisher_ids(viewer: AuthUser) -> QuerySet:
    # A subquery, not a join over owners: a join repeats a row once per owner of its publisher.
    return Publisher.owners.through.objects.filter(user_id=viewer.pk).values("publisher_id")


def publishers_visible_q(viewer: Viewer, *, prefix: str = "") -> Q:
    """The condition on ``<prefix>``-publisher rows that ``viewer`` may see."""
    if _sees_everything(viewer):
        return Q()
    seen = Q(**{f"{prefix}visibility": Visibility.PUBLIC})
    if signed_in(viewer):
        seen |= Q(**{f"{prefix}pk__in": _owned_publisher_ids(viewer)})
    return seen


def catalogs_visible_q(viewer: Viewer, *, prefix: str = "") -> Q:
    """The condition on ``<prefix>``-catalog rows that ``viewer`` may see (the catalog and its
    publisher public, or the viewer one of the publisher's owners, or staff)."""
    if _sees_everything(viewer):
        return Q()
    seen = Q(
        **{
            f"{prefix}visibility": Visibility.PUBLIC,
            f"{prefix}publisher__visibility": Visibility.PUBLIC,
        }
    )
    if signed_in(viewer):
        seen |= Q(**{f"{prefix}publisher_id__in": _owned_publisher_ids(viewer)})
    return seen


def catalogs_visible_to(viewer: Viewer) -> CatalogQuerySet:
    """Every catalog ``viewer`` may see."""
    return Catalog.objects.filter(catalogs_visible_q(viewer))


def visible_to(*, viewer: Viewer, private: bool, publisher_id: int) -> bool:
    """Whether ``viewer`` may see an object that is ``private`` (or not) under the publisher
    ``publisher_id``: the rule the conditions above state in SQL."""
    if not private or _sees_everything(viewer):
        return True
    if not signed_in(viewer):
        return False
    owners = Publisher.owners.through.objects
    return owners.filter(publisher_id=publisher_id, user_id=viewer.pk).exists()


def publisher_visible(*, viewer: Viewer, publisher: Publisher) -> bool:
    """Whether ``viewer`` may see ``publisher`` (its page, its API record, its TUF role)."""
    private = publisher.visibility == PRIVATE
    return visible_to(viewer=viewer, private=private, publisher_id=publisher.pk)


def catalog_visible(*, viewer: Viewer, catalog: Catalog) -> bool:
    """Whether ``viewer`` may see ``catalog`` (and its versions, functions, files, revocations,
    schemas and OCI repository)."""
    return visible_to(viewer=viewer, private=catalog.private, publisher_id=catalog.publisher_id)


def publisher_list(*, viewer: Viewer = None) -> QuerySet[Publisher]:
    """Publishers ``viewer`` may see (every one for the system), with their owners."""
    return Publisher.objects.filter(publishers_visible_q(viewer)).prefetch_related("owners")


def publisher_get(*, slug: str, viewer: Viewer = None) -> Publisher:
    """The publisher ``slug`` or NotFoundError (also when ``viewer`` may not see it)."""
    try:
        return publisher_list(viewer=viewer).get(slug=slug)
    except Publisher.DoesNotExist:
        raise NotFoundError(f"Publisher '{slug}' does not exist.")


def _pulls_sum(**filters: Any) -> Coalesce:
    """A correlated SUM of pull counts (an index lookup per row, no GROUP BY over the join)."""
    return Coalesce(
        Subquery(
            CatalogVersionPulls.objects.filter(**filters)
            .order_by()
            .values(next(iter(filters)))
            .annotate(n=Sum("count"))
            .values("n")
        ),
        0,
    )


def catalog_list(*, publisher_slug: str | None = None, viewer: Viewer = None) -> CatalogQuerySet:
    """Catalogs ``viewer`` may see, optionally of one publisher, with their latest version and
    mirror joined in, and ``pulls``: every version's pulls."""
    qs = Catalog.objects.select_related(
        "publisher", "latest_version__signing_key", "mirror_source"
    ).annotate(pulls=_pulls_sum(version__catalog=OuterRef("pk")))
    qs = qs.filter(catalogs_visible_q(viewer))
    if publisher_slug is not None:
        qs = qs.filter(publisher__slug=publisher_slug)
    return qs


def catalog_get(*, publisher_slug: str, name: str, viewer: Viewer = None) -> Catalog:
    """The catalog ``publisher_slug/name`` or NotFoundError (also when ``viewer`` may not see
    it: the same words, so that a private catalog's name is not confirmed)."""
    try:
        return catalog_list(viewer=viewer).get(publisher__slug=publisher_slug, name=name)
    except Catalog.DoesNotExist:
        raise NotFoundError(f"Catalog '{publisher_slug}/{name}' does not exist.")


def catalog_version_list(*, catalog: Catalog) -> QuerySet[CatalogVersion]:
    """Versions of ``catalog``, newest first, without their content bytes, with ``pulls``."""
    return (
        CatalogVersion.objects.filter(catalog=catalog)
        .select_related("catalog__publisher", "created_by", "signing_key")
        .annotate(pulls=_pulls_sum(version=OuterRef("pk")))
        .order_by("-number")
    )


def catalog_pulls_recent(*, catalog: Catalog, days: int = 30) -> int:
    """``catalog``'s pulls in the last ``days`` days (UTC, today included; one query)."""
    first = datetime.datetime.now(datetime.UTC).date() - datetime.timedelta(days=days - 1)
    total = CatalogVersionPulls.objects.filter(version__catalog=catalog, day__gte=first).aggregate(
        n=Sum("count")
    )["n"]
    return int(total or 0)


def catalog_pulls_by_day(*, catalog: Catalog, days: int = 30) -> list[dict[str, Any]]:
    """The last ``days`` days (UTC, oldest first) of ``catalog``'s pulls: ``day``, ``https``,
    ``oci`` and ``total``, days without pulls included (one query)."""
    today = datetime.datetime.now(datetime.UTC).date()
    first = today - datetime.timedelta(days=days - 1)
    rows = (
        CatalogVersionPulls.objects.filter(version__catalog=catalog, day__gte=first)
        .order_by()
        .values_list("day", "via")
        .annotate(n=Sum("count"))
    )
    counts = {(day, via): int(n) for day, via, n in rows}
    result = []
    for offset in range(days):
        day = first + datetime.timedelta(days=offset)
        https, oci = counts.get((day, "https"), 0), counts.get((day, "oci"), 0)
        result.append({"day": day, "https": https, "oci": oci, "total": https + oci})
    return result


def catalog_version_with_content(*, catalog: Catalog, parsed: Any) -> CatalogVersion | None:
    """The version of ``catalog`` that publishing ``parsed`` (an engine Catalog) would return
    instead of creating one: the version with the same canonical content, or None."""
    import hashlib

    digest = "sha256:" + hashlib.sha256(parsed.canonical_bytes()).hexdigest()
    return CatalogVersion.objects.filter(catalog=catalog, digest=digest).first()


def catalog_version_get(*, catalog: Catalog, number: int) -> CatalogVersion:
    """Version ``number`` of ``catalog`` with its functions, or NotFoundError."""
    versions = catalog_version_list(catalog=catalog).prefetch_related(
        Prefetch("functions__versions", queryset=FunctionVersion.objects.order_by("position"))
    )
    try:
        return versions.get(number=number)
    except CatalogVersion.DoesNotExist:
        raise NotFoundError(f"Catalog '{catalog}' has no version {number}.")


def function_version_list(
    *, all_versions: bool = False, viewer: Viewer = None
) -> QuerySet[FunctionVersion]:
    """Function versions of the catalogs ``viewer`` may see, by default only those of each
    catalog's latest version."""
    qs = FunctionVersion.objects.select_related(
        "function", "catalog_version__catalog__publisher", "catalog_version__signing_key"
    )
    visible = catalogs_visible_q(viewer)
    if not all_versions:
        # An IN over the latest versions' ids: the database looks up each catalog's rows by
        # their index instead of scanning every function version ever published.
        latest = Catalog.objects.filter(visible, latest_version__isnull=False).values(
            "latest_version_id"
        )
        qs = qs.filter(catalog_version_id__in=Subquery(latest))
    elif visible:
        qs = qs.filter(catalogs_visible_q(viewer, prefix="catalog_version__catalog__"))
    return qs


# --- Serving fast path: one indexed query for the digest, bytes from an immutable cache. ---
# Plain SQL, written once: compiling the equivalent ORM query costs more than running it.

_P, _C, _V = (m._meta.db_table for m in (Publisher, Catalog, CatalogVersion))
_SQL_LATEST = (
    f"SELECT v.digest FROM {_C} c JOIN {_P} p ON p.id = c.publisher_id "
    f"JOIN {_V} v ON v.id = c.latest_version_id WHERE p.slug = %s AND c.name = %s"
)
_SQL_BY_NUMBER = (
    f"SELECT v.digest FROM {_V} v JOIN {_C} c ON c.id = v.catalog_id "
    f"JOIN {_P} p ON p.id = c.publisher_id WHERE p.slug = %s AND c.name = %s AND v.number = %s"
)
_SQL_BY_DIGEST = (
    f"SELECT v.digest FROM {_V} v JOIN {_C} c ON c.id = v.catalog_id "
    f"JOIN {_P} p ON p.id = c.publisher_id WHERE p.slug = %s AND c.name = %s AND v.digest = %s"
)


_SQL_ACCESS = (
    f"SELECT c.visibility, p.visibility, p.id FROM {_C} c JOIN {_P} p ON p.id = c.publisher_id "
    "WHERE p.slug = %s AND c.name = %s"
)


def catalog_serving_access(*, publisher_slug: str, catalog_name: str) -> tuple[bool, int] | None:
    """(private, publisher id) of a catalog, or None when there is no such catalog."""
    with connection.cursor() as cursor:
        cursor.execute(_SQL_ACCESS, (publisher_slug, catalog_name))
        row = cursor.fetchone()
    if row is None:
        return None
    return PRIVATE in (row[0], row[1]), int(row[2])


def _one_digest(sql: str, params: tuple) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return row[0] if row else None


def catalog_serving_latest_digest(*, publisher_slug: str, catalog_name: str) -> str | None:
    """Digest of the latest version of a catalog, or None."""
    return _one_digest(_SQL_LATEST, (publisher_slug, catalog_name))


def catalog_serving_digest_by_number(
    *, publisher_slug: str, catalog_name: str, number: int
) -> str | None:
    """Digest of version ``number`` of a catalog, or None."""
    return _one_digest(_SQL_BY_NUMBER, (publisher_slug, catalog_name, number))


def catalog_serving_has_digest(*, publisher_slug: str, catalog_name: str, digest: str) -> bool:
    """Whether a catalog has a version with this digest."""
    return _one_digest(_SQL_BY_DIGEST, (publisher_slug, catalog_name, digest)) is not None


def function_version_schema(
    *, publisher_slug: str, catalog_name: str, number: int, group: str, kind: str, version: str
) -> dict | None:
    """The ``schema`` of a function version in catalog version ``number`` (first definition
    wins, as KEP-2906 resolves), or None when there is no such version or it has no schema."""
    found = (
        FunctionVersion.objects.filter(
            catalog_version__catalog__publisher__slug=publisher_slug,
            catalog_version__catalog__name=catalog_name,
            catalog_version__number=number,
            group=group,
            kind=kind,
            name=version,
        )
        .order_by("function__position", "position")
        .values_list("schema", flat=True)
        .first()
    )
    return found if isinstance(found, dict) else None


def catalog_version_content(*, digest: str) -> bytes | None:
    """The canonical bytes of the version(s) ``digest``, from memory when already served once.

    None when no version has this digest. The bytes come from the object store (by digest);
    a version whose object is missing raises StorageError.
    """
    content = stored.content_cache.get(digest)
    if content is None:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT size FROM {_V} WHERE digest = %s LIMIT 1", (digest,))
            row = cursor.fetchone()
        if row is None:
            return None
        content = stored.stored_bytes_checked(digest=digest, size=int(row[0]))
        stored.content_cache.put(digest, content)
    return content


_SK = SigningKey._meta.db_table
_SQL_SIGNATURE = (
    f"SELECT v.id, v.signature, k.key_id FROM {_V} v LEFT JOIN {_SK} k ON k.id = v.signing_key_id "
    "WHERE v.digest = %s ORDER BY v.signature = '' LIMIT 1"
)


def catalog_version_signature(*, digest: str) -> tuple[int, str, str] | None:
    """(version id, base64 signature, key id) of the bytes ``digest``; empty strings if unsigned."""
    with connection.cursor() as cursor:
        cursor.execute(_SQL_SIGNATURE, (digest,))
        row = cursor.fetchone()
    if row is None:
        return None
    return int(row[0]), row[1] or "", row[2] or ""


def catalog_list_featured(*, limit: int = 6, viewer: Viewer = None) -> CatalogQuerySet:
    """Published catalogs for the landing page, with ``function_count`` of their latest version.

    Verified publishers first, then the most pulled, the most functions, the most versions, the
    latest publish.
    """
    return (
        catalog_list(viewer=viewer)
        .published()
        # A correlated count per catalog uses the definitions' catalog_version index; a join
        # with GROUP BY over every selected column took 10 ms over 1,000 functions.
        .annotate(
            function_count=Coalesce(
                Subquery(
                    FunctionDefinition.objects.filter(catalog_version=OuterRef("latest_version"))
                    .order_by()
                    .values("catalog_version")
                    .annotate(n=Count("pk"))
                    .values("n")
                ),
                0,
            )
        )
        .order_by(
            "-publisher__verified",
            "-pulls",
            "-function_count",
            "-latest_version__number",
            "-latest_version__created_at",
            "pk",
        )[:limit]
    )


def publisher_storage_used(*, publisher_id: int) -> int:
    """Bytes of every catalog version the publisher's catalogs hold (one query)."""
    total = CatalogVersion.objects.filter(catalog__publisher_id=publisher_id).aggregate(
        n=Sum("size")
    )["n"]
    return int(total or 0)
