"""The fetcher interface: ``fetch(ref, *, limits) -> Fetched``, one fetcher per URL scheme."""

from __future__ import annotations

import base64
import ipaddress
import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from catalogs.exceptions import DestinationRefusedError, FetchError

# KEP-2906: the layer of an OCI artifact that holds the catalog document.
# Beside an HTTPS or Git catalog, e.g. ``catalog.yaml.sigstore.json``.
SIGSTORE_BUNDLE_SUFFIX = ".sigstore.json"
# ``cosign sign-blob --key``'s signature (base64 DER ECDSA-SHA256) beside a catalog file.
COSIGN_BLOB_SIGNATURE_SUFFIX = ".sig"


@dataclass(frozen=True)
class Credential:
    """What a mirror sends to one upstream host: a bearer token, or a user name and password.

    The secret fields are left out of ``repr`` so that no log line or error can show them.
    """

    username: str = field(default="", repr=False)
    password: str = field(default="", repr=False)
    token: str = field(default="", repr=False)

    def authorization(self) -> str:
        """The HTTP ``Authorization`` header value."""
        if self.token:
            return f"Bearer {self.token}"
        pair = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")


def credentials_parse(raw: Mapping[str, Any]) -> tuple[tuple[str, Credential], ...]:
    """MIRROR_CREDENTIALS (host or host:port -> token or user name and password), checked.

    Errors name the host, never a secret.
    """
    if not isinstance(raw, Mapping):
        raise FetchError(
            'MIRROR_CREDENTIALS must be a JSON object: {"host": {"token": "..."}} or '
            '{"host": {"username": "...", "password": "..."}}.'
        )
    parsed = []
    for host, entry in raw.items():
        keys = set(entry) if isinstance(entry, Mapping) else set()
        values_ok = keys and all(isinstance(entry[k], str) and entry[k] for k in keys)
        if not values_ok or keys not in ({"token"}, {"username", "password"}):
            raise FetchError(
                f'MIRROR_CREDENTIALS entry for host \'{host}\' must be {{"token": "..."}} or '
                '{"username": "...", "password": "..."} with non-empty strings.'
            )
        parsed.append((str(host).lower().rstrip("."), Credential(**entry)))
    return tuple(parsed)


