"""Function search: one result per function (group + kind) over every catalog that carries it.

The search runs on the function versions of each catalog's latest version, filtered by the same
FilterSet as the API (``catalogs.api.filters``). A function carried by several catalogs (mirrors,
forks, several versions) is one result listing those catalogs. Two queries whatever the size:

1. one narrow row per matching function version (a few short columns), grouped here into
   functions, which gives the count, every facet's counts, the sort and the page;
2. the display rows (description, tags, catalog, publisher, signing key) of that page only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from operator import or_
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet

from catalogs.models import FunctionVersion

# Sort keys, their labels, in the order the page offers them.
SORTS: dict[str, str] = {
    "relevance": "Relevance",
    "name": "Name",
    "updated": "Recently updated",
    "catalogs": "Most catalogs",
}
PAGE_SIZES = (10, 20, 50)
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = PAGE_SIZES[-1]
RUNTIMES = ("container", "exec", "starlark")
# How many values the open-ended facets (publisher, tag) show: the most frequent first.
FACET_LIMIT = 12

# The narrow columns of step 1, by position.
_ROW = (
    "group",
    "kind",
    "catalog_version__catalog_id",
    "catalog_version__catalog__publisher__slug",
    "catalog_version__catalog__publisher__verified",
    "catalog_version__signing_key_id",
    "catalog_version__catalog__mirror_source__id",
    "catalog_version__created_at",
    "runtime_kinds_index",
    "tags_index",
    "requires_network",
    "requires_storage_mount",
)


class SearchParameterError(ValueError):
    """A search parameter that cannot be used as given; the search goes on with a default."""


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
    # What this catalog says about the function (catalogs may word it differently).
    description: str = ""
    tags: list[str] = field(default_factory=list)


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

    page: Page
    functions: int
    versions: int
    catalogs: int
    facets: list[Facet]
    sort: str
    page_size: int
    notices: list[str]


@dataclass
class _Group:
    """Step 1's rows of one function, folded."""

    kind: str
    group: str
    catalogs: set[int] = field(default_factory=set)
    publishers: set[str] = field(default_factory=set)
    runtimes: set[str] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)
    verified: bool = False
    signed: bool = False
    mirrored: bool = False
    network: bool = False
    storage: bool = False
    updated_at: datetime | None = None
    score: int = 0


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
        choices = ", ".join(SORTS)
        raise SearchParameterError(
            f"Unknown sort '{value}'; sorted by {SORTS[default].lower()} instead "
            f"(choose one of: {choices})."
        )
    return value


def parse_page_size(value: str | None) -> int:
    """A page size between 1 and MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE when not given."""
    if value in (None, ""):
        return DEFAULT_PAGE_SIZE
    try:
        size = int(str(value))
    except ValueError:
        raise SearchParameterError(
            f"Page size '{value}' is not a number; showing {DEFAULT_PAGE_SIZE} per page."
        )
    if not 1 <= size <= MAX_PAGE_SIZE:
        raise SearchParameterError(
            f"Page size {size} is out of range (1 to {MAX_PAGE_SIZE}); "
            f"showing {DEFAULT_PAGE_SIZE} per page."
        )
    return size


def _fold(rows: list[tuple], words: list[str]) -> dict[tuple[str, str], _Group]:
    groups: dict[tuple[str, str], _Group] = {}
    for (
        group,
        kind,
        catalog_id,
        publisher,
        verified,
        key_id,
        mirror_id,
        created_at,
        runtimes,
        tags,
        network,
        storage,
    ) in rows:
        g = groups.get((group, kind))
        if g is None:
            g = groups[(group, kind)] = _Group(kind=kind, group=group)
        g.catalogs.add(catalog_id)
        g.publishers.add(publisher)
        g.runtimes.update(_split_index(runtimes))
        g.tags.update(_split_index(tags))
        g.verified = g.verified or verified
        g.signed = g.signed or key_id is not None
        g.mirrored = g.mirrored or mirror_id is not None
        g.network = g.network or network
        g.storage = g.storage or storage
        if g.updated_at is None or created_at > g.updated_at:
            g.updated_at = created_at
        if words:
            g.score = max(g.score, relevance(words=words, group=group, kind=kind, tags_index=tags))
    return groups


def _sorted(groups: list[_Group], sort: str) -> list[_Group]:
    by_name = sorted(groups, key=lambda g: (g.kind.lower(), g.group.lower(), g.kind, g.group))
    # Python's sort is stable: each order below falls back on the name.
    if sort == "relevance":
        return sorted(by_name, key=lambda g: -g.score)
    if sort == "updated":
        return sorted(by_name, key=lambda g: g.updated_at or datetime.min, reverse=True)
    if sort == "catalogs":
        return sorted(by_name, key=lambda g: (-len(g.catalogs), not g.verified))
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


