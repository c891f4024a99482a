"""Request body parsers: a catalog document arrives as raw YAML bytes."""

from __future__ import annotations

import io
from typing import IO, Any

from django.conf import settings
from rest_framework.parsers import BaseParser, JSONParser

from catalogs.services import OversizedDocument

_CHUNK = 64 * 1024


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

    def parse(
        self,
        stream: IO[bytes] | None,
        media_type: str | None = None,
        parser_context: dict[str, Any] | None = None,
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


class CatalogJSONParser(JSONParser):
    """``{"content": "<yaml>"}`` with the same memory bound as YAML bodies.

    JSON escaping can make a document longer, so the body may be up to twice the size limit;
    the document inside is then checked against the limit itself.
    """

    def parse(
        self,
        stream: IO[bytes] | None,
        media_type: str | None = None,
        parser_context: dict[str, Any] | None = None,
    ) -> Any:
        """The decoded JSON, or the body's size when it is over twice the limit."""
        if stream is None:
            return {}
        body = read_limited(stream, 2 * settings.CATALOG_MAX_BYTES)
        if isinstance(body, OversizedDocument):
            return body
        return super().parse(io.BytesIO(body), media_type, parser_context)
