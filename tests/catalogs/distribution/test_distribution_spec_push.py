"""Conformance with the OCI distribution spec v1.1, write side (spec.md "Push"): blob uploads
(monolithic, POST then PUT, chunked), manifest PUT, the token flow, and every refusal, each
checked with its status, error code and that nothing was stored or published.
"""

from __future__ import annotations

import base64
import json

import pytest
from django.test import override_settings

from catalogs.distribution import manifests as m
from catalogs.distribution.models import OciBlob, OciManifest, OciTag, OciUpload
from catalogs.mirroring.models import MirrorSource
from catalogs.publishing.models import CatalogVersion
from tests.catalogs.distribution.test_distribution_spec_pull import _error
from tests.catalogs.factories import api_token_key, catalog_yaml

pytestmark = pytest.mark.django_db

REPO = "/v2/example-co/functions"
NEW = catalog_yaml(("example.co", "Pushed", "v1")).encode()


def _catalog_manifest(layer: bytes, **extra) -> bytes:
    manifest = {
        "schemaVersion": 2,
        "mediaType": m.OCI_MANIFEST,
        "artifactType": m.CATALOG_ARTIFACT_TYPE,
        "config": m.EMPTY_DESCRIPTOR,
        "layers": [
            {
                "mediaType": m.CATALOG_LAYER,
                "digest": m.sha256_digest(layer),
                "size": len(layer),
                "annotations": {"org.opencontainers.image.title": "catalog.yaml"},
            }
        ],
        "annotations": {"org.opencontainers.image.created": "2026-11-23T00:00:00Z"},
    }
    manifest.update(extra)
    return json.dumps(manifest, indent=2).encode()


def _upload(client, auth, data: bytes) -> None:
    response = client.post(
        f"{REPO}/blobs/uploads/?digest={m.sha256_digest(data)}",
        data=data,
        content_type="application/octet-stream",
        HTTP_AUTHORIZATION=auth,
    )
    assert response.status_code == 201, response.content


def _put_manifest(client, auth, reference: str, manifest: bytes, media_type=m.OCI_MANIFEST):
    return client.put(
        f"{REPO}/manifests/{reference}",
        data=manifest,
        content_type=media_type,
        HTTP_AUTHORIZATION=auth,
    )


def _state(catalog) -> tuple:
    return (
        list(CatalogVersion.objects.filter(catalog=catalog).values_list("number", "digest")),
        list(OciManifest.objects.values_list("digest", flat=True)),
        list(OciTag.objects.values_list("name", "manifest_id")),
    )


# ----------------------------------------------------------------------------- authentication


def test_anonymous_push_is_401_with_the_token_challenge(client, published):
    response = client.post(f"{REPO}/blobs/uploads/")
    error = _error(response, 401, "UNAUTHORIZED")
    assert error["detail"] == {"repository": "example-co/functions"}
    assert response["WWW-Authenticate"] == (
        'Bearer realm="http://testserver/v2/token",service="testserver",'
        'scope="repository:example-co/functions:pull,push"'
    )
    assert OciUpload.objects.count() == 0


