"""A function version's functionConfig schema served as JSON Schema, for editors
(the yaml-language-server modeline) and for anyone who validates configs before a build."""

from __future__ import annotations

import hashlib
import json

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.views.decorators.http import require_safe

from catalogs.publishing import selectors
from catalogs.publishing.views import IMMUTABLE_CACHE_CONTROL, _etag_matches, visible_only

# A function's group in schema URLs; "_" stands for the core (empty) group.
CORE_GROUP = "_"


@require_safe
@visible_only
def function_schema(
    request: HttpRequest,
    publisher: str,
    catalog: str,
    number: int,
    group: str,
    kind: str,
    version: str,
) -> HttpResponse:
    """A function version's functionConfig schema as JSON Schema (for editors: the
    yaml-language-server modeline); immutable like the catalog version it belongs to."""
    from orchestrator.functions.schema import to_json_schema

    schema = selectors.function_version_schema(
        publisher_slug=publisher,
        catalog_name=catalog,
        number=number,
        group="" if group == CORE_GROUP else group,
        kind=kind,
        version=version,
    )
    openapi = (schema or {}).get("openAPIV3Schema")
    if not isinstance(openapi, dict):
        raise Http404("No such function version, or it has no schema.")
    converted = to_json_schema(openapi)
    api_version = version if group == CORE_GROUP else f"{group}/{version}"
    document = {
        "$schema": converted.pop("$schema"),
        "$id": request.build_absolute_uri(),
        "title": f"{api_version} {kind}",
        **converted,
    }
    body = json.dumps(document, indent=2, sort_keys=True).encode() + b"\n"
    etag = '"sha256:' + hashlib.sha256(body).hexdigest() + '"'
    if_none_match = request.META.get("HTTP_IF_NONE_MATCH")
    if if_none_match and _etag_matches(if_none_match, etag):
        response: HttpResponse = HttpResponseNotModified()
    else:
        response = HttpResponse(body, content_type="application/schema+json")
    response["ETag"] = etag
    response["Cache-Control"] = IMMUTABLE_CACHE_CONTROL
    response["Access-Control-Allow-Origin"] = "*"  # editors fetch it from anywhere
    return response
