"""``manage.py gc_blobs [--grace-minutes N] [--dry-run]``: delete blobs nothing references."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from catalogs import mirrors


class Command(BaseCommand):
    help = (
        "Delete stored blobs that no runtime artifact references and that are older than the "
        "grace period (BLOB_GC_GRACE_MINUTES)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--grace-minutes", type=int, help="override BLOB_GC_GRACE_MINUTES for this run"
        )
        parser.add_argument("--dry-run", action="store_true", help="list, delete nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        minutes = options["grace_minutes"]
        grace = timedelta(minutes=minutes) if minutes is not None else None
        collected = mirrors.blob_garbage_collect(grace=grace, dry_run=options["dry_run"])
        verb = "Would delete" if options["dry_run"] else "Deleted"
        for name in collected.deleted:
            self.stdout.write(f"{verb} {name}")
        self.stdout.write(
            f"{verb} {len(collected.deleted)} unreferenced blob(s); kept "
            f"{len(collected.kept_young)} younger than the grace period."
        )
