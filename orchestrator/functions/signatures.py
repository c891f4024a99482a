"""Catalog signatures: the keys a user trusts, and checking a catalog's signature against them.

Two formats, both cosign's, both ECDSA P-256 with SHA-256 (base64 of the DER signature):

- ``blob``: a signature over the catalog bytes themselves, as ``cosign sign-blob`` writes it,
  found beside the catalog (``<url>.sig`` for https, ``<path>.sig`` for files and git);
- ``cosign``: for ``oci://`` refs, simple-signing payloads stored at the ``sha256-<hex>.sig`` tag of
  the same repository, each signing the manifest digest; the manifest names the catalog layer by
  its digest, so the chain is signature -> manifest digest -> layer digest -> catalog bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator.functions.fetch import http_get
from orchestrator.functions.options import FnOptions, FunctionError

CATALOG_MEDIA_TYPE = "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"
COSIGN_LAYER_MEDIA_TYPE = "application/vnd.dev.cosign.simplesigning.v1+json"
COSIGN_SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
# Set by the KRM catalog registry on its signature manifests: which of its keys signed.
KEY_ID_ANNOTATION = "dev.krm-catalog-registry/signing-key-id"
MAX_KEY_BYTES = 64 * 1024
MAX_SIGNATURE_BYTES = 64 * 1024


class CatalogSignatureError(FunctionError):
    """A catalog that a key applies to has no signature, or one that does not verify."""


@dataclass(frozen=True)
class CatalogKey:
    """A public key the user trusts to sign catalogs, and where it was read from."""

    path: str
    key: Any  # cryptography's EllipticCurvePublicKey
    key_id: str

    def __str__(self) -> str:
        return f"{self.key_id} ({self.path})"


def key_id_of(key: Any) -> str:
    """First 16 hex of sha256 over the DER SubjectPublicKeyInfo (the registry's key ids)."""
    from cryptography.hazmat.primitives import serialization

    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()[:16]


def load_key(path: str, *, what: str = "--catalog-key") -> CatalogKey:
    """An ECDSA P-256 public key from a PEM file, or a FunctionError naming the file."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        with open(path, "rb") as f:
            data = f.read(MAX_KEY_BYTES + 1)
    except OSError as exc:
        raise FunctionError(f"{what} {path}: {exc.strerror}") from None
    blocks = data.count(b"-----BEGIN ")
    if blocks > 1:
        raise FunctionError(
            f"{what} {path}: holds {blocks} PEM blocks; give one public key per file "
            f"(repeat {what} for several keys)"
        )
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        raise FunctionError(
            f"{what} {path}: not a PEM public key (e.g. the registry's /signing-key.pub)"
        ) from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or not isinstance(key.curve, ec.SECP256R1):
        raise FunctionError(f"{what} {path}: must be an ECDSA P-256 public key")
    return CatalogKey(os.path.abspath(path), key, key_id_of(key))


@dataclass
class SignatureMaterial:
    """What a fetch found to check a catalog's signature with."""

    kind: str  # blob | cosign
    where: str  # URL, path or OCI tag of the signature
    found: bool = False
    signature_b64: str = ""  # blob
    stated_key_id: str = ""  # what the registry says signed it (X-Signing-Key-Id, annotation)
    stated_digest: str = ""  # blob: which bytes the registry says it signed (X-Content-Digest)
    manifest: bytes = b""  # cosign: the catalog's OCI manifest
    manifest_digest: str = ""
    cosign: list[tuple[bytes, str]] = field(default_factory=list)  # (payload, base64 signature)
    # cosign: the repository fetched (host/name); a payload's docker-reference must name it.
    reference: str = ""

    def to_json(self) -> dict[str, Any]:
        """For the on-disk cache (signatures are kept and re-verified on every use)."""
        return {
            "kind": self.kind,
            "where": self.where,
            "found": self.found,
            "signature_b64": self.signature_b64,
            "stated_key_id": self.stated_key_id,
            "stated_digest": self.stated_digest,
            "manifest": base64.b64encode(self.manifest).decode(),
            "manifest_digest": self.manifest_digest,
            "cosign": [[base64.b64encode(p).decode(), s] for p, s in self.cosign],
            "reference": self.reference,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SignatureMaterial:
        """The inverse of to_json."""
        return cls(
            kind=str(data["kind"]),
            where=str(data["where"]),
            found=bool(data["found"]),
            signature_b64=str(data.get("signature_b64", "")),
            stated_key_id=str(data.get("stated_key_id", "")),
            stated_digest=str(data.get("stated_digest", "")),
            manifest=base64.b64decode(data.get("manifest", "")),
            manifest_digest=str(data.get("manifest_digest", "")),
            cosign=[(base64.b64decode(p), str(s)) for p, s in data.get("cosign", [])],
            reference=str(data.get("reference", "")),
        )


@dataclass(frozen=True)
class SignatureStatus:
    """The outcome of looking at a catalog's signature, for ``krm view catalog`` and builds."""

    status: str  # verified | unverified | missing | invalid | none
    where: str = ""
    key_id: str = ""
    key_path: str = ""
    detail: str = ""

    def describe(self) -> str:
        """One line for people."""
        if self.status == "verified" and not self.key_id:
            return f"verified through {self.where} ({self.detail})"
        if self.status == "verified":
            return f"verified with key {self.key_id} ({self.key_path}) [{self.where}]"
        if self.status == "unverified":
            stated = f", key id {self.key_id} as stated by the registry" if self.key_id else ""
            return f"present, not verified (pass --catalog-key){stated} [{self.where}]"
        if self.status == "missing":
            return f"none found [{self.where}]"
        if self.status == "invalid":
            return f"INVALID: {self.detail} [{self.where}]"
        return "not looked up"


def blob_signature_fetch(url: str, options: FnOptions) -> SignatureMaterial:
    """``<url>.sig``, the signature a registry serves beside a document it signed (catalog.yaml,
    revocations.yaml), with the key id and digest it states; ``found`` is False on a 404."""
    where = url + ".sig"
    material = SignatureMaterial("blob", where)
    resp = http_get(where, options=options, max_bytes=MAX_SIGNATURE_BYTES, missing_ok=True)
    if resp.status == 200 and resp.body is not None:
        material.found = True
        material.signature_b64 = resp.body.decode("ascii", "replace")
        material.stated_key_id = resp.headers.get("x-signing-key-id", "")
        material.stated_digest = resp.headers.get("x-content-digest", "")
    return material


def _verify_raw(key: CatalogKey, signature_b64: str, data: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        raw = base64.b64decode(signature_b64.strip(), validate=True)
        key.key.verify(raw, data, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, binascii.Error, ValueError):
        return False
    return True


def _check_manifest(material: SignatureMaterial, data: bytes) -> str | None:
    """Why the manifest does not bind ``data`` to its digest (None when it does)."""
    if "sha256:" + hashlib.sha256(material.manifest).hexdigest() != material.manifest_digest:
        return f"the manifest's bytes do not match its digest {material.manifest_digest}"
    try:
        layers = json.loads(material.manifest).get("layers") or []
    except (ValueError, AttributeError):
        return "the manifest is not an OCI manifest"
    digests = [x.get("digest") for x in layers if x.get("mediaType") == CATALOG_MEDIA_TYPE]
    actual = "sha256:" + hashlib.sha256(data).hexdigest()
    if digests != [actual]:
        return f"the catalog layer {actual} is not the one the manifest names ({digests})"
    return None


def verify(
    material: SignatureMaterial | None, data: bytes, keys: Sequence[CatalogKey]
) -> SignatureStatus:
    """Check ``material`` over ``data`` with any of ``keys`` (none: only report what is there)."""
    if material is None:
        return SignatureStatus("none")
    if not material.found:
        return SignatureStatus("missing", material.where)
    if not keys:
        return SignatureStatus("unverified", material.where, material.stated_key_id)
    if material.kind == "blob":
        for key in keys:
            if _verify_raw(key, material.signature_b64, data):
                return SignatureStatus("verified", material.where, key.key_id, key.path)
        detail = "does not verify with " + ", ".join(map(str, keys))
        actual = "sha256:" + hashlib.sha256(data).hexdigest()
        if material.stated_digest and material.stated_digest != actual:
            # Tampering, or a new version published between the two requests.
            detail += (
                f" (the registry says it signs {material.stated_digest}; "
                f"the catalog fetched is {actual})"
            )
        return SignatureStatus("invalid", material.where, detail=detail)
    problem = _check_manifest(material, data)
    if problem is not None:
        return SignatureStatus("invalid", material.where, detail=problem)
    return cosign_verify(material, keys)


def cosign_verify(
    material: SignatureMaterial, keys: Sequence[CatalogKey], what: str = "catalog"
) -> SignatureStatus:
    """Whether one of ``material``'s cosign payloads, signed by one of ``keys``, names its
    manifest digest and repository (the caller checked what the manifest binds)."""
    if not material.found:
        return SignatureStatus("missing", material.where)
    wrong_subject = wrong_identity = ""
    for payload, signature in material.cosign:
        for key in keys:
            if not _verify_raw(key, signature, payload):
                continue
            try:
                critical = json.loads(payload)["critical"]
                signed = critical["image"]["docker-manifest-digest"]
            except (ValueError, KeyError, TypeError):
                wrong_subject = "a payload with no critical.image.docker-manifest-digest"
                continue
            if signed != material.manifest_digest:
                wrong_subject = signed
                continue
            identity = _docker_reference(critical)
            if material.reference and _repository(identity) != _repository(material.reference):
                wrong_identity = identity or "no critical.identity.docker-reference"
                continue
            return SignatureStatus("verified", material.where, key.key_id, key.path)
    if wrong_identity:
        detail = (
            f"the signature is for {wrong_identity}, not {material.reference} (another "
            f"repository's signed {what})"
        )
    elif wrong_subject:
        detail = f"the signature signs {wrong_subject}, not {material.manifest_digest}"
    else:
        detail = f"none of its {len(material.cosign)} signature(s) verifies with " + ", ".join(
            map(str, keys)
        )
    return SignatureStatus("invalid", material.where, detail=detail)


def _docker_reference(critical: Any) -> str:
    identity = critical.get("identity") if isinstance(critical, dict) else None
    value = identity.get("docker-reference") if isinstance(identity, dict) else None
    return value if isinstance(value, str) else ""


def _repository(reference: str) -> str:
    """The repository a docker-reference names, without its host (a registry's public name
    may differ from the one a client reaches it by) and without a tag or digest."""
    name = reference.split("@", 1)[0]
    host, slash, path = name.partition("/")
    if not slash:
        return ""
    if ":" in path.rsplit("/", 1)[-1]:
        path = path.rsplit(":", 1)[0]
    return path


def require(status: SignatureStatus, ref: str) -> None:
    """Refuse the catalog unless ``status`` is verified: one clear error naming it."""
    if status.status == "verified":
        return
    if status.status == "missing":
        reason = f"has no signature ({status.where} not found)"
    else:
        reason = f"has a bad signature: {status.detail} ({status.where})"
    raise CatalogSignatureError(
        f"catalog {ref} {reason}; a signing key applies to it, so it is not used and no "
        "function from it runs"
    )