def test_token_flow_grants_push_to_owners_only(client, published, basic, other_user):

    scope = "repository:example-co/functions:pull,push"
    granted = client.get(f"/v2/token?service=testserver&scope={scope}", HTTP_AUTHORIZATION=basic)
    assert granted.status_code == 200
    body = granted.json()
    assert body["token"] == body["access_token"] and body["expires_in"] == 300
    bearer = f"Bearer {body['token']}"
    started = client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=bearer)
    assert started.status_code == 202

    # Anonymous tokens (clients that always ask) pull, never push.
    anonymous = client.get(f"/v2/token?scope={scope}").json()["token"]
    assert (
        client.get(f"{REPO}/manifests/latest", HTTP_AUTHORIZATION=f"Bearer {anonymous}").status_code
        == 200
    )
    _error(
        client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=f"Bearer {anonymous}"),
        401,
        "UNAUTHORIZED",
    )

    # Someone who owns nothing: a token without push, and Basic credentials denied.
    key = api_token_key(other_user)
    other_basic = "Basic " + base64.b64encode(f"other:{key}".encode()).decode()
    other = client.get(f"/v2/token?scope={scope}", HTTP_AUTHORIZATION=other_basic).json()
    _error(
        client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=f"Bearer {other['token']}"),
        401,
        "UNAUTHORIZED",
    )
    denied = _error(
        client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=other_basic), 403, "DENIED"
    )
    assert "only owners of publisher 'example-co'" in denied["message"]
    assert OciUpload.objects.count() == 1


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("Basic " + base64.b64encode(b"owner:wrong").decode(), "authentication required"),
        ("Basic !!!", "malformed Basic credentials"),
        ("Bearer forged.token", "invalid bearer token"),
        ("Digest x", "unsupported authorization scheme 'digest'"),
    ],
)
def test_bad_credentials_are_401(client, published, header, message):
    error = _error(client.get("/v2/token", HTTP_AUTHORIZATION=header), 401, "UNAUTHORIZED")
    assert message in error["message"]
    # Pulls need no credentials, but bad ones are refused rather than ignored.
    _error(client.get(f"{REPO}/manifests/latest", HTTP_AUTHORIZATION=header), 401, "UNAUTHORIZED")


def test_basic_with_another_users_token_is_401(client, published, owner_token, other_user):
    header = "Basic " + base64.b64encode(f"other:{owner_token}".encode()).decode()
    _error(client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=header), 401, "UNAUTHORIZED")


def test_expired_bearer_tokens_are_401(client, published, basic):
    token = client.get(
        "/v2/token?scope=repository:example-co/functions:push", HTTP_AUTHORIZATION=basic
    ).json()["token"]
    with override_settings(OCI_TOKEN_TTL_SECONDS=-1):
        error = _error(
            client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=f"Bearer {token}"),
            401,
            "UNAUTHORIZED",
        )
    assert "expired" in error["message"]


# ----------------------------------------------------------------------------- blobs


def test_single_post_monolithic_upload_is_201_and_pullable(client, published, basic):
    data = b"a blob"
    digest = m.sha256_digest(data)
    response = client.post(
        f"{REPO}/blobs/uploads/?digest={digest}",
        data=data,
        content_type="application/octet-stream",
        HTTP_AUTHORIZATION=basic,
    )
    assert response.status_code == 201
    assert response["Location"] == f"{REPO}/blobs/{digest}"
    assert response["Docker-Content-Digest"] == digest
    assert client.get(response["Location"]).content == data


def test_post_then_put_upload(client, published, basic):
    started = client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=basic)
    assert started.status_code == 202
    location = started["Location"]
    assert (
        location.startswith(f"{REPO}/blobs/uploads/") and started["Docker-Upload-UUID"] in location
    )
    data = b"put at once"
    digest = m.sha256_digest(data)
    done = client.put(
        f"{location}?digest={digest}",
        data=data,
        content_type="application/octet-stream",
        HTTP_AUTHORIZATION=basic,
    )
    assert done.status_code == 201 and done["Location"] == f"{REPO}/blobs/{digest}"
    assert client.get(done["Location"]).content == data
    assert OciUpload.objects.count() == 0


def test_chunked_upload_in_order_with_status_and_416_out_of_order(client, published, basic):
    location = client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=basic)["Location"]
    first = client.patch(
        location,
        data=b"0123",
        content_type="application/octet-stream",
        HTTP_CONTENT_RANGE="0-3",
        HTTP_AUTHORIZATION=basic,
    )
    assert first.status_code == 202 and first["Range"] == "0-3" and first["Location"] == location
    # A chunk that does not start at the end of the upload: 416, nothing appended.
    wrong = client.patch(
        location,
        data=b"xx",
        content_type="application/octet-stream",
        HTTP_CONTENT_RANGE="6-7",
        HTTP_AUTHORIZATION=basic,
    )
    assert wrong.status_code == 416
    assert wrong.json()["errors"][0]["code"] == "BLOB_UPLOAD_INVALID"
    status = client.get(location, HTTP_AUTHORIZATION=basic)
    assert status.status_code == 204 and status["Range"] == "0-3" and status["Location"] == location
    client.patch(
        location,
        data=b"4567",
        content_type="application/octet-stream",
        HTTP_CONTENT_RANGE="4-7",
        HTTP_AUTHORIZATION=basic,
    )
    digest = m.sha256_digest(b"0123456789")
    done = client.put(
        f"{location}?digest={digest}",
        data=b"89",
        content_type="application/octet-stream",
        HTTP_CONTENT_RANGE="8-9",
        HTTP_AUTHORIZATION=basic,
    )
    assert done.status_code == 201
    assert client.get(f"{REPO}/blobs/{digest}").content == b"0123456789"


