"""Django admin: publishers and catalogs are editable; published versions are read-only."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from catalogs.models import Catalog, CatalogVersion, FunctionDefinition, FunctionVersion, Publisher


class ReadOnlyAdminMixin:
    """Show records without any way to add, change or delete them (they are immutable)."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Publisher)
class PublisherAdmin(admin.ModelAdmin):
    list_display = ["slug", "display_name", "verified", "created_at"]
    list_filter = ["verified"]
    search_fields = ["slug", "display_name"]
    filter_horizontal = ["owners"]


@admin.register(Catalog)
class CatalogAdmin(admin.ModelAdmin):
    list_display = ["__str__", "latest_version", "updated_at"]
    list_select_related = ["publisher", "latest_version"]
    search_fields = ["name", "publisher__slug", "description"]
    readonly_fields = ["latest_version", "created_at", "updated_at"]


class FunctionDefinitionInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = FunctionDefinition
    fields = ["position", "group", "kind", "publisher", "description"]
    extra = 0


@admin.register(CatalogVersion)
class CatalogVersionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["catalog", "number", "digest", "size", "created_by", "created_at"]
    list_select_related = ["catalog__publisher", "created_by"]
    search_fields = ["digest", "catalog__name", "catalog__publisher__slug"]
    fields = [
        "catalog",
        "number",
        "digest",
        "size",
        "document_name",
        "created_by",
        "created_at",
        "content_text",
    ]
    readonly_fields = fields
    inlines = [FunctionDefinitionInline]

    @admin.display(description="content")
    def content_text(self, obj: CatalogVersion) -> str:
        return bytes(obj.content).decode("utf-8", errors="replace")

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return request.user.is_active and request.user.is_staff


@admin.register(FunctionVersion)
class FunctionVersionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["group", "kind", "name", "catalog_version", "runtime_kinds", "requires_network"]
    list_filter = ["requires_network", "requires_storage_mount"]
    list_select_related = ["catalog_version__catalog__publisher"]
    search_fields = ["group", "kind", "search_text"]

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return request.user.is_active and request.user.is_staff
