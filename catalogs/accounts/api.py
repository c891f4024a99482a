"""``/api/v1/tokens/``: list, create (the secret is in the answer once) and delete your tokens."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from catalogs.accounts import selectors, services
from catalogs.accounts.auth import TokenHasScope
from catalogs.accounts.models import ALL_SCOPES, ApiToken
from catalogs.api.parsers import CatalogJSONParser


class ApiTokenSerializer(serializers.ModelSerializer):
    """A token as listed: never its secret, only its first characters (``hint``)."""

    class Meta:
        model = ApiToken
        fields = ["id", "name", "hint", "scopes", "created_at", "expires_at", "last_used_at"]
        read_only_fields = fields


class ApiTokenCreateSerializer(serializers.Serializer):
    """What a new token needs: a name, its scopes, and days until it expires (null: never)."""

    # No blank name, no spaces around it (the schema says so with the pattern).
    name = serializers.RegexField(
        r"^\S(?:.{0,98}\S)?$",
        max_length=100,
        error_messages={"invalid": "1 to 100 characters, not starting or ending with a space."},
    )
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=list(ALL_SCOPES)), allow_empty=False, min_length=1
    )
    expires_in_days = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=services.MAX_EXPIRES_IN_DAYS
    )


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    """A token just created: with its secret, shown this once."""

    token = serializers.CharField()

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "token"]
        read_only_fields = fields


class ApiTokenViewSet(viewsets.GenericViewSet):
    """Your API tokens. Managing them needs no particular scope, but a token can create only
    tokens with scopes it has itself."""

    permission_classes = [IsAuthenticated, TokenHasScope]
    parser_classes = [CatalogJSONParser]
    serializer_class = ApiTokenSerializer
    pagination_class = None
    # Creating or deleting a token is account management, open to a token of any scope (bounded
    # by granted_by above); a read-only token can still see and delete tokens.
    token_scopes = {"create": "read", "destroy": "read"}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return ApiToken.objects.none()
        return selectors.api_token_list(user=self.request.user)  # type: ignore[arg-type]

    def list(self, request: Request) -> Response:
        return Response(ApiTokenSerializer(self.get_queryset(), many=True).data)

    @extend_schema(request=ApiTokenCreateSerializer, responses={201: ApiTokenCreatedSerializer})
    def create(self, request: Request) -> Response:
        form = ApiTokenCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        granted_by = request.auth if isinstance(request.auth, ApiToken) else None
        token, secret = services.api_token_create(
            user=request.user,  # type: ignore[arg-type]
            name=form.validated_data["name"],
            scopes=form.validated_data["scopes"],
            expires_in_days=form.validated_data.get("expires_in_days"),
            granted_by=granted_by,
        )
        body = dict(ApiTokenSerializer(token).data)
        body["token"] = secret
        return Response(body, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, pk: str) -> Response:
        services.api_token_delete(user=request.user, pk=int(pk))  # type: ignore[arg-type]
        return Response(status=status.HTTP_204_NO_CONTENT)
