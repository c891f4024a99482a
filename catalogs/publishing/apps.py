"""App configuration of publishing."""

from django.apps import AppConfig


class PublishingConfig(AppConfig):
    """Publishers, owners, catalogs, immutable versions, function definitions, blobs, /c/
    serving."""

    name = "catalogs.publishing"
    label = "publishing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from catalogs.publishing import tasks  # noqa: F401 - registers the app's Celery tasks by name
