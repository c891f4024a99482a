"""Celery beat keeps its schedule in the database (django-celery-beat's DatabaseScheduler): when
each entry last ran, how often it ran, and entries an operator added survive a restart."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
CODE_ENTRIES = {"mirror-sources-sync-due", "blobs-garbage-collect"}


def test_beat_uses_the_database_scheduler():
    from registry.celery import app

    assert settings.CELERY_BEAT_SCHEDULER == "django_celery_beat.schedulers:DatabaseScheduler"
    assert app.conf.beat_scheduler == settings.CELERY_BEAT_SCHEDULER
    assert "django_celery_beat" in settings.INSTALLED_APPS


# transaction=True: the scheduler closes and reopens its connection as beat does, which would
# end a test's enclosing transaction on PostgreSQL.
@pytest.mark.django_db(transaction=True)
def test_a_restarted_scheduler_carries_on_where_the_last_one_stopped():
    """Two scheduler instances on one database stand for beat before and after a restart."""
    from django_celery_beat.models import PeriodicTask
    from django_celery_beat.schedulers import DatabaseScheduler

    from registry.celery import app

    first = DatabaseScheduler(app=app)
    assert set(first.schedule) >= CODE_ENTRIES
    entry = first.schedule["mirror-sources-sync-due"]
    ran = first.reserve(entry)  # what beat does when it sends the task
    first.sync()
    stored = PeriodicTask.objects.get(name="mirror-sources-sync-due")
    assert stored.total_run_count == 1
    assert stored.last_run_at == ran.last_run_at

    second = DatabaseScheduler(app=app)  # "beat restarted"
    again = second.schedule["mirror-sources-sync-due"]
    assert again.total_run_count == 1
    assert again.last_run_at == ran.last_run_at
    due, next_in = again.is_due()
    # It ran a moment ago: the next run is a full interval (60 s) after that, not now.
    assert not due
    assert 50 < next_in <= 60


def _beat_db_run(db: Path, code: str) -> None:
    env = _env(db)
    proc = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + code],
        cwd=db.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def _env(db: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"KRM_TEST_SERVICES", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"}
    }
    # SQLite in a file both beats share; no broker: what beat sends goes to memory.
    env.update(
        DJANGO_SETTINGS_MODULE="registry.settings.test",
        DATABASE_URL=f"sqlite:///{db}",
        PYTHONPATH=str(ROOT),
        # A busy machine may hold a write back for long: wait for the lock as long as the test
        # waits for beat, instead of failing with "database is locked" after 20 s.
        SQLITE_TIMEOUT="120",
    )
    return env


def _rows(db: Path) -> dict[str, tuple[str | None, int]]:
    conn = sqlite3.connect(db, timeout=120)
    try:
        return {
            name: (last, count)
            for name, last, count in conn.execute(
                "SELECT name, last_run_at, total_run_count FROM django_celery_beat_periodictask"
            )
        }
    finally:
        conn.close()  # "with" would only commit: an open connection is a lock holder-to-be


def _run_beat(db: Path, log: Path, sends: int) -> str:
    """Run beat until it has sent ``operator-tick`` ``sends`` times (a minute at most)."""
    with open(log, "ab") as out:
        beat = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("celery")),
                "-A",
                "registry",
                "beat",
                "--loglevel",
                "INFO",
                "--max-interval",
                "1",
            ],
            cwd=db.parent,
            env=_env(db),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while log.read_text().count("Sending due task operator-tick") < sends:
                assert beat.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.2)
        finally:
            beat.send_signal(signal.SIGTERM)  # beat writes its state when it stops
            beat.wait(timeout=60)
    return log.read_text()


def test_beat_started_twice_keeps_its_schedule(tmp_path):
    """A real ``celery beat``, stopped and started again on the same database."""
    db = tmp_path / "beat.sqlite3"
    migrate = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"],
        cwd=tmp_path,
        env=_env(db),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    # Write-ahead logging: this test's reads and the stopping beat's last write never block each
    # other (the mode is kept in the file, for every process that opens it).
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    # An entry an operator added (in the admin): every second, a task no worker has to know.
    _beat_db_run(
        db,
        "from django_celery_beat.models import IntervalSchedule, PeriodicTask\n"
        "every, _ = IntervalSchedule.objects.get_or_create(every=1, period='seconds')\n"
        "PeriodicTask.objects.create(name='operator-tick', task='krm.test.tick', interval=every)\n",
    )

    first_log = _run_beat(db, tmp_path / "beat-1.log", 2)
    first = _rows(db)
    assert set(first) >= CODE_ENTRIES, first_log[-3000:]
    assert first["operator-tick"][1] >= 2, first_log[-3000:]

    second_log = _run_beat(db, tmp_path / "beat-2.log", 2)
    second = _rows(db)
    # The operator's entry survived and kept counting from where it was.
    assert second["operator-tick"][1] > first["operator-tick"][1], second_log[-3000:]
    # The minute and hourly entries kept their clocks: not reset, not fired by the restart.
    for name in CODE_ENTRIES:
        assert second[name] == first[name], name
    assert "Sending due task mirror-sources-sync-due" not in second_log
    assert "scheduler -> django_celery_beat.schedulers.DatabaseScheduler" in second_log
