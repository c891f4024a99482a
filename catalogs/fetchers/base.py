"""The fetcher interface: ``fetch(ref, *, limits) -> Fetched``, one fetcher per URL scheme."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from catalogs.exceptions import DestinationRefusedError, FetchError

# KEP-2906: the layer of an OCI artifact that holds the catalog document.
CATALOG_LAYER_MEDIA_TYPE = "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"
# Beside an HTTPS or Git catalog, e.g. ``catalog.yaml.sigstore.json``.
SIGSTORE_BUNDLE_SUFFIX = ".sigstore.json"


@dataclass(frozen=True)
class Limits:
    """What a fetch may do: sizes, time, redirects and which destinations it may contact."""

    max_bytes: int
    timeout: float
    max_redirects: int = 5
    allowed_hosts: tuple[str, ...] = ("*",)
    allowed_networks: tuple[str, ...] = ()
    allow_local_paths: bool = False
    ca_bundle: str = ""
    oci_plain_http_hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class FetchOptions:
    """Per-request extras: validators from the last fetch, and whether to fetch signatures."""

    etag: str = ""
    last_modified: str = ""
    signatures: bool = False


@dataclass(frozen=True)
class CosignSignature:
    """A cosign simple-signing signature: the payload bytes and the base64 signature over them."""

    payload: bytes
    signature_b64: str


@dataclass(frozen=True)
class Fetched:
    """What a fetch got: the bytes, the digest a pin is compared to, and where they came from.

    ``digest`` is ``sha256:<hex>`` of the document (https), the manifest digest (oci) or the
    commit id (git). ``not_modified`` means a conditional request found nothing new.
    """

    content: bytes
    digest: str
    provenance: dict[str, Any] = field(default_factory=dict)
    not_modified: bool = False
    sigstore_bundle: bytes | None = None
    cosign_signatures: tuple[CosignSignature, ...] = ()


class Fetcher(Protocol):
    """A function that reads one kind of reference."""

    def __call__(
        self, ref: str, *, limits: Limits, options: FetchOptions | None = None
    ) -> Fetched: ...


_FETCHERS: dict[str, Fetcher] = {}


def register(*schemes: str) -> Callable[[Fetcher], Fetcher]:
    """Class decorator-style registration of a fetcher for URL ``schemes``."""

    def add(fetcher: Fetcher) -> Fetcher:
        for scheme in schemes:
            _FETCHERS[scheme] = fetcher
        return fetcher

    return add


def scheme_of(ref: str) -> str:
    """The registry key of ``ref``: its URL scheme, or ``path`` for a local path."""
    if ref.startswith(("/", "./", "../")):
        return "path"
    head, sep, _ = ref.partition("://")
    if not sep:
        raise FetchError(
            f"Unsupported source URL '{ref}': use https://, git+https://, oci:// or a local "
            "git path."
        )
    return head.lower()


def fetcher_for(ref: str) -> Fetcher:
    """The fetcher registered for the scheme of ``ref``, or FetchError."""
    scheme = scheme_of(ref)
    fetcher = _FETCHERS.get(scheme)
    if fetcher is None:
        raise FetchError(
            f"Unsupported source URL scheme '{scheme}' in '{ref}': use one of "
            f"{', '.join(sorted(s for s in _FETCHERS if s != 'path'))} or a local git path."
        )
    return fetcher


def fetch(ref: str, *, limits: Limits, options: FetchOptions | None = None) -> Fetched:
    """Fetch ``ref`` with the fetcher registered for its scheme."""
    return fetcher_for(ref)(ref, limits=limits, options=options)


# --- Destination checks, shared by every fetcher and re-run on every redirect. ---


def _host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    host = host.lower().rstrip(".")
    for pattern in allowed:
        pattern = pattern.lower()
        if pattern == "*" or pattern == host:
            return True
        if pattern.startswith("*.") and host.endswith(pattern[1:]):
            return True
    return False


def _special(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Private, loopback, link-local and other non-public addresses."""
    return (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_multicast
        or ip.is_unspecified
    )


def check_destination(url: str, *, limits: Limits) -> None:
    """Raise DestinationRefusedError unless ``url``'s host is allowed and resolves to allowed IPs.

    Every address the name resolves to is checked, so a name cannot smuggle in a private address
    next to a public one. (The connection resolves again; a rebinding resolver could still race.)
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not host:
        raise DestinationRefusedError(f"URL '{url}' has no host.")
    if not _host_allowed(host, limits.allowed_hosts):
        raise DestinationRefusedError(
            f"Host '{host}' is not allowed (MIRROR_ALLOWED_HOSTS): refusing {url}"
        )
    try:
        infos = socket.getaddrinfo(host, parts.port or 443, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchError(f"Cannot resolve host '{host}' of {url}: {exc}") from None
    networks = [ipaddress.ip_network(n, strict=False) for n in limits.allowed_networks]
    for info in infos:
        ip = ipaddress.ip_address(info[4][0].split("%")[0])
        if _special(ip) and not any(ip in net for net in networks):
            raise DestinationRefusedError(
                f"Address {ip} of host '{host}' is private, loopback or link-local; "
                f"refusing {url} (allow it with MIRROR_ALLOWED_NETWORKS)"
            )
