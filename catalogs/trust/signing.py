"""The registry's own signing key: load it from settings, record its public half, sign with it.

Signatures are ECDSA P-256 over SHA-256, base64 of the DER signature: the format of
``cosign sign-blob``, so ``cosign verify-blob --key signing-key.pub --signature catalog.yaml.sig
catalog.yaml`` accepts the ``.sig`` the registry serves beside each ``catalog.yaml``. The private
key lives in settings (``SIGNING_KEY_PEM``) or a file (``SIGNING_KEY_FILE``), never in the
database; every public key ever used is kept as a ``SigningKey`` row so old signatures stay
verifiable after a rotation.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.utils import timezone

from catalogs.publishing.models import SigningKey

KEY_ID_HEX = 16

_lock = threading.Lock()
# (source, mtime_ns) -> key: a file rotated under a running process is read again.
_cache: dict[tuple[str, int], ec.EllipticCurvePrivateKey] = {}
# Key ids known to be recorded as current in this process (skips a query per publish).
_recorded: set[str] = set()


class SigningKeyError(ImproperlyConfigured):
    """The configured signing key is missing, unreadable or not ECDSA P-256."""


@dataclass(frozen=True)
class Signature:
    """A signature of some bytes: base64 DER ECDSA-SHA256, and the key that made it."""

    signature_b64: str
    key: SigningKey

    @property
    def key_id(self) -> str:
        """The id of the key that made it."""
        return self.key.key_id


def key_id_of(key: ec.EllipticCurvePublicKey) -> str:
    """First 16 hex of sha256 over the key's DER SubjectPublicKeyInfo."""
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()[:KEY_ID_HEX]


def public_pem_of(key: ec.EllipticCurvePublicKey) -> str:
    """The SubjectPublicKeyInfo PEM of ``key`` (what cosign's ``--key`` reads)."""
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def private_key_generate() -> tuple[ec.EllipticCurvePrivateKey, bytes]:
    """A new P-256 key and its unencrypted PKCS#8 PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return key, pem


def _parse(pem: bytes, where: str) -> ec.EllipticCurvePrivateKey:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(
            f"{where} is not an unencrypted PEM private key: {exc}".rstrip(": ")
        ) from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
        raise SigningKeyError(f"{where} must be an ECDSA P-256 private key.")
    return key


def private_key_write(path: str, pem: bytes) -> None:
    """Write ``pem`` to ``path`` (mode 0600) atomically: readers see the old or the new key."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    os.replace(tmp, path)


def _create_file(path: str) -> None:
    """Create a new key at ``path`` unless another process did first (O_EXCL)."""
    _key, pem = private_key_generate()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as f:
        f.write(pem)


def private_key_load() -> ec.EllipticCurvePrivateKey:
    """The configured signing key; the embedded default creates its file on first use."""
    inline = settings.SIGNING_KEY_PEM
    if inline:
        source, stamp = "SIGNING_KEY_PEM", 0
        with _lock:
            key = _cache.get((source, stamp))
        if key is None:
            key = _parse(inline.encode("utf-8"), "SIGNING_KEY_PEM")
        with _lock:
            _cache[(source, stamp)] = key
        return key
    path = str(settings.SIGNING_KEY_FILE or "")
    if not path:
        raise SigningKeyError("No signing key: set SIGNING_KEY_PEM or SIGNING_KEY_FILE.")
    if not os.path.exists(path):
        if not settings.SIGNING_KEY_CREATE:
            raise SigningKeyError(f"SIGNING_KEY_FILE {path} does not exist.")
        _create_file(path)
    try:
        stamp = os.stat(path).st_mtime_ns
        with _lock:
            key = _cache.get((path, stamp))
        if key is not None:
            return key
        with open(path, "rb") as f:
            data = f.read(64 * 1024)
    except OSError as exc:
        raise SigningKeyError(f"Cannot read SIGNING_KEY_FILE {path}: {exc.strerror}") from None
    key = _parse(data, f"SIGNING_KEY_FILE {path}")
    with _lock:
        _cache.clear()
        _cache[(path, stamp)] = key
    return key


def signing_key_current() -> tuple[ec.EllipticCurvePrivateKey, SigningKey]:
    """The configured private key and its ``SigningKey`` row, recorded as current if new.

    A key that differs from the recorded current one (a rotation, by the command or by an
    operator changing the setting) becomes current; the old row stays, retired, for verifying.
    """
    key = private_key_load()
    key_id = key_id_of(key.public_key())
    if key_id in _recorded:
        row = SigningKey.objects.filter(key_id=key_id, current=True).first()
        if row is not None:
            return key, row
        _recorded.discard(key_id)
    with transaction.atomic():
        row = SigningKey.objects.select_for_update().filter(key_id=key_id).first()
        if row is None or not row.current:
            now = timezone.now()
            SigningKey.objects.filter(current=True).exclude(key_id=key_id).update(
                current=False, retired_at=now
            )
            if row is None:
                try:
                    with transaction.atomic():
                        row = SigningKey.objects.create(
                            key_id=key_id,
                            public_key_pem=public_pem_of(key.public_key()),
                            current=True,
                        )
                except IntegrityError:  # another process recorded it first
                    row = SigningKey.objects.get(key_id=key_id)
            if not row.current:
                row.current = True
                row.retired_at = None
                row.save(update_fields=["current", "retired_at"])
    _recorded.add(key_id)
    return key, row


