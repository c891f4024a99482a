"""The TUF repository's URLs under ``/tuf/`` (consistent snapshots, docs/trust.md)."""

from django.urls import path, re_path

from catalogs.trust import views

app_name = "tuf"

urlpatterns = [
    path("root.json", views.tuf_root, name="root"),
    path("timestamp.json", views.tuf_timestamp, name="timestamp"),
    re_path(
        r"^(?P<version>[1-9]\d{0,9})\.(?P<role>[-\w]+(?:\.private|\.bin-[0-9a-f]{1,3})?)\.json$",
        views.tuf_metadata,
        name="role",
    ),
]
