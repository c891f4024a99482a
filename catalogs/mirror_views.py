"""Serving mirrored runtime artifacts by digest: ``/c/blobs/sha256/<hex>``."""

from __future__ import annotations

from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponseNotModified
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_safe

from catalogs.models import RuntimeArtifact
from catalogs.views import IMMUTABLE_CACHE_CONTROL


@require_safe
def blob_by_digest(request: HttpRequest, hexdigest: str) -> HttpResponseBase:
    """A mirrored exec binary or starlark script; its URL names its bytes, so cache forever."""
    digest = f"sha256:{hexdigest}"
    artifact = RuntimeArtifact.objects.filter(digest=digest).first()
    if artifact is None or not default_storage.exists(artifact.storage_name):
        raise Http404("No such blob.")
    etag = f'"{digest}"'
    if request.META.get("HTTP_IF_NONE_MATCH") == etag:
        response: HttpResponseBase = HttpResponseNotModified()
    else:
        response = FileResponse(
            default_storage.open(artifact.storage_name, "rb"),
            content_type="application/octet-stream",
        )
        response["Content-Length"] = str(artifact.size)
    response["ETag"] = etag
    response["X-Content-Digest"] = digest
    response["Cache-Control"] = IMMUTABLE_CACHE_CONTROL
    return response
