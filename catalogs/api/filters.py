"""Query filters of the API (django-filter)."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet

from catalogs.models import Catalog, FunctionVersion


class CatalogFilter(django_filters.FilterSet):
    """Filter catalogs by publisher slug."""

    publisher = django_filters.CharFilter(field_name="publisher__slug")

    class Meta:
        model = Catalog
        fields = ["publisher"]


class FunctionVersionFilter(django_filters.FilterSet):
    """Function search: free text, group, kind, tag, runtime kind, publisher and catalog."""

    q = django_filters.CharFilter(
        method="filter_q", label="Words in group, kind, description, tags"
    )
    group = django_filters.CharFilter(field_name="group", lookup_expr="iexact")
    kind = django_filters.CharFilter(field_name="kind", lookup_expr="iexact")
    version = django_filters.CharFilter(field_name="name")
    tag = django_filters.CharFilter(method="filter_tag")
    runtime = django_filters.ChoiceFilter(
        method="filter_runtime",
        choices=[("container", "container"), ("exec", "exec"), ("starlark", "starlark")],
    )
    publisher = django_filters.CharFilter(field_name="catalog_version__catalog__publisher__slug")
    catalog = django_filters.CharFilter(field_name="catalog_version__catalog__name")
    key = django_filters.CharFilter(
        field_name="catalog_version__signing_key__key_id", label="Signing key id"
    )

    class Meta:
        model = FunctionVersion
        fields = ["q", "group", "kind", "version", "tag", "runtime", "publisher", "catalog", "key"]

    def filter_q(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        """Every word must occur in the function's search text."""
        for word in value.lower().split():
            queryset = queryset.filter(search_text__contains=word)
        return queryset

    def filter_tag(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        """Functions carrying exactly this tag (case-insensitive)."""
        return queryset.filter(tags_index__contains=f"|{value.lower()}|")

    def filter_runtime(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        """Functions with a runtime of this kind."""
        return queryset.filter(runtime_kinds_index__contains=f"|{value.lower()}|")
