"""Root URLs: serving under /c/, TUF metadata under /tuf/, OCI under /v2/, the API under
/api/v1/, schema, docs, admin."""

from csp.decorators import csp_update
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from catalogs.trust import views as trust_views
from registry.views import admin_moved_model

SWAGGER_UI_STYLE = "'sha256-MMpT0iDxyjALd9PdfepImGX3DBfJPXZ4IlDWdPAgtn0='"

urlpatterns = [
    path("c/", include("catalogs.urls")),
    path("signing-key.pub", trust_views.signing_key_public, name="signing-key-pub"),
    path("tuf/", include("catalogs.trust.urls", namespace="tuf")),
    path("v2/", include("catalogs.distribution.urls", namespace="oci")),
    path("api/v1/", include("catalogs.api.urls", namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI's start-up script comes from a URL (the split view); its page keeps one <style>,
    # allowed by its hash (drf-spectacular's template: tests/browser/test_csp.py notices a change).
    path(
        "api/docs/",
        csp_update({"style-src": [SWAGGER_UI_STYLE]})(
            SpectacularSwaggerSplitView.as_view(url_name="schema")
        ),
        name="api-docs",
    ),
    # Admin pages of the models from before the domain apps: a permanent redirect to their app.
    re_path(r"^admin/catalogs/(?P<model>[a-z]+)/(?P<rest>.*)$", admin_moved_model),
    path("admin/", admin.site.urls),
    path("", include("catalogs.web.urls", namespace="web")),
]

# API paths that match no route answer a JSON problem, as the OpenAPI schema documents.
handler404 = "catalogs.api.handlers.page_not_found"
