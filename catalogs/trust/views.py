"""Serving revocation lists (``/c/<publisher>/<catalog>/revocations.yaml`` and its ``.sig``),
the registry's public key and its TUF metadata (``/tuf/``)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import IntegrityError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.views.decorators.http import require_safe
from rest_framework.exceptions import AuthenticationFailed

from catalogs.accounts.auth import user_from_request
from catalogs.exceptions import NotFoundError
from catalogs.publishing import selectors
from catalogs.publishing.models import Publisher, Visibility
from catalogs.publishing.views import (
    IMMUTABLE_CACHE_CONTROL,
    _etag_matches,
    private_cache_control,
    unauthorized,
    visible_only,
)
from catalogs.trust import revocations, services, signing, tuf
from catalogs.trust.models import RevocationList, TufMetadata

logger = logging.getLogger(__name__)


def _list(publisher: str, catalog: str, sequence: int | None) -> RevocationList:
    # Who may see the catalog was checked (``visible_only``): read it as the system.
    try:
        found = selectors.catalog_get(publisher_slug=publisher, name=catalog)
    except NotFoundError:
        raise Http404("No such catalog.") from None
    listed = revocations.revocation_list_get(catalog=found, sequence=sequence)
    if listed is None:
        raise Http404("This catalog has no revocations.")
    return listed


def _headers(response: HttpResponse, listed: RevocationList, pinned: bool) -> HttpResponse:
    response["X-Content-Digest"] = listed.digest
    response["X-Revocation-Sequence"] = str(listed.sequence)
    response["X-Signing-Key-Id"] = listed.signing_key.key_id
    max_age = settings.CATALOG_LATEST_MAX_AGE
    response["Cache-Control"] = IMMUTABLE_CACHE_CONTROL if pinned else f"public, max-age={max_age}"
    return response


@require_safe
@visible_only
def revocation_list_view(
    request: HttpRequest, publisher: str, catalog: str, sequence: int | None = None
) -> HttpResponse:
    """The newest revocation list (or sequence ``sequence``), with ETag revalidation."""
    listed = _list(publisher, catalog, sequence)
    etag = f'"{listed.digest}"'
    if_none_match = request.META.get("HTTP_IF_NONE_MATCH")
    if if_none_match and _etag_matches(if_none_match, etag):
        response: HttpResponse = HttpResponseNotModified()
    else:
        response = HttpResponse(
            revocations.revocation_list_content(listed=listed), content_type="application/yaml"
        )
    response["ETag"] = etag
    return _headers(response, listed, sequence is not None)


@require_safe
@visible_only
def revocation_list_signature(
    request: HttpRequest, publisher: str, catalog: str, sequence: int | None = None
) -> HttpResponse:
    """The list's signature (``cosign sign-blob`` format, like ``catalog.yaml.sig``)."""
    listed = _list(publisher, catalog, sequence)
    response = HttpResponse(listed.signature, content_type="text/plain; charset=us-ascii")
    return _headers(response, listed, sequence is not None)


@require_safe
def signing_key_public(request: HttpRequest) -> HttpResponse:
    """The current public signing key, PEM (``cosign verify-blob --key`` and ``krm`` read it)."""
    key = signing.signing_key_current()[1]
    response = HttpResponse(key.public_key_pem, content_type="application/x-pem-file")
    response["X-Signing-Key-Id"] = key.key_id
    response["Cache-Control"] = "public, max-age=300"
    return response


# --- The TUF repository: /tuf/ (docs/trust.md). ---

_METADATA_TYPE = "application/json"


def _tuf_response(row: TufMetadata, *, immutable: bool) -> HttpResponse:
    response = HttpResponse(row.data, content_type=_METADATA_TYPE)
    response["Cache-Control"] = IMMUTABLE_CACHE_CONTROL if immutable else "no-cache"
    response["X-Tuf-Version"] = str(row.version)
    return response


def _tuf_row(role: str, version: int | None) -> TufMetadata:
    services.tuf_repository_ensure()
    try:
        return tuf.metadata_get(role, version)
    except NotFoundError:
        raise Http404(f"No TUF metadata {role}.json version {version}.") from None


@require_safe
def tuf_metadata(request: HttpRequest, version: int, role: str) -> HttpResponse:
    """``/tuf/<V>.<role>.json``: one version of root, targets, snapshot or a publisher's role
    (consistent snapshots; immutable)."""
    if role == "timestamp":
        raise Http404("The timestamp is served only as timestamp.json.")
    if role not in tuf.TOP_LEVEL:
        # A publisher's role lists its targets: a private publisher's only for its members,
        # and its private catalogs' role (<publisher>.private) likewise; to anyone else the
        # same 404 as for a role that does not exist.
        try:
            viewer = user_from_request(request)
        except AuthenticationFailed as err:
            return unauthorized(err)
        private = role.endswith(tuf.PRIVATE_SUFFIX)
        slug = tuf.role_publisher(role)
        publisher = Publisher.objects.filter(slug=slug).first()
        if publisher is not None and (private or publisher.visibility == Visibility.PRIVATE):
            if not selectors.visible_to(viewer=viewer, private=True, publisher_id=publisher.pk):
                raise Http404(f"No TUF metadata {role}.json version {version}.")
            return private_cache_control(
                _tuf_response(_tuf_row(role, int(version)), immutable=True)
            )
    return _tuf_response(_tuf_row(role, int(version)), immutable=True)


@require_safe
def tuf_root(request: HttpRequest) -> HttpResponse:
    """``/tuf/root.json``: the current root."""
    return _tuf_response(_tuf_row("root", None), immutable=False)


@require_safe
def tuf_timestamp(request: HttpRequest) -> HttpResponse:
    """``/tuf/timestamp.json``: the current timestamp, re-signed first when half of its
    lifetime has passed and TRUST_TIMESTAMP_ON_DEMAND is on (the embedded default)."""
    services.tuf_repository_ensure()
    if settings.TRUST_TIMESTAMP_ON_DEMAND:
        try:
            tuf.timestamp_refresh_if_due()
        except (IntegrityError, OperationalError):
            # Another request signed it first (or holds SQLite's write lock): serve the newest.
            logger.info("the TUF timestamp was being re-signed by another request")
    return _tuf_response(_tuf_row("timestamp", None), immutable=False)
