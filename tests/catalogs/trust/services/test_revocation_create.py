"""``revocation_create``: every bad input is a clear error that leaves the lists untouched; each
revocation writes the next signed list sequence, and the OCI referrers API lists it."""

from __future__ import annotations

import json

import pytest
import yaml

from catalogs.distribution import selectors as oci_selectors
from catalogs.exceptions import AlreadyExistsError, InvalidInputError, NotAllowedError
from catalogs.publishing import services
from catalogs.trust import revocations
from catalogs.trust.models import Revocation, RevocationList
from tests.catalogs.factories import catalog_yaml
from tests.catalogs.trust.test_signing import independently_verified

pytestmark = pytest.mark.django_db

DIGEST = "sha256:" + "a" * 64


@pytest.fixture(autouse=True)
def _fresh_oci_caches():
    oci_selectors.oci_caches_clear()
    yield
    oci_selectors.oci_caches_clear()


@pytest.fixture
def published(catalog):
    content = catalog_yaml(("example.co", "SetTier", "v1"), ("example.co", "SetTeam", "v1"))
    services.catalog_version_publish(catalog=catalog, content=content, actor=None)
    catalog.refresh_from_db()
    return catalog


def _state(catalog) -> tuple[list, list]:
    return (
        list(Revocation.objects.filter(catalog=catalog).values_list("sequence", "kind")),
        list(RevocationList.objects.filter(catalog=catalog).values_list("sequence", "digest")),
    )


def test_first_revocation_makes_a_signed_list(published, owner):
    row = revocations.revocation_create(
        catalog=published,
        actor=owner,
        group="example.co",
        kind="SetTier",
        version="v1",
        reason="broken",
        replacement="example.co/v2 SetTier",
    )
    assert row.sequence == 1 and row.created_by == owner
    listed = revocations.revocation_list_get(catalog=published)
    doc = yaml.safe_load(bytes(listed.content))
    assert doc["kind"] == "RevocationList" and doc["sequence"] == 1
    entry = doc["revocations"][0]
    assert (entry["group"], entry["kind"], entry["version"], entry["reason"]) == (
        "example.co",
        "SetTier",
        "v1",
        "broken",
    )
    assert entry["replacement"] == "example.co/v2 SetTier"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"kind": "SetTier", "version": "v1", "group": "example.co", "reason": "oops"},
            "Invalid reason 'oops': use one of compromised, broken, withdrawn.",
        ),
        (
            {"kind": "SetTier", "version": "v9", "group": "example.co", "reason": "broken"},
            "No version of catalog 'example-co/functions' defines example.co/v9 SetTier.",
        ),
        (
            {"reason": "broken"},
            "Name the function version to revoke (kind and version, and its group), "
            "or a runtime digest.",
        ),
        (
            {"runtime_digest": "sha256:xyz", "reason": "broken"},
            "Invalid runtime digest 'sha256:xyz': expected sha256: and 64 hexadecimal characters.",
        ),
        (
            {"runtime_digest": DIGEST, "reason": "broken"},
            f"No version of catalog 'example-co/functions' has a runtime with digest {DIGEST}.",
        ),
        (
            {"runtime_digest": DIGEST, "kind": "SetTier", "version": "v1", "reason": "broken"},
            "Revoke either a function version (group, kind, version) or a runtime digest, "
            "not both.",
        ),
    ],
)
def test_bad_input_changes_nothing(published, owner, kwargs, message):
    revocations.revocation_create(
        catalog=published,
        actor=owner,
        group="example.co",
        kind="SetTeam",
        version="v1",
        reason="withdrawn",
    )
    before = _state(published)
    with pytest.raises(InvalidInputError) as exc:
        revocations.revocation_create(catalog=published, actor=owner, **kwargs)
    assert exc.value.message == message
    assert _state(published) == before


def test_not_allowed_and_duplicate_change_nothing(published, owner, other_user):
    args = {"group": "example.co", "kind": "SetTier", "version": "v1", "reason": "broken"}
    empty = _state(published)
    assert empty[0] == [] and [s for s, _ in empty[1]] == [0]  # the empty list, sequence 0
    with pytest.raises(NotAllowedError):
        revocations.revocation_create(catalog=published, actor=other_user, **args)
    assert _state(published) == empty
    revocations.revocation_create(catalog=published, actor=owner, **args)
    before = _state(published)
    with pytest.raises(AlreadyExistsError):
        revocations.revocation_create(catalog=published, actor=owner, **args)
    assert _state(published) == before


def test_list_is_a_referrer_of_the_latest_catalog_manifest(published, owner, client):
    revocations.revocation_create(
        catalog=published,
        actor=owner,
        group="example.co",
        kind="SetTier",
        version="v1",
        reason="compromised",
    )
    manifest = published.latest_version.oci_manifest
    resp = client.get(f"/v2/example-co/functions/referrers/{manifest.digest}")
    assert resp.status_code == 200
    types = [m.get("artifactType") for m in json.loads(resp.content)["manifests"]]
    assert revocations.OCI_ARTIFACT_TYPE in types
    tag = client.get(
        "/v2/example-co/functions/manifests/revocations-1",
        HTTP_ACCEPT="application/vnd.oci.image.manifest.v1+json",
    )
    assert tag.status_code == 200
    layer = json.loads(tag.content)["layers"][0]
    assert layer["digest"] == RevocationList.objects.get(sequence=1).digest


def test_served_list_signature_verifies_independently(published, owner, client):
    revocations.revocation_create(
        catalog=published,
        actor=owner,
        group="example.co",
        kind="SetTier",
        version="v1",
        reason="compromised",
    )
    body = client.get("/c/example-co/functions/revocations.yaml")
    sig = client.get("/c/example-co/functions/revocations.yaml.sig")
    pub = client.get("/signing-key.pub")
    assert independently_verified(pub.content, sig.content, body.content)
    etag = body["ETag"]
    assert (
        client.get("/c/example-co/functions/revocations.yaml", HTTP_IF_NONE_MATCH=etag).status_code
        == 304
    )
    assert client.get("/c/example-co/other/revocations.yaml").status_code == 404


def test_import_of_several_new_entries_is_one_list_sequence(published, owner):
    """A mirror's carry: every new upstream entry in one new list, known ones skipped."""
    revocations.revocation_create(
        catalog=published, actor=owner, group="example.co", kind="SetTier", version="v1",
        reason="broken",
    )  # fmt: skip
    entries = [
        {"group": "example.co", "kind": "SetTier", "version": "v1", "reason": "broken"},
        {"group": "example.co", "kind": "SetTeam", "version": "v1", "reason": "compromised"},
        {"group": "example.co", "kind": "SetTeam", "version": "v2", "reason": "withdrawn"},
        {"runtimeDigest": DIGEST, "reason": "compromised"},
    ]
    assert revocations.revocation_list_import(catalog=published, entries=entries) == 3
    assert [
        (r.sequence, r.kind or r.runtime_digest) for r in Revocation.objects.order_by("pk")
    ] == [
        (1, "SetTier"),
        (2, "SetTeam"),
        (2, "SetTeam"),
        (2, DIGEST),
    ]
    listed = yaml.safe_load(revocations.revocation_list_get(catalog=published).content)
    assert listed["sequence"] == 2 and len(listed["revocations"]) == 4
    # Again: nothing new, no new list.
    assert revocations.revocation_list_import(catalog=published, entries=entries) == 0
    assert RevocationList.objects.filter(catalog=published).count() == 3
