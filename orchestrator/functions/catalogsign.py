"""``krm catalog sign``: a publisher signs its own TUF role on a registry of this kind.

A publisher that registered a key of its own on the registry signs its delegated targets role
itself (the registry's key cannot): this fetches the role as the registry would have it now,
unsigned (``GET <registry>/api/v1/publishers/<p>/tuf/<p>.json``: the next version, every target
the registry serves for the publisher), shows what it lists, signs it with the local private key
(python-tuf's Metadata API) and uploads it (``PUT`` the same URL, with the API token from the
environment). The registry accepts it only when a key the publisher registered signed it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestrator.functions.fetch import FetchError, check_url, http_get, read_limited
from orchestrator.functions.options import FnOptions
from orchestrator.functions.tufclient import (
    MAX_METADATA_BYTES,
    PRIVATE_ROLE,
    TrustError,
    normalise_registry,
)

if TYPE_CHECKING:
    from securesystemslib.signer import CryptoSigner

_SLUG = re.compile(r"^[-\w]+$")


@dataclass(frozen=True)
class Signed:
    """What was uploaded: the role, its version and how many targets it lists."""

    role: str
    version: int
    targets: int


def _signer(key_file: str) -> CryptoSigner:
    # securesystemslib is loaded by tufclient (imported above) with the cloud SDKs held off.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519
    from securesystemslib.signer import CryptoSigner

    try:
        pem = read_limited(key_file, 64 * 1024)
    except FetchError as exc:
        raise TrustError(f"cannot read key {key_file}: {exc}") from None
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        raise TrustError(
            f"{key_file} is not an unencrypted PEM private key (ECDSA P-256 or ed25519)"
        ) from None
    if not isinstance(key, ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey):
        raise TrustError(f"{key_file} must be an ECDSA P-256 or ed25519 private key")
    return CryptoSigner(key)


def sign(registry: str, *, publisher: str, key_file: str, token: str, options: FnOptions) -> Signed:
    """Fetch ``publisher``'s role template from ``registry``, sign it, upload it; then its
    private catalogs' role (``<publisher>.private``) likewise, when it has one."""
    base = normalise_registry(registry)
    if not _SLUG.match(publisher):
        raise TrustError(f"{publisher!r} is not a publisher name")
    if not token:
        raise TrustError(
            "no API token: set KRM_REGISTRY_TOKEN (a token of an owner of the publisher)"
        )
    signer = _signer(key_file)
    signed = _sign_role(base, publisher, publisher, signer, token, options)
    if signed is None:
        url = f"{base}/api/v1/publishers/{publisher}/tuf/{publisher}.json"
        raise TrustError(f"registry {base} has no publisher {publisher} ({url}: HTTP 404)")
    # Its private catalogs' role too, when it has private catalogs (404 otherwise).
    private = _sign_role(base, publisher, publisher + PRIVATE_ROLE, signer, token, options)
    if private is not None:
        signed = Signed(signed.role, signed.version, signed.targets + private.targets)
    return signed


def _sign_role(
    base: str, publisher: str, role: str, signer: Any, token: str, options: FnOptions
) -> Signed | None:
    """Fetch role ``role``'s template, sign it and upload it; None when the registry has none."""
    import json

    import httpx
    from tuf.api.metadata import Metadata, Targets

    from orchestrator.functions.fetch import _ssl_context

    url = f"{base}/api/v1/publishers/{publisher}/tuf/{role}.json"
    resp = http_get(
        url,
        options=options,
        max_bytes=MAX_METADATA_BYTES,
        missing_ok=True,
        headers={"Authorization": f"Token {token}"},
    )
    if resp.status == 404 or resp.body is None:
        return None
    try:
        md = Metadata[Targets].from_dict(json.loads(resp.body))
        if not isinstance(md.signed, Targets):
            raise ValueError(f"a {md.signed.type} role, not targets")
    except (ValueError, KeyError, TypeError) as exc:
        raise TrustError(f"{url} is not TUF targets metadata: {exc}") from None
    md.signatures.clear()
    md.sign(signer)
    check_url(url)
    try:
        with httpx.Client(verify=_ssl_context(options), timeout=60.0, trust_env=False) as client:
            put = client.put(
                url,
                content=md.to_bytes(),
                headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
            )
    except httpx.HTTPError as exc:
        raise TrustError(f"uploading to {url}: {exc}") from None
    if put.status_code != 200:
        try:
            detail = str(put.json().get("detail") or put.text)
        except ValueError:
            detail = put.text[:500]
        raise TrustError(
            f"registry {base} refused the role signed with key {signer.public_key.keyid[:16]} "
            f"(HTTP {put.status_code}): {detail}"
        )
    return Signed(role, md.signed.version, len(md.signed.targets))


def main(
    registry: str, *, publisher: str, key_file: str, token_env: str, options: FnOptions
) -> str:
    """The text ``krm catalog sign`` prints."""
    signed = sign(
        registry,
        publisher=publisher,
        key_file=key_file,
        token=os.environ.get(token_env, ""),
        options=options,
    )
    return (
        f"Signed role {signed.role} version {signed.version} ({signed.targets} targets) and "
        f"uploaded it to {normalise_registry(registry)}\n"
    )
