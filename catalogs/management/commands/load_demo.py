"""``manage.py load_demo``: store the demo functions' runtimes in the registry and publish the demo
catalog (idempotent: a second run changes nothing). See ``catalogs.web.demo``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from catalogs.publishing.management.commands.import_catalog import catalog_version_summary
from catalogs.web.demo import DEMO_CATALOG, DEMO_PUBLISHER, demo_load


class Command(BaseCommand):
    help = (
        f"Publish the demo catalog as {DEMO_PUBLISHER}/{DEMO_CATALOG}, its runtimes served by "
        "this registry (safe to run repeatedly)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = demo_load()
        self.stdout.write(catalog_version_summary(result.version, result.created))
        for note in result.notes:
            self.stderr.write(note)
