"""The bytes of immutable published content (catalog versions, revocation lists), read from the
object store by digest and kept in a bounded in-process cache: a digest names its bytes forever.

Below the models (``CatalogVersion.content`` reads through it), so it names no model.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol

from catalogs.exceptions import StorageError
from catalogs.publishing import blobstore


class StoredVersion(Protocol):
    """What the cache needs of a catalog version: its digest and the size its row records."""

    digest: str
    size: int


class ContentCache:
    """Bounded LRU of version bytes by digest; safe forever because a digest names its bytes."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, digest: str) -> bytes | None:
        with self._lock:
            content = self._items.get(digest)
            if content is not None:
                self._items.move_to_end(digest)
            return content

    def put(self, digest: str, content: bytes) -> None:
        if len(content) > self.max_bytes:
            return
        with self._lock:
            if digest in self._items:
                return
            self._items[digest] = content
            self._size += len(content)
            while self._size > self.max_bytes:
                _, old = self._items.popitem(last=False)
                self._size -= len(old)


content_cache = ContentCache(max_bytes=64 * 1024 * 1024)


def stored_bytes_checked(*, digest: str, size: int) -> bytes:
    """The bytes ``digest`` from the object store, checked against the size its row records."""
    content = blobstore.blob_read(digest)
    if content is None:
        raise StorageError(f"{digest} is recorded but missing from the object store.")
    if len(content) != size:
        raise StorageError(f"{digest} has {len(content)} bytes in the object store, not {size}.")
    return content


def stored_content(*, digest: str) -> bytes:
    """Immutable bytes recorded under ``digest`` (a revocation list…), read from the store once
    per process and checked against the digest; StorageError when missing."""
    content = content_cache.get(digest)
    if content is None:
        content = blobstore.blob_read(digest)
        if content is None or blobstore.sha256_digest(content) != digest:
            raise StorageError(f"{digest} is recorded but missing from the object store.")
        content_cache.put(digest, content)
    return content


def catalog_version_bytes(*, version: StoredVersion) -> bytes:
    """The canonical bytes of ``version`` (cached like ``catalog_version_content``)."""
    content = content_cache.get(version.digest)
    if content is None:
        content = stored_bytes_checked(digest=version.digest, size=version.size)
        content_cache.put(version.digest, content)
    return content
