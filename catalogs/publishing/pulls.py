"""Pull counting: how often each catalog version is pulled, per day, over HTTPS and OCI.

The serving fast path only adds one to a counter in this process's memory
(``pull_record``: a dict update under a lock, no I/O). A daemon thread adds the counters to the
database in one batch every ``USAGE_FLUSH_SECONDS`` seconds, or sooner once
``USAGE_FLUSH_THRESHOLD`` pulls are waiting, and at exit; so a pull shows in the API and on the
pages within that many seconds, whichever process served it.

A pull is recorded by what the request named: the digest of the catalog bytes (``/c/``) or of
the OCI manifest (``/v2/``). Which version that is gets resolved at flush time, in one query per
way, by the resolver registered for it (``pull_resolver_register``; distribution registers the
OCI one, which knows its manifests): a manifest that is no catalog version (a signature, a
referrer) counts nothing.

Where nginx answers pinned catalog URLs from its own cache (deploy/nginx), the registry never sees
those requests: nginx writes them to its pulls log and ``manage.py pulls_collect`` counts them
the same way, with ``USAGE_CATALOG_PULLS_FROM_PROXY=true`` so that the registry does not count the
ones nginx passes on a second time.
"""

from __future__ import annotations

import atexit
import datetime
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable

from django.conf import settings
from django.db import IntegrityError, close_old_connections, transaction
from django.db.models import F

from catalogs.publishing.models import CatalogVersion, CatalogVersionPulls, PullVia

logger = logging.getLogger(__name__)

# (via, publisher slug, catalog name, digest, day ordinal) -> pulls not yet in the database.
PullKey = tuple[str, str, str, str, int]
# Given the (publisher, catalog, digest) triples of one way, answer the version id of each known.
Resolver = Callable[[set[tuple[str, str, str]]], dict[tuple[str, str, str], int]]

_pending: dict[PullKey, int] = {}
_pending_total = 0
_lock = threading.Lock()
_wake = threading.Event()
_started = False
_resolvers: dict[str, Resolver] = {}
FLUSHER_NAME = "krm-pulls-flush"
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()


def pull_record(*, via: str, publisher_slug: str, catalog_name: str, digest: str) -> None:
    """Count one pull of what ``digest`` names in ``publisher/catalog`` (memory only)."""
    global _pending_total
    # Days since the epoch in UTC: an integer division, cheaper than a date object.
    key = (via, publisher_slug, catalog_name, digest, int(time.time() // 86400))
    with _lock:
        _pending[key] = _pending.get(key, 0) + 1
        _pending_total += 1
        total = _pending_total
    if not _started:
        _flusher_start()
    if total >= settings.USAGE_FLUSH_THRESHOLD:
        _wake.set()


def pull_resolver_register(via: str, resolver: Resolver) -> None:
    """Let ``resolver`` say which version a pull recorded ``via`` is (at start-up)."""
    _resolvers[via] = resolver


def pulls_pending() -> int:
    """Pulls counted in this process and not yet in the database."""
    return _pending_total


def pulls_flush() -> int:
    """Add this process's counted pulls to the database now; return how many were added.

    On a database error the counts go back to memory for the next flush and the error is raised.
    """
    global _pending, _pending_total
    with _lock:
        batch, _pending = _pending, {}
        _pending_total = 0
    if not batch:
        return 0
    try:
        return _store(batch)
    except Exception:
        with _lock:
            for key, count in batch.items():
                _pending[key] = _pending.get(key, 0) + count
                _pending_total += count
        raise


def pulls_discard() -> None:
    """Forget the pulls counted in this process (tests)."""
    global _pending, _pending_total
    with _lock:
        _pending, _pending_total = {}, 0


def _resolve_catalog_bytes(keys: set[tuple[str, str, str]]) -> dict[tuple[str, str, str], int]:
    """Versions by the digest of their bytes (``/c/``): one query for every key."""
    rows = CatalogVersion.objects.filter(digest__in={digest for _, _, digest in keys}).values_list(
        "id", "catalog__publisher__slug", "catalog__name", "digest"
    )
    found: dict[tuple[str, str, str], int] = {}
    for pk, publisher, catalog, digest in rows:
        key = (publisher, catalog, digest)
        if key in keys:
            # Two versions with the same bytes (published before republishing was refused):
            # the newer one, which is what the digest URL serves.
            found[key] = max(pk, found.get(key, 0))
    return found


_resolvers[PullVia.HTTPS] = _resolve_catalog_bytes


def _store(batch: dict[PullKey, int]) -> int:
    by_via: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for via, publisher, catalog, digest, _ in batch:
        by_via[via].add((publisher, catalog, digest))
    versions: dict[str, dict[tuple[str, str, str], int]] = {}
    for via, keys in by_via.items():
        resolver = _resolvers.get(via)
        versions[via] = resolver(keys) if resolver else {}
    rows: dict[tuple[int, int, str], int] = defaultdict(int)
    for (via, publisher, catalog, digest, day), count in batch.items():
        version_id = versions[via].get((publisher, catalog, digest))
        if version_id is not None:
            rows[(version_id, day, via)] += count
    for (version_id, day, via), count in sorted(rows.items()):
        _add(version_id, datetime.date.fromordinal(_EPOCH_ORDINAL + day), via, count)
    return sum(rows.values())


def _add(version_id: int, day: datetime.date, via: str, count: int) -> None:
    """Add ``count`` to one row: an UPDATE, or an INSERT when the row is new (another process
    inserting it meanwhile makes the INSERT fail, and the UPDATE then finds it)."""
    row = CatalogVersionPulls.objects.filter(version_id=version_id, day=day, via=via)
    if row.update(count=F("count") + count):
        return
    try:
        with transaction.atomic():
            CatalogVersionPulls.objects.create(version_id=version_id, day=day, via=via, count=count)
    except IntegrityError:
        # The version was deleted (its row cascades) or another process inserted the row.
        row.update(count=F("count") + count)


def _flush_quietly() -> None:
    try:
        pulls_flush()
    except Exception:  # a database away for a moment: the counts wait for the next flush
        logger.exception("could not store %d pulls; retrying at the next flush", _pending_total)


def _flusher() -> None:
    global _started
    while True:
        seconds = float(settings.USAGE_FLUSH_SECONDS)
        if seconds <= 0:  # switched off (a test that ran the thread ends it so)
            with _lock:
                _started = False
            return
        _wake.wait(seconds)
        _wake.clear()
        close_old_connections()
        _flush_quietly()


def _flusher_start() -> None:
    """Start this process's flushing thread (once; none when USAGE_FLUSH_SECONDS is 0, where
    flushing is the caller's, as in most tests)."""
    global _started
    with _lock:
        if _started:
            return
        _started = True
    if float(settings.USAGE_FLUSH_SECONDS) <= 0:
        return
    threading.Thread(target=_flusher, name=FLUSHER_NAME, daemon=True).start()
    atexit.register(_flush_quietly)


def pulls_add(counts: dict[PullKey, int]) -> None:
    """Count many pulls at once, keyed like ``pull_record``'s (the nginx log collector)."""
    global _pending_total
    with _lock:
        for key, count in counts.items():
            _pending[key] = _pending.get(key, 0) + count
            _pending_total += count
    if not _started:
        _flusher_start()
