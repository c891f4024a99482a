"""App configuration."""

from django.apps import AppConfig


class CatalogsConfig(AppConfig):
    """The catalogs app."""

    name = "catalogs"
    default_auto_field = "django.db.models.BigAutoField"
