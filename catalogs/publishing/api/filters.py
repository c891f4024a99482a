"""Query filters of the API (django-filter)."""

from __future__ import annotations

import difflib
import re
from typing import Any

import django_filters
from django import forms
from django.core.validators import ProhibitNullCharactersValidator
from django.db.models import Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from catalogs.publishing.models import Catalog, FunctionVersion


class CatalogFilter(django_filters.FilterSet):
    """Filter catalogs by publisher slug."""

    publisher = django_filters.CharFilter(field_name="publisher__slug")

    class Meta:
        model = Catalog
        fields = ["publisher"]


class _AnyValueField(forms.MultipleChoiceField):
    """Repeated values of an open-ended facet (``?publisher=a&publisher=b``): any may be asked,
    except a NUL character (as a CharField refuses it: PostgreSQL cannot compare it)."""

    def valid_value(self, value: str) -> bool:
        return True

    def validate(self, value: Any) -> None:
        super().validate(value)
        for item in value or []:
            ProhibitNullCharactersValidator()(item)


@extend_schema_field(OpenApiTypes.STR)
class AnyOfFilter(django_filters.MultipleChoiceFilter):
    """A facet of open-ended values: repeat the parameter to match any of them (OR)."""

    field_class = _AnyValueField


def _any_of(values: list[str], lookup: str, pattern: str = "{}") -> Q:
    """``lookup`` matching any of ``values`` (each formatted into ``pattern``)."""
    match = Q()
    for value in values:
        match |= Q(**{lookup: pattern.format(value)})
    return match


class FunctionVersionFilter(django_filters.FilterSet):
    """Function search: free text, group, kind, tag, runtime kind, publisher and catalog."""

    q = django_filters.CharFilter(
        method="filter_q", label="Words in group, kind, description, tags"
    )
    group = django_filters.CharFilter(field_name="group", lookup_expr="iexact")
    kind = django_filters.CharFilter(field_name="kind", lookup_expr="iexact")
    version = django_filters.CharFilter(field_name="name")
    # The facets: repeat one to match any of its values; different ones must all match.
    tag = AnyOfFilter(method="filter_tag")
    runtime = django_filters.MultipleChoiceFilter(
        method="filter_runtime",
        choices=[("container", "container"), ("exec", "exec"), ("starlark", "starlark")],
    )
    publisher = AnyOfFilter(
        field_name="catalog_version__catalog__publisher__slug", method="filter_any_of"
    )
    catalog = django_filters.CharFilter(field_name="catalog_version__catalog__name")
    key = AnyOfFilter(
        field_name="catalog_version__signing_key__key_id",
        label="Signing key id",
        method="filter_any_of",
    )

    class Meta:
        model = FunctionVersion
        fields = ["q", "group", "kind", "version", "tag", "runtime", "publisher", "catalog", "key"]

    def filter_q(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        """Every word must occur in the function's search text."""
        for word in value.lower().split():
            queryset = queryset.filter(search_text__contains=word)
        return queryset

    def filter_tag(self, queryset: QuerySet, name: str, value: list[str]) -> QuerySet:
        """Functions carrying exactly one of these tags (case-insensitive)."""
        tags = [v.lower() for v in value]
        return queryset.filter(_any_of(tags, "tags_index__contains", "|{}|"))

    def filter_runtime(self, queryset: QuerySet, name: str, value: list[str]) -> QuerySet:
        """Functions with a runtime of one of these kinds."""
        kinds = [v.lower() for v in value]
        return queryset.filter(_any_of(kinds, "runtime_kinds_index__contains", "|{}|"))

    def filter_any_of(self, queryset: QuerySet, name: str, value: list[str]) -> QuerySet:
        """Rows whose ``name`` is one of the values."""
        return queryset.filter(**{f"{name}__in": value})


# Typo tolerance: a query word of at least TYPO_MIN_LENGTH characters that no visible function's
# search text contains matches the indexed words (kinds, groups, tags, descriptions, publishers)
# at least TYPO_CUTOFF similar to it instead (difflib's ratio: the same on every database).
TYPO_MIN_LENGTH = 4
TYPO_CUTOFF = 0.75
TYPO_ALTERNATIVES = 3
# Only the first few words are checked (one query each): a long query costs no more.
TYPO_MAX_WORDS = 5
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


def indexed_words(rows: Any) -> set[str]:
    """The words of ``(kind, search_text)`` rows a mistyped query word may be matched to: those of
    the search text and the parts of each CamelCase kind (``SetNamespace``: set, namespace)."""
    words: set[str] = set()
    for kind, text in rows:
        words.update(_WORD.findall(text))
        words.update(part.lower() for part in _CAMEL.findall(kind))
    return {w for w in words if len(w) >= TYPO_MIN_LENGTH - 1}


class FunctionSearchFilter(FunctionVersionFilter):
    """Function search plus the trust and capability filters of the search page and
    ``/api/v1/search/`` (the page's checkboxes send ``verified=on``; the API takes ``true`` or
    ``false`` only), and typo tolerance: ``corrections`` says which words of ``q`` matched
    nothing and which indexed words were searched instead."""

    def __init__(
        self, *args: Any, corrections: dict[str, list[str]] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        # Given when known already (the same ``q`` filtered again without one facet).
        self._known_corrections = corrections
        self.corrections: dict[str, list[str]] = dict(corrections or {})

    def filter_q(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        """Every word must occur in the function's search text, or for a word that occurs in
        none (a typo), one of the indexed words nearest to it."""
        if self._known_corrections is None:
            self.corrections = self._corrections(value.lower().split())
        for word in value.lower().split():
            near = self.corrections.get(word)
            if near:
                queryset = queryset.filter(_any_of(near, "search_text__contains"))
            else:
                queryset = queryset.filter(search_text__contains=word)
        return queryset

    def _corrections(self, words: list[str]) -> dict[str, list[str]]:
        """{word that no visible function contains: the indexed words nearest to it}; one cheap
        query per long word (it stops at the first match), the index only read for a typo."""
        visible = self.queryset.order_by()
        long_words = [w for w in dict.fromkeys(words) if len(w) >= TYPO_MIN_LENGTH]
        missing = [
            w
            for w in long_words[:TYPO_MAX_WORDS]
            if not visible.filter(search_text__contains=w).exists()
        ]
        if not missing:
            return {}
        vocabulary = sorted(indexed_words(visible.values_list("kind", "search_text").distinct()))
        found = {}
        for word in missing:
            near = difflib.get_close_matches(word, vocabulary, TYPO_ALTERNATIVES, TYPO_CUTOFF)
            # A word containing another one adds nothing to a substring search (setnamespace).
            near = [n for n in near if not any(o != n and o in n for o in near)]
            if near:
                found[word] = near
        return found

    @property
    def ranked_query(self) -> str:
        """``q`` with each corrected word replaced by its nearest match (for relevance)."""
        words = str(self.data.get("q") or "").lower().split()
        return " ".join((self.corrections.get(w) or [w])[0] for w in words)

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