def sign_bytes(data: bytes) -> Signature:
    """Sign ``data`` with the current key (ECDSA-SHA256, base64 DER, as cosign sign-blob)."""
    key, row = signing_key_current()
    der = key.sign(data, ec.ECDSA(hashes.SHA256()))
    return Signature(signature_b64=base64.b64encode(der).decode("ascii"), key=row)


def signing_key_rotate() -> SigningKey:
    """Replace SIGNING_KEY_FILE with a new key and record it as current; old keys stay listed.

    With SIGNING_KEY_PEM set, the key lives in the environment: the operator rotates it there
    (the registry records the new key when it first signs with it).
    """
    if settings.SIGNING_KEY_PEM:
        raise SigningKeyError(
            "The signing key is set inline (SIGNING_KEY_PEM): put the new key there and restart; "
            "the registry records it as current on first use."
        )
    path = str(settings.SIGNING_KEY_FILE or "")
    if not path:
        raise SigningKeyError("No signing key: set SIGNING_KEY_PEM or SIGNING_KEY_FILE.")
    _key, pem = private_key_generate()
    try:
        private_key_write(path, pem)
    except OSError as exc:
        raise SigningKeyError(
            f"Cannot write SIGNING_KEY_FILE {path}: {exc.strerror}; the current key is unchanged."
        ) from None
    return signing_key_current()[1]


def signing_key_list():
    """Every key the registry signs or signed with, the current one first."""
    return SigningKey.objects.order_by("-current", "-created_at", "-id")


# --- cosign's signature layout in an OCI repository (what ``cosign verify --key`` reads). ---

COSIGN_PAYLOAD_MEDIA_TYPE = "application/vnd.dev.cosign.simplesigning.v1+json"
COSIGN_SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
COSIGN_ARTIFACT_TYPE = "application/vnd.dev.cosign.artifact.sig.v1+json"
OCI_CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
OCI_MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
KEY_ID_ANNOTATION = "dev.krm-catalog-registry/signing-key-id"


def cosign_signature_tag(manifest_digest: str) -> str:
    """``sha256-<hex>.sig``: where cosign looks for the signatures of ``manifest_digest``."""
    return manifest_digest.replace(":", "-") + ".sig"


def _json(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=False).encode()


@dataclass(frozen=True)
class CosignArtifact:
    """A signature artifact ready for ``oci_artifact_store``."""

    manifest: bytes
    blobs: dict[str, bytes]
    tag: str
    signature: Signature


def cosign_artifact_build(
    *, repository: str, manifest_digest: str, manifest_size: int, manifest_media_type: str
) -> CosignArtifact:
    """A simple-signing payload over ``manifest_digest``, signed, in cosign's manifest layout.

    ``repository`` is ``host/publisher/catalog`` (the payload's docker-reference). The manifest
    also names the signed manifest as its ``subject``, so the referrers API lists it.
    """
    payload = _json(
        {
            "critical": {
                "identity": {"docker-reference": repository},
                "image": {"docker-manifest-digest": manifest_digest},
                "type": "cosign container image signature",
            },
            "optional": None,
        }
    )
    signature = sign_bytes(payload)
    payload_digest = "sha256:" + hashlib.sha256(payload).hexdigest()
    # The image config cosign writes for a signature image: one layer, no platform.
    config = _json(
        {
            "architecture": "",
            "created": "0001-01-01T00:00:00Z",
            "history": [{"created": "0001-01-01T00:00:00Z"}],
            "os": "",
            "rootfs": {"type": "layers", "diff_ids": [payload_digest]},
            "config": {},
        }
    )
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    manifest = _json(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST_MEDIA_TYPE,
            "artifactType": COSIGN_ARTIFACT_TYPE,
            "config": {
                "mediaType": OCI_CONFIG_MEDIA_TYPE,
                "size": len(config),
                "digest": config_digest,
            },
            "layers": [
                {
                    "mediaType": COSIGN_PAYLOAD_MEDIA_TYPE,
                    "size": len(payload),
                    "digest": payload_digest,
                    "annotations": {COSIGN_SIGNATURE_ANNOTATION: signature.signature_b64},
                }
            ],
            "subject": {
                "mediaType": manifest_media_type,
                "size": manifest_size,
                "digest": manifest_digest,
            },
            "annotations": {KEY_ID_ANNOTATION: signature.key_id},
        }
    )
    return CosignArtifact(
        manifest=manifest,
        blobs={payload_digest: payload, config_digest: config},
        tag=cosign_signature_tag(manifest_digest),
        signature=signature,
    )
