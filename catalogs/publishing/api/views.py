"""API views: validate input, call one service or selector, render the result."""

from __future__ import annotations

from django.db.models import F
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalogs.accounts.auth import TokenHasScope
from catalogs.api.cache import cached_list
from catalogs.api.parsers import (
    CatalogJSONParser,
    CatalogTextYAMLParser,
    CatalogXYAMLParser,
    CatalogYAMLParser,
)
from catalogs.oversized import OversizedDocument
from catalogs.publishing import selectors, services
from catalogs.publishing.api import serializers
from catalogs.publishing.api.filters import CatalogFilter, FunctionVersionFilter
from catalogs.publishing.models import CatalogVersion


class PublisherViewSet(viewsets.GenericViewSet):
    """Publishers: anyone reads; a logged-in user creates one and owns it; owners update it."""

    serializer_class = serializers.PublisherSerializer
    lookup_field = "slug"
    lookup_value_regex = r"[-\w]+"

    def get_queryset(self):
        return selectors.publisher_list(viewer=self.request.user)

    @cached_list("viewer")
    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def retrieve(self, request: Request, slug: str) -> Response:
        publisher = selectors.publisher_get(slug=slug, viewer=request.user)
        return Response(self.get_serializer(publisher).data)

    @extend_schema(request=serializers.PublisherCreateSerializer)
    def create(self, request: Request) -> Response:
        data = _validated(serializers.PublisherCreateSerializer, request.data)
        publisher = services.publisher_create(actor=request.user, **data)
        return Response(self.get_serializer(publisher).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=serializers.PublisherUpdateSerializer)
    def partial_update(self, request: Request, slug: str) -> Response:
        publisher = selectors.publisher_get(slug=slug, viewer=request.user)
        services.publisher_check_can_write(publisher=publisher, actor=request.user)
        data = _validated(serializers.PublisherUpdateSerializer, request.data)
        publisher = services.publisher_update(publisher=publisher, actor=request.user, **data)
        return Response(
            self.get_serializer(
                selectors.publisher_get(slug=publisher.slug, viewer=request.user)
            ).data
        )


class CatalogViewSet(viewsets.GenericViewSet):
    """Catalogs: anyone reads; owners of the publisher create and update them."""

    serializer_class = serializers.CatalogSerializer
    filterset_class = CatalogFilter

    def get_queryset(self):
        return selectors.catalog_list(viewer=self.request.user)

    @cached_list("viewer")
    def list(self, request: Request) -> Response:
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def retrieve(self, request: Request, publisher: str, catalog: str) -> Response:
        found = selectors.catalog_get(publisher_slug=publisher, name=catalog, viewer=request.user)
        return Response(self.get_serializer(found).data)

    @extend_schema(request=serializers.CatalogCreateSerializer)
    def create(self, request: Request) -> Response:
        data = _validated(serializers.CatalogCreateSerializer, request.data)
        publisher = selectors.publisher_get(slug=data.pop("publisher"))
        catalog = services.catalog_create(publisher=publisher, actor=request.user, **data)
        return Response(self.get_serializer(catalog).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "days", int, description="How many days, up to today (UTC): 1 to 366, default 30."
            )
        ],
        responses=serializers.CatalogPullsDaySerializer(many=True),
    )
    def pulls(self, request: Request, publisher: str, catalog: str) -> Response:
        """The catalog's pulls per day (UTC), oldest first, days without pulls included."""
        found = selectors.catalog_get(publisher_slug=publisher, name=catalog)
        raw = request.query_params.get("days", "30")
        if not raw.isdigit() or not 1 <= int(raw) <= 366:
            raise ValidationError({"days": [f"must be a whole number from 1 to 366, not {raw!r}"]})
        days = selectors.catalog_pulls_by_day(catalog=found, days=int(raw))
        return Response(serializers.CatalogPullsDaySerializer(days, many=True).data)

    @extend_schema(request=serializers.CatalogUpdateSerializer)
    def partial_update(self, request: Request, publisher: str, catalog: str) -> Response:
        found = selectors.catalog_get(publisher_slug=publisher, name=catalog, viewer=request.user)
        services.publisher_check_can_write(publisher=found.publisher, actor=request.user)
        data = _validated(serializers.CatalogUpdateSerializer, request.data)
        services.catalog_update(catalog=found, actor=request.user, **data)
        return Response(
            self.get_serializer(selectors.catalog_get(publisher_slug=publisher, name=catalog)).data
        )


