"""HTTPS fetcher: timeouts, a size limit, limited redirects re-checked, conditional requests."""

from __future__ import annotations

import hashlib
import ssl
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from catalogs.exceptions import DestinationRefusedError, FetchError
from catalogs.mirroring.fetchers.base import (
    COSIGN_BLOB_SIGNATURE_SUFFIX,
    SIGSTORE_BUNDLE_SUFFIX,
    Fetched,
    FetchOptions,
    Limits,
    check_destination,
    credential_for,
    register,
    resolve_checked,
)


class _PinnedBackend(httpcore.NetworkBackend):
    """Connects only to addresses it has just resolved and checked (no DNS-rebinding window).

    httpcore hands it the host name and then does TLS with that name as SNI and for certificate
    verification, so only the TCP destination is pinned.
    """

    def __init__(self, limits: Limits):
        self.limits = limits
        self.backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: object = None,
    ) -> httpcore.NetworkStream:
        addresses = resolve_checked(host, port, limits=self.limits, url=f"https://{host}:{port}/")
        error: Exception | None = None
        for address in addresses:
            try:
                return self.backend.connect_tcp(
                    address,
                    port,
                    timeout,
                    local_address,
                    socket_options,  # type: ignore[arg-type]
                )
            except httpcore.ConnectError as exc:
                error = exc
        assert error is not None
        raise error

    def connect_unix_socket(self, *args: object, **kwargs: object) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("Unix sockets are not used by mirror fetches")

    def sleep(self, seconds: float) -> None:
        self.backend.sleep(seconds)


class _PinnedTransport(httpx.HTTPTransport):
    """httpx's transport over a connection pool that uses ``_PinnedBackend``."""

    def __init__(self, *, limits: Limits, ssl_context: ssl.SSLContext, pool: httpx.Limits):
        super().__init__(verify=ssl_context, trust_env=False, limits=pool)
        # httpx has no public way to pass a network backend: swap in a pool built with one.
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=pool.max_connections,
            max_keepalive_connections=pool.max_keepalive_connections,
            keepalive_expiry=pool.keepalive_expiry,
            network_backend=_PinnedBackend(limits),
        )


def pinned_transport(*, limits: Limits) -> httpx.HTTPTransport:
    """An httpx transport that connects only to addresses ``limits`` allow, resolved once.

    For other apps' fetches with a policy of their own (trial runs): every connection, so every
    redirect hop, is checked at connect time; DestinationRefusedError says why one was refused.
    """
    context = ssl.create_default_context(cafile=limits.ca_bundle or None)
    pool = httpx.Limits(max_connections=4, max_keepalive_connections=4)
    return _PinnedTransport(limits=limits, ssl_context=context, pool=pool)


