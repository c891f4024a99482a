"""A contribution's conversation and decisions reach the people in it: an inbox entry and an
e-mail (received by a real local SMTP server, aiosmtpd) for the other participants, never the
commenter; and ``contribution.commented`` CloudEvents to the catalog's publisher's webhooks, at a
real local receiver that checks the HMAC itself (hmac + hashlib)."""

# The shared fixtures are imported by name: F811.
# ruff: noqa: F811

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from catalogs import events
from catalogs.exceptions import InvalidInputError
from catalogs.notifications import subscriptions
from catalogs.notifications.models import Notification, Subscription, WebhookDelivery
from catalogs.review import services as contributions
from catalogs.review.events import ContributionCommented
from catalogs.review.models import ReviewEvent
from tests.catalogs.factories import UserFactory
from tests.catalogs.notifications.test_webhooks import SECRET, receiver_for  # noqa: F401
from tests.catalogs.review import contribution_fixtures
from tests.smtp_server import smtp  # noqa: F401

pytestmark = pytest.mark.django_db

contributor = contribution_fixtures.contributor
reviewer = contribution_fixtures.reviewer
published = contribution_fixtures.published
pending = contribution_fixtures.pending

HOOKS = "/api/v1/publishers/example-co/webhooks/"


def _as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _inbox(user) -> list[str]:
    return [n.title for n in Notification.objects.filter(user=user)]


def test_the_handlers_are_subscribed():
    from catalogs.notifications import services

    assert services.on_contribution_commented in events.subscribers(ContributionCommented)
    assert subscriptions.on_contribution_commented in events.subscribers(ContributionCommented)


def test_a_reviewers_comment_reaches_the_author_by_inbox_mail_and_webhook(
    smtp, receiver_for, owner, reviewer, contributor, pending, django_capture_on_commit_callbacks
):
    receiver = receiver_for()
    response = _as(owner).post(
        HOOKS,
        {"url": receiver.url, "secret": SECRET, "events": ["contribution.commented"]},
        format="json",
    )
    assert response.status_code == 201, response.content
    with django_capture_on_commit_callbacks(execute=True):
        response = _as(reviewer).post(
            f"/api/v1/contributions/{pending.pk}/comments/",
            {"body": "Why does it need the network?"},
            format="json",
        )
    assert response.status_code == 201, response.content

    title = f"reviewer commented on contribution #{pending.pk} (SetOwner to example-co/functions)"
    assert _inbox(contributor) == [title]
    assert _inbox(reviewer) == []  # never the commenter
    assert _inbox(owner) == []  # an owner who neither took part nor follows it
    [(subject, body)] = smtp.bodies_to("contributor@example.co")
    assert subject == f"[KRM Catalog Registry] {title}"
    assert f"/contributions/{pending.pk}/" in body
    assert "because you take part in this contribution" in body
    assert smtp.bodies_to("reviewer@example.co") == []

    [got] = receiver.received
    assert got["signed"] is True
    event = got["event"]
    assert event["type"] == "contribution.commented"
    assert event["specversion"] == "1.0" and event["source"].endswith("/publishers/example-co/")
    comment = ReviewEvent.objects.get(action="commented")
    assert event["subject"] == f"contributions/{pending.pk}/comments/{comment.pk}"
    data = event["data"]
    assert (data["id"], data["commenter"], data["body"], data["author"], data["status"]) == (
        pending.pk,
        "reviewer",
        "Why does it need the network?",
        "contributor",
        "pending",
    )


def test_the_authors_comment_reaches_the_reviewers_who_took_part_or_follow(
    smtp, owner, reviewer, contributor, pending, django_capture_on_commit_callbacks
):
    follower = UserFactory(username="follower")  # follows the catalog, reviews nothing
    bystander = UserFactory(username="bystander-reviewer")
    bystander.groups.add(*reviewer.groups.all())  # reviews everything, but took no part
    for user in (owner, follower):
        Subscription.objects.create(user=user, catalog=pending.catalog)
    with django_capture_on_commit_callbacks(execute=True):
        contributions.contribution_request_changes(
            contribution=pending, actor=reviewer, reason="add tests"
        )
    with django_capture_on_commit_callbacks(execute=True):
        contributions.contribution_comment_add(
            contribution=pending, author=contributor, body="Tests added, see revision 2."
        )

    title = (
        f"contributor commented on contribution #{pending.pk} (SetOwner to example-co/functions)"
    )
    # The reviewer took part (requested changes); the owner follows the catalog and reviews it.
    assert _inbox(reviewer) == [title]
    assert _inbox(owner) == [title]
    assert _inbox(follower) == []  # follows, but may not see contributions
    assert _inbox(bystander) == []
    # The author heard of the decision, not of their own comment.
    decided = (
        f"Your contribution #{pending.pk} (SetOwner to example-co/functions): changes requested"
    )
    assert _inbox(contributor) == [f"{decided} by reviewer"]
    assert [s for s, _ in smtp.bodies_to("contributor@example.co")] == [
        f"[KRM Catalog Registry] {decided} by reviewer"
    ]
    assert [s for s, _ in smtp.bodies_to("owner@example.co")] == [f"[KRM Catalog Registry] {title}"]
    assert smtp.bodies_to("follower@example.co") == []


def test_a_refused_comment_tells_nobody(
    receiver_for, owner, reviewer, contributor, pending, django_capture_on_commit_callbacks
):
    receiver = receiver_for()
    _as(owner).post(
        HOOKS,
        {"url": receiver.url, "secret": SECRET, "events": ["contribution.commented"]},
        format="json",
    )
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(InvalidInputError, match="A comment needs some text."),
    ):
        contributions.contribution_comment_add(contribution=pending, author=reviewer, body="  ")
    assert not ReviewEvent.objects.filter(action="commented").exists()
    assert not Notification.objects.exists()
    assert not WebhookDelivery.objects.exists()
    assert receiver.received == []


@pytest.mark.parametrize(
    ("decide", "what"),
    [
        (lambda c, r: contributions.contribution_approve(contribution=c, actor=r), "approved"),
        (
            lambda c, r: contributions.contribution_reject(contribution=c, actor=r, reason="no"),
            "rejected",
        ),
    ],
)
def test_every_decision_reaches_the_author_only(
    smtp, owner, reviewer, contributor, pending, decide, what, django_capture_on_commit_callbacks
):
    Subscription.objects.create(user=owner, catalog=pending.catalog)
    with django_capture_on_commit_callbacks(execute=True):
        decide(pending, reviewer)
    title = (
        f"Your contribution #{pending.pk} (SetOwner to example-co/functions): {what} by reviewer"
    )
    assert _inbox(contributor) == [title]
    assert [s for s, _ in smtp.bodies_to("contributor@example.co")] == [
        f"[KRM Catalog Registry] {title}"
    ]
    assert _inbox(reviewer) == []
    # The owner follows the catalog: an approval publishes a version, which is what they hear of.
    expected_owner = ["example-co/functions published version 2"] if what == "approved" else []
    assert _inbox(owner) == expected_owner
