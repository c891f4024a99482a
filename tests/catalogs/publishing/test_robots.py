"""Robot accounts: a publisher's CI identity, publishing to that publisher only (API and OCI)."""

from __future__ import annotations

import base64

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from catalogs.accounts.models import ApiToken
from catalogs.distribution.models import OciUpload
from catalogs.publishing.models import CatalogVersion, PublisherEvent, PublisherRobot
from tests.catalogs.factories import CatalogFactory, PublisherFactory, catalog_yaml

pytestmark = pytest.mark.django_db

ROBOTS = "/api/v1/publishers/example-co/robots/"
DOCUMENT = catalog_yaml(("example.co", "SetLabels", "v1"))


def _as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _token(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def robot(owner, catalog) -> dict:
    response = _as(owner).post(ROBOTS, {"name": "ci", "expires_in_days": 90}, format="json")
    assert response.status_code == 201
    return response.json()


def test_an_owner_creates_a_robot_whose_token_publishes(robot, owner, settings, client):
    assert robot["username"] == "robot+example-co+ci"
    assert robot["token"].startswith("krm_")
    [token] = robot["tokens"]
    assert token["scopes"] == ["read", "publish"] and token["expires_at"]
    user = get_user_model().objects.get(username="robot+example-co+ci")
    assert not user.has_usable_password()
    versions = "/api/v1/catalogs/example-co/functions/versions/"
    response = _token(robot["token"]).post(versions, DOCUMENT, content_type="application/yaml")
    assert response.status_code == 201
    assert CatalogVersion.objects.get().created_by == user
    # OCI: the robot's user name and token, as `docker login` / `oras login` send them.
    settings.SIGNING_OCI_ARTIFACTS = False
    basic = base64.b64encode(f"{robot['username']}:{robot['token']}".encode()).decode()
    pushed = client.post(
        "/v2/example-co/functions/blobs/uploads/", HTTP_AUTHORIZATION=f"Basic {basic}"
    )
    assert pushed.status_code == 202
    # The owners see it (never its secret) and the audit log names it.
    listed = _as(owner).get(ROBOTS).json()
    assert [r["username"] for r in listed] == ["robot+example-co+ci"]
    assert "token" not in listed[0]
    assert PublisherEvent.objects.filter(action="robot_created", actor=owner).exists()


def test_a_robot_publishes_to_its_publisher_only_and_manages_nobody(robot, other_user):
    CatalogFactory(publisher=PublisherFactory(slug="elsewhere"), name="functions")
    as_robot = _token(robot["token"])
    other = "/api/v1/catalogs/elsewhere/functions/versions/"
    refused = as_robot.post(other, DOCUMENT, content_type="application/yaml")
    assert refused.status_code == 403
    assert refused.json() == {
        "detail": "Only owners of publisher 'elsewhere' (or staff) may change it."
    }
    invite = as_robot.patch(
        "/api/v1/publishers/example-co/", {"owners": ["owner", "other"]}, format="json"
    )
    assert invite.status_code == 403
    more = as_robot.post(ROBOTS, {"name": "more"}, format="json")
    assert more.status_code == 403
    assert more.json() == {
        "detail": "Only owners of publisher 'example-co' (or staff) may do this."
    }
    # Its token cannot mint a longer-lived one either.
    longer = as_robot.post("/api/v1/tokens/", {"name": "x", "scopes": ["read"]}, format="json")
    assert longer.status_code == 403
    assert "a token cannot create a token that outlives it" in longer.json()["detail"]
    assert not CatalogVersion.objects.exists()
    assert PublisherRobot.objects.count() == 1 and ApiToken.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"name": "Bad Name"}, 400, "1 to 50 lowercase letters, digits and hyphens."),
        ({"name": "ci"}, 409, "publisher 'example-co' already has a robot account named 'ci'"),
    ],
)
def test_a_bad_robot_request_says_why_and_stores_nothing(robot, owner, body, status, message):
    response = _as(owner).post(ROBOTS, body, format="json")
    assert response.status_code == status
    assert message in str(response.json())
    assert list(PublisherRobot.objects.values_list("name", flat=True)) == ["ci"]


def test_only_owners_create_or_see_robots(owner, other_user, catalog):
    for response in (
        _as(other_user).post(ROBOTS, {"name": "ci"}, format="json"),
        _as(other_user).get(ROBOTS),
    ):
        assert response.status_code == 403
    assert APIClient().get(ROBOTS).status_code == 401
    assert not PublisherRobot.objects.exists()
    assert not get_user_model().objects.filter(username__startswith="robot+").exists()


def test_deleting_a_robot_ends_its_tokens_and_keeps_what_it_published(robot, owner):
    versions = "/api/v1/catalogs/example-co/functions/versions/"
    _token(robot["token"]).post(versions, DOCUMENT, content_type="application/yaml")
    assert _as(owner).delete(f"{ROBOTS}ci/").status_code == 204
    assert _token(robot["token"]).get("/api/v1/publishers/").status_code == 401
    assert not get_user_model().objects.filter(username="robot+example-co+ci").exists()
    assert not ApiToken.objects.exists() and not OciUpload.objects.exists()
    # What it published still names it (inactive, renamed); the name is free again.
    publisher_user = CatalogVersion.objects.get().created_by
    assert publisher_user.username.startswith("robot+example-co+ci-deleted-")
    assert not publisher_user.is_active
    again = _as(owner).post(ROBOTS, {"name": "ci"}, format="json")
    assert again.status_code == 201
    missing = _as(owner).delete(f"{ROBOTS}gone/")
    assert missing.status_code == 404
    assert missing.json() == {"detail": "Publisher 'example-co' has no robot account 'gone'."}
