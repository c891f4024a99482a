"""App configuration of trust."""

from django.apps import AppConfig


class TrustConfig(AppConfig):
    """Signing keys in use, signatures, revocations, collisions, the TUF repository."""

    name = "catalogs.trust"
    label = "trust"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from catalogs import events
        from catalogs.distribution.events import OciPackagePushed
        from catalogs.publishing.events import (
            CatalogLatestChanged,
            CatalogVersionDeprecationChanged,
            CatalogVersionPublished,
            CatalogVersionSignatureRequested,
            VisibilityChanged,
        )
        from catalogs.trust import services

        events.subscribe(CatalogVersionPublished, services.on_catalog_version_published)
        events.subscribe(CatalogLatestChanged, services.on_catalog_latest_changed)
        events.subscribe(
            CatalogVersionDeprecationChanged, services.on_catalog_version_deprecation_changed
        )
        events.subscribe(
            CatalogVersionSignatureRequested, services.on_catalog_version_signature_requested
        )
        events.subscribe(OciPackagePushed, services.on_oci_package_pushed)
        events.subscribe(VisibilityChanged, services.on_visibility_changed)
