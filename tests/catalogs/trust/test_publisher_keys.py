"""A publisher's own TUF keys: registering one (API), and the role metadata it signs.

Once a key is registered the registry delegates the publisher's paths to it and never signs
that role again; an uploaded role must be signed by a registered key, newer than the one served,
unexpired, delegate nothing, and list only what the registry serves byte for byte. Each refusal
is a 400 with one message and changes nothing.
"""

from __future__ import annotations

import datetime

import pytest
from cryptography.hazmat.primitives import serialization
from django.utils import timezone
from securesystemslib.signer import CryptoSigner
from tuf.api.metadata import Delegations, Metadata, TargetFile
from tuf.api.serialization.json import JSONSerializer

from catalogs.publishing import services
from catalogs.trust import tuf
from catalogs.trust.models import PublisherKey, TufMetadata
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

KEYS = "/api/v1/publishers/example-co/keys/"
ROLE = "/api/v1/publishers/example-co/tuf/example-co.json"


def _pem(signer: CryptoSigner) -> str:
    return (
        signer._private_key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


@pytest.fixture
def published(catalog):
    services.catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("fn.example.com", "A", "v1")), actor=None
    )
    return catalog


@pytest.fixture
def owner_client(api_client, owner):
    api_client.force_authenticate(owner)
    return api_client


def _snapshot():
    return list(TufMetadata.objects.order_by("pk").values_list("role", "version"))


def _template(client) -> Metadata:
    resp = client.get(ROLE)
    assert resp.status_code == 200
    return Metadata.from_dict(resp.json())


def _put(client, md: Metadata):
    return client.put(ROLE, md.to_bytes(JSONSerializer()), content_type="application/json")


def test_register_a_key_then_upload_the_role_it_signs(published, owner_client):
    from rest_framework.test import APIClient

    api_client = APIClient()
    key = CryptoSigner.generate_ed25519()
    resp = owner_client.post(KEYS, {"public_key": _pem(key)}, format="json")
    assert resp.status_code == 201, resp.json()
    assert resp.json()["keyid"] == key.public_key.keyid
    assert [k["keyid"] for k in api_client.get(KEYS).json()] == [key.public_key.keyid]
    targets = Metadata.from_bytes(tuf.current("targets").data.encode()).signed
    assert targets.delegations.roles["example-co"].keyids == [key.public_key.keyid]
    # The registry's role for example-co stays as it was: a new version is not signed by it.
    served = tuf.current("example-co").version
    services.catalog_version_publish(
        catalog=published, content=catalog_yaml(("fn.example.com", "B", "v1")), actor=None
    )
    assert tuf.current("example-co").version == served
    md = _template(owner_client)
    assert md.signed.version == served + 1
    assert "example-co/functions/versions/2/catalog.yaml" in md.signed.targets
    md.sign(key)
    resp = _put(owner_client, md)
    assert resp.status_code == 200, resp.json()
    assert resp.json() == {"role": "example-co", "version": served + 1}
    row = tuf.current("example-co")
    assert row.uploaded and row.version == served + 1
    snapshot = Metadata.from_bytes(tuf.current("snapshot").data.encode()).signed
    assert snapshot.meta["example-co.json"].version == served + 1


def test_bad_keys_are_refused(published, owner_client, other_user):
    from rest_framework.test import APIClient

    api_client = APIClient()  # nobody logged in (owner_client is another client)
    before = _snapshot()
    for body, message in (
        (
            {"public_key": "not a key"},
            "The public key is not a PEM public key (-----BEGIN PUBLIC KEY-----).",
        ),
        (
            {"public_key": _pem_p384()},
            "The public key must be an ECDSA P-256 or ed25519 key.",
        ),
    ):
        resp = owner_client.post(KEYS, body, format="json")
        assert (resp.status_code, resp.json()["detail"]) == (400, message)
    key = CryptoSigner.generate_ecdsa()
    assert api_client.post(KEYS, {"public_key": _pem(key)}, format="json").status_code == 401
    api_client.force_authenticate(other_user)
    resp = api_client.post(KEYS, {"public_key": _pem(key)}, format="json")
    assert resp.status_code == 403
    assert (
        resp.json()["detail"] == "Only owners of publisher 'example-co' (or staff) may change it."
    )
    assert not PublisherKey.objects.exists() and _snapshot() == before
    assert owner_client.post(KEYS, {"public_key": _pem(key)}, format="json").status_code == 201
    again = owner_client.post(KEYS, {"public_key": _pem(key)}, format="json")
    assert (again.status_code, again.json()["detail"]) == (
        409,
        f"Publisher 'example-co' already holds key {key.public_key.keyid}.",
    )


def _pem_p384() -> str:
    from cryptography.hazmat.primitives.asymmetric import ec

    return (
        ec.generate_private_key(ec.SECP384R1())
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def test_bad_roles_are_refused(published, owner_client):
    resp = _put(owner_client, _template(owner_client))
    assert (resp.status_code, resp.json()["detail"]) == (
        409,
        "Publisher 'example-co' holds no keys of its own: the registry signs its role. "
        "Register a key first (POST /api/v1/publishers/<publisher>/keys/).",
    )
    key = CryptoSigner.generate_ed25519()
    assert owner_client.post(KEYS, {"public_key": _pem(key)}, format="json").status_code == 201
    served = tuf.current("example-co").version
    before = _snapshot()

    def signed(change=None, signer=key) -> Metadata:
        md = _template(owner_client)
        if change:
            change(md.signed)
        md.sign(signer)
        return md

    other = CryptoSigner.generate_ed25519()
    unsigned = (
        "The role is not signed by a key publisher 'example-co' registered (example-co was "
        "signed by 0/1 keys)."
    )
    yesterday = timezone.now().replace(microsecond=0) - datetime.timedelta(days=1)
    path = "example-co/functions/catalog.yaml"
    evil = TargetFile.from_data(path, b"evil")
    cases = [
        (signed(signer=tuf.online_signer()), unsigned),
        (signed(signer=other), unsigned),
        (
            signed(lambda s: setattr(s, "version", served)),
            f"Version {served} of role 'example-co' is not newer than the one served "
            f"({served}); sign version {served + 1}.",
        ),
        (signed(lambda s: setattr(s, "expires", yesterday)), None),
        (
            signed(lambda s: setattr(s, "delegations", Delegations(keys={}, roles={}))),
            "A publisher's role delegates nothing further.",
        ),
        (
            signed(lambda s: s.targets.__setitem__(path, evil)),
            f"Target {path} is not what the registry serves (length 4, sha256 "
            f"{evil.hashes['sha256']}); fetch the role template again and sign it.",
        ),
    ]
    for md, message in cases:
        resp = _put(owner_client, md)
        conflict = message is not None and message.startswith("Version ")
        assert resp.status_code == (409 if conflict else 400), resp.json()
        if message is None:
            assert resp.json()["detail"].startswith("The role expired at ")
        else:
            assert resp.json()["detail"] == message
    resp = owner_client.put(ROLE, b"{not json", content_type="application/json")
    assert resp.status_code == 400
    assert resp.json()["detail"].startswith("Not TUF metadata: ")
    other_role = "/api/v1/publishers/example-co/tuf/mallory.json"
    resp = owner_client.put(other_role, b"{}", content_type="application/json")
    assert (resp.status_code, resp.json()["detail"]) == (
        404,
        "Publisher 'example-co' signs only its own roles 'example-co' and 'example-co.private'.",
    )
    assert _snapshot() == before
