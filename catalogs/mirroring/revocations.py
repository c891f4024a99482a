"""Mirrors carry their upstream's revocations: the list of an upstream that is a registry of this
kind is fetched and verified with the catalog (through the upstream's TUF metadata, see
``upstream_trust``, else with the source's cosign key), and appended to the mirror catalog's own
list (``catalogs.trust.revocations``) in the same transaction that publishes the version, so a
list that cannot be carried fails the run and publishes nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from django.conf import settings

from catalogs.exceptions import SyncError
from catalogs.mirroring.limits import mirror_limits
from catalogs.trust.revocations import KIND, revocation_list_import, revocations_url_for

MAX_MIRRORED_LIST_BYTES = 1024 * 1024


def upstream_revocations_url(source_url: str, *, plain_http_hosts: tuple[str, ...]) -> str | None:
    """The list of an upstream that is a registry of this kind: ``https://…/c/<p>/<c>/…`` or
    ``oci://host/<p>/<c>[:tag|@digest]`` (http only for MIRROR_OCI_PLAIN_HTTP_HOSTS)."""
    if source_url.startswith("https://"):
        return revocations_url_for(source_url)
    if not source_url.startswith("oci://"):
        return None
    host, _, path = source_url[len("oci://") :].partition("/")
    parts = re.split(r"[:@]", path, maxsplit=1)[0].split("/")
    if len(parts) != 2 or not all(re.fullmatch(r"[-\w]+", p) for p in parts):
        return None
    scheme = "http" if host in plain_http_hosts else "https"
    return f"{scheme}://{host}/c/{parts[0]}/{parts[1]}/revocations.yaml"


def _get_limited(url: str, limits: Any) -> bytes | None:
    """GET ``url`` within the mirror limits; None on 404. https goes through the pinned session."""
    import httpx

    from catalogs.exceptions import FetchError
    from catalogs.mirroring.fetchers.base import check_destination
    from catalogs.mirroring.fetchers.https import HttpsSession

    if url.startswith("https://"):
        body = bytearray()
        with HttpsSession(limits=limits) as session:
            got = session.get(url, sink=body.extend, max_bytes=limits.max_bytes, missing_ok=True)
        return None if got is None else bytes(body)
    check_destination(url, limits=limits)  # plain http: an operator-allowed loopback OCI host
    resp = httpx.get(url, timeout=limits.timeout, follow_redirects=False, trust_env=False)
    if resp.status_code == 404:
        return None
    if resp.status_code != 200:
        raise FetchError(f"{url}: HTTP {resp.status_code}")
    if len(resp.content) > limits.max_bytes:
        raise FetchError(f"{url}: over the limit of {limits.max_bytes} bytes")
    return resp.content


class RevocationCarryError(SyncError):
    """The upstream's revocation list could not be fetched, verified or read: the run fails
    and publishes nothing (``outcome`` goes in the run's provenance)."""

    def __init__(self, outcome: dict[str, Any]):
        self.outcome = outcome
        super().__init__(
            f"The upstream revocation list {outcome.get('url', '?')} was not carried "
            f"({outcome['status']}): nothing was published, and the mirror keeps serving its "
            "previous version (a mirror without an upstream revocation would run what "
            "upstream revoked)."
        )


@dataclass
class UpstreamList:
    """An upstream revocation list, verified, to carry in the sync's commit."""

    outcome: dict[str, Any]  # for the run's provenance
    entries: list[dict[str, Any]] | None = None  # None: nothing upstream to carry


def upstream_list_parse(*, content: bytes, url: str, how: str) -> UpstreamList:
    """A verified list's entries; RevocationCarryError when it is not a RevocationList."""
    try:
        doc = yaml.safe_load(content)
    except yaml.YAMLError as exc:
        raise RevocationCarryError({"url": url, "status": f"failed: not YAML: {exc}"}) from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise RevocationCarryError({"url": url, "status": f"refused: not a {KIND}"})
    entries = doc.get("revocations") or []
    if not isinstance(entries, list):
        raise RevocationCarryError({"url": url, "status": "refused: revocations is not a list"})
    outcome = {"url": url, "verified": how, "upstream_sequence": doc.get("sequence")}
    return UpstreamList(outcome=outcome, entries=entries)


def upstream_list_fetch(*, source: Any) -> UpstreamList:
    """The list of an upstream of this kind without TUF metadata, verified with the source's
    cosign key when it has one (its ``.sig``); RevocationCarryError when it cannot be read or
    does not verify. Nothing is written."""
    import base64

    import httpx
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    from catalogs.exceptions import RegistryError
    from catalogs.mirroring.signatures import cosign_public_key_load

    url = upstream_revocations_url(
        source.url, plain_http_hosts=tuple(settings.MIRROR_OCI_PLAIN_HTTP_HOSTS)
    )
    if url is None:
        return UpstreamList(outcome={"status": "not a registry of this kind"})
    limits = mirror_limits(max_bytes=MAX_MIRRORED_LIST_BYTES)
    try:
        content = _get_limited(url, limits)
        if content is None:
            return UpstreamList(outcome={"url": url, "status": "none upstream"})
        how = "none"
        if source.cosign_public_key:
            key = cosign_public_key_load(source.cosign_public_key)
            signature = _get_limited(url + ".sig", limits)
            if signature is None:
                raise RevocationCarryError({"url": url, "status": "refused: no signature"})
            try:
                key.verify(base64.b64decode(signature), content, ec.ECDSA(hashes.SHA256()))
            except (InvalidSignature, ValueError):
                raise RevocationCarryError(
                    {"url": url, "status": "refused: bad signature"}
                ) from None
            how = "cosign"
    except RevocationCarryError:
        raise
    except (RegistryError, httpx.HTTPError, ValueError) as exc:
        raise RevocationCarryError({"url": url, "status": f"failed: {exc}"}) from None
    return upstream_list_parse(content=content, url=url, how=how)


def upstream_list_carry(*, source: Any, upstream: UpstreamList) -> dict[str, Any]:
    """Append what is new in ``upstream`` to the mirror catalog's list, in the caller's
    transaction (the sync's commit); the outcome for the run's provenance."""
    if upstream.entries is None:
        return upstream.outcome
    added = revocation_list_import(catalog=source.catalog, entries=upstream.entries)
    return {**upstream.outcome, "status": "carried", "added": added}
