"""App configuration of review."""

from django.apps import AppConfig


class ReviewConfig(AppConfig):
    """Contributions, the review conversation, trial runs in the sandbox."""

    name = "catalogs.review"
    label = "review"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from catalogs.review import tasks  # noqa: F401 - registers the app's Celery tasks by name
