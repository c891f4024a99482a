"""Request body limit: one bound, twice CATALOG_MAX_BYTES, for every body the registry reads.

Django's own DATA_UPLOAD_MAX_MEMORY_SIZE answers a bare HTML 400 and ignores chunked bodies
(``Transfer-Encoding: chunked`` has no Content-Length, so Django reads them as empty). Here a
body over the limit is refused before any view reads it, with a JSON problem response that
names the limit; a chunked body is read (at most the limit) and handed on with its length, when
the server decodes chunked input for the application (gunicorn), and refused with 411 when it
does not (Django's runserver).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, JsonResponse

from catalogs.api.handlers import database_busy_body, database_is_busy
from catalogs.api.parsers import request_max_bytes
from catalogs.exceptions import StorageError

logger = logging.getLogger(__name__)

_CHUNK = 64 * 1024


def body_too_large_response(*, limit: int, size: int | None) -> JsonResponse:
    """413 with a problem that names the limit (and the size, when known)."""
    what = f"The request body is {size} bytes," if size is not None else "The request body is"
    return JsonResponse(
        {"detail": f"{what} over the limit of {limit} bytes.", "limit": limit}, status=413
    )


class RequestBodyLimitMiddleware:
    """Refuse request bodies over ``request_max_bytes()``; read chunked bodies up to it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = request_max_bytes()
        if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            refused = self._read_chunked(request, limit)
            if refused is not None:
                return refused
        elif not (request.content_type or "").startswith("multipart/"):
            # Multipart uploads stream their files to disk, checked by the forms against
            # CATALOG_MAX_BYTES; their other fields stay under DATA_UPLOAD_MAX_MEMORY_SIZE.
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return JsonResponse(
                    {"detail": "The Content-Length header is not a number."}, status=400
                )
            if length > limit:
                return body_too_large_response(limit=limit, size=length)
        return self.get_response(request)

    @staticmethod
    def _read_chunked(request: HttpRequest, limit: int) -> HttpResponse | None:
        """Buffer a chunked body of at most ``limit`` bytes, or the response refusing it."""
        environ = getattr(request, "environ", {})
        if not environ.get("wsgi.input_terminated"):
            return JsonResponse(
                {
                    "detail": "This server cannot read a chunked request body: "
                    "send it with a Content-Length header."
                },
                status=411,
            )
        raw = environ["wsgi.input"]
        body = raw.read(limit + 1)
        if len(body) > limit:
            size = len(body)
            # Count (not keep) the rest up to a bound, so the client sees the answer.
            while size <= 4 * limit and (chunk := raw.read(_CHUNK)):
                size += len(chunk)
            return body_too_large_response(limit=limit, size=size if size <= 4 * limit else None)
        request.META["CONTENT_LENGTH"] = str(len(body))
        # The stream WSGIRequest itself reads through; the stubs type _stream as a BinaryIO.
        request._stream = LimitedStream(io.BytesIO(body), len(body))  # type: ignore[assignment]
        return None


class UnavailableMiddleware:
    """Answer 503, never 500, when a page or a served file cannot be had for now: the write lock
    is held (with Retry-After), or the object store cannot give bytes a row records (logged for
    the operator: a missing object is lost data, not a passing fault).

    The API maps the same errors in catalogs.api.handlers; this covers the web pages, the catalog
    URLs and the OCI endpoint.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        retry_after: int | None = None
        if database_is_busy(exception):
            body = database_busy_body()
            retry_after = settings.DATABASE_BUSY_RETRY_AFTER
        elif isinstance(exception, StorageError):
            logger.error("object store: %s (%s %s)", exception, request.method, request.path)
            body = {"detail": f"Stored content is unavailable: {exception}"}
        else:
            return None
        response: HttpResponse = JsonResponse(body, status=503)
        if "text/html" in request.headers.get("Accept", ""):
            response = HttpResponse(body["detail"], status=503, content_type="text/plain")
        if retry_after is not None:
            response["Retry-After"] = str(retry_after)
        return response
