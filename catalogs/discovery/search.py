"""Function search: one result per function (group + kind) over every catalog that carries it.

The search runs on the function versions of each catalog's latest version, filtered by the same
FilterSet as the API (``catalogs.publishing.api.filters``). A function carried by several catalogs
(mirrors,
forks, several versions) is one result listing those catalogs. Two queries whatever the size:

1. one narrow row per matching function version (a few short columns), grouped here into
   functions, which gives the count, every facet's counts, the sort and the page;
2. the display rows (description, tags, catalog, publisher, signing key) of that page only.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from django.core.paginator import Page, Paginator
from django.db import connections
from django.db.models import Exists, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.http import QueryDict

from catalogs.discovery.revoked import Revoked, revoked_in_search
from catalogs.publishing.api.filters import FunctionSearchFilter
from catalogs.publishing.models import CatalogVersion, CatalogVersionPulls, FunctionVersion
from catalogs.trust.models import Revocation

# Sort keys, their labels, in the order the page offers them.
SORTS: dict[str, str] = {
    "relevance": "Relevance",
    "name": "Name",
    "updated": "Recently updated",
    "catalogs": "Most catalogs",
    "pulls": "Most pulled",
}
# The largest page with every asset the layout links (htmx alone is 52 KB) stays within 100 KB.
PAGE_SIZES = (10, 20, 30)
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = PAGE_SIZES[-1]
RUNTIMES = ("container", "exec", "starlark")
# How many values the open-ended facets (publisher, tag) show: the most frequent first.
FACET_LIMIT = 12

# The narrow columns of step 1: the function version's own, no join; what each catalog version
# says (publisher, badges, date) comes from ``_catalog_versions``, one row per catalog.
_ROW = (
    "catalog_version_id",
    "group",
    "kind",
    "runtime_kinds_index",
    "tags_index",
    "requires_network",
    "requires_storage_mount",
)


class SearchParameterError(ValueError):
    """A search parameter that cannot be used as given: ``problem`` says why, ``fallback`` what
    the page shows instead (the API refuses the request with the problem alone)."""

    def __init__(self, param: str, problem: str, fallback: str, value: int = 1):
        super().__init__(f"{problem} {fallback}")
        self.param, self.problem, self.fallback = param, problem, fallback
        self.value = value  # the page shown instead


@dataclass
class Carrier:
    """One catalog carrying a function: where, whose, and the trust badges it has."""

    publisher: str
    publisher_verified: bool
    catalog: str
    versions: list[str]
    signed_key_id: str
    mirrored: bool
    updated_at: datetime
    # A mirror: the type of its upstream's verification at the last good sync ("" unverified),
    # and the upstream URL it mirrors.
    upstream_verification: str = ""
    upstream_url: str = ""
    # What this catalog says about the function (catalogs may word it differently).
    description: str = ""
    tags: list[str] = field(default_factory=list)
    # Its revoked versions: version, reason, detail, replacement, runtime_digest.
    revoked: list[dict[str, str]] = field(default_factory=list)


@dataclass
class FunctionResult:
    """One function (group + kind) with what every matching catalog says about it."""

    group: str
    kind: str
    description: str = ""
    tags: list[str] = field(default_factory=list)
    runtime_kinds: list[str] = field(default_factory=list)
    requires_network: bool = False
    requires_storage_mount: bool = False
    carriers: list[Carrier] = field(default_factory=list)
    updated_at: datetime | None = None
    score: int = 0
    revoked: bool = False  # some catalog carrying it revoked a version it lists
    pulls: int = 0  # of the catalogs carrying it (every version's), as "most pulled" sorts

    @property
    def publishers(self) -> list[str]:
        """The publishers whose catalogs define this group and kind: more than one is a
        collision (another publisher may be impersonating it), which the card says."""
        return sorted({c.publisher for c in self.carriers})

    @property
    def primary(self) -> Carrier | None:
        """The catalog the result links to first (carriers are listed best first)."""
        return self.carriers[0] if self.carriers else None


@dataclass(frozen=True)
class FacetValue:
    """One value of a facet: the query parameter that selects it, and how many functions of the
    current search have it."""

    param: str
    value: str
    label: str
    count: int


@dataclass(frozen=True)
class Facet:
    """A group of filters of the search page with the counts of their values."""

    label: str
    values: list[FacetValue]


@dataclass
class FunctionSearch:
    """A page of functions, the totals, the facets and what was asked for."""

    page: Page[FunctionResult]
    functions: int
    catalogs: int
    facets: list[Facet]
    sort: str
    page_size: int
    notices: list[str]


@dataclass(frozen=True)
class _CatalogVersion:
    """What step 1 needs of one catalog version whose functions matched."""

    catalog_id: int
    publisher: str
    verified: bool
    key_id: str  # of the key that signed it, "" when unsigned
    mirrored: bool
    revocations: bool = False  # its catalog has revoked something
    pulls: int = 0  # of its catalog, every version's


class _Group:
    """Step 1's rows of one function, folded (a plain slotted class: a thousand are made per
    search, so each starts with only what the row loop fills)."""

    __slots__ = (
        "kind",
        "group",
        "version_ids",
        "runtimes_indexes",
        "tags_indexes",
        "network",
        "storage",
        "catalogs",
        "publishers",
        "runtimes",
        "tags",
        "verified",
        "signed",
        "key_ids",
        "mirrored",
        "newest_version_id",
        "score",
        "revoked",
        "pulls",
    )

    def __init__(self, group: str, kind: str) -> None:
        self.group, self.kind = group, kind
        self.version_ids: set[int] = set()
        self.runtimes_indexes: set[str] = set()
        self.tags_indexes: set[str] = set()
        self.network = self.storage = False
        # Filled once per function after the row loop:
        self.catalogs: frozenset[int] = frozenset()
        self.publishers: frozenset[str] = frozenset()
        self.runtimes: frozenset[str] = frozenset()
        self.tags: frozenset[str] = frozenset()
        self.key_ids: frozenset[str] = frozenset()
        self.verified = self.signed = self.mirrored = False
        # The newest catalog version carrying it (ids grow with time: "recently updated").
        self.newest_version_id = 0
        self.score = 0
        self.revoked: list[Revoked] = []
        # Pulls of the catalogs carrying it ("most pulled").
        self.pulls = 0


def _split_index(index: str) -> list[str]:
    """'|a|b|' -> ['a', 'b']."""
    return [part for part in index.split("|") if part]


def relevance(*, words: list[str], group: str, kind: str, tags_index: str) -> int:
    """How well one function version matches ``words`` (all of which are in its search text).

    The kind counts most (the whole query as the kind, then a word as the kind, its start, inside
    it), then the group, then an exact tag; a word found only in the description or publisher
    still counts 1, so every match scores at least one per word.
    """
    kind_l, group_l = kind.lower(), group.lower()
    score = 100 if kind_l == "".join(words) else 0
    for word in words:
        if kind_l == word:
            score += 40
        elif kind_l.startswith(word):
            score += 20
        elif word in kind_l:
            score += 10
        elif word in group_l:
            score += 5
        elif f"|{word}|" in tags_index:
            score += 4
        else:
            score += 1
    return score


def parse_sort(value: str | None, *, query: str) -> str:
    """The sort to use: ``value`` if known, else relevance with a query and name without."""
    default = "relevance" if query.strip() else "name"
    if not value:
        return default
    if value not in SORTS:
        raise SearchParameterError(
            "sort",
            f"Unknown sort '{value}' (choose one of: {', '.join(SORTS)}).",
            f"Sorted by {SORTS[default].lower()} instead.",
        )
    return value


def parse_page_size(value: str | None) -> int:
    """A page size between 1 and MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE when not given."""
    if value in (None, ""):
        return DEFAULT_PAGE_SIZE
    fallback = f"Showing {DEFAULT_PAGE_SIZE} per page."
    try:
        size = int(str(value))
    except ValueError:
        raise SearchParameterError("page_size", f"Page size '{value}' is not a number.", fallback)
    if not 1 <= size <= MAX_PAGE_SIZE:
        raise SearchParameterError(
            "page_size", f"Page size {size} is out of range (1 to {MAX_PAGE_SIZE}).", fallback
        )
    return size


def parse_page(value: str | int | None, *, pages: int, count: int) -> int:
    """A page that exists (1 when not given)."""
    if value in (None, ""):
        return 1
    try:
        number = int(str(value))
    except ValueError:
        raise SearchParameterError("page", f"'{value}' is not a page number.", "Showing page 1.")
    if number < 1:
        raise SearchParameterError(
            "page", f"There is no page {number}; pages start at 1.", "Showing page 1."
        )
    if number > pages and count == 0:
        raise SearchParameterError(
            "page", f"There is no page {number}: nothing matches.", "Showing page 1."
        )
    if number > pages:
        plural = "page" if pages == 1 else "pages"
        raise SearchParameterError(
            "page",
            f"There is no page {number}: the results fill {pages} {plural}.",
            f"Showing page {pages}.",
            value=pages,
        )
    return number


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No garbage collection while step 1 builds its thousands of short-lived, acyclic objects.

    Each collection walks every object of the process (a Django process holds ~100,000): with it
    on, folding a thousand functions took 2.5x as long. Nothing made here forms a cycle, so
    nothing is left for the collector, which runs again as usual afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _rows(versions: QuerySet[FunctionVersion]) -> list[tuple]:
    """Step 1's rows, straight from the database cursor.

    The ORM compiles the query (the FilterSet's filters included); its per-value converters
    are skipped, which halves the time on a thousand rows (booleans may come back as 0/1).
    """
    # DISTINCT: the versions of a function in one catalog mostly agree on these columns.
    query = versions.order_by().values_list(*_ROW).distinct().query
    sql, params = query.sql_with_params()
    with connections[versions.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _catalog_versions(ids: set[int]) -> dict[int, _CatalogVersion]:
    """Publisher and badges of the catalog versions ``ids`` (a handful: one per catalog)."""
    if not ids:
        return {}
    revoked = Exists(Revocation.objects.filter(catalog_id=OuterRef("catalog_id")))
    pulls = Coalesce(
        Subquery(
            CatalogVersionPulls.objects.filter(version__catalog_id=OuterRef("catalog_id"))
            .order_by()
            .values("version__catalog_id")
            .annotate(n=Sum("count"))
            .values("n")
        ),
        0,
    )
    rows = (
        CatalogVersion.objects.filter(pk__in=ids)
        .annotate(revocations=revoked, pulls=pulls)
        .values_list(
            "pk",
            "catalog_id",
            "catalog__publisher__slug",
            "catalog__publisher__verified",
            "signing_key__key_id",
            "catalog__mirror_source__id",
            "revocations",
            "pulls",
        )
    )
    return {
        pk: _CatalogVersion(
            catalog_id=catalog_id,
            publisher=publisher,
            verified=bool(verified),
            key_id=key_id or "",
            mirrored=mirror_id is not None,
            revocations=bool(revocations),
            pulls=int(pulls or 0),
        )
        for pk, catalog_id, publisher, verified, key_id, mirror_id, revocations, pulls in rows
    }


def _fold(rows: list[tuple], words: list[str]) -> tuple[dict[tuple[str, str], _Group], set[int]]:
    """The rows folded per function, and the ids of the catalogs among them that revoked
    something."""
    # The per-row loop does as little as it can (a thousand rows and more); what depends on the
    # catalog versions or splits an index is worked out once per distinct value afterwards.
    groups: dict[tuple[str, str], _Group] = {}
    for version_id, group, kind, runtimes, tags, network, storage in rows:
        g = groups.get((group, kind))
        if g is None:
            g = groups[(group, kind)] = _Group(group, kind)
        g.version_ids.add(version_id)
        g.runtimes_indexes.add(runtimes)
        g.tags_indexes.add(tags)
        if network:
            g.network = True
        if storage:
            g.storage = True
    catalog_versions = _catalog_versions({row[0] for row in rows})
    by_versions: dict[frozenset[int], tuple] = {}
    split: dict[frozenset[str], frozenset[str]] = {}
    for g in groups.values():
        ids = frozenset(g.version_ids)
        found = by_versions.get(ids)
        if found is None:
            cvs = [catalog_versions[i] for i in ids]
            found = by_versions[ids] = (
                frozenset(cv.catalog_id for cv in cvs),
                frozenset(cv.publisher for cv in cvs),
                any(cv.verified for cv in cvs),
                frozenset(cv.key_id for cv in cvs if cv.key_id),
                any(cv.mirrored for cv in cvs),
                max(ids),
                # One catalog version per catalog here (each catalog's latest).
                sum(cv.pulls for cv in cvs),
            )
        (
            g.catalogs,
            g.publishers,
            g.verified,
            g.key_ids,
            g.mirrored,
            g.newest_version_id,
            g.pulls,
        ) = found
        for indexes, attr in ((g.runtimes_indexes, "runtimes"), (g.tags_indexes, "tags")):
            key = frozenset(indexes)
            values = split.get(key)
            if values is None:
                values = split[key] = frozenset(v for i in key for v in _split_index(i))
            setattr(g, attr, values)
        if words:
            # Relevance depends on the group, kind and tags only: once per distinct tags.
            g.score = max(
                relevance(words=words, group=g.group, kind=g.kind, tags_index=tags)
                for tags in g.tags_indexes
            )
        g.signed = bool(g.key_ids)
    return groups, {cv.catalog_id for cv in catalog_versions.values() if cv.revocations}


def _sorted(groups: list[_Group], sort: str) -> list[_Group]:
    by_name = sorted(groups, key=lambda g: (g.kind.lower(), g.group.lower(), g.kind, g.group))
    # Python's sort is stable: each order below falls back on the name.
    if sort == "relevance":
        return sorted(by_name, key=lambda g: -g.score)
    if sort == "updated":
        return sorted(by_name, key=lambda g: -g.newest_version_id)
    if sort == "catalogs":
        return sorted(by_name, key=lambda g: (-len(g.catalogs), not g.verified))
    if sort == "pulls":
        return sorted(by_name, key=lambda g: -g.pulls)
    return by_name


def _count(groups: list[_Group], values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for g in groups:
        for value in values(g):
            counts[value] = counts.get(value, 0) + 1
    return counts


def _top(param: str, counts: dict[str, int]) -> list[FacetValue]:
    best = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:FACET_LIMIT]
    return [FacetValue(param, value, value, count) for value, count in best]


# The facets whose values are OR-ed (several may be ticked), and what each counts of a function.
MULTI_FACETS: dict[str, Any] = {
    "runtime": lambda g: g.runtimes,
    "publisher": lambda g: g.publishers,
    "tag": lambda g: g.tags,
    "key": lambda g: g.key_ids,
}


def _facets(groups: list[_Group], others: dict[str, dict[str, int]]) -> list[Facet]:
    """Counts of functions (not versions) per facet value, under the current query and filters;
    the parameters are those of the FilterSet (``runtime=exec``, ``verified=on``...). A facet
    with values ticked takes its counts from ``others[param]``, worked out without its own
    filter, so that its other values say how many a second tick adds."""

    def counts(param: str) -> dict[str, int]:
        found = others.get(param)
        return _count(groups, MULTI_FACETS[param]) if found is None else found

    runtimes = counts("runtime")
    on = "on"
    return [
        Facet(
            "Runtime", [FacetValue("runtime", r, r, runtimes[r]) for r in RUNTIMES if r in runtimes]
        ),
        Facet(
            "Trust",
            [
                FacetValue("verified", on, "Verified publisher", sum(g.verified for g in groups)),
                FacetValue("signed", on, "Signed by this registry", sum(g.signed for g in groups)),
                FacetValue("mirrored", on, "Mirrored", sum(g.mirrored for g in groups)),
                FacetValue("revoked", on, "Revoked", sum(bool(g.revoked) for g in groups)),
            ],
        ),
        Facet(
            "Needs",
            [
                FacetValue("network", on, "Network", sum(g.network for g in groups)),
                FacetValue("storage", on, "Storage mount", sum(g.storage for g in groups)),
            ],
        ),
        Facet("Publisher", _top("publisher", counts("publisher"))),
        Facet("Tag", _top("tag", counts("tag"))),
        Facet("Signing key", _top("key", counts("key"))),
    ]


def _carrier_rank(carrier: Carrier) -> tuple:
    # Verified publishers first, then signed, then the catalog published at (not mirrored), newest.
    return (
        not carrier.publisher_verified,
        not carrier.signed_key_id,
        carrier.mirrored,
        -carrier.updated_at.timestamp(),
        carrier.publisher,
        carrier.catalog,
    )


_DISPLAY = (
    "group",
    "kind",
    "name",
    "catalog_version__catalog_id",
    "catalog_version__catalog__name",
    "catalog_version__catalog__publisher__slug",
    "catalog_version__catalog__publisher__verified",
    "catalog_version__catalog__mirror_source__id",
    "catalog_version__catalog__mirror_source__verification__type",
    "catalog_version__catalog__mirror_source__url",
    "catalog_version__signing_key__key_id",
    "catalog_version__created_at",
    "function__description",
    "function__tags",
)


def _results(versions: QuerySet[FunctionVersion], page: list[_Group]) -> list[FunctionResult]:
    """Step 2: the display rows of the functions on this page, folded per function."""
    if not page:
        return []
    results = {
        (g.group, g.kind): FunctionResult(
            group=g.group,
            kind=g.kind,
            runtime_kinds=[r for r in RUNTIMES if r in g.runtimes],
            requires_network=g.network,
            requires_storage_mount=g.storage,
            score=g.score,
            revoked=bool(g.revoked),
            pulls=g.pulls,
        )
        for g in page
    }
    # Two INs use the (group, kind) index; the pairs they also let through are dropped below.
    rows = (
        versions.filter(group__in={g.group for g in page}, kind__in={g.kind for g in page})
        .order_by("function__position", "position")
        .values_list(*_DISPLAY)
    )
    carriers: dict[tuple[str, str, int], Carrier] = {}
    for (
        group,
        kind,
        name,
        catalog_id,
        catalog,
        publisher,
        verified,
        mirror_id,
        upstream_verification,
        upstream_url,
        key_id,
        created_at,
        description,
        tags,
    ) in rows:
        result = results.get((group, kind))
        if result is None:
            continue
        carrier = carriers.get((group, kind, catalog_id))
        if carrier is None:
            carrier = carriers[(group, kind, catalog_id)] = Carrier(
                publisher=publisher,
                publisher_verified=verified,
                catalog=catalog,
                versions=[],
                signed_key_id=key_id or "",
                mirrored=mirror_id is not None,
                updated_at=created_at,
                upstream_verification=str(upstream_verification or ""),
                upstream_url=upstream_url or "",
                description=description,
                tags=list(tags or []),
            )
            result.carriers.append(carrier)
        if name not in carrier.versions:
            carrier.versions.append(name)
    for g in page:
        for r in g.revoked:
            carrier = carriers.get((g.group, g.kind, r.catalog_id))
            if carrier is not None:
                carrier.revoked.append(r.as_dict())
    for result in results.values():
        result.carriers.sort(key=_carrier_rank)
        result.updated_at = max((c.updated_at for c in result.carriers), default=None)
        if result.primary is not None:
            result.description, result.tags = result.primary.description, result.primary.tags
    return [results[(g.group, g.kind)] for g in page]


def _mark_revoked(
    versions: QuerySet[FunctionVersion], groups: list[_Group], catalog_ids: set[int]
) -> None:
    """Each function's revoked versions (only searches over catalogs that revoked something
    pay for it)."""
    found = revoked_in_search(
        versions=versions, pairs={(g.group, g.kind) for g in groups}, catalog_ids=catalog_ids
    )
    for g in groups:
        g.revoked = found.get((g.group, g.kind), [])


def _functions(
    versions: QuerySet[FunctionVersion], words: list[str], revoked: bool | None
) -> tuple[list[tuple], list[_Group]]:
    """Step 1: the rows and the functions they fold into, revocations marked and filtered."""
    with _gc_paused():
        rows = _rows(versions)
        folded, revoking = _fold(rows, words)
        groups = list(folded.values())
    if revoking:
        _mark_revoked(versions, groups, revoking)
    if revoked is not None:
        groups = [g for g in groups if bool(g.revoked) == revoked]
    return rows, groups


# The column of step 1's rows each multi-select facet reads its values from (publisher and key:
# from the catalog version).
_FACET_COLUMNS = {"runtime": "runtime_kinds_index", "tag": "tags_index"}


def _facet_counts(
    versions: QuerySet[FunctionVersion], param: str, revoked: bool | None
) -> dict[str, int]:
    """{value of the facet ``param``: functions among ``versions`` with it}: one narrow query
    (and the catalog versions' for publisher and key), no full fold; the Revoked facet ticked
    needs each function's revocations, so it takes the full step 1."""
    if revoked is not None:
        return _count(_functions(versions, [], revoked)[1], MULTI_FACETS[param])
    column = _FACET_COLUMNS.get(param, "catalog_version_id")
    rows: list[tuple[Any, ...]] = list(
        versions.order_by().values_list("group", "kind", column).distinct()
    )
    values: dict[tuple[str, str], set[str]] = {}
    if column == "catalog_version_id":
        cvs = _catalog_versions({cv for _, _, cv in rows})
        attr = "publisher" if param == "publisher" else "key_id"
        for group, kind, cv_id in rows:
            value = getattr(cvs[cv_id], attr)
            if value:
                values.setdefault((group, kind), set()).add(value)
    else:
        for group, kind, index in rows:
            values.setdefault((group, kind), set()).update(_split_index(index))
    counts: dict[str, int] = {}
    for found in values.values():
        for value in found:
            counts[value] = counts.get(value, 0) + 1
    return counts


@dataclass
class SearchFilters:
    """The FilterSet of a search, and for each multi-select facet ticked the versions found
    without that facet's own filter (its counts)."""

    filter: FunctionSearchFilter
    facet_versions: dict[str, QuerySet[FunctionVersion]]

    @property
    def corrections(self) -> dict[str, list[str]]:
        return self.filter.corrections


def search_filters(params: QueryDict, *, versions: QuerySet[FunctionVersion]) -> SearchFilters:
    """``params`` applied to ``versions`` (those the viewer may see): several values of one
    facet match any of them, different facets must all match."""
    flt = FunctionSearchFilter(params, queryset=versions)
    flt.qs  # noqa: B018 -- runs the filters, which find the query's typos (corrections)
    others = {}
    for param in MULTI_FACETS:
        if params.getlist(param):
            rest = params.copy()
            rest.pop(param)
            other = FunctionSearchFilter(rest, queryset=versions, corrections=flt.corrections)
            others[param] = other.qs
    return SearchFilters(filter=flt, facet_versions=others)


def function_search(
    *,
    versions: QuerySet[FunctionVersion],
    query: str = "",
    sort: str | None = None,
    page: str | int | None = None,
    page_size: str | int | None = None,
    strict: bool = False,
    revoked: bool | None = None,
    facet_versions: dict[str, QuerySet[FunctionVersion]] | None = None,
) -> FunctionSearch:
    """One page of the functions among ``versions`` (already filtered), one result per function.

    ``query`` only ranks (the FilterSet has already kept the versions matching it). A bad
    ``sort``, ``page`` or ``page_size`` falls back on its default with a notice saying so, or
    with ``strict`` raises SearchParameterError. ``revoked``: True keeps only the functions
    with a revoked version, False only those without; revoked functions are listed last.
    ``facet_versions``: for each multi-select facet with values ticked, the versions filtered
    by everything but that facet (its counts; one more query per facet ticked).
    """
    notices: list[str] = []

    def fallback(err: SearchParameterError) -> None:
        if strict:
            raise err
        notices.append(str(err))

    try:
        chosen_sort = parse_sort(sort, query=query)
    except SearchParameterError as err:
        fallback(err)
        chosen_sort = parse_sort(None, query=query)
    try:
        size = parse_page_size(None if page_size is None else str(page_size))
    except SearchParameterError as err:
        fallback(err)
        size = DEFAULT_PAGE_SIZE

    words = query.lower().split()
    rows, groups = _functions(versions, words, revoked)
    others = {
        param: _facet_counts(qs, param, revoked)
        for param, qs in (facet_versions or {}).items()
        if param in MULTI_FACETS
    }
    ordered = sorted(_sorted(groups, chosen_sort), key=lambda g: bool(g.revoked))
    paginator = Paginator(ordered, size)
    try:
        number = parse_page(page, pages=paginator.num_pages, count=paginator.count)
    except SearchParameterError as err:
        fallback(err)
        number = err.value
    groups_page = paginator.page(number)
    # The same page, holding the results worked out for its functions.
    current = Page(
        _results(versions, list(groups_page.object_list)),
        number,
        cast("Paginator[FunctionResult]", paginator),
    )
    return FunctionSearch(
        page=current,
        functions=len(groups),
        catalogs=len({row[0] for row in rows}),
        facets=_facets(groups, others),
        sort=chosen_sort,
        page_size=size,
        notices=notices,
    )
