"""Where trial runs may fetch from: ``TRIAL_ALLOWED_NETWORKS``, whoever submitted the function.

Any owner of a publisher triggers trials, so their fetches get a policy of their own, independent
of the operators' mirror settings: public addresses only, unless the operator lists networks in
``TRIAL_ALLOWED_NETWORKS``. It is checked twice:

- when a contribution is submitted (``trial_urls_check``): a URL whose host resolves to an address
  the policy refuses is a 400 naming the URL, and nothing is fetched;
- at every connection a trial makes (``trial_http_transport``), redirects included: the address
  is resolved once, checked and connected to (no DNS-rebinding window), by mirroring's pinned
  connection backend.

Every way a trial fetch can fail on the network (refused address, closed port, timeout, an HTTP
error) reads the same, so that trial runs cannot tell closed, open and HTTP ports apart.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from catalogs.exceptions import DestinationRefusedError, FetchError, InvalidInputError
from catalogs.mirroring.fetchers.base import Limits, default_port, resolve_checked
from catalogs.mirroring.fetchers.https import pinned_transport

UNREACHABLE = (
    "refused, unreachable or not found (trial runs fetch only from public addresses, "
    "TRIAL_ALLOWED_NETWORKS)"
)
# A fetch may end with these; anything else (a redirect aside) reads as UNREACHABLE.
_ANSWERS = frozenset({200, 304, 301, 302, 303, 307, 308})


def trial_limits() -> Limits:
    """The destinations trial fetches may connect to."""
    return Limits(
        max_bytes=0,  # sizes are the engine's (FnOptions.max_download, the example limit)
        timeout=30.0,
        allowed_networks=tuple(settings.TRIAL_ALLOWED_NETWORKS),
    )


def trial_fetch_urls(*, runtime: dict[str, Any], examples: list[str]) -> list[str]:
    """The http(s) URLs a trial of this function version may read: runtimes and examples."""
    urls: list[str] = []
    star = runtime.get("starlark")
    if star is not None:
        urls.append(star if isinstance(star, str) else str((star or {}).get("uri") or ""))
    for platform in (runtime.get("exec") or {}).get("platforms") or []:
        if isinstance(platform, dict):
            urls.append(str(platform.get("uri") or ""))
    urls += [e for e in examples if isinstance(e, str)]
    return [u for u in urls if urlsplit(u).scheme in ("http", "https")]


def trial_urls_check(*, runtime: dict[str, Any], examples: list[str]) -> None:
    """InvalidInputError naming the first URL whose host resolves to a refused address.

    A host that does not resolve now is left to the trial (which reports it as unreachable).
    """
    limits = trial_limits()
    for url in trial_fetch_urls(runtime=runtime, examples=examples):
        try:
            host = urlsplit(url).hostname or ""
            resolve_checked(host, default_port(url), limits=limits, url=url)
        except DestinationRefusedError:
            raise InvalidInputError(
                f"Trial runs may not fetch {url}: it is not a public address "
                "(TRIAL_ALLOWED_NETWORKS); nothing was fetched."
            ) from None
        except (FetchError, ValueError):
            continue


class _UniformTransport(httpx.BaseTransport):
    """Connects through the pinned policy; every network failure becomes the same error."""

    def __init__(self, inner: httpx.BaseTransport):
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = self.inner.handle_request(request)
        except Exception:  # noqa: BLE001 - refused, reset, timed out: all read the same
            raise httpx.ConnectError(UNREACHABLE, request=request) from None
        if response.status_code not in _ANSWERS:
            response.close()
            raise httpx.ConnectError(UNREACHABLE, request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def trial_http_transport() -> httpx.BaseTransport:
    """The transport of every trial download (``FnOptions.http_transport``)."""
    return _UniformTransport(pinned_transport(limits=trial_limits()))
