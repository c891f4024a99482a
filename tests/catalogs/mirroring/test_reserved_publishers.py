"""Reserved publisher slugs belong to the registry: no user takes them, mirrors stay operators'.

Before this, any signed-in user could create publisher ``mirrors`` ahead of the first mirror
source, publish under the trusted-looking ``/c/mirrors/…``, block sources of the same name and
relabel real mirrors.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command

from catalogs.exceptions import NotAllowedError, ReservedNameError
from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import MirrorSource
from catalogs.publishing import services
from catalogs.publishing.models import Catalog, CatalogVersion, Publisher
from tests.catalogs.factories import PublisherFactory, UserFactory, catalog_yaml
from tests.catalogs.mirroring.conftest import catalog_doc

pytestmark = pytest.mark.django_db

MIRRORS_RESERVED = (
    "Publisher slug 'mirrors' is reserved for mirrored catalogs: it is created by adding a "
    "mirror source (POST /api/v1/sources/), never by hand."
)


def reserved(slug: str) -> str:
    return f"Publisher slug '{slug}' is reserved for the registry itself: choose another."


def _state() -> tuple:
    return (
        list(Publisher.objects.values_list("slug", "display_name", "owners__username")),
        list(Catalog.objects.values_list("publisher__slug", "name", "description")),
        list(CatalogVersion.objects.values_list("catalog__name", "number")),
        list(MirrorSource.objects.values_list("name", "url")),
    )


@pytest.fixture
def operator(db):
    user = UserFactory(username="operator")
    user.user_permissions.add(Permission.objects.get(codename="operate_mirrors"))
    return user


@pytest.mark.parametrize("who", ["owner", "staff"])
@pytest.mark.parametrize("slug", ["mirrors", "Mirrors"])
def test_nobody_creates_the_mirror_publisher_by_hand(owner, staff_user, who, slug):
    actor = {"owner": owner, "staff": staff_user}[who]
    with pytest.raises(ReservedNameError) as err:
        services.publisher_create(slug=slug, actor=actor)
    assert err.value.message == MIRRORS_RESERVED.replace("'mirrors'", f"'{slug}'")
    assert not Publisher.objects.exists()


def test_not_even_a_system_caller_creates_the_mirror_publisher():
    with pytest.raises(ReservedNameError, match="reserved for mirrored catalogs"):
        services.publisher_create(slug="mirrors", actor=None)
    assert not Publisher.objects.exists()


@pytest.mark.parametrize("slug", ["official", "admin", "api", "krm", "c", "v2", "Official"])
def test_reserved_slugs_are_refused_to_users_including_staff(owner, staff_user, slug):
    for actor in (owner, staff_user):
        with pytest.raises(ReservedNameError) as err:
            services.publisher_create(slug=slug, actor=actor)
        assert err.value.message == reserved(slug)
    assert not Publisher.objects.exists()


def test_the_reserved_list_is_a_setting(settings, owner):
    settings.RESERVED_PUBLISHER_SLUGS = ["acme-official"]
    with pytest.raises(ReservedNameError):
        services.publisher_create(slug="acme-official", actor=owner)
    # "official" is no longer listed; the mirror publisher's slug always is.
    assert services.publisher_create(slug="official", actor=owner).slug == "official"
    with pytest.raises(ReservedNameError):
        services.publisher_create(slug="mirrors", actor=owner)


def test_a_system_caller_creates_a_reserved_publisher_owned_by_no_user():
    publisher = services.publisher_create(slug="official", actor=None)
    assert (publisher.slug, publisher.owners.count()) == ("official", 0)


def test_import_catalog_creates_a_reserved_publisher_but_gives_it_no_owner(tmp_path, owner):
    path = tmp_path / "catalog.yaml"
    path.write_text(catalog_yaml(("example.co", "SetLabels", "v1")))
    args = ["import_catalog", str(path), "--publisher", "official", "--catalog", "functions"]
    with pytest.raises(CommandError) as err:
        call_command(*args, "--owner", "owner")
    assert str(err.value) == (
        "Publisher 'official' is reserved: it is owned by the registry, so --owner cannot be given."
    )
    assert not Publisher.objects.exists()

    call_command(*args)
    publisher = Publisher.objects.get()
    assert (publisher.slug, publisher.owners.count()) == ("official", 0)
    assert CatalogVersion.objects.count() == 1


def test_import_catalog_cannot_make_catalogs_under_the_mirror_publisher(tmp_path, mirror_pub):
    path = tmp_path / "catalog.yaml"
    path.write_text(catalog_yaml(("example.co", "SetLabels", "v1")))
    before = _state()
    with pytest.raises(CommandError) as err:
        call_command("import_catalog", str(path), "--publisher", "mirrors", "--catalog", "fake")
    assert str(err.value) == (
        "Catalogs of publisher 'mirrors' are created by adding a mirror source "
        "(POST /api/v1/sources/)."
    )
    assert _state() == before


def test_owners_cannot_be_given_to_a_reserved_publisher(staff_user, owner):
    official = services.publisher_create(slug="official", actor=None)
    with pytest.raises(ReservedNameError) as err:
        services.publisher_update(publisher=official, actor=staff_user, owners=["owner"])
    assert err.value.message == (
        "Publisher 'official' is reserved: it is owned by the registry, not by users."
    )
    assert official.owners.count() == 0


# ----------------------------------------------------------------------------- mirrors


@pytest.fixture
def mirror_pub(mirror_settings, https_upstream):
    """A real mirror source (never synced), so the mirror publisher and its catalog exist."""
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    return mirrors.mirror_source_create(name="upstream", url=url, actor=None)


def test_a_squatter_who_owns_the_mirror_publisher_cannot_relabel_mirrors(mirror_pub, other_user):
    """A publisher taken before slugs were reserved: ownership no longer grants anything."""
    mirror_pub.catalog.publisher.owners.add(other_user)
    before = _state()
    with pytest.raises(NotAllowedError) as err:
        services.catalog_update(catalog=mirror_pub.catalog, actor=other_user, description="pwned")
    assert err.value.message == (
        "Only staff or mirror operators may change the mirrored catalogs of publisher 'mirrors'."
    )
    with pytest.raises(NotAllowedError):
        services.publisher_update(
            publisher=mirror_pub.catalog.publisher, actor=other_user, display_name="Official"
        )
    assert _state() == before


def test_operators_change_mirror_catalog_metadata(mirror_pub, operator):
    updated = services.catalog_update(
        catalog=mirror_pub.catalog, actor=operator, description="Vendor catalog, mirrored nightly"
    )
    assert updated.description == "Vendor catalog, mirrored nightly"


@pytest.mark.parametrize("who", ["operator", "staff"])
def test_no_one_adds_catalogs_to_the_mirror_publisher_by_hand(
    mirror_pub, operator, staff_user, who
):
    actor = {"operator": operator, "staff": staff_user}[who]
    before = _state()
    with pytest.raises(NotAllowedError) as err:
        services.catalog_create(publisher=mirror_pub.catalog.publisher, name="second", actor=actor)
    assert err.value.message == (
        "Catalogs of publisher 'mirrors' are created by adding a mirror source "
        "(POST /api/v1/sources/)."
    )
    assert _state() == before


def test_the_first_source_takes_back_a_squatted_mirror_publisher(
    mirror_settings, https_upstream, other_user
):
    squatted = PublisherFactory(slug="mirrors", display_name="Mirrors", owners=[other_user])
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    source = mirrors.mirror_source_create(name="upstream", url=url, actor=None)
    assert source.catalog.publisher == squatted
    assert squatted.owners.count() == 0


# ----------------------------------------------------------------------------- admin


@pytest.fixture
def admin_client(client, django_user_model):
    admin = django_user_model.objects.create_superuser("admin", "admin@example.co", "pw")
    client.force_login(admin)
    return client


@pytest.mark.parametrize("slug", ["mirrors", "official"])
def test_the_admin_refuses_reserved_slugs(admin_client, slug):
    response = admin_client.post(
        "/admin/publishing/publisher/add/", {"slug": slug, "display_name": "X", "verified": "on"}
    )
    assert response.status_code == 200  # the form again, with the error
    message = MIRRORS_RESERVED if slug == "mirrors" else reserved(slug)
    assert message.replace("'", "&#x27;") in response.content.decode()
    assert not Publisher.objects.exists()


def test_the_admin_refuses_renaming_to_a_reserved_slug(admin_client, publisher):
    response = admin_client.post(
        f"/admin/publishing/publisher/{publisher.pk}/change/",
        {"slug": "official", "display_name": "Example Co", "owners": [publisher.owners.get().pk]},
    )
    assert response.status_code == 200
    assert reserved("official").replace("'", "&#x27;") in response.content.decode()
    assert Publisher.objects.get(pk=publisher.pk).slug == "example-co"


def test_the_admin_still_creates_ordinary_publishers(admin_client, owner):
    response = admin_client.post(
        "/admin/publishing/publisher/add/",
        {"slug": "acme", "display_name": "Acme", "owners": [owner.pk]},
    )
    assert response.status_code == 302
    assert list(Publisher.objects.get(slug="acme").owners.all()) == [owner]


def test_the_admin_adds_no_catalog_to_the_mirror_publisher(admin_client, mirror_pub):
    before = _state()
    response = admin_client.post(
        "/admin/publishing/catalog/add/",
        {"publisher": mirror_pub.catalog.publisher_id, "name": "fake", "description": ""},
    )
    assert response.status_code == 200
    assert "are created by adding a mirror source" in response.content.decode()
    assert _state() == before
