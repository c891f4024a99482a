"""Review beyond approve: requesting changes, the final reject, the conversation (comments), the
diff between revisions, and who reviews a contribution to a private catalog."""

# The shared fixtures are imported by name (tests/catalogs has no conftest of its own): F811.
# ruff: noqa: F811

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, Permission

from catalogs.exceptions import InvalidInputError, NotAllowedError, NotFoundError
from catalogs.publishing import services as publishing
from catalogs.publishing.models import CatalogVersion
from catalogs.review import services as contributions
from catalogs.review.models import Contribution, ReviewEvent
from tests.catalogs.factories import UserFactory
from tests.catalogs.review.contribution_fixtures import (  # noqa: F401 (fixtures)
    DEFINITION,
    contributor,
    other_owner,
    pending,
    published,
    reviewer,
)

pytestmark = pytest.mark.django_db

EDITED = DEFINITION.replace("set-owner:v1", "set-owner@sha256:" + "a" * 64)


def _state():
    """Everything a refused action must leave unchanged."""
    return (
        list(
            Contribution.objects.order_by("pk").values_list(
                "pk", "status", "revision", "content", "reason", "reviewer_id"
            )
        ),
        list(ReviewEvent.objects.order_by("pk").values_list("pk", "action", "reason", "content")),
        CatalogVersion.objects.count(),
    )


# --------------------------------------------------------------------------- request changes


def test_request_changes_records_the_reason_and_lets_the_author_resubmit(
    pending, reviewer, contributor
):
    c = contributions.contribution_request_changes(
        contribution=pending, actor=reviewer, reason="  Pin the image.  "
    )
    assert (c.status, c.reason, c.reviewer) == ("changes_requested", "Pin the image.", reviewer)
    assert c.get_status_display() == "Changes requested"
    c = contributions.contribution_resubmit(contribution=c, content=EDITED, actor=contributor)
    assert (c.status, c.revision, c.reviewer, c.content) == ("pending", 2, None, EDITED)
    log = list(c.events.values_list("action", "revision", "reason"))
    assert log == [
        ("submitted", 1, ""),
        ("changes_requested", 1, "Pin the image."),
        ("resubmitted", 2, ""),
    ]


@pytest.mark.parametrize("reason", ["", "   ", None])
def test_request_changes_needs_a_reason(pending, reviewer, reason):
    before = _state()
    with pytest.raises(
        InvalidInputError, match="^A reason is required to request changes to a contribution.$"
    ):
        contributions.contribution_request_changes(
            contribution=pending, actor=reviewer, reason=reason
        )
    assert _state() == before


def test_a_reason_over_the_limit_is_refused(pending, reviewer):
    before = _state()
    reason = "x" * (contributions.COMMENT_MAX_CHARS + 1)
    with pytest.raises(InvalidInputError, match="^The reason is 10001 characters long, over"):
        contributions.contribution_request_changes(
            contribution=pending, actor=reviewer, reason=reason
        )
    with pytest.raises(InvalidInputError, match="^The reason is 10001 characters long, over"):
        contributions.contribution_reject(contribution=pending, actor=reviewer, reason=reason)
    assert _state() == before


def test_only_a_pending_contribution_gets_changes_requested(pending, reviewer):
    contributions.contribution_request_changes(contribution=pending, actor=reviewer, reason="a")
    before = _state()
    message = "^Only a pending contribution can be reviewed; this one is changes_requested.$"
    with pytest.raises(InvalidInputError, match=message):
        contributions.contribution_request_changes(
            contribution=pending, actor=reviewer, reason="again"
        )
    with pytest.raises(InvalidInputError, match=message):
        contributions.contribution_approve(contribution=pending, actor=reviewer)
    with pytest.raises(InvalidInputError, match=message):
        contributions.contribution_reject(contribution=pending, actor=reviewer, reason="no")
    assert _state() == before


@pytest.mark.parametrize("who", ["author", "other_owner", "anonymous", "plain"])
def test_only_reviewers_request_changes(pending, contributor, other_owner, who):
    actor = {
        "author": contributor,
        "other_owner": other_owner,
        "anonymous": AnonymousUser(),
        "plain": UserFactory(username="plain"),
    }[who]
    before = _state()
    with pytest.raises(NotAllowedError):
        contributions.contribution_request_changes(contribution=pending, actor=actor, reason="x")
    assert _state() == before


# --------------------------------------------------------------------------- reject is final


