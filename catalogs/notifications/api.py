"""``/api/v1/publishers/<p>/webhooks/``: a publisher's webhooks and their delivery log (owners)."""

from __future__ import annotations

import json

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from catalogs.accounts.auth import TokenHasScope
from catalogs.api.parsers import CatalogJSONParser
from catalogs.notifications import services, subscriptions
from catalogs.notifications.models import (
    Notification,
    Subscription,
    Webhook,
    WebhookDelivery,
    WebhookEventType,
)
from catalogs.publishing import selectors


class WebhookSerializer(serializers.ModelSerializer):
    """A webhook as listed: never its secret."""

    class Meta:
        model = Webhook
        fields = ["id", "url", "events", "created_at"]
        read_only_fields = fields


class WebhookCreateSerializer(serializers.Serializer):
    """A new webhook: where, the HMAC secret, and which events."""

    url = serializers.CharField(max_length=2000)
    secret = serializers.CharField(max_length=200, trim_whitespace=False)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=WebhookEventType.values),
        allow_empty=False,
        min_length=1,
    )


class WebhookDeliverySerializer(serializers.ModelSerializer):
    """One event sent to the webhook: its outcome, every attempt, and the CloudEvent sent."""

    event = serializers.SerializerMethodField()

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event_id",
            "event_type",
            "status",
            "attempts",
            "response_status",
            "response_excerpt",
            "error",
            "log",
            "created_at",
            "finished_at",
            "event",
        ]
        read_only_fields = fields

    def get_event(self, delivery: WebhookDelivery) -> dict:
        return json.loads(delivery.body)


class WebhookViewSet(viewsets.GenericViewSet):
    """Webhooks of a publisher: owners create, list, inspect and delete them."""

    permission_classes = [IsAuthenticated, TokenHasScope]
    parser_classes = [CatalogJSONParser]
    serializer_class = WebhookSerializer

    def get_queryset(self):
        return Webhook.objects.none()

    def _publisher(self, slug: str):
        return selectors.publisher_get(slug=slug)

    def list(self, request: Request, publisher: str) -> Response:
        hooks = services.webhook_list(publisher=self._publisher(publisher), actor=request.user)
        page = self.paginate_queryset(hooks)
        return self.get_paginated_response(WebhookSerializer(page, many=True).data)

    @extend_schema(request=WebhookCreateSerializer, responses={201: WebhookSerializer})
    def create(self, request: Request, publisher: str) -> Response:
        found = self._publisher(publisher)
        # Permission before the body: a non-owner learns nothing from validation errors.
        services.webhook_list(publisher=found, actor=request.user)
        form = WebhookCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        hook = services.webhook_create(publisher=found, actor=request.user, **form.validated_data)
        return Response(WebhookSerializer(hook).data, status=status.HTTP_201_CREATED)

    def retrieve(self, request: Request, publisher: str, pk: str) -> Response:
        hook = services.webhook_get(
            publisher=self._publisher(publisher), actor=request.user, pk=int(pk)
        )
        return Response(WebhookSerializer(hook).data)

    def destroy(self, request: Request, publisher: str, pk: str) -> Response:
        hook = services.webhook_get(
            publisher=self._publisher(publisher), actor=request.user, pk=int(pk)
        )
        services.webhook_delete(webhook=hook, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses=WebhookDeliverySerializer(many=True))
    def deliveries(self, request: Request, publisher: str, pk: str) -> Response:
        hook = services.webhook_get(
            publisher=self._publisher(publisher), actor=request.user, pk=int(pk)
        )
        page = self.paginate_queryset(services.webhook_delivery_list(webhook=hook))
        return self.get_paginated_response(WebhookDeliverySerializer(page, many=True).data)


class SubscriptionSerializer(serializers.ModelSerializer):
    """A subscription: to a catalog (``publisher/name``) or to a function (``group/kind``)."""

    catalog = serializers.SerializerMethodField()
    function = serializers.SerializerMethodField()

    class Meta:
        model = Subscription
        fields = ["id", "catalog", "function", "created_at"]
        read_only_fields = fields

    def get_catalog(self, sub: Subscription) -> str | None:
        return f"{sub.catalog.publisher.slug}/{sub.catalog.name}" if sub.catalog else None

    def get_function(self, sub: Subscription) -> str | None:
        return f"{sub.group}/{sub.kind}" if sub.catalog is None else None


class SubscriptionCreateSerializer(serializers.Serializer):
    """Either ``catalog`` or ``function``."""

    catalog = serializers.CharField(required=False, allow_blank=True)
    function = serializers.CharField(required=False, allow_blank=True)


class SubscriptionViewSet(viewsets.GenericViewSet):
    """Your subscriptions: follow a catalog or a function, and get told when it is published."""

    permission_classes = [IsAuthenticated, TokenHasScope]
    parser_classes = [CatalogJSONParser]
    serializer_class = SubscriptionSerializer
    pagination_class = None
    # Following is about the caller's own account: a read token may do it.
    token_scopes = {"create": "read", "destroy": "read"}

    def get_queryset(self):
        return Subscription.objects.none()

    def list(self, request: Request) -> Response:
        found = subscriptions.subscription_list(user=request.user)  # type: ignore[arg-type]
        return Response(SubscriptionSerializer(found, many=True).data)

    @extend_schema(request=SubscriptionCreateSerializer, responses={201: SubscriptionSerializer})
    def create(self, request: Request) -> Response:
        form = SubscriptionCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        catalog = None
        if form.validated_data.get("catalog"):
            publisher, _, name = form.validated_data["catalog"].partition("/")
            catalog = selectors.catalog_get(publisher_slug=publisher, name=name)
        sub = subscriptions.subscription_create(
            user=request.user,  # type: ignore[arg-type]
            catalog=catalog,
            function=form.validated_data.get("function", ""),
        )
        return Response(SubscriptionSerializer(sub).data, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, pk: str) -> Response:
        subscriptions.subscription_delete(user=request.user, pk=int(pk))  # type: ignore[arg-type]
        return Response(status=status.HTTP_204_NO_CONTENT)


class NotificationSerializer(serializers.ModelSerializer):
    """One inbox entry."""

    class Meta:
        model = Notification
        fields = ["id", "title", "url", "created_at", "read_at"]
        read_only_fields = fields


class NotificationViewSet(viewsets.GenericViewSet):
    """Your inbox: newest first, with the unread count; ``read/`` marks everything read."""

    permission_classes = [IsAuthenticated, TokenHasScope]
    parser_classes = [CatalogJSONParser]
    serializer_class = NotificationSerializer
    token_scopes = {"read_all": "read"}

    def get_queryset(self):
        return Notification.objects.none()

    def list(self, request: Request) -> Response:
        user = request.user
        page = self.paginate_queryset(subscriptions.notification_list(user=user))  # type: ignore[arg-type]
        response = self.get_paginated_response(NotificationSerializer(page, many=True).data)
        response.data["unread"] = subscriptions.notification_unread_count(user=user)  # type: ignore[arg-type,index]
        return response

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    def read_all(self, request: Request) -> Response:
        marked = subscriptions.notification_mark_all_read(user=request.user)  # type: ignore[arg-type]
        return Response({"marked_read": marked})
