"""App configuration of mirroring."""

from django.apps import AppConfig


class MirroringConfig(AppConfig):
    """Mirror sources, sync runs, fetchers by scheme, runtime artifacts, drift."""

    name = "catalogs.mirroring"
    label = "mirroring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from catalogs import events
        from catalogs.mirroring import (
            services,
            tasks,  # noqa: F401 - registers the app's Celery tasks by name
        )
        from catalogs.publishing.events import CatalogWriteRequested

        events.subscribe(CatalogWriteRequested, services.on_catalog_write_requested)
