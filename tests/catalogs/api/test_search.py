"""GET /api/v1/search/: the search page as JSON (same functions, order and facet counts), and a
clear 400 or 404 where the page would fall back on a default."""

from __future__ import annotations

import re

import pytest
import yaml
from rest_framework.test import APIClient

from catalogs.publishing import services
from tests.catalogs.factories import CatalogFactory, PublisherFactory, catalog_yaml

pytestmark = pytest.mark.django_db

SEARCH = "/api/v1/search/"


@pytest.fixture
def registry(db):
    """SetNamespace in acme/core (verified) and zeta/fork (exec); 12 more in acme/core."""
    acme = PublisherFactory(slug="acme", verified=True)
    zeta = PublisherFactory(slug="zeta")
    more = [("bulk.io", f"Bulk{i:02d}", "v1") for i in range(12)]
    services.catalog_version_publish(
        catalog=CatalogFactory(publisher=acme, name="core"),
        content=catalog_yaml(("example.com", "SetNamespace", "v1"), *more),
        actor=None,
    )
    services.catalog_version_publish(
        catalog=CatalogFactory(publisher=zeta, name="fork"),
        content=catalog_yaml(("example.com", "SetNamespace", "v2"), runtime="exec"),
        actor=None,
    )


def _get(query: str = "", status: int = 200) -> dict:
    response = APIClient().get(SEARCH + query)
    assert response.status_code == status, response.content
    return response.json()


def test_one_result_per_function_with_the_catalogs_carrying_it(registry):
    body = _get("?q=namespace")
    assert (body["count"], body["catalogs"], body["page"], body["pages"]) == (1, 2, 1, 1)
    assert body["sort"] == "relevance" and body["next"] is None
    [result] = body["results"]
    assert (result["group"], result["kind"]) == ("example.com", "SetNamespace")
    assert result["runtime_kinds"] == ["container", "exec"]
    carriers = [
        (c["publisher"], c["catalog"], c["verified"], c["signed"], c["versions"])
        for c in result["catalogs"]
    ]
    assert carriers == [
        ("acme", "core", True, True, ["v1"]),
        ("zeta", "fork", False, True, ["v2"]),
    ]
    assert result["catalogs"][0]["catalog_url"] == "http://testserver/c/acme/core/catalog.yaml"


def test_the_api_and_the_page_agree(client, registry):
    for query in ("?sort=name&page=2&page_size=5", "?q=e&sort=catalogs", "?runtime=exec"):
        page = client.get("/" + query).content.decode()
        kinds = re.findall(r'<a class="fn" href="[^"]*">([^<]+)</a>', page)
        assert [r["kind"] for r in _get(query)["results"]] == kinds, query


def test_facets_and_page_links(registry):
    body = _get("?sort=name&page_size=5&page=2")
    assert body["next"] == "http://testserver/api/v1/search/?sort=name&page_size=5&page=3"
    assert body["previous"] == "http://testserver/api/v1/search/?sort=name&page_size=5&page=1"
    facets = {f["label"]: {v["value"]: v["count"] for v in f["values"]} for f in body["facets"]}
    assert facets["Runtime"] == {"container": 13, "exec": 1}
    assert facets["Publisher"] == {"acme": 13, "zeta": 1}
    verified = _get("?verified=true")
    assert verified["count"] == 13 and {r["kind"] for r in verified["results"]} >= {"SetNamespace"}


@pytest.mark.parametrize(
    ("query", "status", "answer"),
    [
        (
            "?sort=popular",
            400,
            {
                "sort": [
                    "Unknown sort 'popular' "
                    "(choose one of: relevance, name, updated, catalogs, pulls)."
                ]
            },
        ),
        ("?page_size=0", 400, {"page_size": ["Page size 0 is out of range (1 to 30)."]}),
        ("?page=x", 400, {"page": ["'x' is not a page number."]}),
        ("?page=0", 400, {"page": ["There is no page 0; pages start at 1."]}),
        ("?page=9", 404, {"detail": "There is no page 9: the results fill 1 page."}),
        ("?q=zzz&page=2", 404, {"detail": "There is no page 2: nothing matches."}),
        ("?verified=on", 400, {"verified": ["Must be true or false, not 'on'."]}),
        (
            "?signed=&network=1",
            400,
            {
                "network": ["Must be true or false, not '1'."],
                "signed": ["Must be true or false, not ''."],
            },
        ),
        ("?publisher=a%00b", 400, {"publisher": ["Null characters are not allowed."]}),
        ("?tag=x&tag=%00", 400, {"tag": ["Null characters are not allowed."]}),
        (
            "?runtime=wasm",
            400,
            {"runtime": ["Select a valid choice. wasm is not one of the available choices."]},
        ),
    ],
)
def test_a_bad_parameter_is_refused_with_the_reason(registry, query, status, answer):
    assert _get(query, status) == answer