def test_a_rejection_is_final(pending, reviewer, contributor):
    contributions.contribution_reject(contribution=pending, actor=reviewer, reason="Not for us.")
    before = _state()
    with pytest.raises(
        InvalidInputError,
        match="^A rejected contribution cannot be resubmitted: the rejection is final. "
        "Submit a new contribution instead.$",
    ):
        contributions.contribution_resubmit(contribution=pending, content=EDITED, actor=contributor)
    assert _state() == before


def test_an_approved_contribution_cannot_be_resubmitted(pending, reviewer, contributor):
    contributions.contribution_approve(contribution=pending, actor=reviewer)
    before = _state()
    with pytest.raises(
        InvalidInputError,
        match="^Only a contribution with changes requested can be resubmitted; this one is "
        "approved.$",
    ):
        contributions.contribution_resubmit(contribution=pending, content=EDITED, actor=contributor)
    assert _state() == before


# --------------------------------------------------------------------------- comments


def test_the_author_and_reviewers_converse_in_order(pending, contributor, reviewer, owner):
    first = contributions.contribution_comment_add(
        contribution=pending, author=reviewer, body="  Why a label and not an annotation?  "
    )
    assert (first.action, first.actor, first.reason, first.revision) == (
        "commented",
        reviewer,
        "Why a label and not an annotation?",
        1,
    )
    contributions.contribution_comment_add(
        contribution=pending, author=contributor, body="Selectors need labels."
    )
    contributions.contribution_comment_add(contribution=pending, author=owner, body="Agreed.")
    comments = contributions.contribution_comment_list(contribution=pending)
    assert [(c.actor.username, c.reason) for c in comments] == [
        ("reviewer", "Why a label and not an annotation?"),
        ("contributor", "Selectors need labels."),
        ("owner", "Agreed."),
    ]
    # The decisions and the comments read as one conversation, oldest first.
    contributions.contribution_request_changes(contribution=pending, actor=reviewer, reason="Doc")
    actions = [e.action for e in contributions.review_event_list(contribution=pending)]
    assert actions == ["submitted", "commented", "commented", "commented", "changes_requested"]
    # A comment changes neither the status nor the revision.
    pending.refresh_from_db()
    assert (pending.status, pending.revision) == ("changes_requested", 1)


def test_comments_continue_after_a_decision(pending, reviewer, contributor):
    contributions.contribution_reject(contribution=pending, actor=reviewer, reason="No.")
    comment = contributions.contribution_comment_add(
        contribution=pending, author=contributor, body="Could you say why?"
    )
    assert comment.action == "commented"


@pytest.mark.parametrize("body", ["", "   \n ", None])
def test_an_empty_comment_is_refused(pending, reviewer, body):
    before = _state()
    with pytest.raises(InvalidInputError, match="^A comment needs some text.$"):
        contributions.contribution_comment_add(contribution=pending, author=reviewer, body=body)
    assert _state() == before


def test_a_comment_over_the_limit_is_refused(pending, reviewer):
    before = _state()
    body = "x" * (contributions.COMMENT_MAX_CHARS + 1)
    with pytest.raises(
        InvalidInputError, match="^The comment is 10001 characters long, over the limit of 10000.$"
    ):
        contributions.contribution_comment_add(contribution=pending, author=reviewer, body=body)
    assert _state() == before


@pytest.mark.parametrize("who", ["plain", "other_owner"])
def test_others_cannot_comment(pending, other_owner, who):
    actor = UserFactory(username="plain") if who == "plain" else other_owner
    before = _state()
    with pytest.raises(
        NotAllowedError, match="^Only its author and reviewers may comment on a contribution.$"
    ):
        contributions.contribution_comment_add(contribution=pending, author=actor, body="Hi")
    assert _state() == before


@pytest.mark.parametrize("actor", [None, AnonymousUser()])
def test_anonymous_cannot_comment(pending, actor):
    before = _state()
    with pytest.raises(NotAllowedError, match="^Sign in to comment on a contribution.$"):
        contributions.contribution_comment_add(contribution=pending, author=actor, body="Hi")
    assert _state() == before


# --------------------------------------------------------------------------- revision diff


