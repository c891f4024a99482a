"""catalogs.discovery.search: one result per function over every catalog carrying it, sorts,
facets, pages."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from catalogs.discovery import search
from catalogs.mirroring.models import MirrorSource
from catalogs.publishing import selectors, services
from catalogs.publishing.api.filters import FunctionVersionFilter
from tests.catalogs.factories import CatalogFactory, PublisherFactory, catalog_yaml

pytestmark = pytest.mark.django_db


def _publish(catalog, *functions, runtime="container", network=False):
    text = catalog_yaml(*functions, runtime=runtime)
    if network:
        text = text.replace("          image:", "          requireNetwork: true\n          image:")
    services.catalog_version_publish(catalog=catalog, content=text, actor=None)
    catalog.refresh_from_db()
    return catalog


def _search(query: str = "", **kwargs) -> search.FunctionSearch:
    """What the page and the API do: the FilterSet first, then the search."""
    params = QueryDict(query)
    versions = FunctionVersionFilter(params, queryset=selectors.function_version_list()).qs
    return search.function_search(versions=versions, query=params.get("q", ""), **kwargs)


def _names(found: search.FunctionSearch) -> list[str]:
    return [r.kind for r in found.page.object_list]


@pytest.fixture
def registry(db):
    """SetNamespace in three catalogs (acme verified; zeta's fork; a mirror), plus others.

    acme/core (first): SetNamespace, SetLabels; zeta/fork: SetNamespace, Untag (exec);
    mirrors/upstream (last, a mirror): SetNamespace (needs network), Annotate.
    """
    acme = PublisherFactory(slug="acme", verified=True)
    zeta = PublisherFactory(slug="zeta")
    mirrors = PublisherFactory(slug="mirrors")
    _publish(
        CatalogFactory(publisher=acme, name="core"),
        ("example.com", "SetNamespace", "v1"),
        ("example.com", "SetLabels", "v1"),
    )
    _publish(
        CatalogFactory(publisher=zeta, name="fork"),
        ("example.com", "SetNamespace", "v2"),
        ("tools.io", "Untag", "v1"),
        runtime="exec",
    )
    upstream = _publish(
        CatalogFactory(publisher=mirrors, name="upstream"),
        ("example.com", "SetNamespace", "v1"),
        ("tools.io", "Annotate", "v1"),
        network=True,
    )
    MirrorSource.objects.create(name="upstream", url="https://h.example/c.yaml", catalog=upstream)


def test_a_function_carried_by_several_catalogs_is_one_result_listing_them(registry):
    found = _search("q=setnamespace")
    assert found.functions == 1 and found.catalogs == 3
    [result] = found.page.object_list
    assert (result.group, result.kind) == ("example.com", "SetNamespace")
    # Verified publisher first, then signed ones, the mirror last among equals.
    carriers = [(c.publisher, c.catalog, c.versions, c.mirrored) for c in result.carriers]
    assert carriers[0] == ("acme", "core", ["v1"], False)
    assert sorted(carriers[1:]) == [
        ("mirrors", "upstream", ["v1"], True),
        ("zeta", "fork", ["v2"], False),
    ]
    assert result.carriers[0].publisher_verified and not result.carriers[1].publisher_verified
    # Runtimes and needs are those of any catalog carrying it.
    assert result.runtime_kinds == ["container", "exec"]
    assert result.requires_network is True
    assert result.description == "The SetNamespace function." and result.tags == ["mutator", "test"]


def test_only_each_catalogs_latest_version_is_searched(registry):
    core = CatalogFactory._meta.model.objects.get(name="core")
    _publish(core, ("example.com", "SetLabels", "v1"))  # version 2 drops SetNamespace
    [result] = _search("q=setnamespace").page.object_list
    assert sorted(c.catalog for c in result.carriers) == ["fork", "upstream"]


def test_facets_count_functions_not_versions_under_the_current_query(registry):
    facets = {f.label: {(v.param, v.value): v.count for v in f.values} for f in _search().facets}
    assert facets["Runtime"] == {("runtime", "container"): 3, ("runtime", "exec"): 2}
    assert facets["Publisher"] == {
        ("publisher", "acme"): 2,
        ("publisher", "mirrors"): 2,
        ("publisher", "zeta"): 2,
    }
    assert facets["Trust"][("verified", "on")] == 2
    assert facets["Trust"][("mirrored", "on")] == 2
    assert facets["Needs"] == {("network", "on"): 2, ("storage", "on"): 0}
    assert facets["Tag"] == {("tag", "mutator"): 4, ("tag", "test"): 4}
    # Under a query and a filter, the counts are those of the versions left: zeta's exec one.
    narrowed = {f.label: f.values for f in _search("q=set&runtime=exec").facets}
    assert [(v.value, v.count) for v in narrowed["Runtime"]] == [("exec", 1)]
    assert [(v.value, v.count) for v in narrowed["Publisher"]] == [("zeta", 1)]
    assert [(v.param, v.count) for v in narrowed["Trust"]] == [
        ("verified", 0),
        ("signed", 1),
        ("mirrored", 0),
        ("revoked", 0),
    ]


@pytest.mark.parametrize(
    ("query", "sort", "kinds"),
    [
        ("", None, ["Annotate", "SetLabels", "SetNamespace", "Untag"]),  # name without a query
        ("", "name", ["Annotate", "SetLabels", "SetNamespace", "Untag"]),
        # The newest catalog version first: the mirror was published last, acme's first.
        ("", "updated", ["Annotate", "SetNamespace", "Untag", "SetLabels"]),
        # The most catalogs first; among equals a verified publisher's, then by name.
        ("", "catalogs", ["SetNamespace", "SetLabels", "Annotate", "Untag"]),
        # Relevance: the kind itself, then a kind starting with the word, then the rest.
        ("q=setlabels", None, ["SetLabels"]),
        ("q=set", None, ["SetLabels", "SetNamespace"]),
        ("q=namespace", "relevance", ["SetNamespace"]),
        ("q=function", None, ["Annotate", "SetLabels", "SetNamespace", "Untag"]),
        ("q=tools.io", None, ["Annotate", "Untag"]),
    ],
)
def test_sorts(registry, query, sort, kinds):
    found = _search(query, sort=sort)
    assert _names(found) == kinds
    assert found.sort == (sort or ("relevance" if query else "name"))
    assert found.notices == []


def test_relevance_ranks_the_kind_above_the_group_tags_and_description():
    def score(words, kind, group="g.io", tags="|x|"):
        return search.relevance(words=words, group=group, kind=kind, tags_index=tags)

    assert score(["setnamespace"], "SetNamespace") > score(["set"], "SetNamespace")
    assert score(["set"], "SetNamespace") > score(["namespace"], "SetNamespace")
    assert score(["namespace"], "SetNamespace") > score(["g.io"], "SetNamespace")
    assert score(["g.io"], "Other") > score(["x"], "Other") > score(["word"], "Other") == 1


def test_pages_and_page_sizes(registry):
    found = _search(page=2, page_size=3)
    assert _names(found) == ["Untag"] and found.page.number == 2
    assert found.page.paginator.num_pages == 2 and found.functions == 4
    assert found.page_size == 3 and found.notices == []


@pytest.mark.parametrize(
    ("kwargs", "notice", "number", "size"),
    [
        (
            {"sort": "popular"},
            "Unknown sort 'popular' (choose one of: relevance, name, updated, catalogs, pulls). "
            "Sorted by name instead.",
            1,
            20,
        ),
        (
            {"page": 9, "page_size": 3},
            "There is no page 9: the results fill 2 pages. Showing page 2.",
            2,
            3,
        ),
        ({"page": "x"}, "'x' is not a page number. Showing page 1.", 1, 20),
        ({"page": "0"}, "There is no page 0; pages start at 1. Showing page 1.", 1, 20),
        (
            {"page_size": "1000"},
            "Page size 1000 is out of range (1 to 30). Showing 20 per page.",
            1,
            20,
        ),
        ({"page_size": "many"}, "Page size 'many' is not a number. Showing 20 per page.", 1, 20),
    ],
)
def test_a_bad_parameter_falls_back_with_a_notice(registry, kwargs, notice, number, size):
    found = _search(**kwargs)
    assert found.notices == [notice]
    assert (found.page.number, found.page_size) == (number, size)
    assert found.functions == 4  # the search itself is untouched


def test_a_page_past_an_empty_result_says_nothing_matches(registry):
    found = _search("q=nothing-like-this", page=3)
    assert found.notices == ["There is no page 3: nothing matches. Showing page 1."]
    assert found.functions == 0 and list(found.page.object_list) == []


def test_two_queries_whatever_the_number_of_functions(registry, django_assert_num_queries):
    core = CatalogFactory._meta.model.objects.get(name="core")
    _publish(core, *[("bulk.io", f"Fn{i:02d}", "v1") for i in range(40)])
    versions = selectors.function_version_list()
    # Step 1 (rows), the catalog versions' badges, step 2 (the page's display rows).
    with django_assert_num_queries(3):
        found = search.function_search(versions=versions, page_size=30)
    assert found.functions == 43 and len(found.page.object_list) == 30
    with django_assert_num_queries(1):  # nothing found: no badge or display query
        search.function_search(versions=versions.filter(kind="None"))


def test_the_words_a_typo_may_be_matched_to():
    from catalogs.publishing.api.filters import indexed_words

    words = indexed_words([("SetNamespace", "acme example.com setnamespace sets a namespace")])
    assert {"set", "namespace", "setnamespace", "acme", "example", "com", "sets"} == words
    assert indexed_words([("HTTPRoute", "httproute")]) == {"http", "route", "httproute"}


@pytest.mark.parametrize(
    ("query", "corrections", "kinds"),
    [
        ("q=namespce", {"namespce": ["namespace"]}, ["SetNamespace"]),
        ("q=anotate", {"anotate": ["annotate"]}, ["Annotate"]),
        ("q=set+lables", {"lables": ["labels"]}, ["SetLabels"]),
        ("q=set", {}, ["SetLabels", "SetNamespace"]),  # three letters: never corrected
        ("q=qqqqqq", {}, []),
    ],
)
def test_search_filters_correct_typos_and_rank_by_the_correction(
    registry, query, corrections, kinds
):
    from catalogs.publishing.api.filters import FunctionSearchFilter

    found = search.search_filters(QueryDict(query), versions=selectors.function_version_list())
    assert found.corrections == corrections
    flt = found.filter
    assert isinstance(flt, FunctionSearchFilter)
    result = search.function_search(versions=flt.qs, query=flt.ranked_query, sort="name")
    assert _names(result) == kinds
