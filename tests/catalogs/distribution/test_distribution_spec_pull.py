"""Conformance with the OCI distribution spec v1.1, read side (spec.md "Pull", "Content Discovery",
"Determining Support", "Error Codes"): every endpoint, its status codes, headers and error bodies.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from catalogs.distribution import manifests as m
from catalogs.distribution.services import oci_artifact_store

pytestmark = pytest.mark.django_db

REPO = "/v2/example-co/functions"


def _error(response, status: int, code: str) -> dict:
    """The spec's error body: {"errors": [{"code", "message", "detail"}]} with ``code``."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert list(body) == ["errors"] and len(body["errors"]) == 1
    error = body["errors"][0]
    assert set(error) == {"code", "message", "detail"}
    assert error["code"] == code and re_code(code)
    assert error["message"]
    return error


def re_code(code: str) -> bool:
    # "The code field MUST be a unique identifier, containing only uppercase alphabetic
    # characters and underscores."
    return code.replace("_", "").isalpha() and code.isupper()


def test_v2_without_credentials_is_401_with_a_bearer_challenge(client):
    # As Docker Hub, GHCR and Harbor answer: the Docker CLI reads a challenge from a 401 only
    # (its sequence is in test_docker_auth_flow.py).
    response = client.get("/v2/")
    error = _error(response, 401, "UNAUTHORIZED")
    assert "token" in error["message"]
    assert response["Docker-Distribution-API-Version"] == "registry/2.0"
    assert response["WWW-Authenticate"] == (
        'Bearer realm="http://testserver/v2/token",service="testserver"'
    )
    assert client.head("/v2/").status_code == 401


def test_v2_with_credentials_is_200(client, basic):
    anonymous_token = client.get("/v2/token", {"service": "testserver"}).json()["token"]
    user_token = client.get("/v2/token", HTTP_AUTHORIZATION=basic).json()["token"]
    for authorization in (basic, f"Bearer {anonymous_token}", f"Bearer {user_token}"):
        response = client.get("/v2/", HTTP_AUTHORIZATION=authorization)
        assert (response.status_code, response.json()) == (200, {})
        assert response["Docker-Distribution-API-Version"] == "registry/2.0"
        # The challenge on the 200 too: containers/image reads it from either answer.
        assert response["WWW-Authenticate"].startswith('Bearer realm="http://testserver/v2/token"')
    tampered = client.get("/v2/", HTTP_AUTHORIZATION=f"Bearer {user_token}x")
    _error(tampered, 401, "UNAUTHORIZED")


def test_v2_with_bad_credentials_is_401_with_a_bearer_challenge(client):
    response = client.get("/v2/", HTTP_AUTHORIZATION="Basic b3duZXI6bm9wZQ==")  # owner:nope
    error = _error(response, 401, "UNAUTHORIZED")
    assert "API token" in error["message"]
    assert response["WWW-Authenticate"] == (
        'Bearer realm="http://testserver/v2/token",service="testserver"'
    )


def test_manifest_by_tag_is_the_version_manifest(client, published):
    row = published.oci_manifest
    for tag in ("latest", "v1"):
        response = client.get(f"{REPO}/manifests/{tag}")
        assert response.status_code == 200
        # Content-Type is the manifest's media type, without parameters.
        assert response["Content-Type"] == m.OCI_MANIFEST
        assert response.content == bytes(row.content)
        digest = "sha256:" + hashlib.sha256(response.content).hexdigest()
        assert response["Docker-Content-Digest"] == digest == row.digest
        assert response["Content-Length"] == str(len(response.content))
        assert response["ETag"] == f'"{digest}"'
        assert json.loads(response.content)["mediaType"] == response["Content-Type"]


def test_manifest_by_digest_and_head(client, published):
    digest = published.oci_manifest.digest
    got = client.get(f"{REPO}/manifests/{digest}")
    assert got.status_code == 200 and got["Docker-Content-Digest"] == digest
    head = client.head(f"{REPO}/manifests/{digest}")
    assert head.status_code == 200
    assert head.content == b""
    assert head["Content-Length"] == str(len(got.content))
    assert head["Docker-Content-Digest"] == digest
    assert head["Content-Type"] == m.OCI_MANIFEST