def test_the_diff_between_revisions(pending, reviewer, contributor):
    assert contributions.contribution_revision_diff(contribution=pending) is None
    contributions.contribution_request_changes(contribution=pending, actor=reviewer, reason="Pin")
    c = contributions.contribution_resubmit(contribution=pending, content=EDITED, actor=contributor)
    diff = contributions.contribution_revision_diff(contribution=c)
    assert (diff.previous, diff.current, diff.recorded) == (1, 2, True)
    assert diff.lines[:2] == ["--- revision 1", "+++ revision 2"]
    assert [line for line in diff.lines[2:] if line[:1] in "+-"] == [
        "-        image: registry.example.org/set-owner:v1",
        "+        image: registry.example.org/set-owner@sha256:" + "a" * 64,
    ]
    # Resubmitted unchanged: the same definition, no lines.
    contributions.contribution_request_changes(contribution=c, actor=reviewer, reason="Again")
    c = contributions.contribution_resubmit(contribution=c, content=EDITED, actor=contributor)
    same = contributions.contribution_revision_diff(contribution=c)
    assert (same.previous, same.current, same.lines, same.recorded) == (2, 3, [], True)


def test_a_revision_submitted_before_definitions_were_kept_has_no_diff(
    pending, reviewer, contributor
):
    contributions.contribution_request_changes(contribution=pending, actor=reviewer, reason="Pin")
    c = contributions.contribution_resubmit(contribution=pending, content=EDITED, actor=contributor)
    ReviewEvent.objects.filter(contribution=c, action="submitted").update(content="")
    diff = contributions.contribution_revision_diff(contribution=c)
    assert (diff.previous, diff.recorded, diff.lines) == (1, False, [])


def test_a_long_diff_is_cut(pending, reviewer, contributor, settings):
    lines = contributions.unified_diff(
        "\n".join(f"a{i}" for i in range(3000)),
        "\n".join(f"b{i}" for i in range(3000)),
        old_name="x",
        new_name="y",
    )
    assert len(lines) == contributions.REVISION_DIFF_LINES + 1
    assert lines[-1] == "… (cut at 2000 lines)"


# --------------------------------------------------------------------------- private catalogs


@pytest.fixture
def private_pending(pending, owner):
    """``pending``, its catalog made private by its owner."""
    publishing.catalog_update(catalog=pending.catalog, actor=owner, visibility="private")
    pending.refresh_from_db()
    return pending


@pytest.fixture
def permitted_reviewer(db):
    """A user with the review permission (not staff, owning nothing)."""
    user = UserFactory(username="permitted")
    user.user_permissions.add(Permission.objects.get(codename="review_contribution"))
    return type(user).objects.get(pk=user.pk)


@pytest.mark.parametrize("which", ["group", "permission"])
def test_reviewers_do_not_see_contributions_to_private_catalogs(
    private_pending, reviewer, permitted_reviewer, which
):
    user = reviewer if which == "group" else permitted_reviewer
    assert contributions.user_can_review(user=user)  # still a reviewer of everything public
    assert not contributions.user_can_review_catalog(user=user, catalog=private_pending.catalog)
    assert list(contributions.contribution_list_reviewable(user=user)) == []
    assert list(contributions.review_event_list(reviewer=user)) == []
    for get in (contributions.contribution_get_visible, contributions.contribution_get_reviewable):
        with pytest.raises(NotFoundError, match=f"^Contribution {private_pending.pk} does not"):
            get(pk=private_pending.pk, user=user)
    before = _state()
    with pytest.raises(NotAllowedError):
        contributions.contribution_approve(contribution=private_pending, actor=user)
    with pytest.raises(NotAllowedError):
        contributions.contribution_comment_add(contribution=private_pending, author=user, body="x")
    assert _state() == before


def test_owners_staff_and_the_author_still_see_a_private_catalogs_contribution(
    private_pending, owner, staff_user, contributor
):
    for user in (owner, staff_user):
        assert list(contributions.contribution_list_reviewable(user=user)) == [private_pending]
        assert contributions.contribution_get_reviewable(pk=private_pending.pk, user=user)
        assert contributions.review_event_list(reviewer=user).count() == 1
    # The author keeps seeing (and discussing) what they submitted.
    assert contributions.contribution_get_visible(pk=private_pending.pk, user=contributor)
    contributions.contribution_comment_add(
        contribution=private_pending, author=contributor, body="Still there?"
    )
    approved = contributions.contribution_approve(contribution=private_pending, actor=staff_user)
    assert approved.status == "approved"


def test_a_private_publisher_hides_its_catalogs_contributions_too(pending, owner, reviewer):
    publishing.publisher_update(
        publisher=pending.catalog.publisher, actor=owner, visibility="private"
    )
    assert list(contributions.contribution_list_reviewable(user=reviewer)) == []
    assert list(contributions.contribution_list_reviewable(user=owner)) == [pending]
