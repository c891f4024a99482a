"""``/v2/``: the OCI distribution endpoint. Repository names are ``<publisher>/<catalog>``."""

from django.urls import re_path

from catalogs.distribution import views

app_name = "oci"

_NAME = r"(?P<name>[^?#]+?)"

urlpatterns = [
    re_path(r"^$", views.base, name="base"),
    re_path(r"^token$", views.token, name="token"),
    re_path(rf"^{_NAME}/manifests/(?P<reference>[^/]+)$", views.manifests, name="manifest"),
    re_path(rf"^{_NAME}/blobs/uploads/$", views.uploads, name="uploads"),
    re_path(rf"^{_NAME}/blobs/uploads/(?P<uuid>[0-9a-fA-F-]{{36}})$", views.upload, name="upload"),
    re_path(rf"^{_NAME}/blobs/(?P<digest>[^/]+)$", views.blobs, name="blob"),
    re_path(rf"^{_NAME}/tags/list$", views.tags_list, name="tags"),
    re_path(rf"^{_NAME}/referrers/(?P<digest>[^/]+)$", views.referrers, name="referrers"),
]
