import pytest

pytestmark = pytest.mark.django_db


def test_list_and_detail_are_public(api_client, publisher):
    listing = api_client.get("/api/v1/publishers/")
    assert listing.status_code == 200
    assert [p["slug"] for p in listing.json()["results"]] == ["example-co"]
    detail = api_client.get("/api/v1/publishers/example-co/").json()
    assert detail["display_name"] == "Example Co"
    assert detail["owners"] == ["owner"]
    assert detail["verified"] is False


def test_unknown_publisher_is_404(api_client, db):
    response = api_client.get("/api/v1/publishers/nobody/")
    assert response.status_code == 404
    assert response.json() == {"detail": "Publisher 'nobody' does not exist."}


def test_new_owners_are_invited_not_added(as_user, publisher):
    response = as_user("owner").patch(
        "/api/v1/publishers/example-co/", {"owners": ["owner", "other"]}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["owners"] == ["owner"]
    [invitation] = publisher.invitations.all()
    assert (invitation.invitee.username, invitation.status) == ("other", "pending")


def test_the_last_owner_cannot_be_replaced_by_invitees(as_user, publisher):
    response = as_user("owner").patch(
        "/api/v1/publishers/example-co/", {"owners": ["other"]}, format="json"
    )
    assert (response.status_code, response.json()) == (
        400,
        {
            "detail": "A publisher needs at least one owner: keep a current owner in the list "
            "(new owners are invited, and own it once they accept)."
        },
    )
    assert [u.username for u in publisher.owners.all()] == ["owner"]
    assert not publisher.invitations.exists()


def test_verified_cannot_be_set_through_the_api(as_user, publisher):
    response = as_user("owner").patch(
        "/api/v1/publishers/example-co/", {"verified": True}, format="json"
    )
    assert response.status_code == 200
    publisher.refresh_from_db()
    assert publisher.verified is False


def test_duplicate_slug_is_409(as_user, publisher):
    response = as_user("other").post("/api/v1/publishers/", {"slug": "example-co"}, format="json")
    assert response.status_code == 409
    assert response.json() == {"detail": "Publisher 'example-co' already exists."}


def test_bad_slug_is_400_with_the_field_named(as_user, db):
    response = as_user("other").post("/api/v1/publishers/", {"slug": "a b"}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "slug": ['Enter a valid "slug" consisting of letters, numbers, underscores or hyphens.']
    }


def test_unknown_owner_is_400(as_user, publisher):
    response = as_user("owner").patch(
        "/api/v1/publishers/example-co/", {"owners": ["ghost"]}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {"detail": "Unknown user(s): ghost."}
    assert [u.username for u in publisher.owners.all()] == ["owner"]
