"""A request body over the size limit, known only by its size: the parsers hand it to the services
in place of the bytes, which they did not keep, so that the refusal says how large it was."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OversizedDocument:
    """A request body over CATALOG_MAX_BYTES, known only by its size (its bytes were not kept)."""

    size: int
