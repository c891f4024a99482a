"""The serving cache of catalog versions: what the `/c/` URLs answer, prepared once.

A published version never changes, so a pinned URL (``versions/<n>/`` or ``sha256/<hex>/``) maps
to the same digest and bytes forever: this process keeps the mapping, the bytes and the response
headers in memory, and a warm pinned request of a public catalog runs no database query (but
one per catalog every VISIBILITY_RECHECK_SECONDS, below).

What can change goes through the ``serving`` cache (``CACHES["serving"]``, shared between
processes when ``CACHE_URL`` names Redis): which version ``latest`` is (a publish changes it) and a
version's signature (a key rotation with ``--resign`` replaces it). Writers call
``serving_latest_changed`` / ``serving_signature_changed``: the entry is dropped at once, and
rewritten from the database once the transaction commits, so a reader that looked before the
commit cannot leave a stale value behind (readers only ``add``). Entries live
``CATALOG_SERVING_CACHE_SECONDS``; 0 (the default without a shared cache, where one process could
not tell the others) reads the database every time.

Private catalogs: whether a catalog is private (and its publisher's id) is kept in this process
for ``VISIBILITY_RECHECK_SECONDS`` (``serving_access``) and asked of the database again after
that; the process that changes a visibility forgets it at once (``serving_visibility_changed``).
Every answer for a private catalog, warm or not, first checks that the caller may see it. So in a
deployment of several processes, a catalog made private may still be served, for at most that
many seconds, by another process that served it while it was public: only bytes that were public.

Keys carry a tag of the database's name: two test databases (pytest-xdist workers) or two
deployments sharing one Redis never read each other's entries.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.files.storage import FileSystemStorage, default_storage
from django.db import connection, transaction
from django.http import FileResponse, HttpResponse
from django.http.response import HttpResponseBase

from catalogs.publishing import selectors

IMMUTABLE_CACHE_CONTROL = "public, max-age=31536000, immutable"
# Not immutable: a rotation with --resign replaces a signature (the old one stays verifiable).
SIGNATURE_CACHE_CONTROL = "public, max-age=300"
YAML_CONTENT_TYPE = "application/yaml"
SIGNATURE_CONTENT_TYPE = "text/plain; charset=us-ascii"


@dataclass(frozen=True, slots=True)
class Served:
    """A catalog version ready to send: its digest, bytes and the headers every answer carries."""

    digest: str
    body: bytes
    etag: str
    content_length: str


@dataclass(frozen=True, slots=True)
class ServedSignature:
    """The signature over the bytes ``digest`` names, the key that made it, and (when read from the
    database) the id of a version with those bytes; empty strings when it is unsigned."""

    digest: str
    signature: str
    key_id: str
    version_id: int = 0


class _ServedCache:
    """Bounded LRU of ``Served`` by digest, within a byte budget (digests name their bytes)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, Served] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, digest: str) -> Served | None:
        with self._lock:
            served = self._items.get(digest)
            if served is not None:
                self._items.move_to_end(digest)
            return served

    def put(self, served: Served) -> None:
        size = len(served.body)
        if size > self.max_bytes:
            return
        with self._lock:
            if served.digest in self._items:
                return
            self._items[served.digest] = served
            self._size += size
            while self._size > self.max_bytes:
                _, evicted = self._items.popitem(last=False)
                self._size -= len(evicted.body)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0


@dataclass(frozen=True, slots=True)
class Access:
    """Whether a catalog is private, and the publisher whose owners may see it if it is."""

    private: bool
    publisher_id: int


VISIBILITY_RECHECK_SECONDS = 5.0
# (database tag, publisher, catalog) -> (Access, monotonic time to ask the database again).
_access: dict[tuple[str, str, str], tuple[Access, float]] = {}

_served = _ServedCache(max_bytes=64 * 1024 * 1024)
# (database tag, publisher, catalog, "n<number>" or "d<hex>") -> digest: immutable once published.
_pinned: dict[tuple[str, str, str, str], str] = {}
_PINNED_MAX = 100_000
_db_tags: dict[str, str] = {}


