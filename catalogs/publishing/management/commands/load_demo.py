"""``manage.py load_demo``: publish the demo catalog (idempotent: a second run changes nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand

from catalogs.publishing import services
from catalogs.publishing.management.commands.import_catalog import catalog_version_summary

DEMO_FILE = Path(__file__).resolve().parents[3] / "fixtures" / "demo-catalog.yaml"
DEMO_PUBLISHER = "demo"
DEMO_CATALOG = "functions"


class Command(BaseCommand):
    help = f"Publish the demo catalog as {DEMO_PUBLISHER}/{DEMO_CATALOG} (safe to run repeatedly)."

    def handle(self, *args: Any, **options: Any) -> None:
        version, created = services.catalog_import(
            publisher_slug=DEMO_PUBLISHER,
            catalog_name=DEMO_CATALOG,
            content=DEMO_FILE.read_bytes(),
            description="Demo catalog of Example Co's KRM functions.",
        )
        self.stdout.write(catalog_version_summary(version, created))
