"""The API contract of sources and runs (used by external checks), and who may use it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from catalogs.mirroring.models import MirrorSource, SyncRun
from orchestrator.catalog import parse_catalog
from tests.catalogs.factories import UserFactory
from tests.catalogs.mirroring.conftest import catalog_doc, public_pem, sha256


def client_for(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.mark.django_db(transaction=True)
def test_contract_create_sync_follow_and_serve(mirror_settings, https_upstream):
    """Without an outer transaction, as in the server: the run is finished when the 202 returns."""
    doc = catalog_doc("contract")
    url = https_upstream.serve("/catalog.yaml", doc)
    staff = client_for(UserFactory(username="admin", is_staff=True))

    created = staff.post(
        "/api/v1/sources/",
        {"name": "contract", "url": url, "digest": sha256(doc), "mirror_runtimes": False},
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["catalog_url"] == "http://testserver/c/mirrors/contract/catalog.yaml"
    assert (body["mirror"], body["publisher"], body["upstream_url"]) == (True, "mirrors", url)

    accepted = staff.post(f"/api/v1/sources/{body['id']}/sync/")
    assert accepted.status_code == 202
    run_url = accepted.json()["run_url"]
    assert accepted["Location"] == run_url

    run = staff.get(run_url).json()
    assert (run["status"], run["reason"], run["digest"]) == ("succeeded", "", sha256(doc))
    assert run["version"] == 1
    served = APIClient().get("/c/mirrors/contract/catalog.yaml")
    assert served.content == parse_catalog(doc).canonical_bytes()

    runs = staff.get(f"/api/v1/sources/{body['id']}/runs/").json()
    assert [r["status"] for r in runs["results"]] == ["succeeded"]
    detail = staff.get(f"/api/v1/sources/{body['id']}/").json()
    assert detail["latest_version"] == 1
    assert detail["verification"] == {"type": "none"}


@pytest.mark.django_db
def test_failed_run_reports_its_reason(
    mirror_settings, https_upstream, django_capture_on_commit_callbacks
):
    url = https_upstream.serve("/gone.yaml", b"", status=500)
    staff = client_for(UserFactory(username="admin", is_staff=True))
    source_id = staff.post("/api/v1/sources/", {"name": "gone", "url": url}, format="json").json()[
        "id"
    ]
    with django_capture_on_commit_callbacks(execute=True):
        run_url = staff.post(f"/api/v1/sources/{source_id}/sync/").json()["run_url"]
    run = staff.get(run_url).json()
    assert (run["status"], run["reason"]) == ("failed", f"GET {url} answered HTTP 500")


@pytest.mark.django_db
def test_only_staff_or_mirror_operators_write(mirror_settings, https_upstream):
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    payload = {"name": "perm", "url": url}
    anonymous = client_for(None).post("/api/v1/sources/", payload, format="json")
    plain = client_for(UserFactory(username="plain")).post(
        "/api/v1/sources/", payload, format="json"
    )
    assert (anonymous.status_code, plain.status_code) == (401, 403)
    assert anonymous["WWW-Authenticate"] == "Token"
    assert plain.json() == {
        "detail": "Only staff or mirror operators may see or change mirror sources and their runs."
    }
    assert MirrorSource.objects.count() == 0

    operator = UserFactory(username="operator")
    operator.user_permissions.add(Permission.objects.get(codename="operate_mirrors"))
    created = client_for(operator).post("/api/v1/sources/", payload, format="json")
    assert created.status_code == 201
    source_id = created.json()["id"]

    plain_client = client_for(UserFactory(username="plain"))
    assert plain_client.post(f"/api/v1/sources/{source_id}/sync/").status_code == 403
    patch = plain_client.patch(f"/api/v1/sources/{source_id}/", {"enabled": False}, format="json")
    assert patch.status_code == 403
    assert SyncRun.objects.count() == 0
    assert MirrorSource.objects.get().enabled is True
    changed = client_for(operator).patch(
        f"/api/v1/sources/{source_id}/", {"enabled": False}, format="json"
    )
    assert (changed.status_code, changed.json()["enabled"]) == (200, False)


@pytest.mark.django_db
def test_one_run_at_a_time(mirror_settings, https_upstream):
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    staff = client_for(UserFactory(username="admin", is_staff=True))
    source_id = staff.post("/api/v1/sources/", {"name": "busy", "url": url}, format="json").json()[
        "id"
    ]
    # Inside the test transaction the job is not started: the first run stays queued.
    first = staff.post(f"/api/v1/sources/{source_id}/sync/")
    second = staff.post(f"/api/v1/sources/{source_id}/sync/")
    run_id = first.json()["run"]["id"]
    assert (first.status_code, second.status_code) == (202, 409)
    assert second.json() == {"detail": f"Source 'busy' already has run {run_id} queued."}
    assert SyncRun.objects.count() == 1


BAD_INPUT = [
    (
        {"url": "ftp://host/catalog.yaml"},
        "Unsupported source URL scheme 'ftp' in 'ftp://host/catalog.yaml': "
        "use one of git+file, git+https, https, oci or a local git path.",
    ),
    (
        {"url": "catalog.yaml"},
        "Unsupported source URL 'catalog.yaml': use https://, git+https://, "
        "oci:// or a local git path.",
    ),
    ({"digest": "sha256:xyz"}, "digest must be sha256: and 64 lower-case hexadecimal characters."),
    (
        {"url": "git+https://h.example/r.git//c.yaml", "digest": "sha256:" + "a" * 64},
        "digest of a git source is the pinned commit: 40 lower-case hexadecimal characters.",
    ),
    (
        {"url": "git+https://h.example/r.git"},
        "Git source 'git+https://h.example/r.git' names no file: use REPO//path/to/catalog.yaml"
        "?ref=REF",
    ),
    (
        {"cosign_public_key": "not a key", "url": "oci://h.example/r:v1"},
        "cosign_public_key is not a PEM public key.",
    ),
    (
        # https sources take a cosign key too (the .sig beside the file), but not with sigstore.
        {
            "cosign_public_key": "KEY",
            "sigstore_identity": "me@example.co",
            "sigstore_issuer": "https://issuer.example",
        },
        "Choose one signature policy: a cosign public key or a sigstore identity.",
    ),
    (
        {"sigstore_identity": "me@example.co"},
        "A sigstore policy needs both sigstore_identity and sigstore_issuer.",
    ),
    (
        {"name": "Bad Name!"},
        "Invalid source name 'Bad Name!': use only letters, numbers, hyphens and underscores.",
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "message"), BAD_INPUT)
def test_bad_input_is_rejected_with_its_message(mirror_settings, cosign_key, change, message):
    staff = client_for(UserFactory(username="admin", is_staff=True))
    payload = {"name": "bad", "url": "https://h.example/catalog.yaml", **change}
    if payload.get("cosign_public_key") == "KEY":
        payload["cosign_public_key"] = public_pem(cosign_key)
    response = staff.post("/api/v1/sources/", payload, format="json")
    assert response.status_code == 400
    if "name" in change:  # the serializer checks slugs before the service does
        assert "name" in response.json()
    else:
        assert response.json() == {"detail": message}
    assert MirrorSource.objects.count() == 0


@pytest.mark.django_db
def test_bad_update_is_rejected_and_changes_nothing(mirror_settings, cosign_key):
    mirror_settings.MIRROR_ALLOWED_HOSTS = ["h.example"]  # resolves nowhere: checked at sync
    staff = client_for(UserFactory(username="admin", is_staff=True))
    url = "https://h.example/catalog.yaml"
    source_id = staff.post("/api/v1/sources/", {"name": "keep", "url": url}, format="json").json()[
        "id"
    ]
    before = MirrorSource.objects.values().get(pk=source_id)
    for change, message in [
        ({"url": "ftp://h.example/c.yaml"}, BAD_INPUT[0][1].replace("host/catalog", "h.example/c")),
        (
            {
                "cosign_public_key": public_pem(cosign_key),
                "sigstore_identity": "me@example.co",
                "sigstore_issuer": "https://issuer.example",
            },
            BAD_INPUT[6][1],
        ),
        ({"sigstore_issuer": "https://issuer.example"}, BAD_INPUT[7][1]),
    ]:
        response = staff.patch(f"/api/v1/sources/{source_id}/", change, format="json")
        assert (response.status_code, response.json()) == (400, {"detail": message})
    assert MirrorSource.objects.values().get(pk=source_id) == before
    # A cosign key for an https source (the cosign sign-blob .sig beside the file) is accepted.
    key = public_pem(cosign_key)
    response = staff.patch(f"/api/v1/sources/{source_id}/", {"cosign_public_key": key})
    assert response.status_code == 200, response.json()
    assert MirrorSource.objects.get(pk=source_id).cosign_public_key == key.strip()


@pytest.mark.django_db
def test_duplicate_name_conflicts(mirror_settings):
    mirror_settings.MIRROR_ALLOWED_HOSTS = ["h.example"]  # resolves nowhere: checked at sync
    staff = client_for(UserFactory(username="admin", is_staff=True))
    payload = {"name": "twice", "url": "https://h.example/catalog.yaml"}
    assert staff.post("/api/v1/sources/", payload, format="json").status_code == 201
    again = staff.post("/api/v1/sources/", payload, format="json")
    assert (again.status_code, again.json()) == (
        409,
        {"detail": "Mirror source 'twice' already exists."},
    )