def _db_tag() -> str:
    """A short tag of the database's name (the test database's, under pytest)."""
    name = str(connection.settings_dict["NAME"])
    tag = _db_tags.get(name)
    if tag is None:
        tag = _db_tags[name] = hashlib.blake2b(name.encode(), digest_size=6).hexdigest()
    return tag


def _cache_seconds() -> int:
    return int(settings.CATALOG_SERVING_CACHE_SECONDS)


def _latest_key(publisher_slug: str, catalog_name: str) -> str:
    return f"{_db_tag()}:latest:{publisher_slug}/{catalog_name}"


def _signature_key(digest: str) -> str:
    return f"{_db_tag()}:sig:{digest}"


def _served_for(digest: str) -> Served | None:
    served = _served.get(digest)
    if served is None:
        content = selectors.catalog_version_content(digest=digest)
        if content is None:
            return None
        served = Served(
            digest=digest, body=content, etag=f'"{digest}"', content_length=str(len(content))
        )
        _served.put(served)
    return served


def serving_access(*, publisher_slug: str, catalog_name: str) -> Access | None:
    """Whether ``publisher/catalog`` is private (None: no such catalog), from this process's
    memory when it asked the database less than VISIBILITY_RECHECK_SECONDS ago."""
    key = (_db_tag(), publisher_slug, catalog_name)
    now = time.monotonic()
    found = _access.get(key)
    if found is not None and found[1] > now:
        return found[0]
    row = selectors.catalog_serving_access(publisher_slug=publisher_slug, catalog_name=catalog_name)
    if row is None:
        _access.pop(key, None)
        return None
    if len(_access) >= _PINNED_MAX:
        _access.clear()
    access = Access(private=row[0], publisher_id=row[1])
    _access[key] = (access, now + VISIBILITY_RECHECK_SECONDS)
    return access


def serving_visibility_changed(*, publisher_slug: str, catalog_names: list[str]) -> None:
    """A catalog (or a publisher, with all its catalogs) changed visibility: this process asks
    the database again at its next request; others within VISIBILITY_RECHECK_SECONDS."""
    tag = _db_tag()
    for name in catalog_names:
        _access.pop((tag, publisher_slug, name), None)


def serving_pinned_digest(
    *, publisher_slug: str, catalog_name: str, number: int | None = None, hexdigest: str = ""
) -> str | None:
    """Digest of a version pinned by ``number`` or by ``hexdigest``; None if the catalog has none.

    Known answers come from memory; a miss (including "no such version") asks the database.
    """
    ref = f"n{number}" if number is not None else f"d{hexdigest.lower()}"
    key = (_db_tag(), publisher_slug, catalog_name, ref)
    digest = _pinned.get(key)
    if digest is None:
        if number is not None:
            digest = selectors.catalog_serving_digest_by_number(
                publisher_slug=publisher_slug, catalog_name=catalog_name, number=number
            )
        else:
            candidate = f"sha256:{hexdigest.lower()}"
            found = selectors.catalog_serving_has_digest(
                publisher_slug=publisher_slug, catalog_name=catalog_name, digest=candidate
            )
            digest = candidate if found else None
        if digest is None:
            return None
        if len(_pinned) >= _PINNED_MAX:
            _pinned.clear()  # rare and cheap to rebuild; keeps the map bounded
        _pinned[key] = digest
    return digest


def serving_latest_digest(*, publisher_slug: str, catalog_name: str) -> str | None:
    """Digest of a catalog's latest version, through the serving cache when it is enabled."""
    seconds = _cache_seconds()
    if seconds <= 0:
        return selectors.catalog_serving_latest_digest(
            publisher_slug=publisher_slug, catalog_name=catalog_name
        )
    cache = caches["serving"]
    key = _latest_key(publisher_slug, catalog_name)
    digest = cache.get(key)
    if digest is None:
        digest = selectors.catalog_serving_latest_digest(
            publisher_slug=publisher_slug, catalog_name=catalog_name
        )
        if digest is not None:
            # add, never set: a publish that committed meanwhile has written the newer answer.
            cache.add(key, digest, seconds)
    return digest


