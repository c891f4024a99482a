"""App configuration of discovery."""

from django.apps import AppConfig


class DiscoveryConfig(AppConfig):
    """Search, function pages, the landing page."""

    name = "catalogs.discovery"
    label = "discovery"
    default_auto_field = "django.db.models.BigAutoField"
