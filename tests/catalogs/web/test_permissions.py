"""Who may see each page and do each action; forbidden actions change nothing."""

from __future__ import annotations

import pytest

from catalogs.publishing.models import Catalog, CatalogVersion
from catalogs.review import services as contributions
from catalogs.review.models import Contribution, ReviewEvent
from tests.catalogs.factories import catalog_yaml
from tests.catalogs.review.contribution_fixtures import DEFINITION

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "user", "owner", "other_owner", "reviewer", "staff"]
LOGIN = "login"  # an anonymous visitor is sent to sign in


@pytest.fixture
def users(owner, other_user, other_owner, reviewer, staff_user):
    return {
        "anonymous": None,
        "user": other_user,
        "owner": owner,
        "other_owner": other_owner,
        "reviewer": reviewer,
        "staff": staff_user,
    }


@pytest.fixture
def rejected(pending, reviewer):
    """The contributor's contribution, changes requested (so that its author may edit it)."""
    return contributions.contribution_request_changes(
        contribution=pending, actor=reviewer, reason="no"
    )


def _state():
    return (
        list(Catalog.objects.values_list("pk", "description", "latest_version")),
        list(CatalogVersion.objects.values_list("pk", "digest")),
        list(Contribution.objects.values_list("pk", "status", "revision", "content", "reason")),
        ReviewEvent.objects.count(),
    )


def _expect(response, expected) -> None:
    if expected == LOGIN:
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/?next=")
    else:
        assert response.status_code == expected, response.content[:500]


PAGES = {
    # url template: expected status per role, in ROLES order
    "/": [200] * 6,
    "/catalogs/example-co/functions/": [200] * 6,
    "/catalogs/example-co/functions/functions/example.co/Fn/": [200] * 6,
    "/catalogs/example-co/functions/publish/": [LOGIN, 403, 200, 403, 403, 200],
    # Who owns no publisher is sent to create one first.
    "/catalogs/new/": [LOGIN, 302, 200, 200, 302, 200],
    "/publishers/new/": [LOGIN, 200, 200, 200, 200, 200],
    "/publishers/example-co/": [200] * 6,
    "/verification/": [LOGIN, 403, 403, 403, 403, 200],
    "/contribute/": [LOGIN, 200, 200, 200, 200, 200],
    "/contributions/": [LOGIN, 200, 200, 200, 200, 200],
    # The author's page (the contributor is none of these roles) is also the reviewers'.
    "/contributions/{pk}/": [LOGIN, 403, 200, 403, 200, 200],
    "/contributions/999999/": [LOGIN, 404, 404, 404, 404, 404],
    "/contributions/{pk}/edit/": [LOGIN, 403, 403, 403, 403, 403],
    # Owners review contributions to their own publishers' catalogs.
    "/review/": [LOGIN, 403, 200, 200, 200, 200],
    "/review/{pk}/": [LOGIN, 403, 200, 403, 200, 200],
    "/review/log/": [LOGIN, 403, 200, 200, 200, 200],
    "/accounts/tokens/": [LOGIN, 200, 200, 200, 200, 200],
    "/accounts/publishers/": [LOGIN, 200, 200, 200, 200, 200],
    "/accounts/email/": [LOGIN, 200, 200, 200, 200, 200],
    "/accounts/signup/": [200] * 6,
    "/accounts/password/reset/": [200] * 6,
    "/accounts/password/reset/sent/": [200] * 6,
    "/accounts/email/verify/not-a-token/": [200] * 6,  # a button; its POST checks the token
    "/install/": [200] * 6,
}


@pytest.mark.parametrize("url", list(PAGES))
@pytest.mark.parametrize("role", ROLES)
def test_page_access(as_user, users, rejected, url, role):
    response = as_user(users[role]).get(url.format(pk=rejected.pk))
    _expect(response, PAGES[url][ROLES.index(role)])


def test_the_author_may_edit_their_contribution_with_changes_requested(
    as_user, rejected, contributor
):
    assert as_user(contributor).get(f"/contributions/{rejected.pk}/edit/").status_code == 200


def test_a_forbidden_page_says_why(as_user, users, published):
    body = as_user(users["user"]).get("/catalogs/example-co/functions/publish/").content.decode()
    assert "Only owners of publisher &#x27;example-co&#x27; may publish here." in body


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("anonymous", LOGIN),
        ("user", 403),
        ("owner", 302),
        ("other_owner", 403),
        ("reviewer", 403),
        ("staff", 302),
    ],
)
def test_publish_action(as_user, users, published, role, expected):
    before = _state()
    text = catalog_yaml(("example.co", "Fn", "v1"), ("example.co", "New", "v1"))
    response = as_user(users[role]).post(
        "/catalogs/example-co/functions/publish/", {"content": text, "action": "publish"}
    )
    _expect(response, expected)
    if expected == 302:
        assert CatalogVersion.objects.count() == 2
    else:
        assert _state() == before


@pytest.mark.parametrize("role", ["anonymous", "user", "other_owner", "reviewer"])
def test_create_catalog_under_someone_elses_publisher_creates_nothing(
    as_user, users, publisher, role
):
    before = _state()
    response = as_user(users[role]).post(
        "/catalogs/new/", {"publisher": publisher.pk, "name": "sneaky"}
    )
    if role == "other_owner":
        # Their own publishers are the only choices: the form refuses the others.
        assert response.status_code == 200
        assert "Select a valid choice." in response.content.decode()
    elif role == "anonymous":
        _expect(response, LOGIN)
    else:
        # Who owns no publisher is sent to create their own.
        assert response.status_code == 302
        assert response["Location"] == "/publishers/new/?next=/catalogs/new/"
    assert _state() == before