def test_the_schema_documents_the_search(client):
    schema = yaml.safe_load(client.get("/api/schema/").content)
    operation = schema["paths"]["/api/v1/search/"]["get"]
    params = {p["name"]: p for p in operation["parameters"]}
    assert {"q", "runtime", "publisher", "tag", "verified", "sort", "page", "page_size"} <= set(
        params
    )
    # The empty value: sent empty, a choice counts as not given (catalogs.api.schema).
    assert set(params["sort"]["schema"]["enum"]) == {
        "relevance",
        "name",
        "updated",
        "catalogs",
        "pulls",
        "",
    }
    assert params["page"]["schema"] == {"type": "integer", "minimum": 1}
    assert params["page_size"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 30}
    assert params["verified"]["schema"] == {"type": "boolean"}
    assert {"200", "400", "404"} <= set(operation["responses"])


def _facet(body: dict, label: str) -> dict[str, int]:
    [facet] = [f for f in body["facets"] if f["label"] == label]
    return {v["value"]: v["count"] for v in facet["values"]}


def test_values_of_one_facet_are_or_ed_and_facets_are_and_ed(registry):
    one = _get("?publisher=zeta")
    assert one["count"] == 1
    # The ticked facet counts as if it were not ticked: what a second tick adds.
    assert _facet(one, "Publisher") == {"acme": 13, "zeta": 1}
    assert _facet(one, "Runtime") == {"exec": 1}  # the other facets: under the tick
    both = _get("?publisher=zeta&publisher=acme")
    assert both["count"] == 13
    assert _facet(both, "Runtime") == {"container": 13, "exec": 1}
    # The repeated parameter survives in the page links.
    paged = _get("?publisher=zeta&publisher=acme&page_size=5")
    assert paged["next"].endswith("?publisher=zeta&publisher=acme&page_size=5&page=2")
    # Another facet narrows (AND): only zeta's SetNamespace runs as exec.
    narrowed = _get("?publisher=zeta&publisher=acme&runtime=exec")
    assert [(r["kind"], r["runtime_kinds"]) for r in narrowed["results"]] == [
        ("SetNamespace", ["exec"])
    ]
    assert _get("?runtime=exec&runtime=container")["count"] == 13
    assert _get("?runtime=exec&runtime=wasm", 400) == {
        "runtime": ["Select a valid choice. wasm is not one of the available choices."]
    }


def test_a_mistyped_word_finds_the_nearest_indexed_words(registry):
    body = _get("?q=namespce")
    assert body["corrections"] == {"namespce": ["namespace"]}
    assert [r["kind"] for r in body["results"]] == ["SetNamespace"]
    assert body["sort"] == "relevance"
    # A word found as typed is never corrected; a word near nothing finds nothing.
    assert _get("?q=namespace")["corrections"] == {}
    nothing = _get("?q=qqxxzzvv")
    assert (nothing["count"], nothing["corrections"]) == (0, {})
    # The correction applies with the other filters.
    assert _get("?q=namespce&runtime=exec")["count"] == 1
    assert _get("?q=namespce&publisher=nobody")["count"] == 0


def test_a_long_query_checks_only_its_first_words_for_typos(
    registry, django_assert_max_num_queries
):
    words = "+".join(["namespace"] * 5 + [f"word{i}" for i in range(50)])
    # Five exists() checks, the rows, the badges: not one query per word.
    with django_assert_max_num_queries(8):
        body = _get(f"?q={words}")
    assert (body["count"], body["corrections"]) == (0, {})


def test_most_pulled_sort_and_pull_counts(registry):
    from catalogs.publishing.models import CatalogVersion, CatalogVersionPulls

    fork = CatalogVersion.objects.get(catalog__name="fork")
    CatalogVersionPulls.objects.create(version=fork, day="2026-11-01", via="https", count=5)
    CatalogVersionPulls.objects.create(version=fork, day="2026-11-02", via="oci", count=2)
    body = _get("?sort=pulls&page_size=3")
    assert [(r["kind"], r["pulls"]) for r in body["results"]] == [
        ("SetNamespace", 7),
        ("Bulk00", 0),
        ("Bulk01", 0),
    ]


def test_private_catalogs_leak_into_no_facet_count_or_correction(registry):
    from catalogs.publishing.models import Catalog
    from tests.catalogs.factories import UserFactory

    owner = UserFactory(username="owner")
    hidden = PublisherFactory(slug="hidden", owners=[owner])
    catalog = CatalogFactory(publisher=hidden, name="stuff")
    services.catalog_version_publish(
        catalog=catalog,
        content=catalog_yaml(("example.com", "SetNamespace", "v3"), ("zz.io", "Zanzibar", "v1")),
        actor=None,
    )
    services.catalog_update(
        catalog=Catalog.objects.get(name="stuff"), actor=owner, visibility="private"
    )
    outsider = _get("?publisher=hidden&publisher=zeta")
    assert outsider["count"] == 1 and "hidden" not in _facet(outsider, "Publisher")
    assert _facet(outsider, "Publisher") == {"acme": 13, "zeta": 1}
    assert _get("?q=zanzibr")["corrections"] == {}  # no private word suggested
    member = APIClient()
    member.force_authenticate(owner)
    body = member.get(SEARCH + "?q=zanzibr").json()
    assert body["corrections"] == {"zanzibr": ["zanzibar"]} and body["count"] == 1
    body = member.get(SEARCH + "?publisher=hidden&publisher=zeta").json()
    assert body["count"] == 2 and _facet(body, "Publisher") == {"acme": 13, "hidden": 2, "zeta": 1}
