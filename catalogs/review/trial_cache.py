"""The trial runs' download cache (TRIAL_CACHE_DIR), kept under TRIAL_CACHE_MAX_BYTES.

Trial runs download and unpack contributed runtimes into the engine's cache layout: verified
blobs under ``blobs/sha256/<hex>``, unpacked archives under ``exec/…``, images under ``images/…``.
An archive of a few hundred kilobytes can unpack to hundreds of megabytes, so the housekeeping
queue prunes the cache: whole entries (one blob, one unpacked archive), least recently changed
first, until the cache fits. Entries younger than TRIAL_CACHE_GRACE_MINUTES are left alone (a
trial may be using them right now).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings


@dataclass(frozen=True)
class _Entry:
    path: Path
    size: int
    changed: float


def _entry(path: Path) -> _Entry:
    if path.is_symlink() or not path.is_dir():
        stat = path.lstat()
        return _Entry(path, stat.st_size, stat.st_mtime)
    # When it or its files last changed (the engine writes members when it unpacks: no times
    # come from the archive).
    size, changed = 0, path.lstat().st_mtime
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                stat = os.lstat(os.path.join(root, name))
            except FileNotFoundError:
                continue
            size += stat.st_size
            changed = max(changed, stat.st_mtime)
    return _Entry(path, size, changed)


def _entries(root: Path) -> list[_Entry]:
    """The units the cache is pruned by: each child of each top-level folder (of blobs/sha256)."""
    found = []
    for top in sorted(root.iterdir()) if root.is_dir() else []:
        if not top.is_dir() or top.is_symlink():
            found.append(_entry(top))
            continue
        parent = top / "sha256" if top.name == "blobs" and (top / "sha256").is_dir() else top
        found.extend(_entry(child) for child in sorted(parent.iterdir()))
    return found


def trial_cache_prune(*, max_bytes: int | None = None, now: float | None = None) -> tuple[int, int]:
    """Delete the least recently changed entries until the cache holds at most ``max_bytes``.

    Returns ``(entries, bytes)`` deleted. Defaults: TRIAL_CACHE_MAX_BYTES, the current time.
    """
    limit = settings.TRIAL_CACHE_MAX_BYTES if max_bytes is None else max_bytes
    now = time.time() if now is None else now
    grace = settings.TRIAL_CACHE_GRACE_MINUTES * 60
    entries = _entries(Path(settings.TRIAL_CACHE_DIR))
    total = sum(e.size for e in entries)
    deleted = freed = 0
    for entry in sorted(entries, key=lambda e: e.changed):
        if total <= limit:
            break
        if now - entry.changed < grace:
            continue
        if entry.path.is_dir() and not entry.path.is_symlink():
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            entry.path.unlink(missing_ok=True)
        total -= entry.size
        freed += entry.size
        deleted += 1
    return deleted, freed