def serving_version(digest: str | None) -> Served | None:
    """The bytes and headers of the version ``digest`` names, or None."""
    return None if digest is None else _served_for(digest)


def serving_signature(digest: str | None) -> ServedSignature | None:
    """The stored signature over ``digest``'s bytes, or one with an empty signature if unsigned."""
    if digest is None:
        return None
    seconds = _cache_seconds()
    key = _signature_key(digest)
    if seconds > 0:
        cached = caches["serving"].get(key)
        if cached is not None:
            return ServedSignature(digest, *cached)
    found = selectors.catalog_version_signature(digest=digest)
    if found is None:
        return None
    version_id, signature, key_id = found
    if signature and seconds > 0:
        caches["serving"].add(key, (signature, key_id), seconds)
    return ServedSignature(digest, signature, key_id, version_id)


def _refresh_after_commit(key: str, load: Callable[[], object | None]) -> None:
    """Drop ``key`` now; once the transaction commits, write what the database then says."""
    seconds = _cache_seconds()
    if seconds <= 0:
        return
    cache = caches["serving"]
    cache.delete(key)

    def refresh() -> None:
        value = load()
        if value is None:
            cache.delete(key)
        else:
            cache.set(key, value, seconds)

    transaction.on_commit(refresh)


def serving_latest_changed(*, publisher_slug: str, catalog_name: str) -> None:
    """A publish moved ``latest``: every process serves the new version once it commits."""
    # list() copies the keys in one step: other threads may add entries meanwhile.
    for key in [k for k in list(_pinned) if k[1] == publisher_slug and k[2] == catalog_name]:
        # Numbers are immutable, but a restored database or a recreated catalog may reuse them.
        _pinned.pop(key, None)
    _refresh_after_commit(
        _latest_key(publisher_slug, catalog_name),
        lambda: selectors.catalog_serving_latest_digest(
            publisher_slug=publisher_slug, catalog_name=catalog_name
        ),
    )


def serving_signature_changed(*, digest: str) -> None:
    """A version was (re-)signed: every process serves the new signature once it commits."""

    def load() -> tuple[str, str] | None:
        found = selectors.catalog_version_signature(digest=digest)
        return (found[1], found[2]) if found and found[1] else None

    _refresh_after_commit(_signature_key(digest), load)


def serving_caches_clear() -> None:
    """Forget this process's serving cache (tests; a database restored from a backup).

    A process-local ``serving`` cache is emptied too; a shared one is left to its expiry.
    """
    _served.clear()
    _pinned.clear()
    _access.clear()
    cache = caches["serving"]
    if isinstance(cache, LocMemCache):
        cache.clear()


def serving_x_accel_redirect(storage_name: str) -> str | None:
    """The internal nginx URI of a stored file when nginx sends stored files itself
    (``SERVE_X_ACCEL_REDIRECT`` set and local storage), else None."""
    prefix = settings.SERVE_X_ACCEL_REDIRECT
    if not prefix or not isinstance(default_storage, FileSystemStorage):
        return None
    return prefix + quote(storage_name)


def serving_stored_file(*, storage_name: str, size: int, content_type: str) -> HttpResponseBase:
    """A stored file (a mirrored runtime artifact): handed to nginx by ``X-Accel-Redirect`` where
    deployed so, else streamed by Django. Raises FileNotFoundError when the file is missing."""
    if not default_storage.exists(storage_name):
        raise FileNotFoundError(storage_name)
    redirect = serving_x_accel_redirect(storage_name)
    if redirect is not None:
        # No body: nginx sends the file, with its own length.
        response: HttpResponseBase = HttpResponse(content_type=content_type)
        response["X-Accel-Redirect"] = redirect
        return response
    response = FileResponse(default_storage.open(storage_name, "rb"), content_type=content_type)
    response["Content-Length"] = str(size)
    return response
