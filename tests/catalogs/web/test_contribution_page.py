"""The author's page of a contribution: status, the diff against the catalog's current function,
trial runs and a conversation of the author and the reviewers (review events, comments through
contribution_comment_add). Anyone else gets the 403 the review page gives them."""

from __future__ import annotations

import pytest

from catalogs.review import services as contributions
from catalogs.review.models import Contribution, ReviewEvent
from tests.catalogs.review.contribution_fixtures import DEFINITION

pytestmark = pytest.mark.django_db

# A new version of the published example.co/Fn: a new image and a network need.
CHANGED = """\
apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionDefinition
spec:
  group: example.co
  names:
    kind: Fn
  description: The Fn function.
  publisher: example.co
  tags: [mutator, test]
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        type: object
    idempotent: true
    runtime:
      container:
        image: registry.example.co/fn:v2
        requireNetwork: true
"""


def _events(contribution) -> list[tuple[str, str, str]]:
    return list(
        ReviewEvent.objects.filter(contribution=contribution)
        .order_by("pk")
        .values_list("actor__username", "action", "reason")
    )


def test_my_contributions_link_to_their_pages(as_user, pending, contributor):
    listed = as_user(contributor).get("/contributions/").text
    assert f'<a href="/contributions/{pending.pk}/">#{pending.pk}</a>' in listed
    assert f'<a href="/contributions/{pending.pk}/"><strong>SetOwner</strong></a>' in listed


def test_the_author_sees_status_diff_trials_and_conversation(
    as_user, published, contributor, reviewer
):
    c = contributions.contribution_submit(catalog=published, content=CHANGED, actor=contributor)
    contributions.contribution_request_changes(
        contribution=c, actor=reviewer, reason="Why the network?"
    )
    page = as_user(contributor).get(f"/contributions/{c.pk}/")
    assert page.status_code == 200
    body = page.text
    assert f"#{c.pk}: Fn" in body
    assert '<span class="badge changes_requested">Changes requested</span>' in body
    assert "Reviewer's reason: <strong>Why the network?</strong>" in body
    assert f'href="/contributions/{c.pk}/edit/">Edit and resubmit</a>' in body
    # The diff against the catalog's current definition of example.co/Fn.
    assert '<span class="del">-        image: registry.example.co/fn:v1</span>' in body
    assert '<span class="add">+        image: registry.example.co/fn:v2</span>' in body
    assert "new requirement: network" in body
    assert "Trial runs in the sandbox" in body
    assert "No trial run of revision 1 yet" in body  # trial runs are off in these tests
    assert "Write to the author" not in body and "Ask or answer the reviewers" in body
    conversation = body.split('id="conversation"')[1]
    assert conversation.index("submitted") < conversation.index("Why the network?")


def test_author_and_reviewer_talk_on_the_page(as_user, pending, contributor, reviewer):
    author = as_user(contributor)
    sent = author.post(
        f"/contributions/{pending.pk}/comments/", {"body": "Does v1 need a mount?"}, follow=True
    )
    assert sent.redirect_chain[-1][0] == f"/contributions/{pending.pk}/#conversation"
    assert "Does v1 need a mount?" in sent.text
    # The reviewer sees it on the review page's log, and answers on the contribution's page.
    review = as_user(reviewer).get(f"/review/{pending.pk}/").text
    assert "Does v1 need a mount?" in review
    assert f'href="/contributions/{pending.pk}/#conversation">Conversation' in review
    page = as_user(reviewer).get(f"/contributions/{pending.pk}/").text
    assert "Write to the author" in page and "Review it</a>" in page
    as_user(reviewer).post(f"/contributions/{pending.pk}/comments/", {"body": "No mount."})
    assert _events(pending)[1:] == [
        ("contributor", "commented", "Does v1 need a mount?"),
        ("reviewer", "commented", "No mount."),
    ]
    pending.refresh_from_db()
    assert pending.status == "pending"  # a comment decides nothing
    assert "No mount." in author.get(f"/contributions/{pending.pk}/").text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("   ", "A comment needs some text."),
        ("x" * 10_001, "The comment is 10001 characters long, over the limit of 10000."),
    ],
)
def test_a_bad_comment_says_why_and_adds_nothing(as_user, pending, contributor, text, message):
    before = _events(pending)
    response = as_user(contributor).post(f"/contributions/{pending.pk}/comments/", {"body": text})
    assert response.status_code == 400
    assert message in response.text
    assert _events(pending) == before


@pytest.mark.parametrize("role", ["other_user", "other_owner"])
def test_nobody_else_reads_or_comments(as_user, pending, request, role):
    user = request.getfixturevalue(role)
    client = as_user(user)
    page = client.get(f"/contributions/{pending.pk}/")
    assert page.status_code == 403
    assert "Only its author and reviewers may see a contribution." in page.text
    assert "SetOwner" not in page.text
    before = _events(pending)
    response = client.post(f"/contributions/{pending.pk}/comments/", {"body": "spam"})
    assert response.status_code == 403
    assert _events(pending) == before


def test_anonymous_is_sent_to_sign_in_and_comments_nothing(as_user, pending):
    before = _events(pending)
    for response in (
        as_user(None).get(f"/contributions/{pending.pk}/"),
        as_user(None).post(f"/contributions/{pending.pk}/comments/", {"body": "x"}),
    ):
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/?next=")
    assert _events(pending) == before


def test_a_missing_contribution_is_404(as_user, contributor, db):
    assert not Contribution.objects.filter(pk=999999).exists()
    assert as_user(contributor).get("/contributions/999999/").status_code == 404


def test_comment_service_refuses_outsiders(pending, other_user):
    from catalogs.exceptions import NotAllowedError

    with pytest.raises(NotAllowedError, match="Only its author and reviewers may comment"):
        contributions.contribution_comment_add(contribution=pending, author=other_user, body="hi")
    assert DEFINITION  # the fixture's definition is what the author submitted
    assert not ReviewEvent.objects.filter(action="commented").exists()
