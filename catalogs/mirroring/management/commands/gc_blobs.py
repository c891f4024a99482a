"""``manage.py gc_blobs [--grace-minutes N] [--upload-minutes N] [--dry-run]``: the storage GC."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from catalogs.mirroring import services as mirrors


class Command(BaseCommand):
    help = (
        "Delete OCI upload sessions idle longer than OCI_UPLOAD_GC_MINUTES and uploaded blobs no "
        "manifest references, then stored objects (local files or S3) that no row names and "
        "that are older than the grace period (BLOB_GC_GRACE_MINUTES)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--grace-minutes", type=int, help="override BLOB_GC_GRACE_MINUTES for this run"
        )
        parser.add_argument(
            "--upload-minutes", type=int, help="override OCI_UPLOAD_GC_MINUTES for this run"
        )
        parser.add_argument("--dry-run", action="store_true", help="list, delete nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        minutes, uploads = options["grace_minutes"], options["upload_minutes"]
        collected = mirrors.blob_garbage_collect(
            grace=timedelta(minutes=minutes) if minutes is not None else None,
            upload_age=timedelta(minutes=uploads) if uploads is not None else None,
            dry_run=options["dry_run"],
        )
        verb = "Would delete" if options["dry_run"] else "Deleted"
        for name in collected.deleted:
            self.stdout.write(f"{verb} {name}")
        if not options["dry_run"]:
            self.stdout.write(
                f"removed {collected.sessions} upload session(s) and {collected.oci_blobs} "
                "unreferenced blob(s)"
            )
        self.stdout.write(
            f"{verb} {len(collected.deleted)} unreferenced object(s); kept "
            f"{len(collected.kept_young)} younger than the grace period."
        )
