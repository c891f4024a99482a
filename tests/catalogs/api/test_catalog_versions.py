"""Publishing through the API and reading versions back."""

import hashlib

import pytest
from django.conf import settings

from catalogs.publishing.models import CatalogVersion
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

VERSIONS = "/api/v1/catalogs/example-co/functions/versions/"


def test_publish_answers_201_with_version_digest_and_absolute_url(as_user, catalog, client):
    document = catalog_yaml(("example.co", "SetLabels", "v1"))
    response = as_user("owner").post(VERSIONS, document, content_type="application/yaml")
    assert response.status_code == 201
    body = response.json()
    version = CatalogVersion.objects.get()
    assert body == {
        "version": 1,
        "digest": version.digest,
        "unchanged": False,
        "latest": True,
        "detail": "Published version 1.",
        "catalog_url": "http://testserver/c/example-co/functions/catalog.yaml",
        "version_url": "http://testserver/c/example-co/functions/versions/1/catalog.yaml",
        "digest_url": "http://testserver/c/example-co/functions/sha256/"
        + version.digest.removeprefix("sha256:")
        + "/catalog.yaml",
    }
    assert response["Location"] == "/api/v1/catalogs/example-co/functions/versions/1/"
    # The URL it answers with serves exactly the bytes that hash to the digest it answered with.
    for url in (body["catalog_url"], body["version_url"], body["digest_url"]):
        served = client.get(url.removeprefix("http://testserver"))
        assert "sha256:" + hashlib.sha256(served.content).hexdigest() == body["digest"]


def test_publishing_the_same_content_again_says_it_is_unchanged(as_user, catalog):
    document = catalog_yaml(("example.co", "SetLabels", "v1"))
    first = as_user("owner").post(VERSIONS, document, content_type="application/yaml")
    again = as_user("owner").post(VERSIONS, document, content_type="application/yaml")
    assert again.status_code == 200
    assert again.json() == first.json() | {
        "unchanged": True,
        "detail": "Unchanged: this content is version 1, the latest already.",
    }
    assert CatalogVersion.objects.count() == 1


def test_republishing_an_older_version_says_how_to_make_it_latest(as_user, catalog):
    old = catalog_yaml(("example.co", "SetLabels", "v1"))
    as_user("owner").post(VERSIONS, old, content_type="application/yaml")
    new = catalog_yaml(("example.co", "SetLabels", "v2"))
    as_user("owner").post(VERSIONS, new, content_type="application/yaml")
    again = as_user("owner").post(VERSIONS, old, content_type="application/yaml")
    assert again.status_code == 200
    body = again.json()
    assert (body["version"], body["unchanged"], body["latest"]) == (1, True, False)
    assert body["detail"] == (
        "Unchanged: this content is version 1, which is not the latest; PATCH the catalog with "
        '{"latest_version": 1} to make it so.'
    )
    assert CatalogVersion.objects.count() == 2
    assert catalog.versions.get(number=2).latest_of.pk == catalog.pk


@pytest.mark.parametrize("content_type", ["application/x-yaml", "text/yaml"])
def test_other_yaml_media_types_are_accepted(as_user, catalog, content_type):
    document = catalog_yaml(("example.co", "SetLabels", "v1"))
    response = as_user("owner").post(VERSIONS, document, content_type=content_type)
    assert response.status_code == 201


def test_json_body_with_content_is_accepted(as_user, catalog):
    document = catalog_yaml(("example.co", "SetLabels", "v1"))
    response = as_user("owner").post(VERSIONS, {"content": document}, format="json")
    assert response.status_code == 201


def test_json_body_without_content_is_400(as_user, catalog):
    response = as_user("owner").post(VERSIONS, {"yaml": "x"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"content": ["This field is required."]}
    assert not CatalogVersion.objects.exists()


def test_unsupported_media_type_is_415(as_user, catalog):
    response = as_user("owner").post(VERSIONS, "x", content_type="text/plain")
    assert response.status_code == 415
    assert response.json() == {"detail": 'Unsupported media type "text/plain" in request.'}
    assert not CatalogVersion.objects.exists()


def test_publish_to_an_unknown_catalog_is_404(as_user, publisher):
    response = as_user("staff").post(
        "/api/v1/catalogs/example-co/nope/versions/",
        catalog_yaml(("example.co", "A", "v1")),
        content_type="application/yaml",
    )
    assert response.status_code == 404
    assert response.json() == {"detail": "Catalog 'example-co/nope' does not exist."}


def test_list_and_detail(as_user, api_client, catalog):
    for kind in ("A", "B"):
        as_user("owner").post(
            VERSIONS, catalog_yaml(("example.co", kind, "v1")), content_type="application/yaml"
        )
    listing = api_client.get(VERSIONS).json()
    assert [v["version"] for v in listing["results"]] == [2, 1]
    assert listing["results"][0]["created_by"] == "owner"
    assert listing["results"][1]["version_url"] == (
        "http://testserver/c/example-co/functions/versions/1/catalog.yaml"
    )
    detail = api_client.get(VERSIONS + "1/").json()
    assert detail["version"] == 1
    assert [(f["group"], f["kind"]) for f in detail["functions"]] == [("example.co", "A")]
    fn_version = detail["functions"][0]["versions"][0]
    assert fn_version["name"] == "v1"
    assert fn_version["runtime"] == {"container": {"image": "registry.example.co/a:v1"}}
    assert fn_version["runtime_kinds"] == ["container"]


def test_unknown_version_is_404(api_client, catalog):
    response = api_client.get(VERSIONS + "7/")
    assert response.status_code == 404
    assert response.json() == {"detail": "Catalog 'example-co/functions' has no version 7."}


@pytest.mark.parametrize("as_json", [False, True], ids=["yaml", "json"])
def test_a_document_larger_than_djangos_default_upload_limit_is_published(
    as_user, catalog, as_json
):
    """CATALOG_MAX_BYTES governs YAML and JSON bodies alike, not Django's 2.5 MB default."""
    document = catalog_yaml(*[("example.co", f"Fn{i}", "v1") for i in range(5600)])
    assert 2_621_440 < len(document) < settings.CATALOG_MAX_BYTES
    if as_json:
        response = as_user("owner").post(VERSIONS, {"content": document}, format="json")
    else:
        response = as_user("owner").post(
            VERSIONS, document.encode(), content_type="application/yaml"
        )
    assert response.status_code == 201, response.content[:500]
    assert CatalogVersion.objects.get().functions.count() == 5600