class HttpsSession:
    """One pooled HTTPS client for a sync: the catalog, its bundle and its runtime artifacts."""

    def __init__(self, *, limits: Limits):
        self.limits = limits
        if limits.ca_bundle:
            context = ssl.create_default_context(cafile=limits.ca_bundle)
        else:
            context = ssl.create_default_context()
        pool = httpx.Limits(max_connections=16, max_keepalive_connections=16)
        self.client = httpx.Client(
            transport=_PinnedTransport(limits=limits, ssl_context=context, pool=pool),
            timeout=httpx.Timeout(limits.timeout),
            follow_redirects=False,
            trust_env=False,
        )

    def __enter__(self) -> HttpsSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close pooled connections."""
        self.client.close()

    def get(
        self,
        url: str,
        *,
        sink: Callable[[bytes], object],
        max_bytes: int,
        headers: dict[str, str] | None = None,
        missing_ok: bool = False,
    ) -> tuple[int, str, httpx.Headers, str] | None:
        """Stream ``url`` into ``sink``; return (status, sha256 digest, headers, final URL).

        Follows at most ``limits.max_redirects`` redirects, checking each target first. Returns
        None for a 404 when ``missing_ok``; a 304 comes back with an empty digest.
        """
        limits = self.limits
        current = url
        for _hop in range(limits.max_redirects + 1):
            if urlsplit(current).scheme != "https":
                raise DestinationRefusedError(f"Only https:// is allowed, not {current}")
            check_destination(current, limits=limits)
            # Looked up per hop: a redirect to another host never carries this host's secret,
            # and a netrc entry goes to the host of the URL asked for only.
            credential = credential_for(current, limits=limits, netrc=same_host(current, url))
            sent = dict(headers or {})
            if credential is not None:
                sent["Authorization"] = credential.authorization()
            try:
                with self.client.stream("GET", current, headers=sent) as response:
                    if response.status_code == 304:
                        return 304, "", response.headers, current
                    if response.status_code in (301, 302, 303, 307, 308):
                        location = response.headers.get("location", "")
                        target = urljoin(current, location)
                        try:
                            if urlsplit(target).scheme != "https":
                                raise DestinationRefusedError(
                                    f"Only https:// is allowed, not {target}"
                                )
                            check_destination(target, limits=limits)
                        except DestinationRefusedError as exc:
                            raise DestinationRefusedError(
                                f"Redirect from {current} refused: {exc.message}"
                            ) from None
                        current = target
                        continue
                    if response.status_code == 404 and missing_ok:
                        return None
                    if response.status_code in (401, 403) and credential is None:
                        host = urlsplit(current).hostname
                        raise FetchError(
                            f"GET {current} answered HTTP {response.status_code}: add "
                            f"credentials for host '{host}' to MIRROR_CREDENTIALS"
                        )
                    if response.status_code != 200:
                        raise FetchError(f"GET {current} answered HTTP {response.status_code}")
                    return self._read(response, current, sink=sink, max_bytes=max_bytes)
            except httpx.TimeoutException:
                raise FetchError(
                    f"Timed out after {limits.timeout:g} s waiting for {current}"
                ) from None
            except httpx.TransportError as exc:
                raise FetchError(f"Cannot read {current}: {exc}") from None
        raise FetchError(f"More than {limits.max_redirects} redirects from {url}")

    def _read(
        self,
        response: httpx.Response,
        url: str,
        *,
        sink: Callable[[bytes], object],
        max_bytes: int,
    ) -> tuple[int, str, httpx.Headers, str]:
        declared = response.headers.get("content-length")
        expected = int(declared) if declared and declared.isdigit() else None
        if expected is not None and expected > max_bytes:
            raise FetchError(
                f"Body of {url} is {expected} bytes, over the size limit of {max_bytes} bytes"
            )
        hasher = hashlib.sha256()
        received = 0
        try:
            # Unbuffered: a chunk size would hold back the bytes read before a truncation.
            for chunk in response.iter_raw():
                received += len(chunk)
                if received > max_bytes:
                    raise FetchError(f"Body of {url} is over the size limit of {max_bytes} bytes")
                hasher.update(chunk)
                sink(chunk)
        except httpx.RemoteProtocolError:
            if expected is not None and received < expected:
                raise FetchError(
                    f"Truncated body from {url}: got {received} of {expected} bytes"
                ) from None
            raise
        if expected is not None and received != expected:
            raise FetchError(f"Truncated body from {url}: got {received} of {expected} bytes")
        return response.status_code, "sha256:" + hasher.hexdigest(), response.headers, url


def same_host(url: str, other: str) -> bool:
    """Whether two URLs name the same host and port."""
    a, b = urlsplit(url), urlsplit(other)
    return ((a.hostname or "").lower(), a.port) == ((b.hostname or "").lower(), b.port)


@register("https")
def fetch_https(ref: str, *, limits: Limits, options: FetchOptions | None = None) -> Fetched:
    """Fetch a catalog document over HTTPS (and its sigstore bundle when asked)."""
    options = options or FetchOptions()
    headers = {"Accept": "application/yaml, text/yaml, */*"}
    if options.etag:
        headers["If-None-Match"] = options.etag
    if options.last_modified:
        headers["If-Modified-Since"] = options.last_modified
    body = bytearray()
    with HttpsSession(limits=limits) as session:
        result = session.get(ref, sink=body.extend, max_bytes=limits.max_bytes, headers=headers)
        assert result is not None
        status, digest, response_headers, final_url = result
        provenance = {
            "url": ref,
            "final_url": final_url,
            "etag": response_headers.get("etag", ""),
            "last_modified": response_headers.get("last-modified", ""),
        }
        if status == 304:
            return Fetched(content=b"", digest="", provenance=provenance, not_modified=True)
        bundle = blob_signature = None
        if options.signatures:
            found = bytearray()
            got = session.get(
                ref + SIGSTORE_BUNDLE_SUFFIX,
                sink=found.extend,
                max_bytes=limits.max_bytes,
                missing_ok=True,
            )
            bundle = bytes(found) if got is not None else None
            found = bytearray()
            got = session.get(
                ref + COSIGN_BLOB_SIGNATURE_SUFFIX,
                sink=found.extend,
                max_bytes=64 * 1024,
                missing_ok=True,
            )
            blob_signature = bytes(found) if got is not None else None
    provenance["sha256"] = digest
    return Fetched(
        content=bytes(body),
        digest=digest,
        provenance=provenance,
        sigstore_bundle=bundle,
        blob_signature=blob_signature,
    )
