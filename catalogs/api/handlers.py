"""The one place where domain errors become HTTP responses."""

from __future__ import annotations

from typing import Any

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
    RegistryError,
)

_STATUS = {
    InvalidCatalogError: status.HTTP_400_BAD_REQUEST,
    InvalidInputError: status.HTTP_400_BAD_REQUEST,
    NotAllowedError: status.HTTP_403_FORBIDDEN,
    NotFoundError: status.HTTP_404_NOT_FOUND,
    AlreadyExistsError: status.HTTP_409_CONFLICT,
    MirrorCatalogReadOnlyError: status.HTTP_409_CONFLICT,
}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Map RegistryError subclasses to their status; leave everything else to DRF."""
    if isinstance(exc, RegistryError):
        body: dict[str, Any] = {"detail": exc.message}
        if isinstance(exc, InvalidCatalogError):
            body["problems"] = [p.as_dict() for p in exc.problems]
        code = next(
            (code for cls, code in _STATUS.items() if isinstance(exc, cls)),
            status.HTTP_400_BAD_REQUEST,
        )
        return Response(body, status=code)
    return drf_exception_handler(exc, context)
