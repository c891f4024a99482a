"""``GET /api/v1/search/``: the search page as JSON, one result per function.

The same FilterSet and the same ``catalogs.discovery.search.function_search`` as the web page, so
both
give the same functions in the same order with the same facet counts. Where the page falls
back on a default with a notice, the API refuses: 400 for a bad sort, page size or filter,
404 for a page that does not exist.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from catalogs.accounts.auth import TokenHasScope
from catalogs.discovery import search
from catalogs.publishing import selectors
from catalogs.publishing.api.filters import FunctionSearchFilter
from catalogs.publishing.api.serializers import MirrorUpstreamSerializer, mirror_upstream_data


class RevokedVersionSerializer(serializers.Serializer):
    """A version the catalog revoked, and why (its revocation list entry)."""

    version = serializers.CharField()
    reason = serializers.CharField(help_text="compromised, broken or withdrawn.")
    detail = serializers.CharField()
    replacement = serializers.CharField(help_text="What to use instead; may be empty.")
    runtime_digest = serializers.CharField(help_text="The revoked runtime digest, or empty.")


class CarrierSerializer(serializers.Serializer):
    """One catalog carrying the function, with its badges."""

    publisher = serializers.CharField()
    catalog = serializers.CharField()
    verified = serializers.BooleanField(
        source="publisher_verified", help_text="Verified publisher."
    )
    signed = serializers.SerializerMethodField(help_text="Signed by this registry.")
    signing_key_id = serializers.CharField(source="signed_key_id", help_text="Empty if unsigned.")
    mirrored = serializers.BooleanField()
    versions = serializers.ListField(child=serializers.CharField())
    updated_at = serializers.DateTimeField(help_text="When this catalog version was published.")
    description = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    catalog_url = serializers.SerializerMethodField()
    revoked = RevokedVersionSerializer(
        many=True, help_text="The versions listed here that this catalog revoked: do not use them."
    )
    mirror = serializers.SerializerMethodField(
        help_text="A mirror's upstream and how it was verified; null unless mirrored."
    )

    def get_signed(self, carrier: search.Carrier) -> bool:
        return bool(carrier.signed_key_id)

    @extend_schema_field(MirrorUpstreamSerializer(allow_null=True))
    def get_mirror(self, carrier: search.Carrier) -> dict | None:
        if not carrier.mirrored:
            return None
        return mirror_upstream_data(carrier.upstream_url, carrier.upstream_verification)

    def get_catalog_url(self, carrier: search.Carrier) -> str:
        request = self.context["request"]
        return request.build_absolute_uri(f"/c/{carrier.publisher}/{carrier.catalog}/catalog.yaml")


class FunctionResultSerializer(serializers.Serializer):
    """One function (group + kind) and every catalog carrying it, best first."""

    group = serializers.CharField()
    kind = serializers.CharField()
    description = serializers.CharField(help_text="As the first catalog words it.")
    tags = serializers.ListField(child=serializers.CharField())
    runtime_kinds = serializers.ListField(child=serializers.CharField())
    requires_network = serializers.BooleanField()
    requires_storage_mount = serializers.BooleanField()
    updated_at = serializers.DateTimeField(allow_null=True)
    revoked = serializers.BooleanField(
        help_text="A catalog carrying it revoked a version it lists (see each catalog's revoked)."
    )
    pulls = serializers.IntegerField(
        help_text="Pulls of the catalogs carrying it, every version's (what sort=pulls orders by)."
    )
    catalogs = CarrierSerializer(source="carriers", many=True)


class FacetValueSerializer(serializers.Serializer):
    """A filter value: add ``param=value`` to the query to apply it."""

    param = serializers.CharField()
    value = serializers.CharField()
    # A field named like DRF's Field.label attribute, which the stubs type as a string.
    label = serializers.CharField()  # type: ignore[assignment]
    count = serializers.IntegerField(help_text="Functions of this search with this value.")


class FacetSerializer(serializers.Serializer):
    """A group of filters (Runtime, Trust, Needs, Publisher, Tag)."""

    label = serializers.CharField()  # type: ignore[assignment]
    values = FacetValueSerializer(many=True)


class FunctionSearchSerializer(serializers.Serializer):
    """A page of functions with the totals and facet counts of the whole search."""

    count = serializers.IntegerField(help_text="Functions found (not versions).")
    catalogs = serializers.IntegerField(help_text="Catalogs carrying them.")
    page = serializers.IntegerField()
    pages = serializers.IntegerField()
    page_size = serializers.IntegerField()
    sort = serializers.ChoiceField(choices=list(search.SORTS))
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = FunctionResultSerializer(many=True)
    facets = FacetSerializer(many=True)
    corrections = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Words of q that no function contains (typos), each with the indexed words "
        "searched instead.",
    )


_PARAMETERS = [
    OpenApiParameter(
        "sort",
        OpenApiTypes.STR,
        enum=list(search.SORTS),
        description="relevance (the default with `q`), name (the default without), updated "
        "(newest catalog version first), catalogs (carried by the most catalogs first), pulls "
        "(most pulled first).",
    ),
    OpenApiParameter("page", {"type": "integer", "minimum": 1}, description="From 1."),
    OpenApiParameter(
        "revoked",
        OpenApiTypes.BOOL,
        description="true: only functions with a revoked version; false: only those without.",
    ),
    OpenApiParameter(
        "page_size",
        {"type": "integer", "minimum": 1, "maximum": search.MAX_PAGE_SIZE},
        description=f"1 to {search.MAX_PAGE_SIZE}; {search.DEFAULT_PAGE_SIZE} by default.",
    ),
]
# The trust and capability filters: the page's checkboxes send ``on``; the API takes JSON-style
# booleans only, as its schema says, and refuses anything else.
_BOOLEAN_FILTERS = ("verified", "network", "storage", "mirrored", "signed", "revoked")


def _strict_booleans(params: Any) -> None:
    """400 for a boolean filter that is not ``true`` or ``false``."""
    errors = {
        name: [f"Must be true or false, not {params.get(name)!r}."]
        for name in _BOOLEAN_FILTERS
        if name in params and params.get(name) not in ("true", "false")
    }
    if errors:
        raise ValidationError(errors)


def _page_url(request: Request, number: int) -> str:
    query = request.query_params.copy()
    query["page"] = str(number)
    return request.build_absolute_uri(f"{request.path}?{query.urlencode()}")


class FunctionSearchView(GenericAPIView):
    """Search functions: one result per function, listing the catalogs that carry it."""

    permission_classes = [AllowAny, TokenHasScope]
    # Declared for the schema (the filter parameters, through the default filter backend); the
    # view filters and pages itself.
    filterset_class = FunctionSearchFilter
    serializer_class = FunctionSearchSerializer
    pagination_class = None

    def get_queryset(self):
        return selectors.function_version_list(viewer=self.request.user)

    @extend_schema(
        operation_id="search_functions",
        filters=True,
        parameters=_PARAMETERS,
        responses={200: FunctionSearchSerializer},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        _strict_booleans(params)
        filters = search.search_filters(params, versions=self.get_queryset())
        flt = filters.filter
        if not flt.is_valid():
            raise ValidationError(flt.errors)
        try:
            found = search.function_search(
                versions=flt.qs,
                query=flt.ranked_query,
                sort=params.get("sort"),
                page=params.get("page"),
                page_size=params.get("page_size"),
                strict=True,
                revoked={"true": True, "false": False}.get(params.get("revoked", "")),
                facet_versions=filters.facet_versions,
            )
        except search.SearchParameterError as err:
            asked = str(params.get("page", ""))
            if err.param == "page" and asked.isdigit() and int(asked) >= 1:
                raise NotFound(err.problem)  # a page number past the last, as DRF answers
            raise ValidationError({err.param: [err.problem]})
        page = found.page
        body: dict[str, Any] = {
            "count": found.functions,
            "catalogs": found.catalogs,
            "page": page.number,
            "pages": page.paginator.num_pages,
            "page_size": found.page_size,
            "sort": found.sort,
            "next": _page_url(request, page.number + 1) if page.has_next() else None,
            "previous": _page_url(request, page.number - 1) if page.has_previous() else None,
            "results": FunctionResultSerializer(
                page.object_list, many=True, context={"request": request}
            ).data,
            "facets": FacetSerializer(found.facets, many=True).data,
            "corrections": filters.corrections,
        }
        return Response(body)
