"""OCI distribution errors: each carries its spec error code and HTTP status.

They are RegistryErrors, so services raise them like any other domain error;
``catalogs.distribution.views``
renders them as ``{"errors": [{"code", "message", "detail"}]}``.
"""

from __future__ import annotations

from typing import Any

from catalogs.exceptions import RegistryError


class OciError(RegistryError):
    """A request the OCI endpoint refuses; ``code`` and ``status`` as the spec lists them."""

    code = "UNSUPPORTED"
    status = 400

    def __init__(self, message: str, *, detail: Any = None):
        super().__init__(message)
        self.detail = detail


class NameInvalidError(OciError):
    code, status = "NAME_INVALID", 400


class NameUnknownError(OciError):
    code, status = "NAME_UNKNOWN", 404


class ManifestUnknownError(OciError):
    code, status = "MANIFEST_UNKNOWN", 404


class ManifestInvalidError(OciError):
    code, status = "MANIFEST_INVALID", 400


class ManifestBlobUnknownError(OciError):
    code, status = "MANIFEST_BLOB_UNKNOWN", 400


class ManifestTooLargeError(OciError):
    code, status = "SIZE_INVALID", 413


class BlobUnknownError(OciError):
    code, status = "BLOB_UNKNOWN", 404


class BlobUploadUnknownError(OciError):
    code, status = "BLOB_UPLOAD_UNKNOWN", 404


class BlobUploadInvalidError(OciError):
    code, status = "BLOB_UPLOAD_INVALID", 400


class RangeInvalidError(OciError):
    """A chunk that does not start where the upload ends (416, as the spec requires)."""

    code, status = "BLOB_UPLOAD_INVALID", 416


class BlobTooLargeError(OciError):
    code, status = "SIZE_INVALID", 413


class SizeInvalidError(OciError):
    code, status = "SIZE_INVALID", 400


class DigestInvalidError(OciError):
    code, status = "DIGEST_INVALID", 400


class TagInvalidError(OciError):
    """A malformed tag; the spec has no code of its own for it, distribution answers this one."""

    code, status = "MANIFEST_INVALID", 400


class UnauthorizedError(OciError):
    code, status = "UNAUTHORIZED", 401


class DeniedError(OciError):
    code, status = "DENIED", 403


class UnavailableError(OciError):
    """The object store refused or lost bytes (as Docker's distribution registry names it)."""

    code, status = "UNAVAILABLE", 503


class TooManyRequestsError(OciError):
    """A quota is used up (distribution's TOOMANYREQUESTS): the message names the setting."""

    code, status = "TOOMANYREQUESTS", 429


class UnsupportedError(OciError):
    code, status = "UNSUPPORTED", 405
