"""Query filters of the API (django-filter)."""

from __future__ import annotations

import django_filters
from django import forms
from django.db.models import QuerySet

from catalogs.publishing.models import Catalog, FunctionVersion


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


class FunctionSearchFilter(FunctionVersionFilter):
    """Function search plus the trust and capability filters of the search page and
    ``/api/v1/search/`` (the page's checkboxes send ``verified=on``; the API takes ``true`` or
    ``false`` only)."""

    verified = django_filters.BooleanFilter(
        field_name="catalog_version__catalog__publisher__verified",
        widget=forms.CheckboxInput,
        label="Verified publisher",
        method="filter_true",
    )
    network = django_filters.BooleanFilter(
        field_name="requires_network",
        widget=forms.CheckboxInput,
        label="Needs network",
        method="filter_true",
    )
    storage = django_filters.BooleanFilter(
        field_name="requires_storage_mount",
        widget=forms.CheckboxInput,
        label="Needs storage mount",
        method="filter_true",
    )

    mirrored = django_filters.BooleanFilter(
        widget=forms.CheckboxInput, label="Mirrored", method="filter_mirrored"
    )
    signed = django_filters.BooleanFilter(
        widget=forms.CheckboxInput, label="Signed by this registry", method="filter_signed"
    )

    class Meta(FunctionVersionFilter.Meta):
        fields = [
            *FunctionVersionFilter.Meta.fields,
            *["verified", "network", "storage", "mirrored", "signed"],
        ]

    def filter_mirrored(self, queryset: QuerySet, name: str, value: bool) -> QuerySet:
        """Functions of catalogs mirrored from elsewhere."""
        if not value:
            return queryset
        return queryset.filter(catalog_version__catalog__mirror_source__isnull=False)

    def filter_signed(self, queryset: QuerySet, name: str, value: bool) -> QuerySet:
        """Functions of versions the registry signed (every version, once signed)."""
        if not value:
            return queryset
        return queryset.filter(catalog_version__signing_key__isnull=False)

    def filter_true(self, queryset: QuerySet, name: str, value: bool) -> QuerySet:
        """An unticked box means "any", not "false"."""
        return queryset.filter(**{name: True}) if value else queryset
