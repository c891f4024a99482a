import pytest
from django.contrib.auth.models import AnonymousUser

from catalogs.exceptions import InvalidInputError, NotAllowedError
from catalogs.publishing.services import publisher_update

pytestmark = pytest.mark.django_db


def test_owner_renames_and_invites_owners(publisher, owner, other_user):
    publisher_update(
        publisher=publisher, actor=owner, display_name="Example Co.", owners=["owner", "other"]
    )
    publisher.refresh_from_db()
    assert publisher.display_name == "Example Co."
    # "other" is invited, and owns it only after accepting (tests/hostile/test_registry_identity).
    assert [u.username for u in publisher.owners.all()] == ["owner"]
    assert list(publisher.invitations.values_list("invitee__username", "status")) == [
        ("other", "pending")
    ]


def test_staff_may_update(publisher, staff_user):
    publisher_update(publisher=publisher, actor=staff_user, display_name="By staff")
    publisher.refresh_from_db()
    assert publisher.display_name == "By staff"


@pytest.mark.parametrize("who", ["anonymous", "other"])
def test_non_owner_is_refused_and_nothing_changes(publisher, other_user, who):
    actor = AnonymousUser() if who == "anonymous" else other_user
    with pytest.raises(NotAllowedError) as err:
        publisher_update(
            publisher=publisher, actor=actor, display_name="Hijacked", owners=["other"]
        )
    assert err.value.message == "Only owners of publisher 'example-co' (or staff) may change it."
    publisher.refresh_from_db()
    assert publisher.display_name == "Example Co"
    assert [u.username for u in publisher.owners.all()] == ["owner"]


def test_unknown_owner_names_are_refused_and_nothing_changes(publisher, owner):
    with pytest.raises(InvalidInputError) as err:
        publisher_update(
            publisher=publisher,
            actor=owner,
            display_name="New",
            owners=["owner", "nobody", "ghost"],
        )
    assert err.value.message == "Unknown user(s): ghost, nobody."
    publisher.refresh_from_db()
    assert publisher.display_name == "Example Co"
    assert [u.username for u in publisher.owners.all()] == ["owner"]


def test_removing_every_owner_is_refused(publisher, owner):
    with pytest.raises(InvalidInputError, match="^A publisher needs at least one owner.$"):
        publisher_update(publisher=publisher, actor=owner, owners=[])
    assert publisher.owners.count() == 1
