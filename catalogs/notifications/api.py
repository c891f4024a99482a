"""``/api/v1/publishers/<p>/webhooks/``: a publisher's webhooks and their delivery log (owners)."""

from __future__ import annotations

import json

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from catalogs.accounts.auth import TokenHasScope
from catalogs.notifications import services
from catalogs.notifications.models import Webhook, WebhookDelivery, WebhookEventType
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
    secret = serializers.CharField(max_length=200)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=WebhookEventType.values), allow_empty=False
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
