import pytest
from django.contrib.auth.models import AnonymousUser

from catalogs.exceptions import AlreadyExistsError, InvalidInputError, NotAllowedError
from catalogs.publishing.models import Catalog
from catalogs.publishing.services import catalog_create

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("who", ["owner", "staff"])
def test_owner_or_staff_creates_an_empty_catalog(publisher, owner, staff_user, who):
    actor = owner if who == "owner" else staff_user
    catalog = catalog_create(publisher=publisher, name="tools", description="Tools", actor=actor)
    assert (catalog.publisher, catalog.name, catalog.description) == (publisher, "tools", "Tools")
    assert catalog.latest_version is None
    assert list(Catalog.objects.published()) == []


@pytest.mark.parametrize("who", ["anonymous", "other"])
def test_non_owner_is_refused(publisher, other_user, who):
    actor = AnonymousUser() if who == "anonymous" else other_user
    with pytest.raises(NotAllowedError) as err:
        catalog_create(publisher=publisher, name="tools", actor=actor)
    assert err.value.message == "Only owners of publisher 'example-co' (or staff) may change it."
    assert not Catalog.objects.exists()


def test_taken_name_is_refused(catalog, owner):
    with pytest.raises(
        AlreadyExistsError, match="^Catalog 'example-co/functions' already exists.$"
    ):
        catalog_create(publisher=catalog.publisher, name="functions", actor=owner)
    assert Catalog.objects.count() == 1


def test_invalid_name_is_refused(publisher, owner):
    with pytest.raises(InvalidInputError) as err:
        catalog_create(publisher=publisher, name="../etc", actor=owner)
    assert err.value.message == (
        "Invalid catalog name '../etc': use only letters, numbers, hyphens and underscores."
    )
    assert not Catalog.objects.exists()