def test_cancelled_upload_is_gone(client, published, basic):
    location = client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=basic)["Location"]
    assert client.delete(location, HTTP_AUTHORIZATION=basic).status_code == 204
    _error(client.get(location, HTTP_AUTHORIZATION=basic), 404, "BLOB_UPLOAD_UNKNOWN")
    _error(
        client.patch(
            location, data=b"x", content_type="application/octet-stream", HTTP_AUTHORIZATION=basic
        ),
        404,
        "BLOB_UPLOAD_UNKNOWN",
    )


def test_digest_mismatch_is_digest_invalid_and_keeps_the_upload(client, published, basic):
    location = client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=basic)["Location"]
    client.patch(
        location, data=b"abc", content_type="application/octet-stream", HTTP_AUTHORIZATION=basic
    )
    wrong = m.sha256_digest(b"something else")
    error = _error(
        client.put(f"{location}?digest={wrong}", HTTP_AUTHORIZATION=basic), 400, "DIGEST_INVALID"
    )
    assert error["detail"] == {"expected": wrong, "actual": m.sha256_digest(b"abc")}
    assert OciBlob.objects.count() == 0
    # The session is intact: the right digest still completes it.
    right = m.sha256_digest(b"abc")
    assert client.put(f"{location}?digest={right}", HTTP_AUTHORIZATION=basic).status_code == 201
    _error(
        client.post(
            f"{REPO}/blobs/uploads/?digest=sha256:nothex",
            data=b"x",
            content_type="application/octet-stream",
            HTTP_AUTHORIZATION=basic,
        ),
        400,
        "DIGEST_INVALID",
    )


@override_settings(OCI_UPLOAD_MAX_BYTES=8)
def test_uploads_over_the_limit_are_413(client, published, basic):
    data = b"123456789"
    error = _error(
        client.post(
            f"{REPO}/blobs/uploads/?digest={m.sha256_digest(data)}",
            data=data,
            content_type="application/octet-stream",
            HTTP_AUTHORIZATION=basic,
        ),
        413,
        "SIZE_INVALID",
    )
    assert error["message"] == "body is 9 bytes, over the limit of 8 bytes"
    location = client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=basic)["Location"]
    client.patch(
        location, data=b"12345", content_type="application/octet-stream", HTTP_AUTHORIZATION=basic
    )
    over = client.patch(
        location, data=b"6789", content_type="application/octet-stream", HTTP_AUTHORIZATION=basic
    )
    assert (
        _error(over, 413, "SIZE_INVALID")["message"] == "blob is over the upload limit of 8 bytes"
    )
    assert client.get(location, HTTP_AUTHORIZATION=basic)["Range"] == "0-4"
    assert OciBlob.objects.count() == 0


def test_cross_mount_starts_an_upload(client, published, basic):
    response = client.post(
        f"{REPO}/blobs/uploads/?mount={published.digest}&from=example-co/other",
        HTTP_AUTHORIZATION=basic,
    )
    assert response.status_code == 202 and "/blobs/uploads/" in response["Location"]


# ----------------------------------------------------------------------------- manifests