def test_manifest_if_none_match_is_304(client, published):
    digest = published.oci_manifest.digest
    response = client.get(f"{REPO}/manifests/latest", HTTP_IF_NONE_MATCH=f'"{digest}"')
    assert response.status_code == 304 and response.content == b""


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/manifests/v9", 404, "MANIFEST_UNKNOWN"),
        ("/manifests/sha256:" + "0" * 64, 404, "MANIFEST_UNKNOWN"),
        ("/manifests/sha256:XYZ", 400, "DIGEST_INVALID"),
        ("/blobs/sha256:" + "0" * 64, 404, "BLOB_UNKNOWN"),
        ("/blobs/sha256:short", 400, "DIGEST_INVALID"),
        ("/blobs/md5:d41d8cd98f00b204e9800998ecf8427e", 400, "DIGEST_INVALID"),
        ("/referrers/not-a-digest", 400, "DIGEST_INVALID"),
        ("/tags/list?n=x", 400, "UNSUPPORTED"),
    ],
)
def test_unknown_and_invalid_references(client, published, path, status, code):
    error = _error(client.get(REPO + path), status, code)
    assert error["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/manifests/latest",
        "/blobs/sha256:" + "0" * 64,
        "/tags/list",
        "/referrers/sha256:" + "0" * 64,
    ],
)
def test_unknown_repository_is_name_unknown(client, published, path):
    error = _error(client.get("/v2/example-co/nope" + path), 404, "NAME_UNKNOWN")
    assert error["message"] == "repository name not known to registry: example-co/nope"
    assert error["detail"] == {"name": "example-co/nope"}


def test_names_that_are_not_publisher_slash_catalog(client, published):
    invalid = _error(client.get("/v2/ex%20ample/x/manifests/latest"), 400, "NAME_INVALID")
    assert invalid["message"] == "invalid repository name 'ex ample/x'"
    for name in ("example-co", "a/b/c"):
        error = _error(client.get(f"/v2/{name}/manifests/latest"), 404, "NAME_UNKNOWN")
        assert "<publisher>/<catalog>" in error["message"]


def test_head_of_a_missing_manifest_is_404_without_body(client, published):
    response = client.head(f"{REPO}/manifests/v9")
    assert response.status_code == 404 and response.content == b""


def test_catalog_layer_blob_is_the_served_catalog_yaml(client, published):
    served = client.get("/c/example-co/functions/catalog.yaml").content
    response = client.get(f"{REPO}/blobs/{published.digest}")
    assert response.status_code == 200
    assert response.content == served
    assert response["Docker-Content-Digest"] == published.digest
    assert response["Content-Length"] == str(len(served))
    assert response["ETag"] == f'"{published.digest}"'
    head = client.head(f"{REPO}/blobs/{published.digest}")
    assert head.status_code == 200 and head.content == b""
    assert head["Content-Length"] == str(len(served))
    assert head["Docker-Content-Digest"] == published.digest


def test_config_blob_is_the_empty_json_object(client, published):
    response = client.get(f"{REPO}/blobs/{m.EMPTY_DIGEST}")
    assert response.status_code == 200 and response.content == b"{}"
    assert response["Docker-Content-Digest"] == m.EMPTY_DIGEST


def test_blobs_belong_to_their_repository(client, published, publisher, owner):
    from tests.catalogs.factories import CatalogFactory

    CatalogFactory(publisher=publisher, name="other")
    _error(client.get(f"/v2/example-co/other/blobs/{published.digest}"), 404, "BLOB_UNKNOWN")


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [
        ("bytes=0-9", 0, 9),
        ("bytes=5-", 5, None),
        ("bytes=-4", -4, None),
        ("bytes=3-100000", 3, None),
    ],
)
def test_blob_range_requests_are_206(client, published, header, start, end):
    content = bytes(published.content)
    response = client.get(f"{REPO}/blobs/{published.digest}", HTTP_RANGE=header)
    assert response.status_code == 206
    part = content[start : None if end is None else end + 1]
    assert response.content == part
    first = start if start >= 0 else len(content) + start
    assert response["Content-Range"] == f"bytes {first}-{first + len(part) - 1}/{len(content)}"
    assert response["Content-Length"] == str(len(part))
    assert response["Docker-Content-Digest"] == published.digest


def test_blob_range_past_the_end_is_416(client, published):
    size = len(bytes(published.content))
    response = client.get(f"{REPO}/blobs/{published.digest}", HTTP_RANGE=f"bytes={size}-")
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{size}"


def test_several_ranges_are_ignored_and_the_whole_blob_served(client, published):
    response = client.get(f"{REPO}/blobs/{published.digest}", HTTP_RANGE="bytes=0-1,4-5")
    assert response.status_code == 200 and response.content == bytes(published.content)


def _publish_more(catalog, owner, count: int) -> None:
    from catalogs.publishing.services import catalog_version_publish
    from tests.catalogs.factories import catalog_yaml

    for i in range(count):
        catalog_version_publish(
            catalog=catalog, content=catalog_yaml(("example.co", f"Fn{i}", "v1")), actor=owner
        )


def test_tags_list_in_lexical_order(client, published, catalog, owner):
    _publish_more(catalog, owner, 10)  # v2..v11
    response = client.get(f"{REPO}/tags/list")
    assert response.status_code == 200
    tags = response.json()
    assert tags["name"] == "example-co/functions"
    expected = sorted(["latest"] + [f"v{n}" for n in range(1, 12)])
    assert tags["tags"] == expected  # ASCIIbetical: v1, v10, v11, v2, ...
    assert "Link" not in response