def credential_for(url: str, *, limits: Limits, netrc: bool = True) -> Credential | None:
    """The credential configured for ``url``'s host:port, else for its host (MIRROR_CREDENTIALS),
    else, with ``netrc`` and an https ``url``, the host's entry of MIRROR_NETRC_FILE, else None.

    Callers pass ``netrc=False`` for a host the operator did not name as the source (a redirect's
    target): a netrc entry goes only to the host of the URL it was looked up for.
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").lower().rstrip(".")
    by_host = dict(limits.credentials)
    if parts.port is not None and f"{host}:{parts.port}" in by_host:
        return by_host[f"{host}:{parts.port}"]
    if host in by_host:
        return by_host[host]
    if netrc and limits.netrc_file and host and parts.scheme == "https":
        return netrc_credential(host, path=limits.netrc_file)
    return None


def netrc_credential(host: str, *, path: str) -> Credential | None:
    """``host``'s login and password in the netrc file ``path`` (krm's reader), or None."""
    from orchestrator.errors import KrmError
    from orchestrator.functions.fetch import netrc_credentials

    if not os.path.isfile(path):
        # Configured but missing: say so rather than fetch without credentials.
        raise FetchError(f"MIRROR_NETRC_FILE {path} does not exist or is not a file.")
    try:
        found = netrc_credentials(host, path=path)
    except KrmError as exc:
        raise FetchError(f"MIRROR_NETRC_FILE: {exc}") from None
    if found is None:
        return None
    return Credential(username=found[0], password=found[1])


# Query parameters that carry a secret: tokens and keys, and the signatures of pre-signed URLs
# (S3 X-Amz-*, Google X-Goog-*, Azure SAS sig, CloudFront Signature/Key-Pair-Id).
_SECRET_QUERY_NAMES = frozenset(
    {
        "access_token",
        "accesstoken",
        "api_key",
        "api-key",
        "apikey",
        "auth",
        "authorization",
        "awsaccesskeyid",
        "client_secret",
        "googleaccessid",
        "id_token",
        "jwt",
        "key",
        "key-pair-id",
        "oauth_token",
        "passwd",
        "password",
        "private_token",
        "private-token",
        "pwd",
        "refresh_token",
        "secret",
        "sig",
        "signature",
        "token",
        "x-amz-credential",
        "x-amz-security-token",
        "x-amz-signature",
        "x-goog-credential",
        "x-goog-signature",
    }
)
_SECRET_QUERY_WORDS = ("token", "secret", "password", "signature", "credential")


def url_secret_query_names(url: str) -> list[str]:
    """Names of the query parameters of ``url`` that look like a credential, as written."""
    try:
        query = urlsplit(url).query
    except ValueError:  # not a URL at all: the fetcher's own check says why
        return []
    found: list[str] = []
    for name, _ in parse_qsl(query, keep_blank_values=True):
        folded = name.strip().lower()
        secret = folded in _SECRET_QUERY_NAMES or any(w in folded for w in _SECRET_QUERY_WORDS)
        if secret and name not in found:
            found.append(name)
    return found


def url_has_credentials(url: str) -> bool:
    """Whether ``url`` carries a user name or password before its host (``user:token@host``)."""
    head, sep, rest = url.partition("://")
    if not sep:
        return False
    authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return "@" in authority


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
    credentials: tuple[tuple[str, Credential], ...] = ()
    # MIRROR_NETRC_FILE: credentials per host for https, git over https and OCI over TLS.
    netrc_file: str = ""


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
    # https and git: the ``.sig`` beside the file (``cosign sign-blob``), when there is one.
    blob_signature: bytes | None = None


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


def getaddrinfo(host: str, port: int) -> list[tuple[Any, ...]]:
    """Resolve ``host``: the one resolver every fetcher uses, for its checks and its connections.

    Tests replace this function to play a rebinding DNS server (nothing else can: the system's
    resolver cannot be pointed at a test server).
    """
    return socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)


def resolve_checked(host: str, port: int, *, limits: Limits, url: str = "") -> list[str]:
    """Resolve ``host`` once and check every address; return them, the only ones to connect to.

    Fetchers connect to these very addresses (TLS still verifies the host name), so a resolver
    that answers differently a moment later cannot send the connection elsewhere.
    """
    url = url or f"{host}:{port}"
    if not _host_allowed(host, limits.allowed_hosts):
        raise DestinationRefusedError(
            f"Host '{host}' is not allowed (MIRROR_ALLOWED_HOSTS): refusing {url}"
        )
    try:
        literal = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        literal = None
    if literal is not None:
        infos: list[tuple[Any, ...]] = [(None, None, None, "", (str(literal), port))]
    else:
        try:
            infos = getaddrinfo(host, port)
        except (socket.gaierror, UnicodeError) as exc:
            raise FetchError(f"Cannot resolve host '{host}' of {url}: {exc}") from None
    networks = [ipaddress.ip_network(n, strict=False) for n in limits.allowed_networks]
    addresses: list[str] = []
    for info in infos:
        ip = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if _special(ip) and not any(ip in net for net in networks):
            raise DestinationRefusedError(
                f"Address {ip} of host '{host}' is private, loopback or link-local; "
                f"refusing {url} (allow it with MIRROR_ALLOWED_NETWORKS)"
            )
        if str(ip) not in addresses:
            addresses.append(str(ip))
    if not addresses:
        raise FetchError(f"Cannot resolve host '{host}' of {url}: no address")
    return addresses


def default_port(url: str) -> int:
    """The port ``url`` connects to."""
    parts = urlsplit(url)
    if parts.port is not None:
        return parts.port
    return 80 if parts.scheme in ("http", "git+http") else 443


def check_destination(url: str, *, limits: Limits) -> list[str]:
    """Raise DestinationRefusedError unless ``url``'s host is allowed and resolves to allowed IPs.

    Every address the name resolves to is checked, so a name cannot smuggle in a private address
    next to a public one. Returns the checked addresses; connections use them, or resolve and
    check again at connect time (``resolve_checked``), so there is no window for rebinding.
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not host:
        raise DestinationRefusedError(f"URL '{url}' has no host.")
    return resolve_checked(host, default_port(url), limits=limits, url=url)


