import pytest
from django.contrib.auth.models import AnonymousUser

from catalogs.exceptions import AlreadyExistsError, InvalidInputError, NotAllowedError
from catalogs.publishing.models import Publisher
from catalogs.publishing.services import publisher_create

pytestmark = pytest.mark.django_db


def test_creator_becomes_the_first_owner(owner):
    publisher = publisher_create(slug="acme", display_name="Acme", actor=owner)
    assert publisher.slug == "acme"
    assert publisher.display_name == "Acme"
    assert list(publisher.owners.all()) == [owner]
    assert publisher.verified is False


def test_display_name_defaults_to_the_slug():
    assert publisher_create(slug="acme", actor=None).display_name == "acme"


def test_system_caller_creates_a_publisher_without_owners():
    assert publisher_create(slug="acme", actor=None).owners.count() == 0


def test_anonymous_user_cannot_create():
    with pytest.raises(NotAllowedError, match="^Log in to create a publisher.$"):
        publisher_create(slug="acme", actor=AnonymousUser())
    assert not Publisher.objects.exists()


def test_taken_slug_is_refused_and_the_existing_publisher_kept(publisher, other_user):
    with pytest.raises(AlreadyExistsError, match="^Publisher 'example-co' already exists.$"):
        publisher_create(slug="example-co", display_name="Impostor", actor=other_user)
    publisher.refresh_from_db()
    assert publisher.display_name == "Example Co"
    assert [u.username for u in publisher.owners.all()] == ["owner"]


@pytest.mark.parametrize("slug", ["has space", "sl/ash", "", "ü-not-ascii"])
def test_invalid_slug_is_refused(slug, owner):
    with pytest.raises(InvalidInputError) as err:
        publisher_create(slug=slug, actor=owner)
    assert err.value.message == (
        f"Invalid publisher slug '{slug}': use only letters, numbers, hyphens and underscores."
    )
    assert not Publisher.objects.exists()
