"""A WSGI fast path for the one hot read of the OCI endpoint: a whole blob by digest.

A blob a process has served once is in its immutable cache (``catalogs.distribution.selectors``);
a plain anonymous ``GET``/``HEAD`` of it, for a host in ``ALLOWED_HOSTS``, is answered here,
before Django's request machinery, with the same headers the view and the security middleware
send. An anonymous bearer token of ``/v2/token`` granting pull on the repository counts as no
credentials (the Docker CLI and containers/image send one with every anonymous pull, as ``/v2/``
answers them with a 401 challenge). Anything else (ranges, conditionals, other credentials, an
unknown host, a cache miss, a private catalog) goes to Django unchanged.
``on_served(method, seconds)`` lets the caller count what the fast path answered.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from catalogs.distribution import selectors
from catalogs.distribution.auth import anonymous_token_grants_pull
from catalogs.publishing.serving import serving_access

_BLOB_PATH = re.compile(r"^/v2/([-\w.]+)/([-\w.]+)/blobs/(sha256:[a-f0-9]{64})$")
_SLOW_HEADERS = ("HTTP_RANGE", "HTTP_IF_NONE_MATCH")


def _security_headers() -> list[tuple[str, str]]:
    """What SecurityMiddleware and XFrameOptionsMiddleware add to such a response."""
    headers = []
    if settings.X_FRAME_OPTIONS:
        headers.append(("X-Frame-Options", settings.X_FRAME_OPTIONS.upper()))
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append(("X-Content-Type-Options", "nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        policy = settings.SECURE_REFERRER_POLICY
        if not isinstance(policy, str):
            policy = ",".join(policy)
        headers.append(("Referrer-Policy", policy))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append(("Cross-Origin-Opener-Policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY))
    return headers


def _private(publisher: str, catalog: str) -> bool:
    access = serving_access(publisher_slug=publisher, catalog_name=catalog)
    return access is None or access.private


class OciBlobFastPath:
    """Wraps the Django WSGI application; see the module docstring."""

    def __init__(
        self,
        application: Callable[..., Iterable[bytes]],
        *,
        on_served: Callable[[str, float], None] | None = None,
    ):
        self.application = application
        self.on_served = on_served
        self.security_headers = _security_headers()
        # HSTS and the HTTPS redirect depend on the request's scheme: leave those to Django.
        self.https_only = bool(settings.SECURE_SSL_REDIRECT or settings.SECURE_HSTS_SECONDS)

    def _host_allowed(self, environ: dict[str, Any]) -> bool:
        host = environ.get("HTTP_HOST") or environ.get("SERVER_NAME", "")
        domain, _port = split_domain_port(host)
        allowed = settings.ALLOWED_HOSTS
        if settings.DEBUG and not allowed:
            allowed = [".localhost", "127.0.0.1", "[::1]"]
        return bool(domain) and validate_host(domain, allowed)

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        started = time.perf_counter()
        method = environ.get("REQUEST_METHOD")
        if (
            method in ("GET", "HEAD")
            and not self.https_only
            and not any(h in environ for h in _SLOW_HEADERS)
        ):
            match = _BLOB_PATH.match(environ.get("PATH_INFO", ""))
            authorization = environ.get("HTTP_AUTHORIZATION")
            if (
                match is not None
                and authorization is not None
                and not anonymous_token_grants_pull(
                    authorization, f"{match.group(1)}/{match.group(2)}"
                )
            ):
                match = None  # credentials: Django checks them
            if match is not None and self._host_allowed(environ):
                content = selectors.oci_blob_cached(*match.groups())
                # A private catalog's blobs go through Django, which checks who asks.
                if content is not None and not _private(match.group(1), match.group(2)):
                    digest = match.group(3)
                    start_response(
                        "200 OK",
                        [
                            ("Content-Type", "application/octet-stream"),
                            ("Content-Length", str(len(content))),
                            ("Docker-Content-Digest", digest),
                            ("ETag", f'"{digest}"'),
                            ("Cache-Control", "public, max-age=31536000, immutable"),
                            ("Accept-Ranges", "bytes"),
                            ("Docker-Distribution-API-Version", "registry/2.0"),
                            *self.security_headers,
                        ],
                    )
                    if self.on_served is not None:
                        self.on_served(method, time.perf_counter() - started)
                    return [b""] if method == "HEAD" else [content]
        return self.application(environ, start_response)
