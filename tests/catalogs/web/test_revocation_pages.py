"""The revocations page and form, and revoking through the admin: both go through the service."""

from __future__ import annotations

import pytest

from catalogs.publishing import services
from catalogs.trust.models import Revocation, RevocationList
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db
PAGE = "/catalogs/example-co/functions/revocations/"
FORM = {"group": "example.co", "kind": "SetTier", "version": "v1", "reason": "broken"}
CONFIRMED = {**FORM, "confirm": "on"}


@pytest.fixture
def with_version(catalog):
    content = catalog_yaml(("example.co", "SetTier", "v1"))
    services.catalog_version_publish(catalog=catalog, content=content, actor=None)
    return catalog


def test_owner_revokes_with_the_form(client, owner, with_version):
    client.force_login(owner)
    page = client.get(PAGE)
    assert page.status_code == 200 and b'name="runtime_digest"' in page.content
    resp = client.post(PAGE, {**CONFIRMED, "replacement": "use v2"}, follow=True)
    assert resp.status_code == 200
    assert b"Revoked; revocation list sequence 1." in resp.content
    assert b"example.co/v1 SetTier" in resp.content and b"use v2" in resp.content
    assert Revocation.objects.get().created_by == owner
    detail = client.get("/catalogs/example-co/functions/")
    assert PAGE.encode() in detail.content


def test_bad_form_input_shows_the_error_and_changes_nothing(client, owner, with_version):
    client.force_login(owner)
    resp = client.post(PAGE, {**CONFIRMED, "version": "v7"})
    assert resp.status_code == 400
    assert (
        b"No version of catalog &#x27;example-co/functions&#x27; defines example.co/v7 SetTier."
        in resp.content
    )
    assert not Revocation.objects.exists()
    # Only the empty list every catalog has from its first version.
    assert list(RevocationList.objects.values_list("sequence", flat=True)) == [0]


def test_revoking_needs_the_confirmation_server_side_and_in_the_browser(
    client, owner, with_version
):
    client.force_login(owner)
    page = client.get(PAGE).content.decode()
    # The browser refuses to send the form unticked; the server does not rely on it.
    assert '<input type="checkbox" name="confirm" required id="id_confirm">' in page
    resp = client.post(PAGE, FORM)
    assert resp.status_code == 400
    assert (
        "Tick the confirmation: a revocation cannot be undone, so it is not made without it."
        in resp.content.decode()
    )
    assert not Revocation.objects.exists()
    assert list(RevocationList.objects.values_list("sequence", flat=True)) == [0]
    # What was typed is kept for the second try.
    assert 'name="kind" value="SetTier"' in resp.content.decode()
    assert client.post(PAGE, CONFIRMED).status_code == 302
    assert Revocation.objects.count() == 1


def test_others_see_no_form_and_cannot_post(client, other_user, with_version):
    assert b'name="reason"' not in client.get(PAGE).content
    assert client.post(PAGE, CONFIRMED).status_code == 403
    client.force_login(other_user)
    assert b'name="reason"' not in client.get(PAGE).content
    assert client.post(PAGE, CONFIRMED).status_code == 403
    assert not Revocation.objects.exists()


def test_admin_adds_through_the_service(client, staff_user, with_version, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.co", "pw")
    client.force_login(admin)
    url = "/admin/trust/revocation/add/"
    bad = client.post(
        url, {"catalog": with_version.pk, "kind": "Nope", "version": "v1", "reason": "broken"}
    )
    assert bad.status_code == 200
    assert b"defines /v1 Nope" in bad.content
    assert list(RevocationList.objects.values_list("sequence", flat=True)) == [0]
    ok = client.post(url, {"catalog": with_version.pk, **FORM})
    assert ok.status_code == 302
    row = Revocation.objects.get()
    assert row.sequence == 1 and row.created_by == admin
    assert RevocationList.objects.latest("sequence").sequence == 1
    change = client.get(f"/admin/trust/revocation/{row.pk}/change/")
    assert b'name="_save"' not in change.content
