"""Serving mirrored runtime artifacts by digest: ``/c/blobs/sha256/<hex>``, and at their TUF
target path below the catalog that serves them, ``/c/<publisher>/<catalog>/blobs/sha256/<hex>``."""

from __future__ import annotations

from django.core.files.storage import default_storage
from django.http import Http404, HttpRequest, HttpResponseNotModified
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_safe
from rest_framework.exceptions import AuthenticationFailed

from catalogs.mirroring.models import RuntimeArtifact
from catalogs.publishing import serving
from catalogs.publishing.views import (
    IMMUTABLE_CACHE_CONTROL,
    catalog_access_check,
    unauthorized,
)


@require_safe
def blob_by_digest(request: HttpRequest, hexdigest: str) -> HttpResponseBase:
    """A mirrored exec binary or starlark script; its URL names its bytes, so cache forever."""
    digest = f"sha256:{hexdigest}"
    return _serve(request, RuntimeArtifact.objects.filter(digest=digest).first(), digest)


@require_safe
def catalog_blob(
    request: HttpRequest, publisher: str, catalog: str, hexdigest: str
) -> HttpResponseBase:
    """A runtime artifact at its TUF target path: one a version of this catalog names, served
    only to who may see the catalog (the same 404 as a missing one to anyone else)."""
    try:
        private = catalog_access_check(request, publisher, catalog)
    except AuthenticationFailed as err:
        return unauthorized(err)
    digest = f"sha256:{hexdigest}"
    artifact = RuntimeArtifact.objects.filter(
        digest=digest,
        catalog_versions__catalog__publisher__slug=publisher,
        catalog_versions__catalog__name=catalog,
    ).first()
    response = _serve(request, artifact, digest)
    if private:
        response["Cache-Control"] = response["Cache-Control"].replace("public", "private")
        response["Vary"] = "Authorization, Cookie"
    return response


def _serve(request: HttpRequest, artifact: RuntimeArtifact | None, digest: str) -> HttpResponseBase:
    if artifact is None:
        raise Http404("No such blob.")
    etag = f'"{digest}"'
    if request.META.get("HTTP_IF_NONE_MATCH") == etag:
        if not default_storage.exists(artifact.storage_name):
            raise Http404("No such blob.")
        response: HttpResponseBase = HttpResponseNotModified()
    else:
        try:
            response = serving.serving_stored_file(
                storage_name=artifact.storage_name,
                size=artifact.size,
                content_type="application/octet-stream",
            )
        except FileNotFoundError:
            raise Http404("No such blob.")
    response["ETag"] = etag
    response["X-Content-Digest"] = digest
    response["Cache-Control"] = IMMUTABLE_CACHE_CONTROL
    return response
