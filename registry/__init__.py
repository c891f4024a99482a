"""The Django project of the KRM Catalog Registry."""

# Load the Celery app when Django starts so that @shared_task binds to it.
from registry.celery import app as celery_app

__all__ = ("celery_app",)
