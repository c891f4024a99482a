"""The Celery app reads Django settings and finds the catalogs tasks."""

import pytest


def test_app_is_configured_from_django_settings(settings):
    from registry.celery import app

    assert app.conf.task_always_eager is settings.CELERY_TASK_ALWAYS_EAGER
    assert app.main == "registry"


@pytest.mark.django_db
def test_catalogs_tasks_are_registered():
    from registry.celery import app

    app.loader.import_default_modules()
    assert {
        "catalogs.tasks.catalog_version_publish_task",
        "catalogs.tasks.catalog_version_verify_task",
    } <= set(app.tasks)
