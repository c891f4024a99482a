"""Root URLs: serving under /c/, the API under /api/v1/, its schema and docs, and the admin."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("c/", include("catalogs.urls")),
    path("api/v1/", include("catalogs.api.urls", namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("admin/", admin.site.urls),
    path("", include("catalogs.web.urls", namespace="web")),
]

# API paths that match no route answer a JSON problem, as the OpenAPI schema documents.
handler404 = "catalogs.api.handlers.page_not_found"