class CatalogVersionViewSet(viewsets.GenericViewSet):
    """Versions of one catalog: anyone reads; owners publish new ones as YAML."""

    serializer_class = serializers.CatalogVersionSerializer
    parser_classes = [
        CatalogYAMLParser,
        CatalogXYAMLParser,
        CatalogTextYAMLParser,
        CatalogJSONParser,
    ]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no URL kwargs
            return CatalogVersion.objects.none()
        catalog = selectors.catalog_get(
            publisher_slug=self.kwargs["publisher"],
            name=self.kwargs["catalog"],
            viewer=self.request.user,
        )
        return selectors.catalog_version_list(catalog=catalog)

    @cached_list("viewer")
    def list(self, request: Request, publisher: str, catalog: str) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(
        request=serializers.CatalogVersionUpdateSerializer,
        responses=serializers.CatalogVersionDetailSerializer,
    )
    def partial_update(
        self, request: Request, publisher: str, catalog: str, number: int
    ) -> Response:
        """Deprecate a version with a message, or withdraw its deprecation (empty message)."""
        found = selectors.catalog_get(publisher_slug=publisher, name=catalog)
        services.publisher_check_can_write(publisher=found.publisher, actor=request.user)
        data = _validated(serializers.CatalogVersionUpdateSerializer, request.data)
        version = selectors.catalog_version_get(catalog=found, number=int(number))
        services.catalog_version_deprecate(
            version=version, message=data["deprecation"], actor=request.user
        )
        version = selectors.catalog_version_get(catalog=found, number=int(number))
        context = self.get_serializer_context()
        return Response(serializers.CatalogVersionDetailSerializer(version, context=context).data)

    @extend_schema(responses=serializers.CatalogVersionDetailSerializer)
    def retrieve(self, request: Request, publisher: str, catalog: str, number: int) -> Response:
        found = selectors.catalog_get(publisher_slug=publisher, name=catalog, viewer=request.user)
        version = selectors.catalog_version_get(catalog=found, number=int(number))
        context = self.get_serializer_context()
        return Response(serializers.CatalogVersionDetailSerializer(version, context=context).data)

    @extend_schema(
        request={"application/yaml": OpenApiTypes.STR},
        responses={
            201: serializers.CatalogVersionPublishedSerializer,
            200: OpenApiResponse(
                serializers.CatalogVersionPublishedSerializer,
                description="The same content was already published: the existing version.",
            ),
        },
    )
    def create(self, request: Request, publisher: str, catalog: str) -> Response:
        found = selectors.catalog_get(publisher_slug=publisher, name=catalog, viewer=request.user)
        # Permission before the body: a refused user gets 403, whatever they sent.
        services.publisher_check_can_write(publisher=found.publisher, actor=request.user)
        content = _publish_content(request)
        version, created = services.catalog_version_publish(
            catalog=found, content=content, actor=request.user
        )
        latest = found.latest_version_id == version.pk
        if created:
            detail = f"Published version {version.number}."
        elif latest:
            detail = f"Unchanged: this content is version {version.number}, the latest already."
        else:
            detail = (
                f"Unchanged: this content is version {version.number}, which is not the latest;"
                f' PATCH the catalog with {{"latest_version": {version.number}}} to make it so.'
            )
        body = {
            "version": version.number,
            "digest": version.digest,
            "unchanged": not created,
            "latest": latest,
            "detail": detail,
            "catalog_url": serializers.catalog_latest_url(request, found),
            "version_url": serializers.catalog_version_url(request, version),
            "digest_url": serializers.catalog_version_digest_url(request, version),
        }
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        location = reverse(
            "api:catalog-version-detail",
            kwargs={"publisher": publisher, "catalog": catalog, "number": version.number},
        )
        return Response(body, status=code, headers={"Location": location})


class FunctionVersionViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Search the functions of every catalog's latest version."""

    serializer_class = serializers.FunctionVersionSerializer
    filterset_class = FunctionVersionFilter

    def get_queryset(self):
        # The mirror's upstream and verification type as two columns, not the source's JSON.
        return selectors.function_version_list(viewer=self.request.user).annotate(
            mirror_upstream=F("catalog_version__catalog__mirror_source__url"),
            mirror_verification=F("catalog_version__catalog__mirror_source__verification__type"),
        )

    @cached_list("viewer")
    def list(self, request: Request, *args, **kwargs) -> Response:
        return super().list(request, *args, **kwargs)


def _validated(serializer_class: type, data: object) -> dict:
    """Validate ``data`` with ``serializer_class`` (400 on errors) and return the clean values."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _publish_content(request: Request) -> bytes | str | OversizedDocument:
    """The catalog document of a publish request: a YAML body, or JSON ``{"content": "<yaml>"}``."""
    if isinstance(request.data, bytes | OversizedDocument):
        return request.data
    if "json" not in (request.content_type or ""):
        return b""  # DRF hands an empty body over as {}; the parser reports it as empty.
    serializer = serializers.CatalogVersionContentSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data["content"]


class ApiRootView(APIView):
    """The API's index: links to each collection."""

    permission_classes = [AllowAny, TokenHasScope]

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        names = [
            "publisher-list",
            "catalog-list",
            "function-list",
            "source-list",
            "contribution-list",
            "signing-key-list",
        ]
        links = {
            name.removesuffix("-list") + "s": request.build_absolute_uri(reverse(f"api:{name}"))
            for name in names
        }
        links["search"] = request.build_absolute_uri(reverse("api:search"))
        links["schema"] = request.build_absolute_uri(reverse("schema"))
        return Response(links)
