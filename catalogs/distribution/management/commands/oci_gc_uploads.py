"""``python manage.py oci_gc_uploads [--minutes N]``: the storage GC under its former name."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Same as `gc_blobs --upload-minutes N` (kept for scripts that call it by this name)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--minutes", type=int, default=None, help="age before removal")

    def handle(self, *args: object, **options: Any) -> None:
        extra = [] if options["minutes"] is None else ["--upload-minutes", str(options["minutes"])]
        call_command("gc_blobs", *extra, stdout=self.stdout)
