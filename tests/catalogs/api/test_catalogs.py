import pytest

from catalogs.publishing.services import catalog_version_publish
from tests.catalogs.factories import CatalogFactory, PublisherFactory, catalog_yaml

pytestmark = pytest.mark.django_db


def test_detail_shows_the_latest_version_and_its_absolute_url(api_client, catalog):
    version, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=None
    )
    body = api_client.get("/api/v1/catalogs/example-co/functions/").json()
    assert body["publisher"] == "example-co"
    assert body["name"] == "functions"
    assert body["latest_version"] == 1
    assert body["latest_digest"] == version.digest
    assert body["catalog_url"] == "http://testserver/c/example-co/functions/catalog.yaml"


def test_catalog_without_versions(api_client, catalog):
    body = api_client.get("/api/v1/catalogs/example-co/functions/").json()
    assert (body["latest_version"], body["latest_digest"]) == (None, None)


def test_list_filters_by_publisher(api_client, catalog):
    CatalogFactory(publisher=PublisherFactory(slug="acme"), name="tools")
    everything = api_client.get("/api/v1/catalogs/").json()
    assert everything["count"] == 2
    only = api_client.get("/api/v1/catalogs/", {"publisher": "acme"}).json()
    assert [(c["publisher"], c["name"]) for c in only["results"]] == [("acme", "tools")]


def test_unknown_catalog_is_404(api_client, publisher):
    response = api_client.get("/api/v1/catalogs/example-co/nope/")
    assert response.status_code == 404
    assert response.json() == {"detail": "Catalog 'example-co/nope' does not exist."}


def test_create_under_an_unknown_publisher_is_404(as_user, db):
    response = as_user("staff").post(
        "/api/v1/catalogs/", {"publisher": "ghost", "name": "x"}, format="json"
    )
    assert response.status_code == 404
    assert response.json() == {"detail": "Publisher 'ghost' does not exist."}


def test_duplicate_name_is_409(as_user, catalog):
    response = as_user("owner").post(
        "/api/v1/catalogs/", {"publisher": "example-co", "name": "functions"}, format="json"
    )
    assert response.status_code == 409
    assert response.json() == {"detail": "Catalog 'example-co/functions' already exists."}


def test_missing_fields_are_400(as_user, publisher):
    response = as_user("owner").post("/api/v1/catalogs/", {}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "publisher": ["This field is required."],
        "name": ["This field is required."],
    }


def test_a_catalog_created_private_is_private_from_the_start(as_user, api_client, publisher):
    """Asked for at creation, not by a PATCH after it: no window in which outsiders see it."""
    from catalogs.publishing.models import Catalog

    body = {"publisher": "example-co", "name": "secret", "visibility": "private"}
    response = as_user("owner").post("/api/v1/catalogs/", body, format="json")
    assert response.status_code == 201, response.content
    assert (response.json()["visibility"], response.json()["private"]) == ("private", True)
    assert Catalog.objects.get(name="secret").visibility == "private"
    assert api_client.get("/api/v1/catalogs/example-co/secret/").status_code == 404
    assert as_user("owner").get("/api/v1/catalogs/example-co/secret/").status_code == 200


def test_an_unknown_visibility_at_creation_is_400_and_creates_nothing(as_user, publisher):
    from catalogs.publishing.models import Catalog, Publisher

    body = {"publisher": "example-co", "name": "secret", "visibility": "hidden"}
    response = as_user("owner").post("/api/v1/catalogs/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"visibility": ['"hidden" is not a valid choice.']}
    assert not Catalog.objects.filter(name="secret").exists()
    response = as_user("owner").post(
        "/api/v1/publishers/", {"slug": "acme", "visibility": "hidden"}, format="json"
    )
    assert response.status_code == 400
    assert not Publisher.objects.filter(slug="acme").exists()


def test_a_publisher_created_private_is_private_from_the_start(as_user, api_client):
    response = as_user("owner").post(
        "/api/v1/publishers/", {"slug": "acme", "visibility": "private"}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["visibility"] == "private"
    assert api_client.get("/api/v1/publishers/acme/").status_code == 404
    assert as_user("owner").get("/api/v1/publishers/acme/").status_code == 200
