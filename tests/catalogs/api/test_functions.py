"""Function search: q, group, kind, tag, runtime, pagination; only latest catalog versions."""

import pytest

from catalogs.publishing.services import catalog_version_publish
from tests.catalogs.factories import CatalogFactory, PublisherFactory, catalog_yaml

pytestmark = pytest.mark.django_db

FUNCTIONS = "/api/v1/functions/"


@pytest.fixture
def published(catalog, demo_catalog_bytes):
    """The demo catalog as example-co/functions, and an exec catalog as acme/tools (v2 latest)."""
    catalog_version_publish(catalog=catalog, content=demo_catalog_bytes, actor=None)
    tools = CatalogFactory(publisher=PublisherFactory(slug="acme"), name="tools")
    catalog_version_publish(
        catalog=tools, content=catalog_yaml(("acme.io", "Old", "v1"), runtime="exec"), actor=None
    )
    catalog_version_publish(
        catalog=tools,
        content=catalog_yaml(
            ("acme.io", "Prune", "v1"), ("acme.io", "Prune", "v2"), runtime="exec"
        ),
        actor=None,
    )


def _kinds(response) -> list[tuple[str, str]]:
    assert response.status_code == 200, response.content
    return sorted((r["kind"], r["version"]) for r in response.json()["results"])


def test_everything_current_is_listed_and_old_versions_are_not(api_client, published):
    assert _kinds(api_client.get(FUNCTIONS)) == [
        ("JavaApplication", "v1"),
        ("Prune", "v1"),
        ("Prune", "v2"),
        ("SetLogger", "v1"),
        ("SetNamespace", "v1"),
    ]


def test_q_matches_every_word_in_any_case(api_client, published):
    assert _kinds(api_client.get(FUNCTIONS, {"q": "LOG collector"})) == [("SetLogger", "v1")]
    assert _kinds(api_client.get(FUNCTIONS, {"q": "namespace"})) == [("SetNamespace", "v1")]
    assert _kinds(api_client.get(FUNCTIONS, {"q": "no-such-word"})) == []


def test_group_kind_and_version(api_client, published):
    assert _kinds(api_client.get(FUNCTIONS, {"group": "acme.io"})) == [
        ("Prune", "v1"),
        ("Prune", "v2"),
    ]
    assert _kinds(api_client.get(FUNCTIONS, {"kind": "prune", "version": "v2"})) == [
        ("Prune", "v2")
    ]


def test_tag_is_an_exact_tag(api_client, published):
    assert _kinds(api_client.get(FUNCTIONS, {"tag": "java"})) == [("JavaApplication", "v1")]
    assert _kinds(api_client.get(FUNCTIONS, {"tag": "jav"})) == []


def test_runtime(api_client, published):
    assert _kinds(api_client.get(FUNCTIONS, {"runtime": "exec"})) == [
        ("Prune", "v1"),
        ("Prune", "v2"),
        ("SetLogger", "v1"),
    ]
    bad = api_client.get(FUNCTIONS, {"runtime": "wasm"})
    assert bad.status_code == 400
    assert bad.json() == {
        "runtime": ["Select a valid choice. wasm is not one of the available choices."]
    }


def test_publisher_and_catalog(api_client, published):
    assert len(_kinds(api_client.get(FUNCTIONS, {"publisher": "example-co"}))) == 3
    assert len(_kinds(api_client.get(FUNCTIONS, {"catalog": "tools"}))) == 2


def test_results_carry_flags_and_where_to_get_them(api_client, published):
    (java,) = api_client.get(FUNCTIONS, {"kind": "JavaApplication"}).json()["results"]
    assert java["requires_network"] is False
    assert java["requires_storage_mount"] is False
    assert java["runtime_kinds"] == ["starlark"]
    assert java["catalog"] == "example-co/functions"
    assert java["catalog_version"] == 1
    assert java["catalog_url"] == "http://testserver/c/example-co/functions/catalog.yaml"
    assert java["tags"] == ["generator", "java"]
    detail = api_client.get(f"{FUNCTIONS}{java['id']}/")
    assert detail.json() == java


def test_pagination(api_client, published):
    first = api_client.get(FUNCTIONS, {"page_size": 2}).json()
    assert first["count"] == 5
    assert len(first["results"]) == 2
    assert first["next"] == "http://testserver/api/v1/functions/?page=2&page_size=2"
    last = api_client.get(FUNCTIONS, {"page_size": 2, "page": 3}).json()
    assert len(last["results"]) == 1 and last["next"] is None
    seen = {r["id"] for page in (1, 2, 3) for r in _page(api_client, page)}
    assert len(seen) == 5


def _page(api_client, page: int) -> list[dict]:
    return api_client.get(FUNCTIONS, {"page_size": 2, "page": page}).json()["results"]


def test_a_repeated_filter_matches_any_of_its_values(api_client, published):
    both = api_client.get(FUNCTIONS + "?publisher=example-co&publisher=acme")
    assert len(_kinds(both)) == 5
    assert _kinds(api_client.get(FUNCTIONS + "?tag=java&tag=no-such-tag")) == [
        ("JavaApplication", "v1")
    ]
    # Another filter still narrows, and q takes its words as typed here (no typo tolerance).
    assert _kinds(
        api_client.get(FUNCTIONS + "?publisher=example-co&publisher=acme&kind=prune")
    ) == [
        ("Prune", "v1"),
        ("Prune", "v2"),
    ]
    assert _kinds(api_client.get(FUNCTIONS, {"q": "namespce"})) == []
