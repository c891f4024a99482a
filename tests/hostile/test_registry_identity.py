"""Who a publisher is: the verified badge does not survive a new name or new owners.

Staff vouch for a publisher as they saw it; an owner who renames it (or changes its owners) must
ask again. Each clearing is in the publisher's audit log, with who did it and what changed.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from catalogs.exceptions import AlreadyExistsError, InvalidInputError, NotAllowedError
from catalogs.publishing import publishers
from catalogs.publishing.models import Publisher, PublisherEvent

pytestmark = pytest.mark.django_db

DETAIL = "/api/v1/publishers/example-co/"


@pytest.fixture
def verified(publisher, owner, staff_user) -> Publisher:
    request = publishers.publisher_verification_request(publisher=publisher, actor=owner)
    publishers.publisher_verification_decide(request=request, actor=staff_user, grant=True)
    publisher.refresh_from_db()
    assert publisher.verified
    return publisher


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _log(publisher: Publisher) -> list[tuple[str, str, str]]:
    return [
        (e.action, e.actor.username if e.actor else "", e.detail)
        for e in PublisherEvent.objects.filter(publisher=publisher).select_related("actor")
    ]


def test_a_rename_clears_the_verified_badge_in_the_audit_log(verified, owner):
    response = _client(owner).patch(
        DETAIL, {"display_name": "Kubernetes SIG CLI (official)"}, format="json"
    )
    assert response.status_code == 200
    assert (response.json()["display_name"], response.json()["verified"]) == (
        "Kubernetes SIG CLI (official)",
        False,
    )
    verified.refresh_from_db()
    assert verified.verified is False
    assert _log(verified)[-1] == (
        "verification_cleared",
        "owner",
        "renamed from 'Example Co' to 'Kubernetes SIG CLI (official)'",
    )


def test_the_same_name_again_keeps_the_badge(verified, owner):
    response = _client(owner).patch(DETAIL, {"display_name": "Example Co"}, format="json")
    assert (response.status_code, response.json()["verified"]) == (200, True)
    assert [e[0] for e in _log(verified)] == ["verification_requested", "verification_granted"]


def test_a_new_owner_clears_the_verified_badge_when_they_accept(verified, owner, other_user):
    response = _client(owner).patch(DETAIL, {"owners": ["owner", "other"]}, format="json")
    assert (response.status_code, response.json()["verified"]) == (200, True)
    [invitation] = verified.invitations.all()
    publishers.publisher_invitation_decide(invitation=invitation, actor=other_user, accept=True)
    verified.refresh_from_db()
    assert verified.verified is False
    assert _log(verified)[-3:] == [
        ("owner_invited", "owner", "other"),
        ("owner_added", "other", "other"),
        ("verification_cleared", "other", "owner other added"),
    ]


def test_an_owner_removed_clears_the_verified_badge(verified, owner, other_user):
    verified.owners.add(other_user)
    response = _client(owner).patch(DETAIL, {"owners": ["owner"]}, format="json")
    assert (response.status_code, response.json()["verified"]) == (200, False)
    assert _log(verified)[-1] == ("verification_cleared", "owner", "owners removed: ['other']")


# ----------------------------------------------------------------------------- owner invitations


def test_nobody_is_made_an_owner_without_accepting(owner, publisher, other_user, staff_user):
    """An owner invites; only the invitee answers; a declined invitation adds nobody."""
    invitation = publishers.publisher_owner_add(publisher=publisher, username="other", actor=owner)
    assert list(publisher.owners.values_list("username", flat=True)) == ["owner"]
    for someone in (owner, staff_user):
        with pytest.raises(NotAllowedError) as refused:
            publishers.publisher_invitation_decide(
                invitation=invitation, actor=someone, accept=True
            )
        assert refused.value.message == "Only the invited user may accept or decline an invitation."
    with pytest.raises(AlreadyExistsError) as twice:
        publishers.publisher_owner_add(publisher=publisher, username="other", actor=owner)
    assert twice.value.message == "other is invited to own publisher 'example-co' already."
    publishers.publisher_invitation_decide(invitation=invitation, actor=other_user, accept=False)
    assert list(publisher.owners.values_list("username", flat=True)) == ["owner"]
    with pytest.raises(InvalidInputError) as again:
        publishers.publisher_invitation_decide(invitation=invitation, actor=other_user, accept=True)
    assert again.value.message == "This invitation was declined already."
    assert list(publisher.owners.values_list("username", flat=True)) == ["owner"]
    assert [e[0] for e in _log(publisher)] == ["owner_invited", "invitation_declined"]


# ----------------------------------------------------------------------------- look-alike names


def _publishers() -> list[tuple[str, str]]:
    return list(Publisher.objects.order_by("slug").values_list("slug", "display_name"))


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        ("ACME", "Publisher slug 'ACME' looks like the existing publisher 'acme': choose another."),
        ("Acme", "Publisher slug 'Acme' looks like the existing publisher 'acme': choose another."),
        (
            "acme-",
            "Publisher slug 'acme-' looks like the existing publisher 'acme': choose another.",
        ),
        (
            "acrne",
            "Publisher slug 'acrne' looks like the existing publisher 'acme': choose another.",
        ),
        (
            "0fficial",
            "Publisher slug '0fficial' looks like 'official', which is reserved for the registry "
            "itself: choose another.",
        ),
        (
            "officiaI",
            "Publisher slug 'officiaI' looks like 'official', which is reserved for the registry "
            "itself: choose another.",
        ),
        (
            "mirrors-",
            "Publisher slug 'mirrors-' looks like 'mirrors', which is reserved for the registry "
            "itself: choose another.",
        ),
        (
            "exarnple",
            "Publisher slug 'exarnple' looks like the existing publisher 'example': "
            "choose another.",
        ),
        (
            "rnirrors",
            "Publisher slug 'rnirrors' looks like 'mirrors', which is reserved for the registry "
            "itself: choose another.",
        ),
        (
            "0FFICIAL",
            "Publisher slug '0FFICIAL' looks like 'official', which is reserved for the registry "
            "itself: choose another.",
        ),
    ],
)
def test_look_alike_publisher_slugs_are_refused(other_user, slug, message):
    client = _client(other_user)
    for taken in ("acme", "example"):
        created = client.post("/api/v1/publishers/", {"slug": taken}, format="json")
        assert created.status_code == 201
    before = _publishers()
    response = client.post("/api/v1/publishers/", {"slug": slug}, format="json")
    assert (response.status_code, response.json()) == (
        409 if "existing" in message else 403,
        {"detail": message},
    )
    assert _publishers() == before


def test_slugs_and_catalog_names_are_stored_lower_case(other_user):
    client = _client(other_user)
    created = client.post("/api/v1/publishers/", {"slug": "Beta-Tools"}, format="json")
    assert (created.status_code, created.json()["slug"]) == (201, "beta-tools")
    catalog = client.post(
        "/api/v1/catalogs/", {"publisher": "beta-tools", "name": "Fns"}, format="json"
    )
    assert (catalog.status_code, catalog.json()["name"]) == (201, "fns")


def test_upper_case_oci_repository_names_are_name_invalid(client, catalog):
    Publisher.objects.create(slug="ACME", display_name="legacy row")
    response = client.get("/v2/ACME/functions/tags/list")
    assert response.status_code == 400
    assert response.json()["errors"][0] == {
        "code": "NAME_INVALID",
        "message": "invalid repository name 'ACME/functions': repository names are lower case",
        "detail": {"name": "ACME/functions"},
    }
