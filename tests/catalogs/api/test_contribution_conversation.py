"""The contributions API beyond approve: request changes, comments, the diff between revisions,
and contributions to private catalogs (404 to reviewers who may not see them)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from catalogs.accounts.services import api_token_create
from catalogs.publishing import services as publishing
from catalogs.publishing.models import CatalogVersion
from catalogs.review import services as contributions
from catalogs.review.models import Contribution, ReviewEvent
from tests.catalogs.factories import UserFactory
from tests.catalogs.review import contribution_fixtures
from tests.catalogs.review.contribution_fixtures import DEFINITION

pytestmark = pytest.mark.django_db

contributor = contribution_fixtures.contributor
reviewer = contribution_fixtures.reviewer
published = contribution_fixtures.published
pending = contribution_fixtures.pending

LIST = "/api/v1/contributions/"
EDITED = DEFINITION.replace("set-owner:v1", "set-owner@sha256:" + "a" * 64)
ANONYMOUS = {"detail": "Authentication credentials were not provided."}
NOT_REVIEWER = {
    "detail": "Only reviewers and owners of publisher 'example-co' may review contributions to it."
}


def _state() -> tuple:
    return (
        list(Contribution.objects.order_by("pk").values_list("pk", "status", "revision", "reason")),
        list(ReviewEvent.objects.order_by("pk").values_list("pk", "action", "reason")),
        CatalogVersion.objects.count(),
    )


# --------------------------------------------------------------------------- request changes


@pytest.mark.parametrize("who", ["reviewer", "staff", "owner"])
def test_reviewers_request_changes_and_the_author_resubmits(client_for, pending, who):
    url = f"{LIST}{pending.pk}/request-changes/"
    response = client_for(who).post(url, {"reason": "Pin the image."}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["reason"], body["revision_diff"]) == (
        "changes_requested",
        "Pin the image.",
        None,
    )
    resubmit = client_for("author").post(
        f"{LIST}{pending.pk}/resubmit/", {"definition": EDITED}, format="json"
    )
    assert resubmit.status_code == 200, resubmit.content
    body = resubmit.json()
    assert (body["status"], body["revision"]) == ("pending", 2)
    diff = body["revision_diff"]
    assert (diff["previous"], diff["current"], diff["recorded"]) == (1, 2, True)
    assert "+        image: registry.example.org/set-owner@sha256:" + "a" * 64 in diff["lines"]
    assert "-        image: registry.example.org/set-owner:v1" in diff["lines"]


@pytest.mark.parametrize(
    ("who", "code", "expected"),
    [("anonymous", 401, ANONYMOUS), ("author", 403, NOT_REVIEWER), ("other", 403, NOT_REVIEWER)],
)
def test_only_reviewers_request_changes(client_for, pending, who, code, expected):
    before = _state()
    response = client_for(who).post(
        f"{LIST}{pending.pk}/request-changes/", {"reason": "x"}, format="json"
    )
    assert (response.status_code, response.json()) == (code, expected)
    assert _state() == before


@pytest.mark.parametrize("data", [{}, {"reason": ""}, {"reason": "  "}])
def test_request_changes_needs_a_reason(client_for, pending, data):
    before = _state()
    response = client_for("reviewer").post(
        f"{LIST}{pending.pk}/request-changes/", data, format="json"
    )
    assert (response.status_code, response.json()) == (
        400,
        {"detail": "A reason is required to request changes to a contribution."},
    )
    assert _state() == before


def test_request_changes_needs_the_review_scope(pending, reviewer):
    _, key = api_token_create(user=reviewer, name="ci", scopes=["read", "publish"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    before = _state()
    response = client.post(f"{LIST}{pending.pk}/request-changes/", {"reason": "x"}, format="json")
    assert response.status_code == 403
    assert "lacks the 'review' scope" in response.json()["detail"]
    assert _state() == before


# --------------------------------------------------------------------------- comments


def test_the_author_and_a_reviewer_converse(client_for, pending):
    url = f"{LIST}{pending.pk}/comments/"
    assert client_for("author").get(url).json() == []
    first = client_for("reviewer").post(url, {"body": "Why a label?"}, format="json")
    assert first.status_code == 201, first.content
    assert {k: v for k, v in first.json().items() if k != "created_at"} == {
        "id": first.json()["id"],
        "author": "reviewer",
        "body": "Why a label?",
        "revision": 1,
    }
    second = client_for("author").post(url, {"body": "Selectors need one."}, format="json")
    assert second.status_code == 201
    listed = client_for("reviewer").get(url).json()
    assert [(c["author"], c["body"]) for c in listed] == [
        ("reviewer", "Why a label?"),
        ("contributor", "Selectors need one."),
    ]
    # The contribution's own log shows them in order with the decisions.
    events = client_for("author").get(f"{LIST}{pending.pk}/").json()["events"]
    assert [(e["action"], e["reason"]) for e in events] == [
        ("submitted", ""),
        ("commented", "Why a label?"),
        ("commented", "Selectors need one."),
    ]


@pytest.mark.parametrize("data", [{}, {"body": ""}, {"body": " \n "}])
def test_an_empty_comment_is_400_and_adds_nothing(client_for, pending, data):
    before = _state()
    response = client_for("author").post(f"{LIST}{pending.pk}/comments/", data, format="json")
    assert (response.status_code, response.json()) == (
        400,
        {"detail": "A comment needs some text."},
    )
    assert _state() == before


@pytest.mark.parametrize(
    ("who", "code"), [("anonymous", 401), ("other", 403)], ids=["anonymous", "other"]
)
@pytest.mark.parametrize("method", ["get", "post"])
def test_others_neither_read_nor_write_the_conversation(client_for, pending, who, code, method):
    contributions.contribution_comment_add(contribution=pending, author=pending.author, body="Hi")
    before = _state()
    url = f"{LIST}{pending.pk}/comments/"
    client = client_for(who)
    response = client.get(url) if method == "get" else client.post(url, {"body": "x"})
    assert response.status_code == code
    assert b"Hi" not in response.content
    assert _state() == before


def test_a_comment_needs_a_publish_or_review_token(pending, reviewer, contributor):
    url = f"{LIST}{pending.pk}/comments/"
    before = _state()
    _, read_only = api_token_create(user=reviewer, name="ro", scopes=["read"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {read_only}")
    assert client.get(url).status_code == 200
    refused = client.post(url, {"body": "x"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["detail"] == (
        "The token 'ro' lacks the 'publish' or 'review' scope a comment needs (it has: read)."
    )
    assert _state() == before
    for user, scope in ((reviewer, "review"), (contributor, "publish")):
        _, key = api_token_create(user=user, name=scope, scopes=[scope])
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        assert client.post(url, {"body": f"by {scope}"}, format="json").status_code == 201


def test_a_missing_contribution_is_404(client_for, db):
    response = client_for("reviewer").get(f"{LIST}999999/comments/")
    assert (response.status_code, response.json()) == (
        404,
        {"detail": "Contribution 999999 does not exist."},
    )


# --------------------------------------------------------------------------- private catalogs


@pytest.fixture
def private_pending(pending, owner):
    publishing.catalog_update(catalog=pending.catalog, actor=owner, visibility="private")
    return pending


@pytest.fixture
def permitted(db):
    user = UserFactory(username="permitted")
    user.user_permissions.add(Permission.objects.get(codename="review_contribution"))
    client = APIClient()
    client.force_authenticate(type(user).objects.get(pk=user.pk))
    return client


def test_a_contribution_to_a_private_catalog_is_404_to_reviewers_who_may_not_see_it(
    client_for, private_pending, permitted
):
    missing = {"detail": f"Contribution {private_pending.pk} does not exist."}
    before = _state()
    for client in (client_for("reviewer"), permitted):
        assert client.get(LIST).json()["results"] == []
        assert client.get(LIST, {"status": "pending"}).json()["count"] == 0
        for path in ("", "comments/"):
            response = client.get(f"{LIST}{private_pending.pk}/{path}")
            assert (response.status_code, response.json()) == (404, missing)
        for action, data in [
            ("approve", {}),
            ("reject", {"reason": "x"}),
            ("request-changes", {"reason": "x"}),
            ("comments", {"body": "x"}),
        ]:
            response = client.post(f"{LIST}{private_pending.pk}/{action}/", data, format="json")
            assert (response.status_code, response.json()) == (404, missing), action
    assert _state() == before
    # Its owner, staff and the author still see it.
    for who in ("owner", "staff", "author"):
        client = client_for(who)
        assert client.get(f"{LIST}{private_pending.pk}/").status_code == 200, who
    queue = client_for("staff").get(LIST).json()["results"]
    assert [c["id"] for c in queue] == [private_pending.pk]
