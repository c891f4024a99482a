"""``/api/v1/publishers/<p>/robots/``: a publisher's robot accounts for CI (owners only)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from catalogs.accounts.auth import TokenHasScope
from catalogs.accounts.services import MAX_EXPIRES_IN_DAYS
from catalogs.api.parsers import CatalogJSONParser
from catalogs.publishing import publishers, selectors
from catalogs.publishing.models import PublisherRobot


class RobotTokenSerializer(serializers.Serializer):
    """One of a robot's tokens, without its secret."""

    name = serializers.CharField()
    hint = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    last_used_at = serializers.DateTimeField(allow_null=True)


class PublisherRobotSerializer(serializers.ModelSerializer):
    """A robot account: its name, the user name it signs in with, and its tokens."""

    username = serializers.CharField(source="user.username")
    tokens = RobotTokenSerializer(source="user.api_tokens", many=True)

    class Meta:
        model = PublisherRobot
        fields = ["name", "username", "created_at", "tokens"]
        read_only_fields = fields


class PublisherRobotCreateSerializer(serializers.Serializer):
    """A new robot: its name and the days its token lasts (null: until deleted)."""

    name = serializers.RegexField(
        r"^[a-z0-9-]{1,50}$",
        max_length=50,
        error_messages={"invalid": "1 to 50 lowercase letters, digits and hyphens."},
    )
    expires_in_days = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_EXPIRES_IN_DAYS
    )


class PublisherRobotCreatedSerializer(PublisherRobotSerializer):
    """A robot just created, with its token's secret (shown this once)."""

    token = serializers.CharField()

    class Meta(PublisherRobotSerializer.Meta):
        fields = [*PublisherRobotSerializer.Meta.fields, "token"]
        read_only_fields = fields


class PublisherRobotViewSet(viewsets.GenericViewSet):
    """Robot accounts publish to their publisher only; its owners create and delete them."""

    permission_classes = [IsAuthenticated, TokenHasScope]
    parser_classes = [CatalogJSONParser]
    serializer_class = PublisherRobotSerializer
    pagination_class = None

    def get_queryset(self):
        return PublisherRobot.objects.none()

    def list(self, request: Request, publisher: str) -> Response:
        found = selectors.publisher_get(slug=publisher)
        robots = publishers.publisher_robot_list(publisher=found, actor=request.user)
        return Response(PublisherRobotSerializer(robots, many=True).data)

    @extend_schema(
        request=PublisherRobotCreateSerializer, responses={201: PublisherRobotCreatedSerializer}
    )
    def create(self, request: Request, publisher: str) -> Response:
        found = selectors.publisher_get(slug=publisher)
        form = PublisherRobotCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        robot, secret = publishers.publisher_robot_create(
            publisher=found,
            actor=request.user,
            name=form.validated_data["name"],
            expires_in_days=form.validated_data.get("expires_in_days"),
        )
        body = dict(PublisherRobotSerializer(robot).data)
        body["token"] = secret
        return Response(body, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, publisher: str, name: str) -> Response:
        found = selectors.publisher_get(slug=publisher)
        publishers.publisher_robot_delete(publisher=found, actor=request.user, name=name)
        return Response(status=status.HTTP_204_NO_CONTENT)
