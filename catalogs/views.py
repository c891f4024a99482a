"""Serving catalog versions as YAML: the URLs users pass to ``krm build --trusted-catalog``.

Kept minimal on purpose (no DRF, no templates): one indexed query for the digest, the bytes from
an in-process cache of immutable content.
"""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.views.decorators.http import require_safe

from catalogs import selectors, services, signing
from catalogs.models import CatalogVersion

IMMUTABLE_CACHE_CONTROL = "public, max-age=31536000, immutable"


def _etag_matches(if_none_match: str, etag: str) -> bool:
    """Whether an If-None-Match header value matches ``etag`` (weak comparison, RFC 9110)."""
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*":
            return True
        if candidate.startswith("W/"):
            candidate = candidate[2:]
        if candidate == etag:
            return True
    return False


def _serve(request: HttpRequest, digest: str | None, cache_control: str) -> HttpResponse:
    """Answer with the bytes named by ``digest`` (or 304), with digest, ETag and caching headers."""
    if digest is None:
        raise Http404("No such catalog version.")
    etag = f'"{digest}"'
    if_none_match = request.META.get("HTTP_IF_NONE_MATCH")
    if if_none_match and _etag_matches(if_none_match, etag):
        response: HttpResponse = HttpResponseNotModified()
    else:
        content = selectors.catalog_version_content(digest=digest)
        if content is None:
            raise Http404("No such catalog version.")
        response = HttpResponse(content, content_type="application/yaml")
    response["ETag"] = etag
    response["X-Content-Digest"] = digest
    response["Cache-Control"] = cache_control
    return response


@require_safe
def catalog_latest(request: HttpRequest, publisher: str, catalog: str) -> HttpResponse:
    """The latest published version of a catalog."""
    digest = selectors.catalog_serving_latest_digest(publisher_slug=publisher, catalog_name=catalog)
    max_age = settings.CATALOG_LATEST_MAX_AGE
    return _serve(request, digest, f"public, max-age={max_age}")


@require_safe
def catalog_version_by_number(
    request: HttpRequest, publisher: str, catalog: str, number: int
) -> HttpResponse:
    """A version pinned by number; cacheable forever."""
    digest = selectors.catalog_serving_digest_by_number(
        publisher_slug=publisher, catalog_name=catalog, number=number
    )
    return _serve(request, digest, IMMUTABLE_CACHE_CONTROL)


@require_safe
def catalog_version_by_digest(
    request: HttpRequest, publisher: str, catalog: str, hexdigest: str
) -> HttpResponse:
    """A version pinned by its sha256; cacheable forever."""
    digest = f"sha256:{hexdigest.lower()}"
    found = selectors.catalog_serving_has_digest(
        publisher_slug=publisher, catalog_name=catalog, digest=digest
    )
    return _serve(request, digest if found else None, IMMUTABLE_CACHE_CONTROL)


def _serve_signature(request: HttpRequest, digest: str | None, cache_control: str) -> HttpResponse:
    """The base64 signature over the bytes ``digest`` names (``cosign sign-blob`` format).

    A version published before signing existed is signed now, on first request.
    """
    if digest is None:
        raise Http404("No such catalog version.")
    found = selectors.catalog_version_signature(digest=digest)
    if found is None:
        raise Http404("No such catalog version.")
    pk, signature, key_id = found
    if not signature:
        version = services.catalog_version_sign(version=CatalogVersion.objects.get(pk=pk))
        assert version.signing_key is not None  # catalog_version_sign set it
        signature, key_id = version.signature, version.signing_key.key_id
    response = HttpResponse(signature, content_type="text/plain; charset=us-ascii")
    response["X-Content-Digest"] = digest
    response["X-Signing-Key-Id"] = key_id
    response["Cache-Control"] = cache_control
    return response


@require_safe
def catalog_latest_signature(request: HttpRequest, publisher: str, catalog: str) -> HttpResponse:
    """Signature of the latest version (``X-Content-Digest`` says which bytes it signs)."""
    digest = selectors.catalog_serving_latest_digest(publisher_slug=publisher, catalog_name=catalog)
    max_age = settings.CATALOG_LATEST_MAX_AGE
    return _serve_signature(request, digest, f"public, max-age={max_age}")


@require_safe
def catalog_version_by_number_signature(
    request: HttpRequest, publisher: str, catalog: str, number: int
) -> HttpResponse:
    """Signature of a version pinned by number."""
    digest = selectors.catalog_serving_digest_by_number(
        publisher_slug=publisher, catalog_name=catalog, number=number
    )
    # Not immutable: a rotation with --resign replaces it (the old one stays verifiable).
    return _serve_signature(request, digest, "public, max-age=300")


@require_safe
def catalog_version_by_digest_signature(
    request: HttpRequest, publisher: str, catalog: str, hexdigest: str
) -> HttpResponse:
    """Signature of a version pinned by its sha256."""
    digest = f"sha256:{hexdigest.lower()}"
    found = selectors.catalog_serving_has_digest(
        publisher_slug=publisher, catalog_name=catalog, digest=digest
    )
    return _serve_signature(request, digest if found else None, "public, max-age=300")


@require_safe
def signing_key_public(request: HttpRequest) -> HttpResponse:
    """The current public signing key, PEM (``cosign verify-blob --key`` and ``krm`` read it)."""
    key = signing.signing_key_current()[1]
    response = HttpResponse(key.public_key_pem, content_type="application/x-pem-file")
    response["X-Signing-Key-Id"] = key.key_id
    response["Cache-Control"] = "public, max-age=300"
    return response
