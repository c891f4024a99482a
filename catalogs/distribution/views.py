"""The ``/v2/`` endpoints of the OCI distribution specification v1.1 (pull, push, discovery).

Plain Django views: no DRF on the serving path. Every refusal is an ``OciError`` rendered in the
spec's error format; HEAD answers carry the GET headers and no body.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from functools import wraps
from typing import Any, Literal, cast
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.files.storage import default_storage
from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from catalogs.distribution import manifests as m
from catalogs.distribution import selectors, services
from catalogs.distribution.auth import Identity, challenge, identity_from_request, oci_token_issue
from catalogs.distribution.errors import (
    BlobTooLargeError,
    BlobUnknownError,
    BlobUploadUnknownError,
    DeniedError,
    DigestInvalidError,
    ManifestInvalidError,
    ManifestTooLargeError,
    ManifestUnknownError,
    NameInvalidError,
    NameUnknownError,
    OciError,
    SizeInvalidError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedError,
)
from catalogs.distribution.models import OciUpload
from catalogs.exceptions import NotAllowedError, NotFoundError, RegistryError, StorageError
from catalogs.publishing import pulls
from catalogs.publishing.selectors import visible_to
from catalogs.publishing.serving import serving_access, serving_stored_file

API_VERSION = ("Docker-Distribution-API-Version", "registry/2.0")
NAME_RE = re.compile(r"^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$")
_ANY_NAME = re.compile(r"^[-\w.]+/[-\w.]+$")

logger = logging.getLogger(__name__)


def _error_response(request: HttpRequest, error: OciError, repository: str = "") -> HttpResponse:
    body = {"errors": [{"code": error.code, "message": error.message, "detail": error.detail}]}
    response = JsonResponse(body, status=error.status)
    if isinstance(error, UnauthorizedError):
        response["WWW-Authenticate"] = challenge(request, repository=repository)
    if request.method == "HEAD":
        response.content = b""
    response[API_VERSION[0]] = API_VERSION[1]
    return response


def oci_view(method_handlers: dict[str, Callable[..., HttpResponse]]) -> Callable:
    """One URL, handlers by method; OciError and other domain errors become spec errors."""

    @csrf_exempt
    def view(request: HttpRequest, **kwargs: str) -> HttpResponse:
        handler = method_handlers.get(request.method or "")
        if handler is None and request.method == "HEAD":
            handler = method_handlers.get("GET")
        repository = kwargs.get("name", "")
        try:
            if handler is None:
                raise UnsupportedError(f"{request.method} is not supported here")
            response = handler(request, **kwargs)
        except OciError as exc:
            return _error_response(request, exc, repository)
        except NotAllowedError as exc:
            return _error_response(request, DeniedError(exc.message), repository)
        except NotFoundError as exc:
            return _error_response(request, NameUnknownError(exc.message), repository)
        except StorageError as exc:
            logger.error("object store: %s (%s %s)", exc, request.method, request.path)
            return _error_response(request, UnavailableError(exc.message), repository)
        except RegistryError as exc:
            return _error_response(request, ManifestInvalidError(exc.message), repository)
        response[API_VERSION[0]] = API_VERSION[1]
        if request.__dict__.get("_oci_private"):
            _private_cache_control(response)
        return response

    return view


def _private_cache_control(response: HttpResponse) -> None:
    """A private repository's answer is for the caller only: no shared cache (nginx, a CDN)
    may keep it, though it was asked with credentials, which ``public`` would allow (RFC 9111
    section 3.5)."""
    value = response.get("Cache-Control", "")
    if value:
        response["Cache-Control"] = value.replace("public", "private")
    response["Vary"] = "Authorization"


def _image_repository(name: str, kwargs: dict[str, str]) -> tuple[str, str] | None:
    """(publisher, catalog) of ``<publisher>/<catalog>/<image path>``, a container image a
    mirror sync stored in the catalog's repository; None for any other name.

    Its manifests and blobs are the catalog repository's, pulled by digest only (the served
    catalog names them so); a tag there is unknown, as the image's tags are not mirrored.
    """
    publisher, _, rest = name.partition("/")
    catalog, sep, path = rest.partition("/")
    if not sep or not _ANY_NAME.match(f"{publisher}/{catalog}") or not NAME_RE.match(name):
        return None
    reference = kwargs.get("reference")
    if reference is not None and not reference.startswith("sha256:"):
        if not selectors.oci_repository_exists(publisher_slug=publisher, catalog_name=catalog):
            raise NameUnknownError(
                f"repository name not known to registry: {name} (names are "
                "<publisher>/<catalog>, or <publisher>/<catalog>/<image> for an image a mirror "
                "stored)",
                detail={"name": name},
            )
        raise ManifestUnknownError(
            f"manifest unknown to registry: {name}:{reference} (an image mirrored under a "
            "catalog is pulled by digest)",
            detail={"reference": reference},
        )
    return publisher, catalog


def _with_repository(
    handler: Callable[..., HttpResponse] | None = None, *, images: bool = False
) -> Callable[..., Any]:
    """Split ``name`` into publisher and catalog (NAME_INVALID / NAME_UNKNOWN otherwise).

    With ``images``, also ``<publisher>/<catalog>/<image path>`` (see ``_image_repository``).
    """
    if handler is None:
        return lambda h: _with_repository(h, images=images)

    @wraps(handler)
    def wrapper(request: HttpRequest, name: str, **kwargs: str) -> HttpResponse:
        if name != name.lower():
            # The spec's names are lower case: serving ``ACME/x`` too would serve a look-alike.
            raise NameInvalidError(
                f"invalid repository name {name!r}: repository names are lower case",
                detail={"name": name},
            )
        image = _image_repository(name, kwargs) if images else None
        if image is not None:
            return handler(request, *image, **kwargs)
        if not _ANY_NAME.match(name):
            if not NAME_RE.match(name):
                raise NameInvalidError(f"invalid repository name {name!r}", detail={"name": name})
            raise NameUnknownError(
                f"repository name not known to registry: {name} (names are <publisher>/<catalog>)",
                detail={"name": name},
            )
        publisher, catalog = name.split("/")
        return handler(request, publisher, catalog, **kwargs)

    return wrapper


def _identity(request: HttpRequest) -> Identity:
    return identity_from_request(request) if "HTTP_AUTHORIZATION" in request.META else Identity()


def _check_visible(request: HttpRequest, repository: str) -> None:
    """NAME_UNKNOWN, as for a repository that does not exist, unless the caller may see it
    (a private catalog: its publisher's owners and staff, by Basic or a bearer token granting
    pull). Credentials are checked when given, for every repository."""
    identity = _identity(request)
    publisher, _, catalog = repository.partition("/")
    access = serving_access(publisher_slug=publisher, catalog_name=catalog)
    if access is None or not access.private:
        return
    # Whatever is answered, it is for this caller only (see ``oci_view``).
    request.__dict__["_oci_private"] = True
    if not (
        identity.may(repository, "pull")
        and visible_to(
            viewer=identity.user or AnonymousUser(),  # None would be the system
            private=True,
            publisher_id=access.publisher_id,
        )
    ):
        raise NameUnknownError(
            f"repository name not known to registry: {repository}",
            detail={"name": repository},
        )


def _pusher(request: HttpRequest, repository: str):
    """The authenticated user allowed to push to ``repository`` by their credentials, else 401."""
    identity = identity_from_request(request)
    _check_visible(request, repository)
    lacking = identity.token_lacks("push")
    if lacking:
        assert identity.token is not None
        raise DeniedError(
            f"the API token {identity.token.name!r} lacks the {lacking!r} scope needed to push "
            f"to {repository}: create a token with the {lacking!r} scope",
            detail={"repository": repository},
        )
    if identity.user is None or not identity.may(repository, "push"):
        raise UnauthorizedError(
            f"authentication required to push to {repository}", detail={"repository": repository}
        )
    return identity.user


def _check_pull(request: HttpRequest, repository: str) -> None:
    # Credentials are optional for a public catalog, but checked when given.
    _check_visible(request, repository)
    if "HTTP_AUTHORIZATION" in request.META:
        identity = identity_from_request(request)
        if not identity.may(repository, "pull"):
            raise UnauthorizedError(f"the token does not grant pull on {repository}")


# ----------------------------------------------------------------------------- base and token


def _base(request: HttpRequest) -> HttpResponse:
    """The version check, and the "ping" that tells a client how to authenticate.

    Without credentials: 401 with the Bearer challenge, as Docker Hub, GHCR and Harbor answer.
    The Docker CLI (moby's ``PingV2Registry``) and ``docker login`` learn the token realm only
    from a 401 here (docker/distribution's ``ResponseChallenges`` reads no challenge on a 200),
    and a private repository is never a 401 (its outsiders get NAME_UNKNOWN), so without this
    401 Docker would never send the credentials it has. Public pulls stay anonymous: the token
    endpoint gives anonymous callers a pull token for public repositories, and the repository
    URLs themselves need none. With valid credentials (Basic, or any bearer token this registry
    issued, anonymous ones included): 200; with bad ones: 401 (``docker login`` relies on it).
    """
    if "HTTP_AUTHORIZATION" not in request.META:
        raise UnauthorizedError("authentication required: ask the token realm for a bearer token")
    identity_from_request(request)
    response = JsonResponse({})
    # The challenge on the 200 too: containers/image (skopeo, podman) reads it from either answer.
    response["WWW-Authenticate"] = challenge(request)
    return response


def _token(request: HttpRequest) -> HttpResponse:
    identity = _identity(request)
    if (
        identity.scopes is not None
        and identity.user is None
        and "HTTP_AUTHORIZATION" in request.META
    ):
        raise UnauthorizedError("ask for a token with Basic credentials, or none")
    issued = oci_token_issue(
        user=identity.user,
        scopes=request.GET.getlist("scope"),
        api_token=identity.api_token,
        token=identity.token,
    )
    return JsonResponse(issued)


base = oci_view({"GET": _base})
token = oci_view({"GET": _token})


# ----------------------------------------------------------------------------- pull


def _etag_matches(request: HttpRequest, etag: str) -> bool:
    value = request.META.get("HTTP_IF_NONE_MATCH", "")
    return any(c.strip().removeprefix("W/") in (etag, "*") for c in value.split(",") if c.strip())


def _content_headers(response: HttpResponseBase, *, digest: str, size: int) -> HttpResponseBase:
    response["Docker-Content-Digest"] = digest
    response["ETag"] = f'"{digest}"'
    response["Content-Length"] = str(size)
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    return response


@_with_repository(images=True)
def _manifest_get(request: HttpRequest, publisher: str, catalog: str, reference: str):
    name = f"{publisher}/{catalog}"
    _check_pull(request, name)
    if reference.startswith("sha256:") or ":" in reference:
        _check_digest_syntax(reference)
    elif not m.TAG_RE.match(reference):
        raise ManifestUnknownError(f"invalid tag {reference!r}", detail={"tag": reference})
    found = selectors.oci_manifest_find(
        publisher_slug=publisher, catalog_name=catalog, reference=reference
    )
    if found is None:
        selectors.oci_repository_get(publisher_slug=publisher, catalog_name=catalog)
        raise ManifestUnknownError(
            f"manifest unknown to registry: {name}:{reference}", detail={"reference": reference}
        )
    if _etag_matches(request, f'"{found.digest}"'):
        response = HttpResponse(status=304)
        response["ETag"] = f'"{found.digest}"'
        response["Docker-Content-Digest"] = found.digest
        return response
    body = b"" if request.method == "HEAD" else found.content
    if request.method == "GET":
        # Counted in memory; a manifest that is no catalog version counts nothing at the flush.
        pulls.pull_record(
            via="oci", publisher_slug=publisher, catalog_name=catalog, digest=found.digest
        )
    response = HttpResponse(body, content_type=found.media_type)
    _content_headers(response, digest=found.digest, size=len(found.content))
    if not reference.startswith("sha256:"):
        response["Cache-Control"] = f"public, max-age={settings.CATALOG_LATEST_MAX_AGE}"
    return response


def _check_digest_syntax(digest: str) -> str:
    if not m.DIGEST_RE.match(digest):
        raise DigestInvalidError(
            f"invalid digest {digest!r}: expected sha256:<64 lowercase hex>",
            detail={"digest": digest},
        )
    return digest


def _parse_range(header: str, size: int) -> tuple[int, int] | None | Literal[False]:
    """(start, end) of a single ``bytes=`` range; None to ignore it; False if unsatisfiable."""
    match = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", header)
    if match is None or match.group(1) == match.group(2) == "":
        return None  # several ranges or another unit: RFC 9110 lets a server ignore Range
    first, last = match.groups()
    if first == "":
        suffix = int(last)
        if suffix == 0:
            return False
        return max(0, size - suffix), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if last and int(last) < start:
        return None
    if start >= size:
        return False
    return start, end


@_with_repository(images=True)
def _blob_get(request: HttpRequest, publisher: str, catalog: str, digest: str):
    name = f"{publisher}/{catalog}"
    _check_pull(request, name)
    _check_digest_syntax(digest)
    blob = selectors.oci_blob_find(publisher_slug=publisher, catalog_name=catalog, digest=digest)
    if blob is None:
        selectors.oci_repository_get(publisher_slug=publisher, catalog_name=catalog)
        raise BlobUnknownError(f"blob unknown to registry: {digest}", detail={"digest": digest})
    etag = f'"{digest}"'
    if _etag_matches(request, etag):
        response: HttpResponseBase = HttpResponse(status=304)
        response["ETag"] = etag
        response["Docker-Content-Digest"] = digest
        return response
    head = request.method == "HEAD"
    range_header = request.META.get("HTTP_RANGE")
    span = _parse_range(range_header, blob.size) if range_header else None
    if span is False:
        response = _error_response(
            request,
            OciError("requested range not satisfiable", detail={"size": blob.size}),
        )
        response.status_code = 416
        response["Content-Range"] = f"bytes */{blob.size}"
        return response
    if span:
        start, end = span
        body = b"" if head else _blob_slice(blob, start, end)
        response = HttpResponse(body, status=206, content_type="application/octet-stream")
        _content_headers(response, digest=digest, size=end - start + 1)
        response["Content-Range"] = f"bytes {start}-{end}/{blob.size}"
    elif blob.content is not None or head:
        response = HttpResponse(
            b"" if head else blob.content, content_type="application/octet-stream"
        )
        _content_headers(response, digest=digest, size=blob.size)
    else:
        try:
            response = serving_stored_file(
                storage_name=blob.storage_name,
                size=blob.size,
                content_type="application/octet-stream",
            )
        except FileNotFoundError:
            # Its row outlived the file (storage cleaned by hand): unknown, not a server error.
            raise BlobUnknownError(f"blob unknown to registry: {digest}", detail={"digest": digest})
        _content_headers(response, digest=digest, size=blob.size)
        if response.has_header("X-Accel-Redirect"):
            del response["Content-Length"]  # the body is empty: nginx sends the file
    response["Accept-Ranges"] = "bytes"
    return response


def _blob_slice(blob: selectors.Blob, start: int, end: int) -> bytes:
    if blob.content is not None:
        return blob.content[start : end + 1]
    with default_storage.open(blob.storage_name, "rb") as handle:
        handle.seek(start)
        return handle.read(end - start + 1)


@_with_repository
def _tags_list(request: HttpRequest, publisher: str, catalog: str):
    name = f"{publisher}/{catalog}"
    _check_pull(request, name)
    repo = selectors.oci_repository_get(publisher_slug=publisher, catalog_name=catalog)
    n_text, last = request.GET.get("n"), request.GET.get("last", "")
    n = None
    if n_text is not None:
        if not n_text.isdigit():
            raise OciError(
                f"n must be a non-negative integer, got {n_text!r}", detail={"n": n_text}
            )
        n = int(n_text)
    tags = selectors.oci_tag_list(catalog=repo, last=last, n=None if n is None else n + 1)
    more = n is not None and len(tags) > n
    if n is not None:
        tags = tags[:n]
    response = JsonResponse({"name": name, "tags": tags})
    if more and tags:
        query = urlencode({"n": n, "last": tags[-1]})
        response["Link"] = f'</v2/{name}/tags/list?{query}>; rel="next"'
    return response


@_with_repository
def _referrers(request: HttpRequest, publisher: str, catalog: str, digest: str):
    name = f"{publisher}/{catalog}"
    _check_pull(request, name)
    _check_digest_syntax(digest)
    repo = selectors.oci_repository_get(publisher_slug=publisher, catalog_name=catalog)
    artifact_type = request.GET.get("artifactType", "")
    descriptors = selectors.oci_referrer_list(
        catalog=repo, digest=digest, artifact_type=artifact_type
    )
    body = {"schemaVersion": 2, "mediaType": m.OCI_INDEX, "manifests": descriptors}
    response = HttpResponse(json.dumps(body), content_type=m.OCI_INDEX)
    if artifact_type:
        response["OCI-Filters-Applied"] = "artifactType"
    return response


# ----------------------------------------------------------------------------- push


def _read_body(request: HttpRequest, *, limit: int, error: type[OciError]) -> bytes:
    """The request body, refused before reading when over ``limit`` (Django's own cap is lower)."""
    length_text = request.META.get("CONTENT_LENGTH") or "0"
    if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
        # No length: Django's request stream would read nothing; the server has de-chunked it.
        data = cast(WSGIRequest, request).environ["wsgi.input"].read(limit + 1)
        if len(data) > limit:
            raise error(f"body is over the limit of {limit} bytes", detail={"limit": limit})
        return data
    try:
        length = int(length_text)
    except ValueError:
        raise SizeInvalidError(f"invalid Content-Length {length_text!r}")
    if length > limit:
        raise error(
            f"body is {length} bytes, over the limit of {limit} bytes", detail={"limit": limit}
        )
    data = request.read(length) if length else b""
    if len(data) != length:
        raise SizeInvalidError(f"Content-Length {length} but {len(data)} bytes arrived")
    return data


def _upload_location(name: str, upload: OciUpload) -> str:
    return f"/v2/{name}/blobs/uploads/{upload.uuid}"


def _upload_response(name: str, upload: OciUpload, status: int) -> HttpResponse:
    response = HttpResponse(status=status)
    response["Location"] = _upload_location(name, upload)
    response["Range"] = f"0-{max(upload.size - 1, 0)}"
    response["Docker-Upload-UUID"] = str(upload.uuid)
    response["Content-Length"] = "0"
    return response


def _blob_created(name: str, digest: str) -> HttpResponse:
    response = HttpResponse(status=201)
    response["Location"] = f"/v2/{name}/blobs/{digest}"
    response["Docker-Content-Digest"] = digest
    response["Content-Length"] = "0"
    return response


@_with_repository
def _upload_start(request: HttpRequest, publisher: str, catalog: str):
    name = f"{publisher}/{catalog}"
    user = _pusher(request, name)
    repo = selectors.oci_repository_get(publisher_slug=publisher, catalog_name=catalog)
    digest = request.GET.get("digest")
    if digest is not None:
        body = _read_body(request, limit=settings.OCI_UPLOAD_MAX_BYTES, error=BlobTooLargeError)
        services.oci_blob_upload(catalog=repo, digest=digest, content=body, actor=user)
        return _blob_created(name, digest)
    # ?mount=&from=: no cross-repository mounts; the spec's answer is to start an upload.
    upload = services.oci_upload_start(catalog=repo, actor=user)
    return _upload_response(name, upload, 202)


def _upload_get_checked(request: HttpRequest, publisher: str, catalog: str, uuid: str):
    name = f"{publisher}/{catalog}"
    user = _pusher(request, name)
    upload = (
        OciUpload.objects.select_related("catalog__publisher")
        .filter(
            uuid=uuid,
            catalog__publisher__slug=publisher,
            catalog__name=catalog,
            user=user,
        )
        .first()
    )
    if upload is None:
        raise BlobUploadUnknownError(
            f"blob upload unknown to registry: {uuid}", detail={"uuid": uuid}
        )
    return name, upload


@_with_repository
def _upload_patch(request: HttpRequest, publisher: str, catalog: str, uuid: str):
    name, upload = _upload_get_checked(request, publisher, catalog, uuid)
    body = _read_body(request, limit=settings.OCI_UPLOAD_MAX_BYTES, error=BlobTooLargeError)
    upload = services.oci_upload_append(
        upload=upload, content=body, content_range=request.META.get("HTTP_CONTENT_RANGE", "")
    )
    return _upload_response(name, upload, 202)


@_with_repository
def _upload_put(request: HttpRequest, publisher: str, catalog: str, uuid: str):
    name, upload = _upload_get_checked(request, publisher, catalog, uuid)
    digest = request.GET.get("digest", "")
    body = _read_body(request, limit=settings.OCI_UPLOAD_MAX_BYTES, error=BlobTooLargeError)
    services.oci_upload_finish(
        upload=upload,
        digest=digest,
        content=body,
        content_range=request.META.get("HTTP_CONTENT_RANGE", ""),
    )
    return _blob_created(name, digest)


@_with_repository
def _upload_status(request: HttpRequest, publisher: str, catalog: str, uuid: str):
    name, upload = _upload_get_checked(request, publisher, catalog, uuid)
    return _upload_response(name, upload, 204)


@_with_repository
def _upload_delete(request: HttpRequest, publisher: str, catalog: str, uuid: str):
    _, upload = _upload_get_checked(request, publisher, catalog, uuid)
    services.oci_upload_cancel(upload=upload)
    return HttpResponse(status=204)


@_with_repository
def _manifest_put(request: HttpRequest, publisher: str, catalog: str, reference: str):
    name = f"{publisher}/{catalog}"
    user = _pusher(request, name)
    repo = selectors.oci_repository_get(publisher_slug=publisher, catalog_name=catalog)
    body = _read_body(request, limit=settings.OCI_MANIFEST_MAX_BYTES, error=ManifestTooLargeError)
    pushed = services.oci_manifest_push(
        catalog=repo,
        reference=reference,
        manifest=body,
        media_type=request.META.get("CONTENT_TYPE", ""),
        actor=user,
    )
    response = HttpResponse(status=201)
    response["Location"] = f"/v2/{name}/manifests/{pushed.digest}"
    response["Docker-Content-Digest"] = pushed.digest
    response["Content-Length"] = "0"
    if pushed.subject:
        response["OCI-Subject"] = pushed.subject
    return response


def _delete_refused(request: HttpRequest, **kwargs: str) -> HttpResponse:
    raise UnsupportedError(
        "catalog versions are immutable: manifests, tags and blobs cannot be deleted"
    )


manifests = oci_view({"GET": _manifest_get, "PUT": _manifest_put, "DELETE": _delete_refused})
blobs = oci_view({"GET": _blob_get, "DELETE": _delete_refused})
tags_list = oci_view({"GET": _tags_list})
referrers = oci_view({"GET": _referrers})
uploads = oci_view({"POST": _upload_start})
upload = oci_view(
    {"PATCH": _upload_patch, "PUT": _upload_put, "GET": _upload_status, "DELETE": _upload_delete}
)
