"""Publishing hostile or invalid YAML through the API: 400, problems listed, nothing changed."""

import pytest

from catalogs.publishing.models import CatalogVersion, FunctionVersion
from tests.catalogs.bad_documents import BAD_DOCUMENTS, expected_problems
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

VERSIONS = "/api/v1/catalogs/example-co/functions/versions/"


@pytest.fixture
def owner_client(as_user, catalog):
    client = as_user("owner")
    good = client.post(
        VERSIONS, catalog_yaml(("example.co", "Good", "v1")), content_type="application/yaml"
    )
    assert good.status_code == 201
    return client


def _snapshot() -> tuple:
    return (
        list(CatalogVersion.objects.values_list("number", "digest")),
        FunctionVersion.objects.count(),
    )


@pytest.mark.parametrize("name", BAD_DOCUMENTS)
def test_bad_yaml_is_400_with_the_problems(owner_client, name, client):
    before = _snapshot()
    latest_before = client.get("/c/example-co/functions/catalog.yaml").content
    response = owner_client.post(VERSIONS, BAD_DOCUMENTS[name][0], content_type="application/yaml")
    assert response.status_code == 400
    count = len(BAD_DOCUMENTS[name][1])
    assert response.json() == {
        "detail": f"The catalog document is invalid ({count} problem{'s' if count != 1 else ''}).",
        "problems": expected_problems(name),
    }
    assert _snapshot() == before
    assert client.get("/c/example-co/functions/catalog.yaml").content == latest_before


def test_bad_yaml_inside_json_is_400_with_the_same_problems(owner_client):
    response = owner_client.post(
        VERSIONS, {"content": BAD_DOCUMENTS["yaml-syntax"][0]}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["problems"] == expected_problems("yaml-syntax")


def test_body_over_the_limit_is_400_with_its_size_and_not_kept(owner_client, settings):
    settings.CATALOG_MAX_BYTES = 1000
    before = _snapshot()
    body = b"# padding\n" * 150  # 1,500 bytes: read in chunks and counted, never stored
    response = owner_client.post(VERSIONS, body, content_type="application/yaml")
    assert response.status_code == 400
    assert response.json() == {
        "detail": "The catalog document is invalid (1 problem).",
        "problems": [
            {
                "path": "",
                "message": "catalog is 1500 bytes, over the limit of 1000 bytes",
                "line": None,
                "column": None,
            }
        ],
    }
    assert _snapshot() == before


@pytest.mark.parametrize("content_type", ["application/yaml", "application/json"])
def test_body_over_twice_the_limit_is_413_naming_the_limit(owner_client, settings, content_type):
    settings.CATALOG_MAX_BYTES = 1000
    before = _snapshot()
    body = b"# padding\n" * 30000  # 300,000 bytes: refused before any view reads it
    response = owner_client.post(VERSIONS, body, content_type=content_type)
    assert response.status_code == 413
    assert response.json() == {
        "detail": "The request body is 300000 bytes, over the limit of 2000 bytes.",
        "limit": 2000,
    }
    assert _snapshot() == before


def test_empty_yaml_body_is_400(owner_client):
    response = owner_client.post(VERSIONS, b"", content_type="application/yaml")
    assert response.status_code == 400
    assert response.json()["problems"] == expected_problems("empty")


def test_non_owner_sending_a_bad_document_gets_403_not_the_problems(as_user, owner_client):
    response = as_user("other").post(
        VERSIONS, BAD_DOCUMENTS["alias-bomb"][0], content_type="application/yaml"
    )
    assert response.status_code == 403
    assert "problems" not in response.json()


def test_json_body_over_twice_the_limit_is_413_and_not_kept(owner_client, settings):
    settings.CATALOG_MAX_BYTES = 1000
    before = _snapshot()
    body = '{"content": "' + "x" * 2500 + '"}'
    response = owner_client.post(VERSIONS, body, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {
        "detail": f"The request body is {len(body)} bytes, over the limit of 2000 bytes.",
        "limit": 2000,
    }
    assert _snapshot() == before


def test_json_content_over_the_limit_is_400(owner_client, settings):
    settings.CATALOG_MAX_BYTES = 1000
    content = "# " + "x" * 1200 + "\n"
    response = owner_client.post(VERSIONS, {"content": content}, format="json")
    assert response.status_code == 400
    assert response.json()["problems"][0]["message"] == (
        f"catalog is {len(content)} bytes, over the limit of 1000 bytes"
    )
