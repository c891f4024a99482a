"""App configuration of notifications."""

from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    """Publishers' webhooks (CloudEvents for what happens in the apps below, signed, delivered by
    Celery with retries, and their delivery log); users' subscriptions, inbox and e-mail (what
    they follow, the contributions they take part in, and for operators the mirrors' drift)."""

    name = "catalogs.notifications"
    label = "notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from catalogs import events
        from catalogs.mirroring.events import MirrorDriftDetected, MirrorRunFailed
        from catalogs.notifications import (
            services,
            subscriptions,
            tasks,  # noqa: F401 - registers the Celery tasks
        )
        from catalogs.publishing.events import CatalogVersionPublished
        from catalogs.review.events import (
            ContributionCommented,
            ContributionDecided,
            ContributionSubmitted,
        )
        from catalogs.trust.events import RevocationCreated

        events.subscribe(CatalogVersionPublished, services.on_catalog_version_published)
        events.subscribe(CatalogVersionPublished, subscriptions.on_catalog_version_published)
        events.subscribe(RevocationCreated, services.on_revocation_created)
        events.subscribe(ContributionSubmitted, services.on_contribution_submitted)
        events.subscribe(ContributionDecided, services.on_contribution_decided)
        events.subscribe(ContributionDecided, subscriptions.on_contribution_decided)
        events.subscribe(ContributionCommented, services.on_contribution_commented)
        events.subscribe(ContributionCommented, subscriptions.on_contribution_commented)
        events.subscribe(MirrorRunFailed, services.on_mirror_run_failed)
        events.subscribe(MirrorDriftDetected, services.on_mirror_drift_detected)
        events.subscribe(MirrorDriftDetected, subscriptions.on_mirror_drift_detected)
