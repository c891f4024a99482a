"""API tokens: named, scoped, expiring, last use noted, stored hashed; scopes enforced on every
API endpoint and on OCI pushes; ``drf_create_token`` and ``Token``/``Bearer`` keep working."""

from __future__ import annotations

import base64
import datetime
import importlib
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.urls import URLPattern, get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from catalogs.accounts.auth import TokenHasScope
from catalogs.accounts.models import ApiToken
from catalogs.accounts.services import token_digest
from catalogs.distribution.models import OciUpload
from catalogs.publishing.models import CatalogVersion
from catalogs.publishing.services import catalog_version_publish
from catalogs.review.models import Contribution
from tests.catalogs.factories import api_token_key, catalog_yaml
from tests.catalogs.review import contribution_fixtures

pytestmark = pytest.mark.django_db

contributor = contribution_fixtures.contributor
reviewer = contribution_fixtures.reviewer
published = contribution_fixtures.published
pending = contribution_fixtures.pending

TOKENS = "/api/v1/tokens/"
VERSIONS = "/api/v1/catalogs/example-co/functions/versions/"
DOCUMENT = catalog_yaml(("example.co", "SetLabels", "v1"))


def _client(secret: str, scheme: str = "Bearer") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{scheme} {secret}")
    return client


def _all_rows_text() -> str:
    """Every value of every row of the tokens table, as the database holds them."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {ApiToken._meta.db_table}")
        return repr(cursor.fetchall())


def test_create_list_and_delete_through_the_api(api_client, owner):
    api_client.force_authenticate(owner)
    created = api_client.post(
        TOKENS, {"name": "ci", "scopes": ["publish", "read"], "expires_in_days": 7}, format="json"
    )
    assert created.status_code == 201
    body = created.json()
    secret = body["token"]
    assert secret.startswith("krm_") and len(secret) > 40
    assert body["scopes"] == ["read", "publish"] and body["hint"] == secret[:8]
    expires = datetime.datetime.fromisoformat(body["expires_at"])
    assert abs(expires - (timezone.now() + datetime.timedelta(days=7))) < datetime.timedelta(
        minutes=5
    )
    # Shown once: the list has the hint, never the secret; the database holds only the digest.
    listed = api_client.get(TOKENS).json()
    assert [t["name"] for t in listed] == ["ci"] and "token" not in listed[0]
    assert secret not in _all_rows_text() and secret[8:] not in _all_rows_text()
    assert ApiToken.objects.get().digest == token_digest(secret)
    # It works (Bearer and Token), and deleting it ends that at once.
    assert _client(secret).get("/api/v1/publishers/").status_code == 200
    assert _client(secret, "Token").get("/api/v1/publishers/").status_code == 200
    assert api_client.delete(f"{TOKENS}{body['id']}/").status_code == 204
    assert _client(secret).get("/api/v1/publishers/").status_code == 401
    assert api_client.delete(f"{TOKENS}{body['id']}/").json() == {
        "detail": f"You have no token {body['id']}."
    }


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"scopes": ["read"]}, "name", "This field is required."),
        ({"name": "x", "scopes": []}, "scopes", "This list may not be empty."),
        ({"name": "x", "scopes": ["admin"]}, "scopes", '"admin" is not a valid choice.'),
        ({"name": "x", "scopes": ["read"], "expires_in_days": 0}, "expires_in_days", "greater"),
    ],
)
def test_a_bad_token_request_says_why_and_stores_nothing(api_client, owner, body, field, message):
    api_client.force_authenticate(owner)
    response = api_client.post(TOKENS, body, format="json")
    assert response.status_code == 400
    assert message in str(response.json()[field])
    assert not ApiToken.objects.exists()


def test_a_name_is_one_token_per_user(api_client, owner):
    api_client.force_authenticate(owner)
    assert api_client.post(TOKENS, {"name": "ci", "scopes": ["read"]}, format="json").status_code
    again = api_client.post(TOKENS, {"name": "ci", "scopes": ["publish"]}, format="json")
    assert again.status_code == 409
    assert again.json() == {"detail": "name: you already have a token named 'ci'"}
    assert list(ApiToken.objects.values_list("scopes", flat=True)) == [["read"]]


def test_a_read_token_cannot_publish_and_nothing_changes(owner, catalog):
    secret = api_token_key(owner, scopes=["read"])
    response = _client(secret).post(VERSIONS, DOCUMENT, content_type="application/yaml")
    assert response.status_code == 403
    assert response.json() == {
        "detail": "The token 'test 1' lacks the 'publish' scope this request needs (it has: "
        "read). Create a token with the 'publish' scope (POST /api/v1/tokens/ or "
        "/accounts/tokens/)."
    }
    assert not CatalogVersion.objects.exists()
    # It reads; a publish token publishes.
    assert _client(secret).get(VERSIONS).status_code == 200
    publish = api_token_key(owner, scopes=["publish"])
    response = _client(publish).post(VERSIONS, DOCUMENT, content_type="application/yaml")
    assert response.status_code == 201
    # ... and cannot read (GET needs read).
    assert _client(publish).get(VERSIONS).status_code == 403


def test_review_decisions_need_the_review_scope(reviewer, pending):
    publish = api_token_key(reviewer, scopes=["read", "publish"])
    url = f"/api/v1/contributions/{pending.pk}/approve/"
    refused = _client(publish).post(url, {"comment": "ok"}, format="json")
    assert refused.status_code == 403 and "lacks the 'review' scope" in refused.json()["detail"]
    pending.refresh_from_db()
    assert pending.status == "pending"
    review = api_token_key(reviewer, scopes=["review"])
    assert _client(review).post(url, {"comment": "ok"}, format="json").status_code == 200
    assert Contribution.objects.get(pk=pending.pk).status == "approved"


def test_an_expired_token_is_401_and_says_so(owner):
    secret = api_token_key(owner, expires_in_days=1)
    ApiToken.objects.update(expires_at=timezone.now() - datetime.timedelta(seconds=1))
    response = _client(secret).get("/api/v1/publishers/")
    assert response.status_code == 401
    assert response.json()["detail"].startswith("Token 'test 1' expired on ")
    assert response["WWW-Authenticate"] == "Token"


def test_last_used_is_noted_at_most_once_a_minute(owner):
    secret = api_token_key(owner)
    assert ApiToken.objects.get().last_used_at is None
    _client(secret).get("/api/v1/publishers/")
    first = ApiToken.objects.get().last_used_at
    assert first is not None and timezone.now() - first < datetime.timedelta(minutes=1)
    _client(secret).get("/api/v1/publishers/")
    assert ApiToken.objects.get().last_used_at == first
    ApiToken.objects.update(last_used_at=first - datetime.timedelta(minutes=2))
    _client(secret).get("/api/v1/publishers/")
    assert ApiToken.objects.get().last_used_at > first - datetime.timedelta(minutes=2)


def test_a_token_cannot_grant_more_than_it_has(owner):
    secret = api_token_key(owner, scopes=["read"])
    response = _client(secret).post(TOKENS, {"name": "more", "scopes": ["publish"]}, format="json")
    assert response.status_code == 403
    assert response.json() == {
        "detail": "a token cannot grant scopes it does not have (publish): sign in, or use a "
        "token that has them"
    }
    assert ApiToken.objects.count() == 1
    same = _client(secret).post(TOKENS, {"name": "same", "scopes": ["read"]}, format="json")
    assert same.status_code == 201


def test_drf_create_token_prints_a_full_scope_token(owner, catalog, capsys):
    call_command("drf_create_token", "owner")
    out = capsys.readouterr().out
    assert out.startswith("Generated token krm_") and out.strip().endswith(" for user owner")
    secret = out.split()[2]
    assert ApiToken.objects.get().scopes == ["read", "publish", "review"]
    response = _client(secret, "Token").post(VERSIONS, DOCUMENT, content_type="application/yaml")
    assert response.status_code == 201


def test_drf_create_token_for_nobody_says_so(db):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="Cannot create the token for user 'ghost'"):
        call_command("drf_create_token", "ghost")
    assert not ApiToken.objects.exists()


def test_keys_drf_issued_before_hashing_keep_working_and_leave_the_database(owner):
    """Migration accounts.0002 on a database that still has DRF's authtoken_token table."""
    key = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, created timestamp, "
            "user_id integer)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token VALUES (%s, %s, %s)", [key, timezone.now(), owner.pk]
        )
    migration = importlib.import_module("catalogs.accounts.migrations.0002_legacy_drf_tokens")
    # RunPython's forward reads only the editor's connection (a schema editor cannot open
    # inside the test's transaction on SQLite).
    migration.forward(apps, SimpleNamespace(connection=connection))
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM authtoken_token")
        assert cursor.fetchone() == (0,)
        cursor.execute("DROP TABLE authtoken_token")
    token = ApiToken.objects.get()
    assert (token.name, token.scopes) == ("legacy token", ["read", "publish", "review"])
    assert key not in _all_rows_text()
    assert _client(key, "Token").get(TOKENS).json()[0]["name"] == "legacy token"


