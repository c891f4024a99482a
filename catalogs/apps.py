"""App configuration."""

from django.apps import AppConfig


class CatalogsConfig(AppConfig):
    """The catalogs app."""

    name = "catalogs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every write to a registry table ends the API list pages cached before it.
        from catalogs.api import cache

        cache.install_everywhere()
