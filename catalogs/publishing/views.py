"""Serving catalog versions as YAML: the URLs users pass to ``krm build --trusted-catalog``.

Kept minimal on purpose (no DRF views, no templates): the digest, bytes and headers come from the
serving cache (``catalogs.publishing.serving``), so a warm pinned URL of a public catalog runs no
database query (but one every VISIBILITY_RECHECK_SECONDS, to learn whether it became private).
A private catalog is served only to its publisher's owners and staff (``visible_only``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.views.decorators.http import require_safe
from rest_framework.exceptions import AuthenticationFailed

from catalogs import events
from catalogs.accounts.auth import user_from_request
from catalogs.publishing import pulls, selectors, serving
from catalogs.publishing.events import CatalogVersionSignatureRequested
from catalogs.publishing.models import CatalogVersion

IMMUTABLE_CACHE_CONTROL = serving.IMMUTABLE_CACHE_CONTROL


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


def _serve(
    request: HttpRequest,
    digest: str | None,
    *,
    pinned: bool,
    signature: bool,
    publisher: str = "",
    catalog: str = "",
) -> HttpResponse:
    """Answer with the version ``digest`` names, or its signature: precomputed bytes and headers.

    ``pinned`` answers are immutable (the signature's for five minutes: a rotation may re-sign);
    ``latest`` ones live ``CATALOG_LATEST_MAX_AGE`` seconds.
    """
    latest_cache_control = f"public, max-age={settings.CATALOG_LATEST_MAX_AGE}"
    if signature:
        return _serve_signature(
            serving.serving_signature(digest),
            serving.SIGNATURE_CACHE_CONTROL if pinned else latest_cache_control,
        )
    served = serving.serving_version(digest)
    if served is None:
        raise Http404("No such catalog version.")
    if_none_match = request.META.get("HTTP_IF_NONE_MATCH")
    if if_none_match and _etag_matches(if_none_match, served.etag):
        response: HttpResponse = HttpResponseNotModified()
    else:
        response = HttpResponse(served.body, content_type=serving.YAML_CONTENT_TYPE)
        response["Content-Length"] = served.content_length
        # A pull is a GET that sent the bytes (not HEAD, not a revalidation).
        if request.method == "GET" and not settings.USAGE_CATALOG_PULLS_FROM_PROXY:
            pulls.pull_record(
                via="https", publisher_slug=publisher, catalog_name=catalog, digest=served.digest
            )
    response["ETag"] = served.etag
    response["X-Content-Digest"] = served.digest
    response["Cache-Control"] = IMMUTABLE_CACHE_CONTROL if pinned else latest_cache_control
    return response


def _serve_signature(found: serving.ServedSignature | None, cache_control: str) -> HttpResponse:
    """The base64 signature over the bytes ``digest`` names (``cosign sign-blob`` format).

    A version published before signing existed is signed now, on first request.
    """
    if found is None:
        raise Http404("No such catalog version.")
    signature, key_id = found.signature, found.key_id
    if not signature:
        version = CatalogVersion.objects.get(pk=found.version_id)
        events.emit(CatalogVersionSignatureRequested(version=version))
        if version.signing_key is None:
            raise Http404("This catalog version has no signature.")
        signature, key_id = version.signature, version.signing_key.key_id
    response = HttpResponse(signature, content_type=serving.SIGNATURE_CONTENT_TYPE)
    response["X-Content-Digest"] = found.digest
    response["X-Signing-Key-Id"] = key_id
    response["Cache-Control"] = cache_control
    return response


def catalog_access_check(request: HttpRequest, publisher: str, catalog: str) -> bool:
    """Whether ``publisher/catalog`` is private; Http404 when the caller may not see it (the
    same answer as for a catalog that does not exist). Credentials in the request that do not
    check out raise AuthenticationFailed for every catalog, public, private or missing alike."""
    viewer = None
    if "HTTP_AUTHORIZATION" in request.META:
        viewer = user_from_request(request)
    access = serving.serving_access(publisher_slug=publisher, catalog_name=catalog)
    if access is None or not access.private:
        return False
    if viewer is None:
        viewer = user_from_request(request)  # the session's user, for a signed-in browser
    if not selectors.visible_to(viewer=viewer, private=True, publisher_id=access.publisher_id):
        raise Http404("No such catalog version.")
    return True


def unauthorized(err: AuthenticationFailed) -> HttpResponse:
    """401 for credentials that do not check out, with the schemes the registry takes."""
    response = HttpResponse(f"{err.detail}\n", status=401, content_type="text/plain")
    response["WWW-Authenticate"] = 'Basic realm="krm registry", charset="UTF-8"'
    return response


def private_cache_control(response: HttpResponse) -> HttpResponse:
    """A private catalog's answer is for the caller only: no shared cache may keep it."""
    value = response.get("Cache-Control", "")
    if value:
        response["Cache-Control"] = value.replace("public", "private")
    response["Vary"] = "Authorization, Cookie"
    return response


def visible_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Serve ``view`` (kwargs ``publisher`` and ``catalog``) only to who may see the catalog."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            private = catalog_access_check(request, kwargs["publisher"], kwargs["catalog"])
        except AuthenticationFailed as err:
            return unauthorized(err)
        response = view(request, *args, **kwargs)
        return private_cache_control(response) if private else response

    return wrapper


# Each view serves catalog.yaml, or with ``signature=True`` (set by the URLconf) catalog.yaml.sig.


@require_safe
@visible_only
def catalog_latest(
    request: HttpRequest, publisher: str, catalog: str, signature: bool = False
) -> HttpResponse:
    """The latest published version of a catalog (``X-Content-Digest`` says which bytes)."""
    digest = serving.serving_latest_digest(publisher_slug=publisher, catalog_name=catalog)
    return _serve(
        request,
        digest,
        pinned=False,
        signature=signature,
        publisher=publisher,
        catalog=catalog,
    )


@require_safe
@visible_only
def catalog_version_by_number(
    request: HttpRequest, publisher: str, catalog: str, number: int, signature: bool = False
) -> HttpResponse:
    """A version pinned by number; cacheable forever."""
    digest = serving.serving_pinned_digest(
        publisher_slug=publisher, catalog_name=catalog, number=number
    )
    return _serve(
        request,
        digest,
        pinned=True,
        signature=signature,
        publisher=publisher,
        catalog=catalog,
    )


@require_safe
@visible_only
def catalog_version_by_digest(
    request: HttpRequest, publisher: str, catalog: str, hexdigest: str, signature: bool = False
) -> HttpResponse:
    """A version pinned by its sha256; cacheable forever."""
    digest = serving.serving_pinned_digest(
        publisher_slug=publisher, catalog_name=catalog, hexdigest=hexdigest
    )
    return _serve(
        request,
        digest,
        pinned=True,
        signature=signature,
        publisher=publisher,
        catalog=catalog,
    )
