"""The registry signs every version it serves; checked with code independent of
catalogs.trust.signing.

The verifier below uses only the ``cryptography`` primitives and parses the DER signature and the
base64 itself, so that a bug shared with the signing code cannot make both sides agree.
"""

from __future__ import annotations

import base64
import hashlib
import os

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from django.core.management import call_command

from catalogs.publishing import services
from catalogs.publishing.models import CatalogVersion, SigningKey
from catalogs.trust import signing
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def der_ecdsa_signature(der: bytes) -> tuple[int, int]:
    """(r, s) of a DER ``SEQUENCE { INTEGER r, INTEGER s }`` (short-form lengths, as P-256 has)."""
    assert der[0] == 0x30 and der[1] == len(der) - 2, "not one DER SEQUENCE"
    values, i = [], 2
    for _ in range(2):
        assert der[i] == 0x02, "not a DER INTEGER"
        length = der[i + 1]
        body = der[i + 2 : i + 2 + length]
        assert body[0] < 0x80, "negative INTEGER"
        values.append(int.from_bytes(body, "big"))
        i += 2 + length
    assert i == len(der), "trailing bytes after the signature"
    r, s = values
    assert 0 < r < P256_ORDER and 0 < s < P256_ORDER
    return r, s


def independently_verified(public_pem: bytes, signature_b64: bytes, data: bytes) -> bool:
    """Whether ``signature_b64`` is a base64 DER ECDSA-SHA256 signature of ``data`` by the key."""
    key = serialization.load_pem_public_key(public_pem)
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
    assert signature_b64 and set(signature_b64) <= set(alphabet), "not standard base64"
    r, s = der_ecdsa_signature(base64.b64decode(signature_b64))
    try:
        key.verify(encode_dss_signature(r, s), data, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True


def key_id(public_pem: bytes) -> str:
    key = serialization.load_pem_public_key(public_pem)
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()[:16]


@pytest.fixture
def own_key(settings, tmp_path):
    """This test's own key file, so rotations do not leak into other tests."""
    settings.SIGNING_KEY_PEM = ""
    settings.SIGNING_KEY_FILE = str(tmp_path / "keys" / "signing-key.pem")
    settings.SIGNING_KEY_CREATE = True
    return tmp_path / "keys" / "signing-key.pem"


def _publish(catalog, *kinds: str) -> CatalogVersion:
    content = catalog_yaml(*[("example.co", k, "v1") for k in kinds])
    return services.catalog_version_publish(catalog=catalog, content=content, actor=None)[0]


def test_every_serving_url_has_a_signature_over_its_bytes(client, catalog, own_key):
    version = _publish(catalog, "First")
    pub = client.get("/signing-key.pub")
    assert pub.status_code == 200
    assert pub["Content-Type"] == "application/x-pem-file"
    assert pub.content.startswith(b"-----BEGIN PUBLIC KEY-----\n")
    assert pub["X-Signing-Key-Id"] == key_id(pub.content)
    assert own_key.stat().st_mode & 0o777 == 0o600
    base = "/c/example-co/functions"
    hexdigest = version.digest.removeprefix("sha256:")
    for url in (
        f"{base}/catalog.yaml",
        f"{base}/versions/1/catalog.yaml",
        f"{base}/sha256/{hexdigest}/catalog.yaml",
    ):
        body = client.get(url).content
        sig = client.get(url + ".sig")
        assert sig.status_code == 200, url
        assert sig["Content-Type"].startswith("text/plain")
        assert sig["X-Content-Digest"] == version.digest
        assert sig["X-Signing-Key-Id"] == key_id(pub.content)
        assert independently_verified(pub.content, sig.content, body), url
        # One changed byte of the served bytes does not verify.
        assert not independently_verified(pub.content, sig.content, body + b"\n"), url


def test_signature_fails_for_another_key(client, catalog, own_key):
    _publish(catalog, "First")
    other = ec.generate_private_key(ec.SECP256R1()).public_key()
    other_pem = other.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    body = client.get("/c/example-co/functions/catalog.yaml").content
    sig = client.get("/c/example-co/functions/catalog.yaml.sig").content
    assert not independently_verified(other_pem, sig, body)


def test_missing_versions_have_no_signature(client, catalog, own_key):
    assert client.get("/c/example-co/functions/catalog.yaml.sig").status_code == 404
    _publish(catalog, "First")
    assert client.get("/c/example-co/functions/versions/2/catalog.yaml.sig").status_code == 404
    assert client.get("/c/example-co/nope/catalog.yaml.sig").status_code == 404
    missing = "/c/example-co/functions/sha256/" + "0" * 64 + "/catalog.yaml.sig"
    assert client.get(missing).status_code == 404


def test_api_and_page_say_signed_by_this_registry(client, catalog, own_key):
    version = _publish(catalog, "First")
    kid = version.signing_key.key_id
    summary = f"signed by this registry (key id {kid})"
    detail = client.get("/api/v1/catalogs/example-co/functions/").json()
    assert detail["signature"] == {
        "signed_by": "this registry",
        "key_id": kid,
        "signature_url": "http://testserver/c/example-co/functions/versions/1/catalog.yaml.sig",
        "summary": summary,
    }
    versions = client.get("/api/v1/catalogs/example-co/functions/versions/").json()["results"]
    assert versions[0]["signature"]["key_id"] == kid
    functions = client.get(f"/api/v1/functions/?key={kid}").json()["results"]
    assert [f["signature"]["summary"] for f in functions] == [summary]
    assert client.get("/api/v1/functions/?key=0000000000000000").json()["results"] == []
    page = client.get("/catalogs/example-co/functions/").content.decode()
    assert summary in page
    assert 'href="/c/example-co/functions/versions/1/catalog.yaml.sig"' in page


def test_rotation_keeps_old_signatures_verifiable(client, catalog, own_key, capsys):
    first = _publish(catalog, "First")
    old_id = first.signing_key.key_id
    old_sig = client.get("/c/example-co/functions/versions/1/catalog.yaml.sig").content
    call_command("rotate_signing_key")
    out = capsys.readouterr().out
    new_pub = client.get("/signing-key.pub")
    new_id = new_pub["X-Signing-Key-Id"]
    assert new_id != old_id
    assert out.splitlines() == [
        f"Current signing key: {new_id} (was {old_id})",
        "TUF root version 2: signed by the old and the new key.",
    ]
    second = _publish(catalog, "First", "Second")
    assert second.signing_key.key_id == new_id

    keys = client.get("/api/v1/signing-keys/").json()["results"]
    assert [(k["key_id"], k["current"]) for k in keys] == [(new_id, True), (old_id, False)]
    assert keys[1]["retired_at"] is not None
    old_pem = keys[1]["public_key_pem"].encode()
    v1 = client.get("/c/example-co/functions/versions/1/catalog.yaml").content
    # The old version keeps its signature by the old key; the new key does not verify it.
    assert client.get("/c/example-co/functions/versions/1/catalog.yaml.sig").content == old_sig
    assert independently_verified(old_pem, old_sig, v1)
    assert not independently_verified(new_pub.content, old_sig, v1)
    v2 = client.get("/c/example-co/functions/versions/2/catalog.yaml").content
    v2_sig = client.get("/c/example-co/functions/versions/2/catalog.yaml.sig").content
    assert independently_verified(new_pub.content, v2_sig, v2)

    call_command("rotate_signing_key", "--resign")
    assert "Re-signed 2 catalog version(s)" in capsys.readouterr().out
    newest = client.get("/signing-key.pub").content
    resigned = client.get("/c/example-co/functions/versions/1/catalog.yaml.sig").content
    assert independently_verified(newest, resigned, v1)
    assert SigningKey.objects.count() == 3
    assert SigningKey.objects.filter(current=True).count() == 1


def test_unsigned_versions_are_signed_lazily_and_by_command(client, catalog, own_key, capsys):
    _publish(catalog, "First")
    _publish(catalog, "First", "Second")
    CatalogVersion.objects.update(signature="", signing_key=None)  # as before signing existed
    sig = client.get("/c/example-co/functions/versions/1/catalog.yaml.sig")
    assert sig.status_code == 200
    pub = client.get("/signing-key.pub").content
    body = client.get("/c/example-co/functions/versions/1/catalog.yaml").content
    assert independently_verified(pub, sig.content, body)
    assert CatalogVersion.objects.filter(signature="").count() == 1
    call_command("sign_versions")
    assert capsys.readouterr().out.startswith("Signed 1 catalog version(s) with key ")
    assert CatalogVersion.objects.filter(signature="").count() == 0


def test_inline_key_setting_is_used(client, catalog, settings):
    key, pem = signing.private_key_generate()
    settings.SIGNING_KEY_PEM = pem.decode()
    _publish(catalog, "First")
    pub = client.get("/signing-key.pub").content
    assert pub.decode() == signing.public_pem_of(key.public_key())
    with pytest.raises(signing.SigningKeyError, match="set inline"):
        signing.signing_key_rotate()


@pytest.mark.parametrize(
    ("pem", "message"),
    [
        (b"not a key", "is not an unencrypted PEM private key"),
        (
            signing.private_key_generate()[0]
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
            "is not an unencrypted PEM private key",
        ),
        (
            ec.generate_private_key(ec.SECP384R1()).private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            "must be an ECDSA P-256 private key",
        ),
    ],
)
def test_bad_key_refuses_to_publish_and_loses_nothing(catalog, own_key, pem, message):
    first = _publish(catalog, "First")
    own_key.write_bytes(pem)
    with pytest.raises(signing.SigningKeyError, match=message):
        _publish(catalog, "First", "Second")
    catalog.refresh_from_db()
    assert catalog.latest_version == first
    assert list(catalog.versions.values_list("number", flat=True)) == [1]


def test_missing_key_file_without_create(catalog, own_key, settings):
    settings.SIGNING_KEY_CREATE = False
    with pytest.raises(signing.SigningKeyError, match=r"SIGNING_KEY_FILE .* does not exist"):
        _publish(catalog, "First")
    assert not catalog.versions.exists()


def test_rotation_that_cannot_write_keeps_the_current_key(client, catalog, own_key):
    from django.core.management.base import CommandError

    _publish(catalog, "First")
    before = client.get("/signing-key.pub")
    # The new key is written beside the old one first; a directory in its way fails that write
    # (even for root, who may write anywhere).
    (own_key.parent / f"{own_key.name}.{os.getpid()}.tmp").mkdir()
    with pytest.raises(CommandError) as exc:
        call_command("rotate_signing_key")
    assert str(exc.value) == (
        f"Cannot write SIGNING_KEY_FILE {own_key}: Is a directory; the current key is unchanged."
    )
    assert client.get("/signing-key.pub").content == before.content
    assert SigningKey.objects.count() == 1
