"""Signature checks of mirrored catalogs: cosign simple signing (key) and sigstore bundles.

Both raise SignatureError with one clear reason, and return a JSON-ready verification record.
sigstore is imported on use: it is heavy and only syncs with an identity policy need it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings

from catalogs.exceptions import InvalidInputError, SignatureError
from catalogs.mirroring.fetchers.base import CosignSignature


def cosign_public_key_load(pem: str) -> ec.EllipticCurvePublicKey:
    """The ECDSA P-256 public key in ``pem``, or InvalidInputError saying what is wrong."""
    try:
        key = serialization.load_pem_public_key(pem.encode("utf-8"))
    except (ValueError, TypeError, UnicodeError):
        raise InvalidInputError("cosign_public_key is not a PEM public key.") from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or not isinstance(key.curve, ec.SECP256R1):
        raise InvalidInputError("cosign_public_key must be an ECDSA P-256 public key.")
    return key


def key_fingerprint(key: ec.EllipticCurvePublicKey) -> str:
    """sha256 of the key's DER SubjectPublicKeyInfo, as cosign and sigstore name keys."""
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return "sha256:" + hashlib.sha256(der).hexdigest()


def cosign_verify(
    *, public_key_pem: str, signatures: Sequence[CosignSignature], manifest_digest: str
) -> dict[str, Any]:
    """Require one simple-signing signature of ``manifest_digest`` made with the source's key."""
    key = cosign_public_key_load(public_key_pem)
    tag = manifest_digest.replace(":", "-") + ".sig"
    if not signatures:
        raise SignatureError(f"No cosign signature found for {manifest_digest} (tag {tag}).")
    wrong_subject = None
    for signature in signatures:
        try:
            raw = base64.b64decode(signature.signature_b64, validate=True)
            key.verify(raw, signature.payload, ec.ECDSA(hashes.SHA256()))
        except (InvalidSignature, binascii.Error, ValueError):
            continue
        try:
            payload = json.loads(signature.payload)
            signed = payload["critical"]["image"]["docker-manifest-digest"]
        except (ValueError, KeyError, TypeError):
            wrong_subject = "no critical.image.docker-manifest-digest"
            continue
        if signed != manifest_digest:
            wrong_subject = signed
            continue
        return {
            "type": "cosign",
            "key": key_fingerprint(key),
            "manifest_digest": manifest_digest,
            "signature_tag": tag,
        }
    if wrong_subject is not None:
        raise SignatureError(
            f"The cosign signature in {tag} signs {wrong_subject}, not {manifest_digest}."
        )
    raise SignatureError(
        f"No cosign signature in {tag} verifies with the source's public key "
        f"({len(signatures)} checked)."
    )


def cosign_blob_verify(
    *, public_key_pem: str, content: bytes, signature: bytes | None, where: str
) -> dict[str, Any]:
    """Require the ``cosign sign-blob`` signature at ``where`` (base64 DER ECDSA-SHA256) over
    ``content``, made with the source's key (https and git: the ``.sig`` beside the file)."""
    key = cosign_public_key_load(public_key_pem)
    if signature is None:
        raise SignatureError(f"No cosign signature found at {where}.")
    try:
        raw = base64.b64decode(signature.strip(), validate=True)
        key.verify(raw, content, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, binascii.Error, ValueError):
        raise SignatureError(
            f"The cosign signature at {where} does not verify with the source's public key."
        ) from None
    return {"type": "cosign-blob", "key": key_fingerprint(key), "signature": where}


def _sigstore_verifier():
    from sigstore.models import TrustedRoot
    from sigstore.verify import Verifier

    path = settings.MIRROR_SIGSTORE_TRUSTED_ROOT
    if path:
        return Verifier(trusted_root=TrustedRoot.from_file(str(path)))
    return Verifier.production(offline=True)


def sigstore_verify(
    *, content: bytes, bundle: bytes | None, identity: str, issuer: str, where: str
) -> dict[str, Any]:
    """Require a sigstore bundle over ``content`` whose certificate matches identity and issuer."""
    if bundle is None:
        raise SignatureError(f"No sigstore bundle found at {where}.")
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import Bundle
    from sigstore.verify import policy

    try:
        parsed = Bundle.from_json(bundle)
    except (SigstoreError, ValueError) as exc:
        raise SignatureError(f"Invalid sigstore bundle at {where}: {exc}") from None
    try:
        _sigstore_verifier().verify_artifact(
            content, parsed, policy.Identity(identity=identity, issuer=issuer)
        )
    except SigstoreError as exc:
        raise SignatureError(
            f"Sigstore bundle at {where} does not verify for identity {identity} "
            f"(issuer {issuer}): {exc}"
        ) from None
    return {
        "type": "sigstore",
        "identity": identity,
        "issuer": issuer,
        "bundle": where,
        # sigstore (pinned) keeps the Rekor entry's fields on its private protobuf model.
        "log_index": parsed.log_entry._inner.log_index,
    }
