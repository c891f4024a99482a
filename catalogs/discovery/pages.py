"""The search page: validate the query string, call catalogs.discovery.search, render cards and
facets.

Every parameter a visitor can mistype (a filter, the sort, the page, the page size) gets a notice
on the page saying what was used instead; none is an error page.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, urlencode

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import RFC3986_SUBDELIMS
from django.utils.timezone import localtime

from catalogs.discovery import search
from catalogs.mirroring.badges import upstream_check
from catalogs.pages import page_render
from catalogs.publishing import selectors
from catalogs.publishing.api.filters import FunctionSearchFilter
from catalogs.publishing.models import Catalog

# Filters shown as facets (their values are links); the rest are typed into "More filters".
TYPED_FILTERS = ("group", "kind", "version", "catalog", "key")
# Catalogs listed on each card; a page holding one function lists up to ALL_CARRIERS (a page of
# 30 cards listing every catalog of each would pass 100 KB).
CARD_CARRIERS = 3
ALL_CARRIERS = 100
# "Every function, <phrase>." above an unfiltered list.
SORT_PHRASES = {
    "relevance": "by relevance",
    "name": "by name",
    "updated": "recently updated first",
    "catalogs": "carried by the most catalogs first",
    "pulls": "most pulled first",
}
# Parameters that are not filters.
NOT_FILTERS = ("q", "sort", "page", "page_size")


def _link(params: QueryDict, **changes: str | None) -> str:
    """``?...`` for ``params`` with ``changes`` (None removes a key); a new filter goes back to
    page 1, so the page is always dropped unless given."""
    query = params.copy()
    query.pop("page", None)
    for key, value in changes.items():
        query.pop(key, None)
        if value is not None:
            query[key] = value
    encoded = query.urlencode()
    return f"?{encoded}" if encoded else "?"


def _same(param: str, a: str, b: str) -> bool:
    return a.lower() == b.lower() if param in ("tag", "runtime") else a == b


def _toggle(params: QueryDict, param: str, value: str) -> str:
    """``?...`` with ``value`` ticked or unticked among the values of ``param`` (a multi-select
    facet keeps its other values: ``?publisher=a&publisher=b``), back to page 1."""
    query = params.copy()
    query.pop("page", None)
    values = query.getlist(param)
    kept = [v for v in values if not _same(param, v, value)]
    if len(kept) == len(values) and param in search.MULTI_FACETS:
        kept.append(value)
    elif len(kept) == len(values):
        kept = [value]
    query.setlist(param, kept)
    if not kept:
        query.pop(param)
    encoded = query.urlencode()
    return f"?{encoded}" if encoded else "?"


def _facets(params: QueryDict, facets: list[search.Facet]) -> list[dict[str, Any]]:
    """Facets with each value's checkbox link; a ticked value is kept even at a zero count or
    beyond the values a facet lists."""
    shown = []
    for facet in facets:
        values = []
        listed = set()
        for v in facet.values:
            selected = any(_same(v.param, given, v.value) for given in params.getlist(v.param))
            listed.add(v.value.lower())
            if v.count or selected:
                href = _toggle(params, v.param, v.value)
                values.append({"value": v, "selected": selected, "href": href})
        param = facet.values[0].param if facet.values else None
        if param in search.MULTI_FACETS:
            for given in params.getlist(param):
                if given.lower() not in listed:
                    listed.add(given.lower())
                    v = search.FacetValue(param, given, given, 0)
                    href = _toggle(params, param, given)
                    values.append({"value": v, "selected": True, "href": href})
        if values:
            shown.append({"label": facet.label, "values": values})
    return shown


def _active_filters(params: QueryDict) -> list[dict[str, str]]:
    """The filters in use, one per value, each with the link that removes it."""
    active = []
    for key, values in params.lists():
        if key in NOT_FILTERS:
            continue
        for value in values:
            if not value:
                continue
            label = key if value == "on" else f"{key}: {value}"
            active.append({"label": label, "href": _toggle(params, key, value)})
    return active


def _function_url_format() -> str:
    """``reverse('web:function')`` as a format string: reversing per link cost a fifth of the
    page's rendering; the arguments are quoted as ``reverse`` quotes them."""
    names = ("publisher", "catalog", "group", "kind")
    sample = reverse("web:function", args=[f"--{name}--" for name in names])
    sample = sample.replace("{", "{{").replace("}", "}}")
    for name in names:
        sample = sample.replace(f"--{name}--", "{" + name + "}")
    return sample


def _q(value: str) -> str:
    return quote(value, safe=RFC3986_SUBDELIMS + "~:@")


