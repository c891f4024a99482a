"""A WSGI fast path for the one hot read of the OCI endpoint: a whole blob by digest.

A blob a process has served once is in its immutable cache (``catalogs.oci.selectors``); a plain
anonymous ``GET``/``HEAD`` of it is answered here, before Django's request machinery, with the
same headers the view sends. Anything else (ranges, conditionals, credentials, a cache miss)
goes to Django unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from catalogs.oci import selectors

_BLOB_PATH = re.compile(r"^/v2/([-\w.]+)/([-\w.]+)/blobs/(sha256:[a-f0-9]{64})$")
_SLOW_HEADERS = ("HTTP_AUTHORIZATION", "HTTP_RANGE", "HTTP_IF_NONE_MATCH")


class OciBlobFastPath:
    """Wraps the Django WSGI application; see the module docstring."""

    def __init__(self, application: Callable[..., Iterable[bytes]]):
        self.application = application

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD")
        if method in ("GET", "HEAD") and not any(h in environ for h in _SLOW_HEADERS):
            match = _BLOB_PATH.match(environ.get("PATH_INFO", ""))
            if match is not None:
                content = selectors.oci_blob_cached(*match.groups())
                if content is not None:
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
                            ("X-Content-Type-Options", "nosniff"),
                        ],
                    )
                    return [b""] if method == "HEAD" else [content]
        return self.application(environ, start_response)
