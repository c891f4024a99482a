"""The admin lists every record; published versions and functions are read-only there."""

import pytest

from catalogs.publishing.models import CatalogVersion
from catalogs.publishing.services import catalog_version_publish
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_with_version(client, catalog, django_user_model):
    admin = django_user_model.objects.create_superuser("admin", "admin@example.co", "pw")
    client.force_login(admin)
    version, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=None
    )
    return client, version


@pytest.mark.parametrize("model", ["publisher", "catalog", "catalogversion", "functionversion"])
def test_changelists_render(admin_client_with_version, model):
    client, _ = admin_client_with_version
    assert client.get(f"/admin/publishing/{model}/").status_code == 200


def test_version_page_shows_the_content_without_a_save_button(admin_client_with_version):
    client, version = admin_client_with_version
    response = client.get(f"/admin/publishing/catalogversion/{version.pk}/change/")
    assert response.status_code == 200
    page = response.content.decode()
    assert version.digest in page
    assert "registry.example.co/a:v1" in page
    assert 'name="_save"' not in page


def test_versions_cannot_be_added_changed_or_deleted(admin_client_with_version):
    client, version = admin_client_with_version
    assert client.get("/admin/publishing/catalogversion/add/").status_code == 403
    url = f"/admin/publishing/catalogversion/{version.pk}/change/"
    assert client.post(url, {"number": 99}).status_code == 403
    delete = f"/admin/publishing/catalogversion/{version.pk}/delete/"
    assert client.post(delete, {"post": "yes"}).status_code == 403
    version.refresh_from_db()
    assert version.number == 1
    assert CatalogVersion.objects.count() == 1


def test_publisher_is_editable(admin_client_with_version, publisher):
    client, _ = admin_client_with_version
    response = client.get(f"/admin/publishing/publisher/{publisher.pk}/change/")
    assert 'name="_save"' in response.content.decode()


@pytest.mark.parametrize("model", ["verificationrequest", "publisherevent"])
def test_people_records_are_listed_read_only(admin_client_with_version, owner, model):
    from catalogs.publishing import publishers

    client, version = admin_client_with_version
    publishers.publisher_verification_request(
        publisher=version.catalog.publisher, actor=owner, message="please"
    )
    listing = client.get(f"/admin/publishing/{model}/")
    assert listing.status_code == 200 and "example-co" in listing.content.decode()
    assert client.get(f"/admin/publishing/{model}/add/").status_code == 403


def test_admin_pages_from_before_the_domain_apps_redirect_to_their_app(client, staff_user):
    client.force_login(staff_user)
    response = client.get("/admin/catalogs/contribution/?status=pending")
    assert response.status_code == 301
    assert response["Location"] == "/admin/review/contribution/?status=pending"
    assert client.get("/admin/catalogs/nosuchmodel/").status_code == 404


def test_staff_vouch_for_an_address_whose_link_never_came(admin_client_with_version, owner):
    from catalogs.accounts.models import EmailVerification
    from catalogs.accounts.verification import email_verification_start, user_email_verified

    client, _ = admin_client_with_version
    owner.email = "owner@example.org"
    owner.save()
    record = email_verification_start(user=owner)
    assert not user_email_verified(user=owner)
    listed = client.get("/admin/accounts/emailverification/")
    assert listed.status_code == 200 and "owner@example.org" in listed.content.decode()
    response = client.post(
        "/admin/accounts/emailverification/",
        {"action": "vouch", "_selected_action": [record.pk]},
        follow=True,
    )
    assert "1 address(es) marked verified." in response.content.decode()
    assert EmailVerification.objects.get().verified_at is not None
    assert user_email_verified(user=owner)


def test_only_staff_vouch(owner, other_user):
    from catalogs.accounts.verification import (
        email_verification_start,
        email_verification_vouch,
        user_email_verified,
    )
    from catalogs.exceptions import NotAllowedError

    owner.email = "owner@example.org"
    owner.save()
    email_verification_start(user=owner)
    with pytest.raises(NotAllowedError, match="Only staff may verify"):
        email_verification_vouch(user=owner, actor=other_user)
    assert not user_email_verified(user=owner)
