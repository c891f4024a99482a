"""Signature checks against real third-party data (sigstore conformance, containers/image)."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from catalogs.exceptions import InvalidInputError, SignatureError
from catalogs.mirroring.fetchers.base import CosignSignature
from catalogs.mirroring.signatures import cosign_verify, sigstore_verify
from tests.catalogs.mirroring.conftest import BEACON, GHA, SIGSTORE_DATA

COSIGN = SIGSTORE_DATA / "cosign-simple-signing"
PRODUCTION = SIGSTORE_DATA / "bundles" / "production"
A_TXT = (PRODUCTION / "a.txt").read_bytes()


def cosign_case(name: str) -> tuple[CosignSignature, str]:
    directory = COSIGN / name
    signature = CosignSignature(
        payload=(directory / "payload.json").read_bytes(),
        signature_b64=(directory / "signature.b64").read_text().strip(),
    )
    digest = "sha256:" + hashlib.sha256((directory / "manifest.json").read_bytes()).hexdigest()
    return signature, digest


@pytest.mark.parametrize(
    ("case", "key"),
    [("valid", "cosign.pub"), ("valid-with-tag", "cosign.pub"), ("key-rekor-valid", "cosign2.pub")],
)
def test_real_cosign_signatures_verify(case, key):
    signature, digest = cosign_case(case)
    record = cosign_verify(
        public_key_pem=(COSIGN / key).read_text(), signatures=[signature], manifest_digest=digest
    )
    assert record["type"] == "cosign"
    assert record["manifest_digest"] == digest
    der = serialization.load_pem_public_key((COSIGN / key).read_bytes()).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert record["key"] == "sha256:" + hashlib.sha256(der).hexdigest()


def test_real_cosign_signature_by_another_key_fails():
    signature, digest = cosign_case("valid")
    tag = digest.replace(":", "-") + ".sig"
    with pytest.raises(SignatureError) as err:
        cosign_verify(
            public_key_pem=(COSIGN / "cosign2.pub").read_text(),
            signatures=[signature],
            manifest_digest=digest,
        )
    assert err.value.message == (
        f"No cosign signature in {tag} verifies with the source's public key (1 checked)."
    )


def test_real_cosign_signature_of_another_manifest_fails():
    signature, digest = cosign_case("valid")
    other = "sha256:" + "0" * 64
    with pytest.raises(SignatureError) as err:
        cosign_verify(
            public_key_pem=(COSIGN / "cosign.pub").read_text(),
            signatures=[signature],
            manifest_digest=other,
        )
    assert err.value.message == (
        f"The cosign signature in sha256-{'0' * 64}.sig signs {digest}, not {other}."
    )


def test_cosign_key_must_be_p256():
    rsa_pem = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    with pytest.raises(InvalidInputError) as err:
        cosign_verify(public_key_pem=rsa_pem, signatures=[], manifest_digest="sha256:" + "0" * 64)
    assert err.value.message == "cosign_public_key must be an ECDSA P-256 public key."
    with pytest.raises(InvalidInputError) as err:
        cosign_verify(public_key_pem="nope", signatures=[], manifest_digest="sha256:" + "0" * 64)
    assert err.value.message == "cosign_public_key is not a PEM public key."


@pytest.fixture
def pinned_root(settings):
    settings.MIRROR_SIGSTORE_TRUSTED_ROOT = str(
        SIGSTORE_DATA / "trusted_root" / "production.trusted_root.json"
    )


@pytest.mark.parametrize("version", ["v0.1", "v0.2", "v0.3"])
def test_real_sigstore_bundles_verify(pinned_root, version):
    bundle = (PRODUCTION / f"a.txt.{version}.sigstore.json").read_bytes()
    record = sigstore_verify(content=A_TXT, bundle=bundle, identity=BEACON, issuer=GHA, where="w")
    assert record["type"] == "sigstore"
    assert (record["identity"], record["issuer"]) == (BEACON, GHA)
    assert isinstance(record["log_index"], int)


def test_sigstore_embedded_root_offline(settings):
    settings.MIRROR_SIGSTORE_TRUSTED_ROOT = ""
    bundle = (PRODUCTION / "a.txt.v0.3.sigstore.json").read_bytes()
    assert sigstore_verify(content=A_TXT, bundle=bundle, identity=BEACON, issuer=GHA, where="w")


def test_sigstore_changed_content_fails(pinned_root):
    bundle = (PRODUCTION / "a.txt.v0.3.sigstore.json").read_bytes()
    with pytest.raises(SignatureError) as err:
        sigstore_verify(
            content=A_TXT.replace(b"a.txt", b"b.txt"),
            bundle=bundle,
            identity=BEACON,
            issuer=GHA,
            where="w",
        )
    assert err.value.message.startswith(
        f"Sigstore bundle at w does not verify for identity {BEACON}"
    )


def test_sigstore_wrong_issuer_fails(pinned_root):
    bundle = (PRODUCTION / "a.txt.v0.3.sigstore.json").read_bytes()
    with pytest.raises(SignatureError) as err:
        sigstore_verify(
            content=A_TXT,
            bundle=bundle,
            identity=BEACON,
            issuer="https://github.com/login/oauth",
            where="w",
        )
    assert "https://github.com/login/oauth" in err.value.message
    assert err.value.message.startswith("Sigstore bundle at w does not verify")


NEGATIVE = {
    "signature-mismatch": "Signature is invalid for input",
    "message-digest-mismatch": "Bundle message digest mismatch",
    "set-invalid-signature": "invalid log entry: SET: invalid inclusion promise",
    "inclusion-proof-corrupted-hash": "inclusion proof contains invalid root hash",
    "wrong-hashedrekord-entry": "transparency log entry is inconsistent with other materials",
    "bundle-from-wrong-instance": "",
}


@pytest.mark.parametrize("case", sorted(NEGATIVE))
def test_real_negative_sigstore_bundles_fail(pinned_root, case):
    bundle = (SIGSTORE_DATA / "bundles" / "negative" / f"{case}.sigstore.json").read_bytes()
    with pytest.raises(SignatureError) as err:
        sigstore_verify(content=A_TXT, bundle=bundle, identity=BEACON, issuer=GHA, where="w")
    assert err.value.message.startswith(("Sigstore bundle at w", "Invalid sigstore bundle at w"))
    assert NEGATIVE[case] in err.value.message


def test_sigstore_missing_and_malformed_bundles(pinned_root):
    with pytest.raises(SignatureError) as err:
        sigstore_verify(content=A_TXT, bundle=None, identity=BEACON, issuer=GHA, where="x.json")
    assert err.value.message == "No sigstore bundle found at x.json."
    with pytest.raises(SignatureError) as err:
        sigstore_verify(content=A_TXT, bundle=b"{}", identity=BEACON, issuer=GHA, where="x.json")
    assert err.value.message.startswith("Invalid sigstore bundle at x.json: ")