# --- The same checks when a source is created or changed (before anything is stored). ---

PRECHECK_TIMEOUT = 10.0


@dataclass(frozen=True)
class Precheck:
    """What a destination check at creation found: ``refused`` (a policy or certificate
    problem: the source must not be stored) or ``unreachable`` (not checked further: a host down
    now may be up at the first sync, which reports it)."""

    refused: str = ""
    unreachable: str = ""


def _precheck_target(url: str, *, limits: Limits) -> tuple[str, int, bool] | None:
    """(host, port, TLS?) that a sync of ``url`` connects to first; None for a local path."""
    if scheme_of(url) in ("path", "git+file"):
        return None
    if url.startswith("oci://"):
        host = url[len("oci://") :].partition("/")[0]
        parts = urlsplit(f"https://{host}/")
        plain = host in limits.oci_plain_http_hosts
        port = parts.port or (80 if plain else 443)
        return parts.hostname or "", port, not plain
    head = url.partition("://")[0].lower()
    parts = urlsplit(url)
    tls = head in ("https", "git+https")
    return parts.hostname or "", parts.port or (443 if tls else 80), tls


def destination_precheck(url: str, *, limits: Limits) -> Precheck:
    """The checks a sync's first connection makes, run at creation: the host against
    MIRROR_ALLOWED_HOSTS, each address it resolves to against the SSRF rules and
    MIRROR_ALLOWED_NETWORKS, and for TLS the certificate against the system's CAs or
    MIRROR_CA_BUNDLE (a TLS handshake, nothing sent). A local git path is checked against
    MIRROR_ALLOW_LOCAL_PATHS only."""
    import ssl

    if scheme_of(url) in ("path", "git+file"):
        if not limits.allow_local_paths:
            return Precheck(
                refused=f"Local git sources are refused: '{url}' (allow them with "
                "MIRROR_ALLOW_LOCAL_PATHS)."
            )
        return Precheck()
    target = _precheck_target(url, limits=limits)
    assert target is not None
    host, port, tls = target
    if not host:
        return Precheck(refused=f"URL '{url}' has no host.")
    try:
        addresses = resolve_checked(host, port, limits=limits, url=url)
    except DestinationRefusedError as exc:
        return Precheck(refused=exc.message)
    except FetchError as exc:
        return Precheck(unreachable=exc.message)
    timeout = min(float(limits.timeout), PRECHECK_TIMEOUT)
    error: OSError | None = None
    for address in addresses:
        try:
            sock = socket.create_connection((address, port), timeout=timeout)
        except OSError as exc:
            error = exc
            continue
        with sock:
            if not tls:
                return Precheck()
            context = ssl.create_default_context(cafile=limits.ca_bundle or None)
            try:
                with context.wrap_socket(sock, server_hostname=host.strip("[]")):
                    return Precheck()
            except ssl.SSLCertVerificationError as exc:
                where = "MIRROR_CA_BUNDLE" if limits.ca_bundle else "the system's CAs"
                return Precheck(
                    refused=f"The TLS certificate of {host}:{port} does not verify against "
                    f"{where}: {exc.verify_message}. Add the CA that issued it to "
                    "MIRROR_CA_BUNDLE (a PEM file) if the upstream is trusted."
                )
            except (ssl.SSLError, OSError) as exc:
                return Precheck(
                    refused=f"{host}:{port} does not complete a TLS handshake: {exc}. Check the "
                    "URL's scheme and port."
                )
    return Precheck(unreachable=f"Cannot connect to {host}:{port}: {error}")