def _cards(results: Iterable[search.FunctionResult], limit: int) -> list[dict[str, Any]]:
    """What each card shows, worked out here once (a template looks each name up slowly)."""
    url = _function_url_format()
    cards = []
    for r in results:
        group, kind = _q(r.group), _q(r.kind)
        carriers = [
            {
                "href": url.format(
                    publisher=_q(c.publisher), catalog=_q(c.catalog), group=group, kind=kind
                ),
                "name": f"{c.publisher}/{c.catalog}",
                "verified": c.publisher_verified,
                "signed": bool(c.signed_key_id),
                "mirrored": c.mirrored,
                "upstream": upstream_check(c.upstream_verification) if c.mirrored else None,
                "revoked": c.revoked,
                "when": f"{', '.join(c.versions)} · {localtime(c.updated_at):%Y-%m-%d}",
            }
            for c in r.carriers[:limit]
        ]
        cards.append(
            {
                "result": r,
                "href": carriers[0]["href"] if carriers else "",
                "carriers": carriers,
                "hidden": max(0, len(r.carriers) - limit),
                "more_href": "?" + urlencode({"group": r.group, "kind": r.kind}),
            }
        )
    return cards


def _filter_errors(flt: FunctionSearchFilter) -> list[str]:
    notices = []
    for name, errors in flt.errors.items():
        for error in errors:
            notices.append(f"Filter '{name}' ignored: {error}")
    return notices


def _corrections(corrections: dict[str, list[str]]) -> list[str]:
    """A notice per mistyped word: what was searched instead."""
    return [
        f"No function contains “{word}”: showing those with "
        + " or ".join(f"“{n}”" for n in near)
        + "."
        for word, near in corrections.items()
    ]


def _revoked_param(value: str | None) -> bool | None:
    """The Revoked facet's ``revoked=on`` (or the API's ``true``/``false``); anything else: any."""
    return {"on": True, "true": True, "false": False, "off": False}.get((value or "").lower())


def _catalogs_below(request: HttpRequest) -> list[Catalog]:
    """The catalogs listed below the results: those the landing section (shown to signed-out
    visitors without a query) does not show already."""
    catalogs = selectors.catalog_list(viewer=request.user).published()
    if not request.user.is_authenticated:
        # A subquery: the list stays one query.
        featured = selectors.catalog_list_featured(viewer=request.user)
        catalogs = catalogs.exclude(pk__in=featured.values("pk"))
    return list(catalogs[:50])


def search_page(request: HttpRequest) -> HttpResponse:
    """One result per function over every catalog's latest version: facets, sorts, pages."""
    params = request.GET
    if any(value.strip() == "" for _, values in params.lists() for value in values):
        # The form sends its empty filter fields too: answer at the URL without them.
        cleaned = QueryDict(mutable=True)
        for key, values in params.lists():
            kept = [value for value in values if value.strip()]
            if kept:
                cleaned.setlist(key, kept)
        encoded = cleaned.urlencode()
        return redirect(f"{request.path}?{encoded}" if encoded else request.path)
    filters = search.search_filters(
        params, versions=selectors.function_version_list(viewer=request.user)
    )
    flt = filters.filter
    notices = _filter_errors(flt) + _corrections(filters.corrections)
    query = (params.get("q") or "").strip()
    found = search.function_search(
        versions=flt.qs,
        query=flt.ranked_query,
        sort=params.get("sort"),
        page=params.get("page"),
        page_size=params.get("page_size"),
        revoked=_revoked_param(params.get("revoked")),
        facet_versions=filters.facet_versions,
    )
    page = found.page
    active = _active_filters(params)
    limit = ALL_CARRIERS if len(page.object_list) == 1 else CARD_CARRIERS
    context = {
        "filter": flt,
        "found": found,
        "page": page,
        "cards": _cards(page.object_list, limit),
        "query_text": query,
        "notices": notices + found.notices,
        "facets": _facets(params, found.facets),
        "active_filters": active,
        "clear_filters": _link(QueryDict(mutable=True), q=query or None),
        # Hidden inputs keep the filters when a new query is typed.
        "kept": [
            (key, value)
            for key in params
            if key not in ("q", "page", *TYPED_FILTERS)
            for value in params.getlist(key)
        ],
        "typed_open": any(params.get(key) for key in TYPED_FILTERS),
        "sort_phrase": SORT_PHRASES[found.sort],
        "sorts": [
            {"key": key, "label": label, "href": _link(params, sort=key)}
            for key, label in search.SORTS.items()
            if key != "relevance" or query
        ],
        "page_sizes": [
            {"size": size, "href": _link(params, page_size=str(size))} for size in search.PAGE_SIZES
        ],
        "page_links": [
            {"number": n, "href": _link(params, page=str(n)) if isinstance(n, int) else ""}
            for n in page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1)
        ],
        "previous_href": _link(params, page=str(page.number - 1)) if page.has_previous() else "",
        "next_href": _link(params, page=str(page.number + 1)) if page.has_next() else "",
        "catalogs": _catalogs_below(request) if not params else None,
    }
    return page_render(request, "search.html", context)
