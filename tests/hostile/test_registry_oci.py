"""Hostile OCI manifest pushes: deep nesting, tens of thousands of layers, annotation floods.

Each is refused with the spec's error code and a message naming the limit, at a cost that does not
grow with the number of descriptors (counted in SQL queries), and nothing is stored.
"""

from __future__ import annotations

import base64
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalogs.distribution import manifests as m
from catalogs.distribution.models import OciBlob, OciManifest, OciTag
from catalogs.publishing.models import CatalogVersion
from catalogs.publishing.services import catalog_version_publish
from tests.catalogs.factories import api_token_key, catalog_yaml

pytestmark = pytest.mark.django_db

REPO = "/v2/example-co/functions"


@pytest.fixture(autouse=True)
def _fresh_oci_caches(settings):
    from catalogs.distribution import selectors

    settings.SIGNING_OCI_ARTIFACTS = False
    selectors.oci_caches_clear()
    yield
    selectors.oci_caches_clear()


@pytest.fixture
def auth(owner, catalog) -> str:
    catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "SetLabels", "v1")), actor=owner
    )
    key = api_token_key(owner)
    return "Basic " + base64.b64encode(f"owner:{key}".encode()).decode()


def _state() -> tuple:
    return (
        list(CatalogVersion.objects.values_list("number", "digest")),
        list(OciManifest.objects.values_list("digest", flat=True)),
        list(OciTag.objects.values_list("name", "manifest_id")),
        list(OciBlob.objects.values_list("digest", flat=True)),
    )


def _put(client, auth: str, body: bytes, reference: str = "pushed"):
    return client.put(
        f"{REPO}/manifests/{reference}",
        data=body,
        content_type=m.OCI_MANIFEST,
        HTTP_AUTHORIZATION=auth,
    )


def _error(response) -> tuple[int, str, str]:
    error = response.json()["errors"][0]
    return response.status_code, error["code"], error["message"]


def _layer(i: int) -> dict:
    return {"mediaType": "application/octet-stream", "digest": f"sha256:{i:064x}", "size": 1}


def _manifest(**extra) -> bytes:
    body = {"schemaVersion": 2, "mediaType": m.OCI_MANIFEST, "config": m.EMPTY_DESCRIPTOR}
    body.update(extra)
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        # Within the interpreter's recursion limit, but no manifest nests like this.
        _manifest(annotations=None, x=json.loads("[" * 500 + "]" * 500)),
    ],
    ids=["arrays-100000", "objects-100000", "arrays-500-in-a-manifest"],
)
def test_a_deeply_nested_manifest_is_400_manifest_invalid(client, auth, body):
    before = _state()
    response = _put(client, auth, body)
    assert _error(response) == (
        400,
        "MANIFEST_INVALID",
        "manifest nests objects and arrays deeper than 16 levels",
    )
    assert response.json()["errors"][0]["detail"] == {"limit": 16}
    assert _state() == before


def test_thirty_thousand_layers_are_refused_before_any_blob_lookup(client, auth):
    before = _state()
    body = _manifest(layers=[_layer(i) for i in range(30_000)])
    with CaptureQueriesContext(connection) as queries:
        response = _put(client, auth, body)
    assert _error(response) == (
        400,
        "MANIFEST_INVALID",
        "manifest has 30001 descriptors, over the limit of 256 "
        "(config, layers, manifests and subject together)",
    )
    # The token, the repository and the owner check; none per layer (savepoints aside).
    sql = [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]
    assert len(sql) <= 6, "\n".join(s[:160] for s in sql)
    assert _state() == before


def test_an_annotation_flood_is_refused(client, auth):
    before = _state()
    layers = [{**_layer(i), "annotations": {f"k{j}": "v" for j in range(30)}} for i in range(10)]
    response = _put(client, auth, _manifest(layers=layers))
    assert _error(response) == (
        400,
        "MANIFEST_INVALID",
        "manifest has 300 annotations, over the limit of 256",
    )
    assert _state() == before


def test_annotations_that_are_not_strings_are_refused(client, auth):
    before = _state()
    response = _put(client, auth, _manifest(layers=[], annotations={"a": {"b": 1}}))
    assert _error(response) == (400, "MANIFEST_INVALID", "annotations must be an object of strings")
    assert _state() == before


def test_blobs_are_checked_in_one_query_whatever_their_number(client, auth, catalog):
    """The largest allowed manifest: 254 layers, the last one unknown; one query finds it."""
    OciBlob.objects.bulk_create(
        OciBlob(catalog=catalog, digest=_layer(i)["digest"], size=1) for i in range(1, 254)
    )
    before = _state()
    subject = m.EMPTY_DESCRIPTOR | {"mediaType": m.OCI_MANIFEST}
    body = _manifest(layers=[_layer(i) for i in range(1, 255)], subject=subject)
    with CaptureQueriesContext(connection) as queries:
        response = _put(client, auth, body)
    assert _error(response) == (
        400,
        "MANIFEST_BLOB_UNKNOWN",
        f"manifest references sha256:{254:064x}, unknown to repository example-co/functions",
    )
    blob_queries = [q for q in queries if "catalogs_ociblob" in q["sql"]]
    assert len(blob_queries) == 1, [q["sql"][:200] for q in queries]
    assert _state() == before


def _bearer(client, auth: str) -> str:
    scope = "repository:example-co/functions:pull,push"
    granted = client.get(f"/v2/token?scope={scope}", HTTP_AUTHORIZATION=auth)
    assert granted.status_code == 200, granted.content
    return "Bearer " + granted.json()["token"]


REVOKED = (
    401,
    "UNAUTHORIZED",
    "invalid bearer token: the API token it was issued for was deleted or replaced; sign in again",
)


def test_bearer_tokens_die_with_their_api_token(client, auth, owner):
    bearer = _bearer(client, auth)
    # A bearer token asking for another one carries the same API token along.
    refreshed = _bearer(client, bearer)
    assert client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=bearer).status_code == 202
    client.force_login(owner)
    token = owner.api_tokens.get()
    page = client.post(
        "/accounts/tokens/", {"action": "delete", "token": token.pk, "confirm": "yes"}
    )
    assert page.status_code == 200
    client.logout()
    before = _state()
    for token in (bearer, refreshed):
        assert _error(client.post(f"{REPO}/blobs/uploads/", HTTP_AUTHORIZATION=token)) == REVOKED
        assert _error(client.get(f"{REPO}/manifests/latest", HTTP_AUTHORIZATION=token)) == REVOKED
        assert _error(client.get("/v2/token", HTTP_AUTHORIZATION=token)) == REVOKED
    assert _state() == before
    assert not owner.api_tokens.exists()
