"""Users follow catalogs and functions: an inbox entry with a count in the navigation, and an
e-mail received by a real local SMTP server (aiosmtpd) when a followed catalog publishes."""

# The shared smtp fixture is imported by name: F811.
# ruff: noqa: F811

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from catalogs.notifications.models import Notification, Subscription
from catalogs.publishing.services import catalog_version_publish
from tests.catalogs.factories import UserFactory, catalog_yaml
from tests.smtp_server import smtp  # noqa: F401

pytestmark = pytest.mark.django_db

SUBS = "/api/v1/subscriptions/"


def _as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_followers_get_an_email_and_an_inbox_entry(
    smtp, owner, catalog, client, django_capture_on_commit_callbacks
):
    by_catalog = UserFactory(username="alice", email="alice@example.org")
    by_function = UserFactory(username="bob", email="bob@example.org")
    no_email = UserFactory(username="carol", email="")
    UserFactory(username="dave", email="dave@example.org")  # follows nothing
    assert (
        _as(by_catalog).post(SUBS, {"catalog": "example-co/functions"}, format="json").status_code
        == 201
    )
    assert (
        _as(by_function).post(SUBS, {"function": "example.co/SetLabels"}, format="json").status_code
        == 201
    )
    assert (
        _as(no_email).post(SUBS, {"catalog": "example-co/functions"}, format="json").status_code
        == 201
    )
    with django_capture_on_commit_callbacks(execute=True):
        catalog_version_publish(
            catalog=catalog, content=catalog_yaml(("example.co", "SetLabels", "v1")), actor=owner
        )
    received = sorted(smtp.messages)
    assert [to for to, _ in received] == [["alice@example.org"], ["bob@example.org"]]
    message = received[0][1]
    assert "Subject: [KRM Catalog Registry] example-co/functions published version 1" in message
    assert "/catalogs/example-co/functions/" in message
    # Everyone who follows has it in the inbox, unread, with the count in the navigation.
    inbox = _as(no_email).get("/api/v1/notifications/").json()
    assert inbox["unread"] == 1
    assert inbox["results"][0]["title"] == "example-co/functions published version 1"
    client.force_login(no_email)
    page = client.get("/").content.decode()
    assert 'Inbox <span class="badge" aria-label="1 unread">1</span>' in page
    assert "<strong>New</strong>" in client.get("/inbox/").content.decode()
    client.post("/inbox/")
    assert "Inbox</a>" in client.get("/").content.decode()
    assert _as(no_email).get("/api/v1/notifications/").json()["unread"] == 0
    assert Notification.objects.count() == 3


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({}, 400, 'give either "catalog" (publisher/name) or "function" (group/kind)'),
        ({"catalog": "example-co/functions", "function": "a/B"}, 400, "give either"),
        ({"function": "SetLabels"}, 400, "function: <group>/<kind>, not 'SetLabels'"),
        ({"catalog": "example-co/nothing"}, 404, "Catalog 'example-co/nothing' does not exist."),
        ({"catalog": "example-co/functions"}, 409, "You already follow example-co/functions."),
    ],
)
def test_a_bad_subscription_says_why_and_stores_nothing(owner, catalog, body, status, detail):
    client = _as(owner)
    assert client.post(SUBS, {"catalog": "example-co/functions"}, format="json").status_code == 201
    response = client.post(SUBS, body, format="json")
    assert response.status_code == status
    assert detail in response.json()["detail"]
    assert Subscription.objects.count() == 1


def test_unfollowing_stops_the_notices(owner, catalog, django_capture_on_commit_callbacks):
    sub = _as(owner).post(SUBS, {"catalog": "example-co/functions"}, format="json").json()
    assert _as(owner).get(SUBS).json() == [sub]
    assert _as(owner).delete(f"{SUBS}{sub['id']}/").status_code == 204
    with django_capture_on_commit_callbacks(execute=True):
        catalog_version_publish(
            catalog=catalog, content=catalog_yaml(("example.co", "SetLabels", "v1")), actor=owner
        )
    assert not Notification.objects.exists()