def test_pushing_a_catalog_publishes_the_next_version_with_the_layer_bytes(
    client, published, basic, owner
):
    _upload(client, basic, NEW)
    manifest = _catalog_manifest(NEW)
    response = _put_manifest(client, basic, "latest", manifest)
    assert response.status_code == 201, response.content
    digest = m.sha256_digest(manifest)
    assert response["Docker-Content-Digest"] == digest
    assert response["Location"] == f"{REPO}/manifests/{digest}"
    version = CatalogVersion.objects.get(catalog=published.catalog, number=2)
    assert version.created_by == owner
    assert bytes(version.content) == NEW  # served as pushed, byte for byte
    assert client.get("/c/example-co/functions/catalog.yaml").content == NEW
    # The registry keeps the exact bytes the client pushed.
    for reference in ("latest", "v2", digest):
        got = client.get(f"{REPO}/manifests/{reference}")
        assert got.content == manifest and got["Docker-Content-Digest"] == digest
    assert client.get(f"{REPO}/manifests/v1").content == bytes(published.oci_manifest.content)
    assert OciBlob.objects.filter(digest=m.sha256_digest(NEW)).count() == 0  # now the version's
    assert client.get(f"{REPO}/blobs/{m.sha256_digest(NEW)}").content == NEW


def test_push_to_v_next_and_to_a_label(client, published, basic):
    _upload(client, basic, NEW)
    assert _put_manifest(client, basic, "v2", _catalog_manifest(NEW)).status_code == 201
    other = catalog_yaml(("example.co", "Third", "v1")).encode()
    _upload(client, basic, other)
    assert _put_manifest(client, basic, "stable", _catalog_manifest(other)).status_code == 201
    tags = client.get(f"{REPO}/tags/list").json()["tags"]
    assert tags == ["latest", "stable", "v1", "v2", "v3"]
    assert (
        client.get(f"{REPO}/manifests/stable").content == client.get(f"{REPO}/manifests/v3").content
    )


def test_pushing_the_same_catalog_again_publishes_nothing(client, published, basic):
    _upload(client, basic, NEW)
    _put_manifest(client, basic, "latest", _catalog_manifest(NEW))
    again = _catalog_manifest(NEW, annotations={"x": "y"})
    response = _put_manifest(client, basic, "latest", again)
    assert response.status_code == 201
    assert response["Docker-Content-Digest"] == m.sha256_digest(again)
    assert CatalogVersion.objects.filter(catalog=published.catalog).count() == 2
    assert client.get(f"{REPO}/manifests/{m.sha256_digest(again)}").content == again


def test_a_version_tag_other_than_the_next_is_denied(client, published, basic):
    _upload(client, basic, NEW)
    before = _state(published.catalog)
    for tag, expected in (("v1", "the next version is v2"), ("v7", "the next version is v2")):
        error = _error(_put_manifest(client, basic, tag, _catalog_manifest(NEW)), 403, "DENIED")
        assert (
            error["message"].startswith(f"tag {tag!r} is immutable")
            and expected in error["message"]
        )
    assert _state(published.catalog) == before


def test_an_invalid_catalog_is_manifest_invalid_with_the_api_problems(
    client, published, basic, owner_token
):
    bad = b"apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nspec: {krmFunctions: 3}\n"
    api = client.post(
        "/api/v1/catalogs/example-co/functions/versions/",
        data=bad,
        content_type="application/yaml",
        HTTP_AUTHORIZATION=f"Token {owner_token}",
    )
    assert api.status_code == 400
    before = _state(published.catalog)
    _upload(client, basic, bad)
    error = _error(
        _put_manifest(client, basic, "latest", _catalog_manifest(bad)), 400, "MANIFEST_INVALID"
    )
    assert error["message"] == api.json()["detail"]
    assert error["detail"] == {"problems": api.json()["problems"]}
    assert _state(published.catalog) == before


