"""Publishers' webhooks and the log of every delivery."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class WebhookEventType(models.TextChoices):
    """The CloudEvents ``type`` values a webhook may subscribe to."""

    CATALOG_VERSION_PUBLISHED = "catalog.version.published", "A catalog version was published"
    CATALOG_REVOCATION_CREATED = "catalog.revocation.created", "A function was revoked"
    CONTRIBUTION_SUBMITTED = "contribution.submitted", "A contribution was submitted"
    CONTRIBUTION_DECIDED = (
        "contribution.decided",
        "A contribution was approved, rejected or had changes requested",
    )
    CONTRIBUTION_COMMENTED = "contribution.commented", "A contribution was commented on"
    MIRROR_RUN_FAILED = "mirror.run.failed", "A mirror sync run failed"
    MIRROR_DRIFT_DETECTED = "mirror.drift.detected", "An upstream tag a mirror follows moved"


class Webhook(models.Model):
    """A URL that receives a publisher's events, signed with its secret."""

    publisher = models.ForeignKey(
        "publishing.Publisher", on_delete=models.CASCADE, related_name="webhooks"
    )
    url = models.URLField(max_length=2000)
    # Kept as given: the registry signs every delivery with it (HMAC needs the key itself).
    secret = models.CharField(max_length=200)
    events = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"{self.publisher_id}:{self.url}"


class WebhookDelivery(models.Model):
    """One event sent (or being sent) to one webhook: the body, each attempt's outcome."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.UUIDField(default=uuid.uuid4)
    event_type = models.CharField(max_length=50, choices=WebhookEventType.choices)
    # The exact bytes sent (and signed): a retry sends them again.
    body = models.TextField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    response_excerpt = models.TextField(blank=True)
    error = models.TextField(blank=True)
    # Every attempt: {"at", "status", "excerpt", "error"}.
    log = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"{self.event_type} -> {self.webhook_id} ({self.status})"


class Subscription(models.Model):
    """A user follows a catalog (``catalog``) or a function in any catalog (``group``+``kind``)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="subscriptions"
    )
    catalog = models.ForeignKey(
        "publishing.Catalog",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="subscriptions",
    )
    group = models.CharField(max_length=253, blank=True)
    kind = models.CharField(max_length=253, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "catalog"],
                condition=models.Q(catalog__isnull=False),
                name="notifications_subscription_catalog",
            ),
            models.UniqueConstraint(
                fields=["user", "group", "kind"],
                condition=models.Q(catalog__isnull=True),
                name="notifications_subscription_function",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.catalog_id or f'{self.group}/{self.kind}'}"


class Notification(models.Model):
    """One entry of a user's in-app inbox (also sent by e-mail when the user has an address)."""

    class Reason(models.TextChoices):
        """Why the user gets it (the e-mail says so: "You get this because you …")."""

        FOLLOWING = "following", "follow it"
        TAKING_PART = "taking-part", "take part in this contribution"
        OPERATING = "operating", "operate this registry's mirrors"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    title = models.CharField(max_length=300)
    url = models.CharField(max_length=2000, blank=True)
    reason = models.CharField(max_length=20, choices=Reason.choices, default=Reason.FOLLOWING)
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return self.title
