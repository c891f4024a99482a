"""``python manage.py oci_gc_uploads``: drop stale OCI upload sessions and unreferenced blobs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from catalogs.oci.services import oci_uploads_gc


class Command(BaseCommand):
    help = (
        "Delete OCI blob upload sessions, and uploaded blobs no manifest references, older than "
        "--minutes (default OCI_UPLOAD_GC_MINUTES)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--minutes", type=int, default=None, help="age before removal")

    def handle(self, *args: object, **options: Any) -> None:
        minutes = options["minutes"]
        if minutes is None:
            minutes = settings.OCI_UPLOAD_GC_MINUTES
        sessions, blobs = oci_uploads_gc(older_than=timedelta(minutes=int(minutes)))
        self.stdout.write(f"removed {sessions} upload session(s) and {blobs} unreferenced blob(s)")
