"""The one place where domain errors become HTTP responses."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from catalogs.exceptions import (
    AlreadyExistsError,
    InvalidCatalogError,
    InvalidInputError,
    MirrorCatalogReadOnlyError,
    NotAllowedError,
    NotFoundError,
    QuotaExceededError,
    RegistryError,
    StateConflictError,
    StorageError,
)

_STATUS = {
    InvalidCatalogError: status.HTTP_400_BAD_REQUEST,
    InvalidInputError: status.HTTP_400_BAD_REQUEST,
    NotAllowedError: status.HTTP_403_FORBIDDEN,
    NotFoundError: status.HTTP_404_NOT_FOUND,
    AlreadyExistsError: status.HTTP_409_CONFLICT,
    QuotaExceededError: status.HTTP_429_TOO_MANY_REQUESTS,
    MirrorCatalogReadOnlyError: status.HTTP_409_CONFLICT,
    StateConflictError: status.HTTP_409_CONFLICT,
    # The object store refused a write: nothing was recorded; retrying may succeed.
    StorageError: status.HTTP_503_SERVICE_UNAVAILABLE,
}


def database_is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's "database is locked" (the write lock stayed taken too long)."""
    return isinstance(exc, OperationalError) and "database is locked" in str(exc)


def database_busy_body() -> dict[str, Any]:
    """The problem of a request refused because the database is busy."""
    return {
        "detail": "The registry is busy (another write holds the database); nothing was "
        "changed. Retry in a few seconds."
    }


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Map RegistryError subclasses to their status; leave everything else to DRF."""
    if database_is_busy(exc):
        retry = str(settings.DATABASE_BUSY_RETRY_AFTER)
        return Response(database_busy_body(), status=503, headers={"Retry-After": retry})
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body: dict[str, Any] = {
            "detail": f"The request body is over the limit of {limit} bytes.",
            "limit": limit,
        }
        return Response(body, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, RegistryError):
        body = {"detail": exc.message}
        if isinstance(exc, InvalidCatalogError):
            body["problems"] = [p.as_dict() for p in exc.problems]
        code = next(
            (code for cls, code in _STATUS.items() if isinstance(exc, cls)),
            status.HTTP_400_BAD_REQUEST,
        )
        return Response(body, status=code)
    return drf_exception_handler(exc, context)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler404``: under /api/ a JSON problem (the schema's), elsewhere Django's page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)
