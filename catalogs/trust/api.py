"""API: a catalog's revocations (anyone reads; owners of its publisher and staff revoke), and a
publisher's own TUF keys and the role metadata it signs with them."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalogs.accounts.auth import TokenHasScope
from catalogs.api.cache import cached_list
from catalogs.exceptions import NotFoundError
from catalogs.publishing import selectors
from catalogs.publishing.api.serializers import SigningKeySerializer
from catalogs.trust import revocations, services, signing, tuf
from catalogs.trust.models import PublisherKey, Revocation, RevocationReason


class RevocationSerializer(serializers.ModelSerializer):
    """One revocation and the list sequence that first carried it."""

    revoked_by = serializers.CharField(source="created_by.username", default=None)

    class Meta:
        model = Revocation
        fields = [
            "sequence",
            "group",
            "kind",
            "version",
            "runtime_digest",
            "reason",
            "detail",
            "replacement",
            "revoked_by",
            "created_at",
        ]
        read_only_fields = fields


class RevocationCreateSerializer(serializers.Serializer):
    """A function version (group, kind, version) or a runtime digest, and why."""

    group = serializers.CharField(required=False, allow_blank=True, default="", max_length=253)
    kind = serializers.CharField(required=False, allow_blank=True, default="", max_length=253)
    version = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
    runtime_digest = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=71
    )
    reason = serializers.ChoiceField(choices=RevocationReason.choices)
    detail = serializers.CharField(required=False, allow_blank=True, default="", max_length=10000)
    replacement = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=500
    )


class RevocationViewSet(viewsets.GenericViewSet):
    """``/api/v1/catalogs/<publisher>/<catalog>/revocations/``: list (every sequence) and create."""

    serializer_class = RevocationSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Revocation.objects.none()
        catalog = selectors.catalog_get(
            publisher_slug=self.kwargs["publisher"],
            name=self.kwargs["catalog"],
            viewer=self.request.user,
        )
        return revocations.revocation_list(catalog=catalog)

    @cached_list("viewer")
    def list(self, request: Request, publisher: str, catalog: str) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(request=RevocationCreateSerializer, responses={201: RevocationSerializer})
    def create(self, request: Request, publisher: str, catalog: str) -> Response:
        from catalogs.publishing.services import publisher_check_can_write

        found = selectors.catalog_get(publisher_slug=publisher, name=catalog, viewer=request.user)
        publisher_check_can_write(publisher=found.publisher, actor=request.user)
        serializer = RevocationCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        row = revocations.revocation_create(
            catalog=found, actor=request.user, **serializer.validated_data
        )
        body = dict(self.get_serializer(row).data)
        body["list_url"] = request.build_absolute_uri(
            reverse("catalogs:revocations", kwargs={"publisher": publisher, "catalog": catalog})
        )
        return Response(body, status=status.HTTP_201_CREATED)


class FunctionCollisionsView(viewsets.ViewSet):
    """``/api/v1/functions/<id>/collisions/``: other catalogs defining the same GVK."""

    @extend_schema(responses={200: serializers.ListSerializer(child=serializers.DictField())})
    def list(self, request: Request, pk: int) -> Response:
        from django.shortcuts import get_object_or_404

        from catalogs.trust.collisions import function_collisions

        version = get_object_or_404(selectors.function_version_list(viewer=request.user), pk=pk)
        found = function_collisions(version=version, viewer=request.user)
        for item in found:
            item["function_url"] = request.build_absolute_uri(
                reverse("api:function-detail", kwargs={"pk": item["function_id"]})
            )
        return Response(found)


class SigningKeyViewSet(viewsets.GenericViewSet):
    """Every key the registry signs or signed with (public halves), the current one first."""

    serializer_class = SigningKeySerializer
    permission_classes = [AllowAny, TokenHasScope]

    def get_queryset(self):
        if not getattr(self, "swagger_fake_view", False):
            signing.signing_key_current()  # a key configured since the last publish shows too
        return signing.signing_key_list()

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


class PublisherKeySerializer(serializers.ModelSerializer):
    """A public key a publisher holds (its TUF key id and the PEM registered)."""

    class Meta:
        model = PublisherKey
        fields = ["keyid", "key", "public_key_pem", "created_at"]
        read_only_fields = fields


class PublisherKeyCreateSerializer(serializers.Serializer):
    """An ECDSA P-256 or ed25519 public key, PEM."""

    public_key = serializers.CharField(min_length=1, max_length=4000)


class PublisherKeyViewSet(viewsets.GenericViewSet):
    """``/api/v1/publishers/<publisher>/keys/``: anyone lists; owners and staff register one.

    Once a publisher holds a key, its TUF role is signed by its keys only: the registry serves
    the role the publisher uploads (``PUT …/tuf/<publisher>.json``) and never signs it.
    """

    serializer_class = PublisherKeySerializer
    pagination_class = None

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return PublisherKey.objects.none()
        publisher = selectors.publisher_get(slug=self.kwargs["publisher"], viewer=self.request.user)
        return PublisherKey.objects.filter(publisher=publisher)

    def list(self, request: Request, publisher: str) -> Response:
        return Response(self.get_serializer(self.get_queryset(), many=True).data)

    @extend_schema(request=PublisherKeyCreateSerializer, responses={201: PublisherKeySerializer})
    def create(self, request: Request, publisher: str) -> Response:
        from catalogs.publishing.services import publisher_check_can_write

        found = selectors.publisher_get(slug=publisher, viewer=request.user)
        publisher_check_can_write(publisher=found, actor=request.user)
        serializer = PublisherKeyCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        row = tuf.publisher_key_add(
            publisher=found,
            public_key_pem=serializer.validated_data["public_key"],
            actor=request.user,
        )
        return Response(self.get_serializer(row).data, status=status.HTTP_201_CREATED)


class RoleUploadedSerializer(serializers.Serializer):
    """The role accepted and the version now served."""

    role = serializers.CharField()
    version = serializers.IntegerField()


class PublisherRoleView(APIView):
    """``/api/v1/publishers/<publisher>/tuf/<publisher>.json``: GET the role as the registry
    would sign it now (unsigned: the next version, every target it serves for the publisher);
    PUT the same signed by the publisher's own key (owners and staff)."""

    parser_classes: list = []  # the body is read as bytes, exactly as signed

    def _publisher(self, publisher: str, role: str):
        found = selectors.publisher_get(slug=publisher, viewer=self.request.user)
        if role not in (found.slug, tuf.private_role(found.slug)):
            raise NotFoundError(
                f"Publisher '{publisher}' signs only its own roles '{publisher}' and "
                f"'{tuf.private_role(publisher)}'."
            )
        if role != found.slug and (
            not selectors.visible_to(viewer=self.request.user, private=True, publisher_id=found.pk)
            or not tuf.has_private_role(found)
        ):
            raise NotFoundError(f"No TUF role {role}: the publisher has no private catalogs.")
        return found

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, publisher: str, role: str) -> Response:
        found = self._publisher(publisher, role)
        services.tuf_repository_ensure()
        private = role != found.slug
        return Response(tuf.publisher_role_template(publisher=found, private=private).to_dict())

    @extend_schema(
        request={"application/json": OpenApiTypes.OBJECT}, responses={200: RoleUploadedSerializer}
    )
    def put(self, request: Request, publisher: str, role: str) -> Response:
        from catalogs.publishing.services import publisher_check_can_write

        found = self._publisher(publisher, role)
        publisher_check_can_write(publisher=found, actor=request.user)
        services.tuf_repository_ensure()
        uploaded = tuf.tuf_role_upload(
            publisher=found, data=request.body, private=role != found.slug
        )
        return Response({"role": uploaded.role, "version": uploaded.version})
