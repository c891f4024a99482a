import pytest
from django.contrib.auth.models import AnonymousUser

from catalogs.exceptions import NotAllowedError
from catalogs.publishing.services import catalog_update

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("who", ["owner", "staff"])
def test_owner_or_staff_changes_the_description(catalog, owner, staff_user, who):
    actor = owner if who == "owner" else staff_user
    catalog_update(catalog=catalog, actor=actor, description="New words")
    catalog.refresh_from_db()
    assert catalog.description == "New words"


@pytest.mark.parametrize("who", ["anonymous", "other"])
def test_non_owner_is_refused_and_nothing_changes(catalog, other_user, who):
    actor = AnonymousUser() if who == "anonymous" else other_user
    with pytest.raises(NotAllowedError):
        catalog_update(catalog=catalog, actor=actor, description="Defaced")
    catalog.refresh_from_db()
    assert catalog.description == "A test catalog."