@pytest.mark.parametrize("action", ["approve", "reject", "request-changes", "comment"])
@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("anonymous", LOGIN),
        ("user", 403),
        ("owner", 302),
        ("other_owner", 403),
        ("reviewer", 302),
        ("staff", 302),
    ],
)
def test_review_actions(as_user, users, pending, action, role, expected):
    before = _state()
    data = {"reason": "Not now.", "changes": "Not now.", "body": "Not now."}
    response = as_user(users[role]).post(f"/review/{pending.pk}/{action}/", data)
    _expect(response, expected)
    pending.refresh_from_db()
    if expected == 302 and action == "comment":
        assert pending.status == "pending"
        last = pending.events.last()
        assert (last.action, last.actor, last.reason) == ("commented", users[role], "Not now.")
    elif expected == 302:
        statuses = {
            "approve": "approved",
            "reject": "rejected",
            "request-changes": "changes_requested",
        }
        assert pending.status == statuses[action]
        assert pending.reviewer == users[role]
    else:
        assert _state() == before


@pytest.mark.parametrize("action", ["approve", "reject", "request-changes", "comment"])
@pytest.mark.parametrize("role", ["reviewer", "user", "other_owner"])
def test_review_actions_on_a_private_catalog_are_404_to_who_may_not_see_it(
    as_user, users, pending, owner, action, role
):
    """A reviewer of everything public is an outsider to a private catalog: 404, as for no
    contribution, like everyone else who neither owns it nor is staff."""
    from catalogs.publishing import services as publishing

    publishing.catalog_update(catalog=pending.catalog, actor=owner, visibility="private")
    before = _state()
    data = {"reason": "x", "changes": "x", "body": "x"}
    response = as_user(users[role]).post(f"/review/{pending.pk}/{action}/", data)
    assert response.status_code == 404
    assert _state() == before


def test_the_author_cannot_review_even_as_a_reviewer(as_user, published, reviewer):
    c = contributions.contribution_submit(catalog=published, content=DEFINITION, actor=reviewer)
    before = _state()
    for action in ("approve", "reject", "request-changes"):
        response = as_user(reviewer).post(
            f"/review/{c.pk}/{action}/", {"reason": "x", "changes": "x"}
        )
        assert response.status_code == 403
        assert "Nobody reviews their own contribution." in response.content.decode()
    assert _state() == before


@pytest.mark.parametrize("role", ROLES)
def test_only_the_author_resubmits(as_user, users, rejected, role):
    before = _state()
    response = as_user(users[role]).post(
        f"/contributions/{rejected.pk}/edit/", {"content": DEFINITION}
    )
    _expect(response, LOGIN if role == "anonymous" else 403)
    assert _state() == before


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("anonymous", LOGIN),
        ("user", 403),
        ("owner", 302),
        ("other_owner", 403),
        ("reviewer", 302),
        ("staff", 302),
    ],
)
def test_comment_action(as_user, users, rejected, role, expected):
    before = _state()
    response = as_user(users[role]).post(
        f"/contributions/{rejected.pk}/comments/", {"body": "A word."}
    )
    _expect(response, expected)
    if expected == 302:
        event = ReviewEvent.objects.latest("pk")
        assert (event.action, event.actor, event.reason) == ("commented", users[role], "A word.")
        rejected.refresh_from_db()
        assert rejected.status == "changes_requested"  # a comment decides nothing
    else:
        assert _state() == before


def test_the_author_opens_and_comments_on_their_contribution(as_user, rejected, contributor):
    assert as_user(contributor).get(f"/contributions/{rejected.pk}/").status_code == 200
    response = as_user(contributor).post(f"/contributions/{rejected.pk}/comments/", {"body": "?"})
    assert response.status_code == 302
    assert ReviewEvent.objects.latest("pk").actor == contributor


def test_verifying_with_a_bad_token_changes_nothing(as_user, users):
    from catalogs.accounts.models import EmailVerification

    for role in ROLES:
        response = as_user(users[role]).post("/accounts/email/verify/not-a-token/")
        assert response.status_code == 400
    assert not EmailVerification.objects.exists()


def test_anonymous_cannot_contribute(as_user, published):
    before = _state()
    response = as_user(None).post("/contribute/", {"catalog": published.pk, "content": DEFINITION})
    _expect(response, LOGIN)
    assert _state() == before


def test_get_is_not_enough_to_approve(as_user, pending, reviewer):
    assert as_user(reviewer).get(f"/review/{pending.pk}/approve/").status_code == 405
    pending.refresh_from_db()
    assert pending.status == "pending"


def test_review_actions_need_the_csrf_token(pending, reviewer):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    assert client.post(f"/review/{pending.pk}/approve/").status_code == 403
    pending.refresh_from_db()
    assert pending.status == "pending"


def test_anonymous_cannot_make_a_token(as_user, db):
    from catalogs.accounts.models import ApiToken

    _expect(as_user(None).post("/accounts/tokens/", {"action": "create", "name": "x"}), LOGIN)
    assert not ApiToken.objects.exists()
