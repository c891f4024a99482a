"""A source's destination is checked when it is created or its URL changes, as a sync's first
connection checks it: MIRROR_ALLOWED_HOSTS, the SSRF rules with MIRROR_ALLOWED_NETWORKS, and for
TLS the certificate against MIRROR_CA_BUNDLE (a handshake with the trustme HTTPS upstream, Debian's
docker-registry for OCI). A refusal is a 400 in the API and an error on the form's URL field, with
nothing stored; a host that is down now is accepted (the first sync reports it)."""

from __future__ import annotations

import pytest
import trustme
from rest_framework.test import APIClient

from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import MirrorSource
from tests.catalogs.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff():
    client = APIClient()
    client.force_authenticate(UserFactory(username="admin", is_staff=True))
    return client


def _refused(staff, url: str) -> str:
    response = staff.post("/api/v1/sources/", {"name": "checked", "url": url}, format="json")
    assert response.status_code == 400, response.content
    assert not MirrorSource.objects.exists()
    return response.json()["detail"]


def test_a_loopback_upstream_needs_allowed_networks(staff, mirror_settings, https_upstream):
    url = https_upstream.serve("/catalog.yaml", b"x")
    mirror_settings.MIRROR_ALLOWED_NETWORKS = []
    assert _refused(staff, url) == (
        f"Address 127.0.0.1 of host '127.0.0.1' is private, loopback or link-local; refusing "
        f"{url} (allow it with MIRROR_ALLOWED_NETWORKS)"
    )
    mirror_settings.MIRROR_ALLOWED_HOSTS = ["registry.example.org"]
    mirror_settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    assert _refused(staff, url) == (
        f"Host '127.0.0.1' is not allowed (MIRROR_ALLOWED_HOSTS): refusing {url}"
    )
    mirror_settings.MIRROR_ALLOWED_HOSTS = ["127.0.0.1"]
    created = staff.post("/api/v1/sources/", {"name": "checked", "url": url}, format="json")
    assert created.status_code == 201, created.content


@pytest.mark.parametrize("scheme", ["https", "git+https"])
def test_an_untrusted_certificate_is_refused_naming_the_setting(
    staff, mirror_settings, https_upstream, tmp_path, scheme
):
    url = https_upstream.serve("/catalog.yaml", b"x")
    if scheme == "git+https":
        url = "git+" + url.replace("/catalog.yaml", "/repo.git//catalog.yaml?ref=main")
    port = url.split(":")[2].split("/")[0]
    mirror_settings.MIRROR_CA_BUNDLE = ""
    detail = _refused(staff, url)
    assert detail.startswith(
        f"The TLS certificate of 127.0.0.1:{port} does not verify against the system's CAs: "
    ), detail
    assert detail.endswith(
        "Add the CA that issued it to MIRROR_CA_BUNDLE (a PEM file) if the upstream is trusted."
    )
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    mirror_settings.MIRROR_CA_BUNDLE = str(other)
    assert "does not verify against MIRROR_CA_BUNDLE: " in _refused(staff, url)
    mirror_settings.MIRROR_CA_BUNDLE = https_upstream.ca_path
    created = staff.post("/api/v1/sources/", {"name": "checked", "url": url}, format="json")
    assert created.status_code == 201, created.content


def test_oci_over_tls_to_a_plain_registry_and_local_paths(
    staff, mirror_settings, oci_upstream, tmp_path
):
    url = oci_upstream.url("catalogs/c:v1")
    mirror_settings.MIRROR_OCI_PLAIN_HTTP_HOSTS = []
    detail = _refused(staff, url)
    assert detail.startswith(f"{oci_upstream.host} does not complete a TLS handshake: "), detail
    mirror_settings.MIRROR_OCI_PLAIN_HTTP_HOSTS = [oci_upstream.host]
    ok = staff.post("/api/v1/sources/", {"name": "oci", "url": url}, format="json")
    assert ok.status_code == 201, ok.content

    mirror_settings.MIRROR_ALLOW_LOCAL_PATHS = False
    local = f"{tmp_path}/repo//catalog.yaml"
    response = staff.post("/api/v1/sources/", {"name": "local", "url": local}, format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == (
        f"Local git sources are refused: '{local}' (allow them with MIRROR_ALLOW_LOCAL_PATHS)."
    )
    assert list(MirrorSource.objects.values_list("name", flat=True)) == ["oci"]


def test_a_host_down_now_is_accepted_and_the_sync_says_why(staff, mirror_settings):
    url = "https://127.0.0.1:9/catalog.yaml"  # loopback allowed, nothing listens
    created = staff.post("/api/v1/sources/", {"name": "down", "url": url}, format="json")
    assert created.status_code == 201, created.content


def test_a_url_change_is_checked_and_a_refusal_keeps_the_source(
    staff, mirror_settings, https_upstream
):
    url = https_upstream.serve("/catalog.yaml", b"x")
    source = mirrors.mirror_source_create(name="kept", url=url, actor=None)
    mirror_settings.MIRROR_CA_BUNDLE = ""
    moved = url.replace("/catalog.yaml", "/v2.yaml")
    response = staff.patch(f"/api/v1/sources/{source.pk}/", {"url": moved}, format="json")
    assert response.status_code == 400
    assert "does not verify against the system's CAs" in response.json()["detail"]
    assert MirrorSource.objects.get().url == url


def test_the_web_form_shows_the_refusal_on_the_url_field(
    client, mirror_settings, https_upstream, staff_user
):
    url = https_upstream.serve("/catalog.yaml", b"x")
    mirror_settings.MIRROR_ALLOWED_NETWORKS = []
    client.force_login(staff_user)
    response = client.post(
        "/mirrors/new/", {"name": "web", "url": url, "interval_minutes": 60, "enabled": "on"}
    )
    assert response.status_code == 400
    form = response.context["form"]
    assert form.errors["url"] == [
        f"Address 127.0.0.1 of host '127.0.0.1' is private, loopback or link-local; refusing "
        f"{url} (allow it with MIRROR_ALLOWED_NETWORKS)"
    ]
    assert "__all__" not in form.errors
    assert 'class="field has-error"><label for="id_url">' in response.content.decode()
    assert not MirrorSource.objects.exists()
