"""Count the catalog pulls nginx answered itself, from its pulls log (deploy/nginx).

nginx answers pinned catalog versions from its cache without asking the registry, so it writes
each ``/c/…/catalog.yaml`` request to a log of its own, one line each::

    $msec $status $request_method $uri $sent_http_x_content_digest

This command reads that log as it grows (as ``tail -F`` does: a rotated or truncated file is
read again from its start) and adds every GET answered 200 to the pull counts, flushed like the
web processes' (``USAGE_FLUSH_SECONDS``). The registry itself then counts no ``/c/`` pulls
(``USAGE_CATALOG_PULLS_FROM_PROXY=true``), or the requests nginx passes on would count twice.

    manage.py pulls_collect --log /var/log/nginx/krm-pulls.log
    manage.py pulls_collect --log old.log --once --from-start   # a whole file, then exit
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from catalogs.publishing import pulls

POLL_SECONDS = 0.5


def pulls_parse(lines: list[bytes]) -> dict[pulls.PullKey, int]:
    """Pull counts of the log lines that are pulls (GET, 200, a catalog.yaml with a digest)."""
    counts: Counter[pulls.PullKey] = Counter()
    for line in lines:
        fields = line.split()
        if len(fields) != 5 or fields[1] != b"200" or fields[2] != b"GET":
            continue
        parts = fields[3].split(b"/")
        # b"", b"c", publisher, catalog, …, b"catalog.yaml"
        if len(parts) < 5 or parts[1] != b"c" or parts[-1] != b"catalog.yaml":
            continue
        digest = fields[4]
        if not digest.startswith(b"sha256:"):
            continue
        try:
            day = int(float(fields[0]) // 86400)
        except ValueError:
            continue
        key = ("https", parts[2].decode(), parts[3].decode(), digest.decode(), day)
        counts[key] += 1
    return counts


class Command(BaseCommand):
    help = "Count the catalog pulls nginx answered from its cache, from its pulls log."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--log", required=True, type=Path, help="nginx's pulls log")
        parser.add_argument(
            "--once", action="store_true", help="read to the end, store the counts and exit"
        )
        parser.add_argument(
            "--from-start",
            action="store_true",
            help="read the file from its start (default: only what is written from now on)",
        )

    def handle(self, *args, log: Path, once: bool, from_start: bool, **options) -> None:
        if not once and settings.USAGE_FLUSH_SECONDS <= 0:
            raise CommandError("USAGE_FLUSH_SECONDS is 0: following a log needs periodic flushes")
        if not log.is_file():
            raise CommandError(f"--log {log}: no such file (nginx's pulls log, KRM_PULLS_LOG)")
        stream = log.open("rb")
        if not from_start:
            stream.seek(0, os.SEEK_END)
        if once:
            with stream:
                pulls.pulls_add(pulls_parse(stream.readlines()))
            stored = pulls.pulls_flush()
            self.stdout.write(f"{stored} pulls stored from {log}")
            return
        # Stopped with SIGTERM (docker stop): store what was counted before exiting.
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
        try:
            self._follow(log, stream)
        finally:
            pulls.pulls_flush()

    def _follow(self, log: Path, stream: IO[bytes]) -> None:
        pending = b""
        while True:
            chunk = stream.read()
            if chunk:
                # Only whole lines: nginx may have written half of one.
                data = pending + chunk
                end = data.rfind(b"\n") + 1
                pending = data[end:]
                pulls.pulls_add(pulls_parse(data[:end].splitlines()))
                continue
            time.sleep(POLL_SECONDS)
            try:
                current = log.stat()
            except FileNotFoundError:
                continue  # rotated away, the new one not created yet
            if current.st_ino != os.fstat(stream.fileno()).st_ino or current.st_size < (
                stream.tell()
            ):
                # Rotated (a new file) or truncated: read the new contents from their start.
                stream.close()
                stream = log.open("rb")
                pending = b""