@pytest.mark.parametrize(
    ("change", "status", "code", "message"),
    [
        ({"layers": []}, 400, "MANIFEST_INVALID", "exactly one layer of media type"),
        (
            {
                "layers": [
                    {"mediaType": "application/x-tar", "digest": "sha256:" + "a" * 64, "size": 1}
                ]
            },
            400,
            "MANIFEST_INVALID",
            "(found ['application/x-tar'])",
        ),
        (
            {"layers": [{"mediaType": m.CATALOG_LAYER, "digest": "sha256:" + "a" * 64, "size": 1}]},
            400,
            "MANIFEST_BLOB_UNKNOWN",
            "manifest references sha256:aaaa",
        ),
        (
            {
                "config": {
                    "mediaType": "application/x-config",
                    "digest": "sha256:" + "b" * 64,
                    "size": 1,
                }
            },
            400,
            "MANIFEST_BLOB_UNKNOWN",
            "manifest references sha256:bbbb",
        ),
        ({"schemaVersion": 1}, 400, "MANIFEST_INVALID", "schemaVersion must be 2"),
    ],
)
def test_bad_manifests_are_refused_and_change_nothing(
    client, published, basic, change, status, code, message
):
    _upload(client, basic, NEW)
    before = _state(published.catalog)
    manifest = json.loads(_catalog_manifest(NEW))
    manifest.update(change)
    error = _error(
        _put_manifest(client, basic, "latest", json.dumps(manifest).encode()), status, code
    )
    assert message in error["message"]
    assert _state(published.catalog) == before


def test_manifest_media_type_must_match_content_type(client, published, basic):
    _upload(client, basic, NEW)
    response = _put_manifest(
        client, basic, "latest", _catalog_manifest(NEW), media_type=m.OCI_INDEX
    )
    assert "does not match Content-Type" in _error(response, 400, "MANIFEST_INVALID")["message"]


def test_push_by_digest_must_match_the_body(client, published, basic):
    _upload(client, basic, NEW)
    manifest = _catalog_manifest(NEW)
    error = _error(
        _put_manifest(client, basic, "sha256:" + "c" * 64, manifest), 400, "DIGEST_INVALID"
    )
    assert error["detail"]["actual"] == m.sha256_digest(manifest)
    ok = _put_manifest(client, basic, m.sha256_digest(manifest), manifest)
    assert ok.status_code == 201


@override_settings(OCI_MANIFEST_MAX_BYTES=100)
def test_manifest_over_the_limit_is_413(client, published, basic):
    _upload(client, basic, NEW)
    response = _put_manifest(client, basic, "latest", _catalog_manifest(NEW))
    assert "over the limit of 100 bytes" in _error(response, 413, "SIZE_INVALID")["message"]


def test_push_into_a_mirror_is_denied(client, published, basic):
    MirrorSource.objects.create(
        name="up", url="https://up.example/catalog.yaml", catalog=published.catalog
    )
    before = _state(published.catalog)
    error = _error(_put_manifest(client, basic, "latest", _catalog_manifest(NEW)), 403, "DENIED")
    assert error["message"] == (
        "Catalog 'example-co/functions' is a mirror of source 'up' "
        "(https://up.example/catalog.yaml): it changes only through that source's sync runs."
    )
    _error(client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=basic), 403, "DENIED")
    assert _state(published.catalog) == before


def test_push_into_an_unknown_repository_is_name_unknown(client, published, basic):
    response = client.put(
        "/v2/example-co/nope/manifests/latest",
        data=b"{}",
        content_type=m.OCI_MANIFEST,
        HTTP_AUTHORIZATION=basic,
    )
    _error(response, 404, "NAME_UNKNOWN")


def test_pushing_a_referrer_answers_oci_subject_and_is_listed(client, published, basic):
    subject = published.oci_manifest.digest
    payload = b'{"critical": {}}'
    _upload(client, basic, payload)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": m.OCI_MANIFEST,
            "artifactType": "application/vnd.example.signature.v1",
            "config": m.EMPTY_DESCRIPTOR,
            "layers": [
                {
                    "mediaType": "application/json",
                    "digest": m.sha256_digest(payload),
                    "size": len(payload),
                }
            ],
            "subject": {
                "mediaType": m.OCI_MANIFEST,
                "digest": subject,
                "size": published.oci_manifest.size,
            },
        }
    ).encode()
    tag = f"sha256-{subject.removeprefix('sha256:')}.sig"
    response = _put_manifest(client, basic, tag, manifest)
    assert response.status_code == 201 and response["OCI-Subject"] == subject
    listed = client.get(f"{REPO}/referrers/{subject}").json()["manifests"]
    assert [d["digest"] for d in listed] == [m.sha256_digest(manifest)]
    assert client.get(f"{REPO}/manifests/{tag}").content == manifest
    assert CatalogVersion.objects.filter(catalog=published.catalog).count() == 1
