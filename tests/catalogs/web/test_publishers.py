"""Publishers run by their users: create one, invite co-owners, ask for the verified badge, and
staff grant or refuse it; every change has an audit entry, and bad input changes nothing."""

from __future__ import annotations

import pytest

from catalogs.exceptions import AlreadyExistsError, InvalidInputError, NotAllowedError
from catalogs.publishing import publishers
from catalogs.publishing.models import Publisher, PublisherEvent, VerificationRequest
from tests.catalogs.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def newcomer(db):
    """A user who just signed up: owns nothing."""
    return UserFactory(username="newcomer")


def _state():
    return (
        list(Publisher.objects.values_list("slug", "verified")),
        sorted(Publisher.owners.through.objects.values_list("publisher__slug", "user__username")),
        list(VerificationRequest.objects.values_list("status", "reason")),
        PublisherEvent.objects.count(),
    )


def test_a_new_user_creates_a_publisher_then_a_catalog(as_user, newcomer):
    client = as_user(newcomer)
    response = client.get("/catalogs/new/", follow=True)
    assert response.redirect_chain == [("/publishers/new/?next=/catalogs/new/", 302)]
    assert "A catalog belongs to a publisher: create yours first." in response.content.decode()
    response = client.post(
        "/publishers/new/",
        {"slug": "newco", "display_name": "New Co", "next": "/catalogs/new/"},
    )
    assert response.status_code == 302 and response["Location"] == "/catalogs/new/"
    publisher = Publisher.objects.get(slug="newco")
    assert list(publisher.owners.all()) == [newcomer]
    assert not publisher.verified
    form = client.get("/catalogs/new/").context["form"]
    assert list(form.fields["publisher"].queryset) == [publisher]


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        ("example-co", "Publisher &#x27;example-co&#x27; already exists."),
        ("not a slug", "use only letters, numbers, hyphens and underscores"),
        ("", "This field is required."),
        ("mirrors", "Publisher slug &#x27;mirrors&#x27; is reserved for mirrored catalogs"),
    ],
)
def test_a_bad_publisher_name_shows_the_error_and_creates_nothing(
    as_user, newcomer, publisher, slug, message
):
    before = _state()
    response = as_user(newcomer).post("/publishers/new/", {"slug": slug})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert _state() == before


def test_an_unsafe_next_is_ignored(as_user, newcomer):
    response = as_user(newcomer).post(
        "/publishers/new/", {"slug": "newco", "next": "https://evil.example/"}
    )
    assert response["Location"] == "/publishers/newco/"


def test_an_owner_invites_a_co_owner(as_user, owner, catalog, newcomer):
    publisher = catalog.publisher
    client = as_user(owner)
    response = client.post("/publishers/example-co/owners/", {"username": "newcomer"})
    assert response.status_code == 302
    # Invited, not yet an owner: nobody owns a publisher without saying yes.
    assert set(publisher.owners.values_list("username", flat=True)) == {"owner"}
    assert as_user(newcomer).get("/catalogs/example-co/functions/publish/").status_code == 403
    invitee = as_user(newcomer)
    assert "Invitations (1)" in invitee.get("/").content.decode()
    [invitation] = publisher.invitations.all()
    accepted = invitee.post(f"/accounts/invitations/{invitation.pk}/", {"action": "accept"})
    assert accepted["Location"] == "/publishers/example-co/"
    assert set(publisher.owners.values_list("username", flat=True)) == {"owner", "newcomer"}
    page = client.get("/publishers/example-co/").content.decode()
    assert "<strong>newcomer</strong>" in page
    assert "Owner invited" in page and "Owner added" in page and "<td>newcomer</td>" in page
    # The co-owner may now publish there.
    assert invitee.get("/catalogs/example-co/functions/publish/").status_code == 200


@pytest.mark.parametrize(
    ("username", "message"),
    [
        ("ghost", "Unknown user &#x27;ghost&#x27;: they must sign up first."),
        ("owner", "owner already owns publisher &#x27;example-co&#x27;."),
        ("", "This field is required."),
    ],
)
def test_a_bad_invitation_shows_the_error_and_changes_nothing(
    as_user, owner, publisher, username, message
):
    before = _state()
    response = as_user(owner).post("/publishers/example-co/owners/", {"username": username})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert _state() == before


def test_only_owners_invite(as_user, publisher, newcomer, other_user):
    before = _state()
    response = as_user(other_user).post("/publishers/example-co/owners/", {"username": "newcomer"})
    assert response.status_code == 403
    assert _state() == before
    page = as_user(other_user).get("/publishers/example-co/").content.decode()
    assert "Invite owner" not in page and "Audit log" not in page


