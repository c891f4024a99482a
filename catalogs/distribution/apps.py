"""App configuration of distribution."""

from django.apps import AppConfig


class DistributionConfig(AppConfig):
    """The OCI distribution endpoint /v2/: manifests, blobs, uploads, tags, tokens."""

    name = "catalogs.distribution"
    label = "distribution"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from catalogs import events
        from catalogs.distribution import selectors, services
        from catalogs.publishing import pulls
        from catalogs.publishing.events import CatalogLatestChanged, CatalogVersionPublished

        events.subscribe(CatalogVersionPublished, services.on_catalog_version_published)
        events.subscribe(CatalogLatestChanged, services.on_catalog_latest_changed)
        pulls.pull_resolver_register("oci", selectors.oci_manifest_versions)
