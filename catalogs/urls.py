"""Serving URLs: ``/c/<publisher>/<catalog>/...catalog.yaml``."""

from django.urls import path, re_path

from catalogs.mirroring import views as mirror_views
from catalogs.publishing import schema_views, views
from catalogs.trust import views as revocation_views

app_name = "catalogs"
# The .sig URLs: the same views, answering with the signature instead of the bytes.
SIGNATURE = {"signature": True}

urlpatterns = [
    path(
        "<slug:publisher>/<slug:catalog>/revocations.yaml",
        revocation_views.revocation_list_view,
        name="revocations",
    ),
    path(
        "<slug:publisher>/<slug:catalog>/revocations.yaml.sig",
        revocation_views.revocation_list_signature,
        name="revocations-sig",
    ),
    path(
        "<slug:publisher>/<slug:catalog>/revocations/<int:sequence>/revocations.yaml",
        revocation_views.revocation_list_view,
        name="revocations-sequence",
    ),
    path(
        "<slug:publisher>/<slug:catalog>/revocations/<int:sequence>/revocations.yaml.sig",
        revocation_views.revocation_list_signature,
        name="revocations-sequence-sig",
    ),
    re_path(
        r"^blobs/sha256/(?P<hexdigest>[0-9a-f]{64})$", mirror_views.blob_by_digest, name="blob"
    ),
    re_path(
        r"^(?P<publisher>[-\w]+)/(?P<catalog>[-\w]+)/blobs/sha256/(?P<hexdigest>[0-9a-f]{64})$",
        mirror_views.catalog_blob,
        name="catalog-blob",
    ),
    path("<slug:publisher>/<slug:catalog>/catalog.yaml", views.catalog_latest, name="latest"),
    path(
        "<slug:publisher>/<slug:catalog>/catalog.yaml.sig",
        views.catalog_latest,
        SIGNATURE,
        name="latest-sig",
    ),
    path(
        "<slug:publisher>/<slug:catalog>/versions/<int:number>/catalog.yaml.sig",
        views.catalog_version_by_number,
        SIGNATURE,
        name="version-sig",
    ),
    re_path(
        r"^(?P<publisher>[-\w]+)/(?P<catalog>[-\w]+)/sha256/(?P<hexdigest>[0-9a-fA-F]{64})/catalog\.yaml\.sig$",
        views.catalog_version_by_digest,
        SIGNATURE,
        name="digest-sig",
    ),
    path(
        "<slug:publisher>/<slug:catalog>/versions/<int:number>/catalog.yaml",
        views.catalog_version_by_number,
        name="version",
    ),
    path(
        "<slug:publisher>/<slug:catalog>/versions/<int:number>/functions/<str:group>/<str:kind>/"
        "<str:version>/schema.json",
        schema_views.function_schema,
        name="function_schema",
    ),
    re_path(
        r"^(?P<publisher>[-\w]+)/(?P<catalog>[-\w]+)/sha256/(?P<hexdigest>[0-9a-fA-F]{64})/catalog\.yaml$",
        views.catalog_version_by_digest,
        name="digest",
    ),
]