def _api_views():
    def walk(patterns):
        for entry in patterns:
            if isinstance(entry, URLPattern):
                yield entry
            else:
                yield from walk(entry.url_patterns)

    for pattern in walk(get_resolver().url_patterns):
        view = getattr(pattern.callback, "cls", None)
        if view is not None and pattern.callback.__module__ and hasattr(view, "permission_classes"):
            yield str(pattern.pattern), view


def test_every_api_view_checks_token_scopes():
    views = list(_api_views())
    assert len(views) > 20
    missing = [
        path
        for path, view in views
        if not any(issubclass(p, TokenHasScope) for p in view.permission_classes)
    ]
    assert missing == []


# ----------------------------------------------------------------------------- OCI


REPO = "/v2/example-co/functions"


def _basic(secret: str) -> str:
    return "Basic " + base64.b64encode(f"owner:{secret}".encode()).decode()


@pytest.fixture
def oci_published(owner, catalog, settings):
    settings.SIGNING_OCI_ARTIFACTS = False
    catalog_version_publish(catalog=catalog, content=DOCUMENT, actor=owner)


def test_a_read_token_pulls_but_cannot_push_over_oci(client, oci_published, owner):
    basic = _basic(api_token_key(owner, scopes=["read"]))
    assert client.get(f"{REPO}/manifests/latest", HTTP_AUTHORIZATION=basic).status_code == 200
    denied = client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=basic)
    assert denied.status_code == 403
    assert denied.json()["errors"][0] == {
        "code": "DENIED",
        "message": "the API token 'test 1' lacks the 'publish' scope needed to push to "
        "example-co/functions: create a token with the 'publish' scope",
        "detail": {"repository": "example-co/functions"},
    }
    # The token flow grants it pull only, and its bearer token is denied the same way.
    scope = "repository:example-co/functions:pull,push"
    issued = client.get(f"/v2/token?scope={scope}", HTTP_AUTHORIZATION=basic).json()
    bearer = f"Bearer {issued['token']}"
    assert client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=bearer).status_code == 403
    assert not OciUpload.objects.exists()
    # A publish token pushes.
    publish = _basic(api_token_key(owner, scopes=["read", "publish"]))
    assert client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=publish).status_code == 202


def test_an_expired_token_cannot_use_oci_nor_its_bearer_tokens(client, oci_published, owner):
    basic = _basic(api_token_key(owner, expires_in_days=1))
    scope = "repository:example-co/functions:pull,push"
    bearer = (
        "Bearer " + client.get(f"/v2/token?scope={scope}", HTTP_AUTHORIZATION=basic).json()["token"]
    )
    ApiToken.objects.update(expires_at=timezone.now() - datetime.timedelta(seconds=1))
    for header, message in (
        (basic, "the API token 'test 1' has expired: create a new one"),
        (bearer, "invalid bearer token: the API token 'test 1' it was issued for has expired"),
    ):
        response = client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=header)
        assert response.status_code == 401
        assert response.json()["errors"][0]["message"] == message
    assert not OciUpload.objects.exists()
