"""The trial cache does not grow for ever: a 305 KB archive that unpacked to 300 MB is pruned.

Sizes are real file sizes (sparse files: the test writes almost nothing to disk).
"""

from __future__ import annotations

import os
import time

import pytest

from catalogs.review.trial_cache import trial_cache_prune
from registry.celery import app

MB = 1024 * 1024


def _file(path, size: int, age_minutes: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
    stamp = time.time() - age_minutes * 60
    for changed in (path, *path.parents):
        os.utime(changed, (stamp, stamp))
        if changed.name in ("sha256", "exec"):
            break


@pytest.fixture
def cache(tmp_path, settings):
    settings.TRIAL_CACHE_DIR = str(tmp_path / "cache")
    root = tmp_path / "cache"
    _file(root / "blobs/sha256" / ("a" * 64), 305 * 1024, age_minutes=180)
    _file(root / "exec" / ("a" * 64) / "bin/fn", 300 * MB, age_minutes=170)
    _file(root / "blobs/sha256" / ("b" * 64), 2 * MB, age_minutes=120)
    _file(root / "exec" / ("c" * 64) / "bin/fn", 200 * MB, age_minutes=5)  # in use right now
    return root


def _left(root) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files
    )


def test_the_oldest_entries_go_until_the_cache_fits(cache, settings):
    settings.TRIAL_CACHE_MAX_BYTES = 250 * MB
    # Over by 252.3 MB: the old archive and its 300 MB unpacking go; the rest fits then.
    assert trial_cache_prune() == (2, 305 * 1024 + 300 * MB)
    assert _left(cache) == [
        "blobs/sha256/" + "b" * 64,
        "exec/" + "c" * 64 + "/bin/fn",
    ]


def test_entries_in_their_grace_period_are_kept_even_over_the_limit(cache, settings):
    settings.TRIAL_CACHE_MAX_BYTES = 0
    entries, freed = trial_cache_prune()
    assert (entries, freed) == (3, 305 * 1024 + 300 * MB + 2 * MB)
    assert _left(cache) == ["exec/" + "c" * 64 + "/bin/fn"]


def test_housekeeping_prunes_it_every_quarter_hour():
    entry = app.conf.beat_schedule["trial-cache-prune"]
    assert (entry["task"], entry["schedule"]) == ("catalogs.tasks.trial_cache_prune_task", 900.0)
