"""Serving URLs: ``/c/<publisher>/<catalog>/...catalog.yaml``."""

from django.urls import path, re_path

from catalogs import views

app_name = "catalogs"

urlpatterns = [
    path("<slug:publisher>/<slug:catalog>/catalog.yaml", views.catalog_latest, name="latest"),
    path(
        "<slug:publisher>/<slug:catalog>/versions/<int:number>/catalog.yaml",
        views.catalog_version_by_number,
        name="version",
    ),
    re_path(
        r"^(?P<publisher>[-\w]+)/(?P<catalog>[-\w]+)/sha256/(?P<hexdigest>[0-9a-fA-F]{64})/catalog\.yaml$",
        views.catalog_version_by_digest,
        name="digest",
    ),
]
