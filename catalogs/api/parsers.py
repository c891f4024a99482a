"""Request body parsers: a catalog document arrives as raw YAML bytes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import renderers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from catalogs.oversized import OversizedDocument

_CHUNK = 64 * 1024
# Deepest nesting of objects and arrays a JSON body may have: a body wraps a document that may
# nest to orchestrator.catalog.MAX_DEPTH (100) itself, which the document's own check reports.
JSON_MAX_DEPTH = 200
_TOO_DEEP = f"JSON parse error - nested deeper than {JSON_MAX_DEPTH} levels."


def request_max_bytes() -> int:
    """Largest request body the registry reads: twice CATALOG_MAX_BYTES (JSON escaping)."""
    return 2 * settings.CATALOG_MAX_BYTES


def read_limited(stream: IO[bytes], limit: int) -> bytes | OversizedDocument:
    """All of ``stream`` if it has at most ``limit`` bytes, else only its size."""
    content = stream.read(limit + 1)
    if len(content) <= limit:
        return content
    size = len(content)
    while chunk := stream.read(_CHUNK):
        size += len(chunk)
    return OversizedDocument(size)


class CatalogYAMLParser(BaseParser):
    """Hands the raw bytes of an ``application/yaml`` body to the view, unparsed.

    The catalog service parses them with orchestrator.catalog, which reports problems with line
    and column. A body over CATALOG_MAX_BYTES is counted but not kept, so a huge upload costs no
    memory and still gets an error that states its size.
    """

    media_type = "application/yaml"

    # DRF puts whatever parse returns in request.data; the stubs narrow that to a Mapping.
    def parse(  # type: ignore[override]
        self,
        stream: IO[bytes] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> bytes | OversizedDocument:
        """Return the body bytes, or its size when it is over the limit."""
        if stream is None:
            return b""
        return read_limited(stream, settings.CATALOG_MAX_BYTES)


class CatalogXYAMLParser(CatalogYAMLParser):
    """The same, for the older ``application/x-yaml`` media type."""

    media_type = "application/x-yaml"


class CatalogTextYAMLParser(CatalogYAMLParser):
    """The same, for ``text/yaml``."""

    media_type = "text/yaml"


class CatalogJSONParser(BaseParser):
    """JSON bodies of every write endpoint (``{"content": "<yaml>"}``…), bounded in size and depth.

    Not a subclass of DRF's JSONParser on purpose: DRF reads the whole body of those through
    ``request.body`` first (Django's DATA_UPLOAD_MAX_MEMORY_SIZE, a bare HTML 400). The body may
    be up to twice CATALOG_MAX_BYTES (JSON escaping makes a document longer; the
    ``RequestBodyLimitMiddleware`` refuses bigger ones first); a catalog inside is then checked
    against the limit itself. Nesting deeper than ``JSON_MAX_DEPTH`` is a 400, never a
    RecursionError.
    """

    media_type = "application/json"
    renderer_class = renderers.JSONRenderer

    def parse(
        self,
        stream: IO[bytes] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        """The decoded JSON, or the body's size when it is over twice the limit."""
        if stream is None:
            return {}
        body = read_limited(stream, request_max_bytes())
        if isinstance(body, OversizedDocument):
            return body
        return json_loads_limited(body)


def json_loads_limited(body: bytes) -> Any:
    """``body`` as JSON, or ParseError: not UTF-8, not JSON, NaN/Infinity, or nested too deeply."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"JSON parse error - not valid UTF-8 (byte {body[exc.start]:#04x}).")
    try:
        value = json.loads(
            text, parse_constant=json_strict_constant, object_pairs_hook=_unique_keys
        )
    except RecursionError:
        raise ParseError(_TOO_DEEP)
    except ValueError as exc:
        raise ParseError(f"JSON parse error - {exc}")
    if json_depth(value) > JSON_MAX_DEPTH:
        raise ParseError(_TOO_DEEP)
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (which value would win is a guess)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return value


def json_strict_constant(name: str) -> None:
    """Refuse NaN and Infinity, which are not JSON (as DRF's strict JSONParser does)."""
    raise ValueError(f"Out of range float values are not JSON compliant: {name!r}")


def json_depth(value: Any) -> int:
    """How deeply ``value`` nests objects and arrays (iterative: no recursion limit to hit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest
