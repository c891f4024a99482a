"""Hostile bytes into every API entry point that reads a body: exact status and problem, and
the registry exactly as it was (versions, functions, contributions, sources, served bytes).
"""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from catalogs.mirroring.models import MirrorSource
from catalogs.publishing.models import Catalog, CatalogVersion, FunctionVersion, Publisher
from catalogs.review.models import Contribution
from tests.catalogs.factories import catalog_yaml
from tests.hostile.registry_payloads import HUGE, JSON_BODIES, YAML_DOCUMENTS, problems

pytestmark = pytest.mark.django_db

VERSIONS = "/api/v1/catalogs/example-co/functions/versions/"
LATEST = "/c/example-co/functions/catalog.yaml"
JSON_ENDPOINTS = {
    "publish": VERSIONS,
    "contributions": "/api/v1/contributions/",
    "sources": "/api/v1/sources/",
    "publishers": "/api/v1/publishers/",
    "catalogs": "/api/v1/catalogs/",
}


@pytest.fixture
def staff_client(staff_user, catalog) -> APIClient:
    """Staff (owner of everything, mirror operator) with one good version published."""
    client = APIClient()
    client.force_authenticate(staff_user)
    good = catalog_yaml(("example.co", "Good", "v1"))
    assert client.post(VERSIONS, good, content_type="application/yaml").status_code == 201
    return client


def _state(client: APIClient) -> tuple:
    return (
        list(CatalogVersion.objects.values_list("catalog__name", "number", "digest")),
        FunctionVersion.objects.count(),
        Contribution.objects.count(),
        MirrorSource.objects.count(),
        Publisher.objects.count(),
        Catalog.objects.count(),
        client.get(LATEST).content,
    )


@pytest.mark.parametrize("name", YAML_DOCUMENTS)
def test_publish_yaml(staff_client, name):
    before = _state(staff_client)
    body = YAML_DOCUMENTS[name][0]
    response = staff_client.post(VERSIONS, body, content_type="application/yaml")
    count = len(YAML_DOCUMENTS[name][1])
    assert (response.status_code, response.json()) == (
        400,
        {
            "detail": f"The catalog document is invalid ({count} problem"
            f"{'s' if count != 1 else ''}).",
            "problems": problems(name),
        },
    )
    assert _state(staff_client) == before


@pytest.mark.parametrize("name", [n for n in YAML_DOCUMENTS if n != "invalid-utf8"])
def test_publish_yaml_inside_json(staff_client, name):
    before = _state(staff_client)
    content = YAML_DOCUMENTS[name][0].decode()
    if name == "nul-byte":
        # JSON carries the NUL as \u0000; the field refuses it before YAML sees it.
        expected = {"content": ["Null characters are not allowed."]}
    else:
        expected = {
            "detail": "The catalog document is invalid (1 problem).",
            "problems": problems(name),
        }
    response = staff_client.post(VERSIONS, {"content": content}, format="json")
    assert (response.status_code, response.json()) == (400, expected)
    assert _state(staff_client) == before


@pytest.mark.parametrize("endpoint", JSON_ENDPOINTS)
@pytest.mark.parametrize("name", JSON_BODIES)
def test_hostile_json_bodies_are_400_everywhere(staff_client, endpoint, name):
    before = _state(staff_client)
    body, expected = JSON_BODIES[name]
    response = staff_client.post(JSON_ENDPOINTS[endpoint], body, content_type="application/json")
    assert (response.status_code, response.json()) == (400, expected)
    assert _state(staff_client) == before


@pytest.mark.parametrize("name", [n for n in YAML_DOCUMENTS if n != "invalid-utf8"])
def test_contribution_definitions(staff_client, name):
    before = _state(staff_client)
    definition = YAML_DOCUMENTS[name][0].decode()
    body = {"publisher": "example-co", "catalog": "functions", "definition": definition}
    response = staff_client.post("/api/v1/contributions/", body, format="json")
    assert response.status_code == 400
    assert response.json() == CONTRIBUTION_ANSWERS[name]
    assert _state(staff_client) == before


def _definition_invalid(path: str, message: str, line: int | None, column: int | None) -> dict:
    return {
        "detail": "The function definition is invalid (1 problem).",
        "problems": [{"path": path, "message": message, "line": line, "column": column}],
    }


CONTRIBUTION_ANSWERS = {
    "alias-bomb": _definition_invalid("", "YAML aliases are not allowed in a catalog (*a)", 2, 8),
    "deep-lists-100000": _definition_invalid("", "nested deeper than 100 levels", 1, 99),
    "deep-maps-100000": _definition_invalid("", "nested deeper than 100 levels", 1, 392),
    "huge-scalar": _definition_invalid(
        "",
        f"the definition is {len(HUGE)} bytes, over the limit of {5 * 1024 * 1024} bytes",
        None,
        None,
    ),
    "duplicate-keys": _definition_invalid("", "duplicate key 'kind'", 5, 1),
    "nul-byte": _definition_invalid(
        "", "character #x0000 is not allowed: control characters are not allowed", 7, 3
    ),
}


@pytest.mark.parametrize("name", ["deep-arrays-100000", "duplicate-keys"])
def test_source_api_json(staff_client, name):
    before = _state(staff_client)
    body, expected = JSON_BODIES[name]
    response = staff_client.post("/api/v1/sources/", body, content_type="application/json")
    assert (response.status_code, response.json()) == (400, expected)
    response = staff_client.patch("/api/v1/sources/1/", body, content_type="application/json")
    assert response.status_code in (400, 404)
    assert _state(staff_client) == before


def test_source_api_nul_and_huge_url(staff_client):
    before = _state(staff_client)
    for url, expected in [
        ("https://h.example/\x00catalog.yaml", {"url": ["Null characters are not allowed."]}),
        (
            "https://h.example/" + "a" * 5000,
            {"url": ["Ensure this field has no more than 2048 characters."]},
        ),
    ]:
        response = staff_client.post(
            "/api/v1/sources/",
            json.dumps({"name": "s", "url": url}),
            content_type="application/json",
        )
        assert (response.status_code, response.json()) == (400, expected)
    assert _state(staff_client) == before
