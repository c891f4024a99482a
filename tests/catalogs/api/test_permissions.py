"""Every write endpoint, as anonymous, another user, the owner and staff: a refusal changes nothing.

Without credentials the answer is 401 with a ``WWW-Authenticate: Token`` challenge; a signed-in
user who may not act gets 403.
"""

import pytest
from django.core.management import call_command

from catalogs.publishing.models import Catalog, CatalogVersion, Publisher
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

DOCUMENT = catalog_yaml(("example.co", "SetLabels", "v1"))


def _state() -> tuple:
    """Everything a write could change."""
    return (
        list(Publisher.objects.values_list("slug", "display_name", "owners__username")),
        list(Catalog.objects.values_list("publisher__slug", "name", "description")),
        list(CatalogVersion.objects.values_list("catalog__name", "number", "digest")),
    )


WRITES = {
    "publisher-update": ("patch", "/api/v1/publishers/example-co/", {"display_name": "X"}, None),
    "catalog-create": (
        "post",
        "/api/v1/catalogs/",
        {"publisher": "example-co", "name": "more"},
        None,
    ),
    "catalog-update": (
        "patch",
        "/api/v1/catalogs/example-co/functions/",
        {"description": "X"},
        None,
    ),
    "version-publish": (
        "post",
        "/api/v1/catalogs/example-co/functions/versions/",
        DOCUMENT,
        "application/yaml",
    ),
}
EXPECTED_SUCCESS = {
    "publisher-update": 200,
    "catalog-create": 201,
    "catalog-update": 200,
    "version-publish": 201,
}


@pytest.mark.parametrize("endpoint", WRITES)
@pytest.mark.parametrize("who", ["anonymous", "other"])
def test_forbidden_writes_are_refused_and_change_nothing(as_user, catalog, endpoint, who):
    method, url, data, content_type = WRITES[endpoint]
    before = _state()
    kwargs = {"content_type": content_type} if content_type else {"format": "json"}
    response = getattr(as_user(who), method)(url, data, **kwargs)
    if who == "anonymous":
        assert response.status_code == 401, response.content
        assert response["WWW-Authenticate"] == "Token"
        assert response.json() == {"detail": "Authentication credentials were not provided."}
    else:
        assert response.status_code == 403, response.content
        assert "WWW-Authenticate" not in response
        assert response.json() == {
            "detail": "Only owners of publisher 'example-co' (or staff) may change it."
        }
    assert _state() == before


@pytest.mark.parametrize("endpoint", WRITES)
@pytest.mark.parametrize("who", ["owner", "staff"])
def test_owner_and_staff_writes_succeed(as_user, catalog, endpoint, who):
    method, url, data, content_type = WRITES[endpoint]
    before = _state()
    kwargs = {"content_type": content_type} if content_type else {"format": "json"}
    response = getattr(as_user(who), method)(url, data, **kwargs)
    assert response.status_code == EXPECTED_SUCCESS[endpoint], response.content
    assert _state() != before


def test_anonymous_cannot_create_a_publisher(as_user, db):
    response = as_user("anonymous").post("/api/v1/publishers/", {"slug": "x"}, format="json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert not Publisher.objects.exists()


@pytest.mark.parametrize("who", ["other", "owner", "staff"])
def test_any_logged_in_user_may_create_a_publisher_and_owns_it(as_user, who):
    response = as_user(who).post(
        "/api/v1/publishers/", {"slug": "new-co", "display_name": "New Co"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["owners"] == [who]


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("put", "/api/v1/publishers/example-co/"),
        ("delete", "/api/v1/publishers/example-co/"),
        ("delete", "/api/v1/catalogs/example-co/functions/"),
        ("put", "/api/v1/catalogs/example-co/functions/versions/1/"),
        ("delete", "/api/v1/catalogs/example-co/functions/versions/1/"),
        ("post", "/api/v1/functions/"),
    ],
)
def test_versions_and_records_cannot_be_deleted_or_replaced(as_user, catalog, method, url):
    before = _state()
    response = getattr(as_user("staff"), method)(url, {}, format="json")
    assert response.status_code == 405
    assert _state() == before


def test_token_from_drf_create_token_authenticates_writes(api_client, catalog, capsys):
    call_command("drf_create_token", "owner")
    token = capsys.readouterr().out.split()[2]
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = api_client.post(
        "/api/v1/catalogs/example-co/functions/versions/", DOCUMENT, content_type="application/yaml"
    )
    assert response.status_code == 201
    assert CatalogVersion.objects.get().created_by.username == "owner"


def test_a_wrong_token_is_refused(api_client, catalog):
    api_client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = api_client.post(
        "/api/v1/catalogs/example-co/functions/versions/", DOCUMENT, content_type="application/yaml"
    )
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json() == {"detail": "Invalid token."}
    assert not CatalogVersion.objects.exists()


@pytest.mark.parametrize(
    ("header", "detail"),
    [
        ("Token", "Invalid token header. No credentials provided."),
        ("Token a b", "Invalid token header. Token string should not contain spaces."),
    ],
)
def test_a_malformed_token_header_is_401(api_client, catalog, header, detail):
    api_client.credentials(HTTP_AUTHORIZATION=header)
    response = api_client.patch(
        "/api/v1/catalogs/example-co/functions/", {"description": "X"}, format="json"
    )
    assert (response.status_code, response.json()) == (401, {"detail": detail})
    assert response["WWW-Authenticate"] == "Token"
    assert Catalog.objects.get(pk=catalog.pk).description == catalog.description


def test_a_wrong_token_is_refused_even_on_reads(api_client, catalog):
    """A client that sends a bad token learns so, rather than silently reading as anonymous."""
    api_client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = api_client.get("/api/v1/catalogs/")
    assert (response.status_code, response["WWW-Authenticate"]) == (401, "Token")


def test_session_login_authenticates_writes(client, owner, catalog):
    client.force_login(owner)
    response = client.patch(
        "/api/v1/catalogs/example-co/functions/",
        {"description": "Via session"},
        content_type="application/json",
    )
    assert response.status_code == 200
    catalog.refresh_from_db()
    assert catalog.description == "Via session"


BAD_BODIES = {
    "publisher-update": ("patch", "/api/v1/publishers/example-co/", {"owners": "not-a-list"}, None),
    "catalog-update": (
        "patch",
        "/api/v1/catalogs/example-co/functions/",
        {"description": ["not", "text"]},
        None,
    ),
    "version-publish": (
        "post",
        "/api/v1/catalogs/example-co/functions/versions/",
        "kind: [unclosed",
        "application/yaml",
    ),
    "version-publish-json": (
        "post",
        "/api/v1/catalogs/example-co/functions/versions/",
        {"content": 7},
        None,
    ),
}


@pytest.mark.parametrize("endpoint", BAD_BODIES)
def test_permission_is_checked_before_the_body(as_user, catalog, endpoint):
    """A refused user gets 403 whatever the body; the owner sending it gets the 400."""
    method, url, data, content_type = BAD_BODIES[endpoint]
    kwargs = {"content_type": content_type} if content_type else {"format": "json"}
    before = _state()
    refused = getattr(as_user("other"), method)(url, data, **kwargs)
    assert refused.status_code == 403, refused.content
    assert refused.json() == {
        "detail": "Only owners of publisher 'example-co' (or staff) may change it."
    }
    assert getattr(as_user("owner"), method)(url, data, **kwargs).status_code == 400
    assert _state() == before