def test_verified_badge_requested_then_granted_by_staff(as_user, owner, publisher, staff_user):
    client = as_user(owner)
    response = client.post("/publishers/example-co/verification/", {"message": "example.co"})
    assert response.status_code == 302
    assert "waiting for staff" in client.get("/publishers/example-co/").content.decode()
    # A second request while one is pending is refused.
    before = _state()
    again = client.post("/publishers/example-co/verification/", {"message": "again"})
    assert again.status_code == 400 and "has a pending request already" in again.content.decode()
    assert _state() == before

    staff = as_user(staff_user)
    queue = staff.get("/verification/")
    [pending] = queue.context["pending"]
    assert "Verification</a>" in queue.content.decode()
    response = staff.post(f"/verification/{pending.pk}/", {"action": "grant"})
    assert response.status_code == 302
    publisher.refresh_from_db()
    assert publisher.verified
    events = list(
        PublisherEvent.objects.filter(publisher=publisher).values_list("action", "actor__username")
    )
    assert events == [("verification_requested", "owner"), ("verification_granted", "staff")]
    page = as_user(None).get("/publishers/example-co/").content.decode()
    assert ">verified publisher</span>" in page and "unverified" not in page


def test_staff_refuse_with_a_reason_and_a_refusal_needs_one(as_user, owner, publisher, staff_user):
    request = publishers.publisher_verification_request(publisher=publisher, actor=owner)
    staff = as_user(staff_user)
    before = _state()
    response = staff.post(f"/verification/{request.pk}/", {"action": "refuse"}, follow=True)
    assert "A reason is required to refuse the verified badge." in response.content.decode()
    assert _state() == before
    staff.post(f"/verification/{request.pk}/", {"action": "refuse", "reason": "Not your domain."})
    request.refresh_from_db()
    publisher.refresh_from_db()
    assert (request.status, request.reason, request.decided_by) == (
        "refused",
        "Not your domain.",
        staff_user,
    )
    assert not publisher.verified
    page = as_user(owner).get("/publishers/example-co/").content.decode()
    assert "Verification refused" in page and "Not your domain." in page
    # Decided once: a second decision changes nothing.
    before = _state()
    staff = as_user(staff_user)
    response = staff.post(f"/verification/{request.pk}/", {"action": "grant"}, follow=True)
    assert "This request was refused already." in response.content.decode()
    assert _state() == before


@pytest.mark.parametrize("who", ["owner", "other_user"])
def test_only_staff_decide(as_user, owner, other_user, publisher, who):
    request = publishers.publisher_verification_request(publisher=publisher, actor=owner)
    before = _state()
    user = {"owner": owner, "other_user": other_user}[who]
    response = as_user(user).post(f"/verification/{request.pk}/", {"action": "grant"})
    assert response.status_code == 403
    assert _state() == before
    with pytest.raises(NotAllowedError, match="^Only staff grant or refuse the verified badge.$"):
        publishers.publisher_verification_decide(request=request, actor=user, grant=True)


def test_services_refuse_what_the_pages_refuse(owner, publisher, other_user):
    with pytest.raises(NotAllowedError):
        publishers.publisher_owner_add(publisher=publisher, username="owner", actor=other_user)
    with pytest.raises(AlreadyExistsError):
        publishers.publisher_owner_add(publisher=publisher, username="owner", actor=owner)
    with pytest.raises(NotAllowedError):
        publishers.publisher_verification_request(publisher=publisher, actor=other_user)
    publisher.verified = True
    publisher.save()
    with pytest.raises(InvalidInputError, match="is verified already"):
        publishers.publisher_verification_request(publisher=publisher, actor=owner)


def test_the_new_pages_are_light_and_load_nothing_from_elsewhere(
    as_user, staff_user, owner, publisher
):
    import re

    publishers.publisher_verification_request(publisher=publisher, actor=owner)
    client = as_user(staff_user)
    for url in (
        "/publishers/new/",
        "/publishers/example-co/",
        "/verification/",
        "/mirrors/new/",
        "/accounts/login/",
        "/no/such/page/",
    ):
        body = client.get(url).content
        assert len(body) <= 100 * 1024, url
        assets = re.findall(rb'(?:src|href)="([^"]+)"', body)
        assert all(not a.startswith((b"http:", b"https:", b"//")) for a in assets), (url, assets)
