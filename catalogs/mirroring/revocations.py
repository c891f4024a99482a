"""Mirrors carry their upstream's revocations: the list of an upstream that is a registry of this
kind is fetched after each good sync, verified with the source's key, and appended to the mirror
catalog's own list (``catalogs.trust.revocations``)."""

from __future__ import annotations

import re
from typing import Any

import yaml
from django.conf import settings

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


def revocation_list_mirror(*, source: Any) -> dict[str, Any]:
    """Fetch the upstream list of a mirror source and append what is new to its catalog.

    With the source's cosign key, the list's ``.sig`` must verify with it, else nothing is
    carried. Returns what happened, for the sync run's provenance; never raises for the
    upstream's faults (the catalog sync itself already succeeded).
    """
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
        return {"status": "not a registry of this kind"}
    limits = mirror_limits(max_bytes=MAX_MIRRORED_LIST_BYTES)
    try:
        content = _get_limited(url, limits)
        if content is None:
            return {"url": url, "status": "none upstream"}
        if source.cosign_public_key:
            key = cosign_public_key_load(source.cosign_public_key)
            signature = _get_limited(url + ".sig", limits)
            if signature is None:
                return {"url": url, "status": "refused: no signature"}
            try:
                key.verify(base64.b64decode(signature), content, ec.ECDSA(hashes.SHA256()))
            except (InvalidSignature, ValueError):
                return {"url": url, "status": "refused: bad signature"}
        doc = yaml.safe_load(content)
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            return {"url": url, "status": f"refused: not a {KIND}"}
        added = revocation_list_import(
            catalog=source.catalog, entries=list(doc.get("revocations") or [])
        )
    except (RegistryError, yaml.YAMLError, httpx.HTTPError, ValueError) as exc:
        return {"url": url, "status": f"failed: {exc}"}
    sequence = doc.get("sequence")
    return {"url": url, "status": "carried", "added": added, "upstream_sequence": sequence}