def _facets(groups: list[_Group]) -> list[Facet]:
    """Counts of functions (not versions) per facet value, under the current query and filters;
    the parameters are those of the FilterSet (``runtime=exec``, ``verified=on``...)."""
    runtimes = _count(groups, lambda g: g.runtimes)
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
            ],
        ),
        Facet(
            "Needs",
            [
                FacetValue("network", on, "Network", sum(g.network for g in groups)),
                FacetValue("storage", on, "Storage mount", sum(g.storage for g in groups)),
            ],
        ),
        Facet("Publisher", _top("publisher", _count(groups, lambda g: g.publishers))),
        Facet("Tag", _top("tag", _count(groups, lambda g: g.tags))),
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


def _results(versions: QuerySet[FunctionVersion], page: list[_Group]) -> list[FunctionResult]:
    """Step 2: the display rows of the functions on this page, folded per function."""
    if not page:
        return []
    keys = reduce(or_, (Q(group=g.group, kind=g.kind) for g in page))
    rows = (
        versions.filter(keys)
        .select_related(
            "function",
            "catalog_version__catalog__publisher",
            "catalog_version__catalog__mirror_source",
            "catalog_version__signing_key",
        )
        .only(
            "group",
            "kind",
            "name",
            "position",
            "function__description",
            "function__tags",
            "function__position",
            "catalog_version__created_at",
            "catalog_version__catalog__name",
            "catalog_version__catalog__publisher__slug",
            "catalog_version__catalog__publisher__verified",
            "catalog_version__catalog__mirror_source__id",
            "catalog_version__signing_key__key_id",
        )
        .order_by("function__position", "position")
    )
    results = {
        (g.group, g.kind): FunctionResult(
            group=g.group,
            kind=g.kind,
            runtime_kinds=[r for r in RUNTIMES if r in g.runtimes],
            requires_network=g.network,
            requires_storage_mount=g.storage,
            updated_at=g.updated_at,
            score=g.score,
        )
        for g in page
    }
    carriers: dict[tuple[str, str, int], Carrier] = {}
    for v in rows:
        version = v.catalog_version
        catalog = version.catalog
        key = (v.group, v.kind, catalog.pk)
        carrier = carriers.get(key)
        if carrier is None:
            mirror = getattr(catalog, "mirror_source", None)
            carrier = carriers[key] = Carrier(
                publisher=catalog.publisher.slug,
                publisher_verified=catalog.publisher.verified,
                catalog=catalog.name,
                versions=[],
                signed_key_id=version.signing_key.key_id if version.signing_key else "",
                mirrored=mirror is not None,
                updated_at=version.created_at,
                description=v.function.description,
                tags=list(v.function.tags or []),
            )
            results[(v.group, v.kind)].carriers.append(carrier)
        if v.name not in carrier.versions:
            carrier.versions.append(v.name)
    for result in results.values():
        result.carriers.sort(key=_carrier_rank)
        if result.primary is not None:
            result.description, result.tags = result.primary.description, result.primary.tags
    return [results[(g.group, g.kind)] for g in page]


def function_search(
    *,
    versions: QuerySet[FunctionVersion],
    query: str = "",
    sort: str | None = None,
    page: str | int | None = None,
    page_size: str | int | None = None,
) -> FunctionSearch:
    """One page of the functions among ``versions`` (already filtered), one result per function.

    ``query`` only ranks (the FilterSet has already kept the versions matching it). A bad
    ``sort``, ``page`` or ``page_size`` falls back on its default with a notice saying so.
    """
    notices: list[str] = []
    try:
        chosen_sort = parse_sort(sort, query=query)
    except SearchParameterError as err:
        notices.append(str(err))
        chosen_sort = parse_sort(None, query=query)
    try:
        size = parse_page_size(None if page_size is None else str(page_size))
    except SearchParameterError as err:
        notices.append(str(err))
        size = DEFAULT_PAGE_SIZE

    words = query.lower().split()
    rows = list(versions.order_by().values_list(*_ROW))
    groups = list(_fold(rows, words).values())
    ordered = _sorted(groups, chosen_sort)
    paginator = Paginator(ordered, size)
    number = _page_number(page, paginator.num_pages, paginator.count, notices)
    current = paginator.page(number)
    current.object_list = _results(versions, list(current.object_list))
    return FunctionSearch(
        page=current,
        functions=len(groups),
        versions=len(rows),
        catalogs=len({row[2] for row in rows}),
        facets=_facets(groups),
        sort=chosen_sort,
        page_size=size,
        notices=notices,
    )


def _page_number(value: str | int | None, pages: int, count: int, notices: list[str]) -> int:
    """A page that exists; a notice when the asked one does not."""
    if value in (None, ""):
        return 1
    try:
        number = int(str(value))
    except ValueError:
        notices.append(f"'{value}' is not a page number; showing page 1.")
        return 1
    if number < 1:
        notices.append(f"There is no page {number}; pages start at 1. Showing page 1.")
        return 1
    if number > pages and count == 0:
        notices.append(f"There is no page {number}: nothing matches. Showing page 1.")
        return 1
    if number > pages:
        plural = "page" if pages == 1 else "pages"
        notices.append(
            f"There is no page {number}: the results fill {pages} {plural}. Showing page {pages}."
        )
        return pages
    return number