def test_tags_list_pagination_with_n_last_and_link(client, published, catalog, owner):
    _publish_more(catalog, owner, 3)
    everything = sorted(["latest", "v1", "v2", "v3", "v4"])
    first = client.get(f"{REPO}/tags/list?n=2")
    assert first.json()["tags"] == everything[:2]
    assert (
        first["Link"]
        == f'</v2/example-co/functions/tags/list?n=2&last={everything[1]}>; rel="next"'
    )
    second = client.get(f"{REPO}/tags/list?n=2&last={everything[1]}")
    assert second.json()["tags"] == everything[2:4]
    last = client.get(f"{REPO}/tags/list?n=2&last={everything[3]}")
    assert last.json()["tags"] == everything[4:] and "Link" not in last
    # "When n is zero, this endpoint MUST return an empty list, and MUST NOT include a Link"
    zero = client.get(f"{REPO}/tags/list?n=0")
    assert zero.status_code == 200 and zero.json()["tags"] == [] and "Link" not in zero
    # "When using the last query parameter, the n parameter is OPTIONAL."
    assert client.get(f"{REPO}/tags/list?last=v2").json()["tags"] == ["v3", "v4"]


def _referrer(catalog, subject: str, artifact_type: str, note: str) -> str:
    payload = note.encode()
    manifest = m.manifest_bytes(
        {
            "schemaVersion": 2,
            "mediaType": m.OCI_MANIFEST,
            "artifactType": artifact_type,
            "config": m.EMPTY_DESCRIPTOR,
            "layers": [
                {
                    "mediaType": "application/octet-stream",
                    "digest": m.sha256_digest(payload),
                    "size": len(payload),
                }
            ],
            "subject": {"mediaType": m.OCI_MANIFEST, "digest": subject, "size": 1},
            "annotations": {"note": note},
        }
    )
    return oci_artifact_store(
        catalog=catalog,
        manifest=manifest,
        media_type=m.OCI_MANIFEST,
        blobs={m.sha256_digest(payload): payload},
        tags=[],
    )


def test_referrers_list_is_an_image_index_filtered_by_artifact_type(client, published, catalog):
    subject = published.oci_manifest.digest
    sbom = _referrer(catalog, subject, "application/vnd.example.sbom.v1", "sbom")
    sig = _referrer(catalog, subject, "application/vnd.example.signature.v1", "sig")
    _referrer(catalog, "sha256:" + "1" * 64, "application/vnd.example.sbom.v1", "elsewhere")

    response = client.get(f"{REPO}/referrers/{subject}")
    assert response.status_code == 200
    assert response["Content-Type"] == m.OCI_INDEX
    assert "OCI-Filters-Applied" not in response
    index = response.json()
    assert index["schemaVersion"] == 2 and index["mediaType"] == m.OCI_INDEX
    assert [d["digest"] for d in index["manifests"]] == [sbom, sig]
    first = index["manifests"][0]
    assert first["mediaType"] == m.OCI_MANIFEST
    assert first["artifactType"] == "application/vnd.example.sbom.v1"
    assert first["annotations"] == {"note": "sbom"}
    assert first["size"] == len(client.get(f"{REPO}/manifests/{sbom}").content)

    filtered = client.get(
        f"{REPO}/referrers/{subject}?artifactType=application/vnd.example.signature.v1"
    )
    assert filtered["OCI-Filters-Applied"] == "artifactType"
    assert [d["digest"] for d in filtered.json()["manifests"]] == [sig]


def test_referrers_of_a_digest_nobody_refers_to_is_an_empty_index_not_404(client, published):
    response = client.get(f"{REPO}/referrers/sha256:" + "2" * 64)
    assert response.status_code == 200
    assert response.json() == {"schemaVersion": 2, "mediaType": m.OCI_INDEX, "manifests": []}


def test_deleting_is_unsupported(client, published):
    error = _error(client.delete(f"{REPO}/manifests/latest"), 405, "UNSUPPORTED")
    assert "immutable" in error["message"]
    _error(client.delete(f"{REPO}/blobs/{published.digest}"), 405, "UNSUPPORTED")
    assert client.get(f"{REPO}/manifests/latest").status_code == 200


def test_a_catalog_without_versions_is_an_empty_repository(client, catalog):
    response = client.get(f"{REPO}/tags/list")
    assert response.status_code == 200
    assert response.json() == {"name": "example-co/functions", "tags": []}
    _error(client.get(f"{REPO}/manifests/latest"), 404, "MANIFEST_UNKNOWN")
    assert client.get(f"{REPO}/referrers/sha256:" + "3" * 64).status_code == 200
