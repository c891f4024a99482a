"""Celery tasks of notifications: deliver a webhook event, retrying with exponential backoff."""

from __future__ import annotations

import time

from celery import shared_task

from catalogs.notifications import services


@shared_task(name="catalogs.tasks.webhook_delivery_send_task", bind=True)
def webhook_delivery_send_task(self, delivery_pk: int) -> str:
    """One attempt of delivery ``delivery_pk``; the next one is queued after the backoff."""
    delivery = services.webhook_delivery_get(pk=delivery_pk)
    delay = services.webhook_delivery_send(delivery=delivery)
    if delay is not None:
        if self.request.is_eager:
            # No broker to hold it (the embedded default runs jobs in a thread): wait here.
            time.sleep(delay)
            webhook_delivery_send_task.apply(args=(delivery_pk,), throw=True)
        else:
            webhook_delivery_send_task.apply_async((delivery_pk,), countdown=delay)
    return delivery.status


@shared_task(name="catalogs.tasks.notification_email_send_task")
def notification_email_send_task(notification_pk: int) -> bool:
    """E-mail notification ``notification_pk`` to its user (if they have an address)."""
    from catalogs.notifications import subscriptions
    from catalogs.notifications.models import Notification

    note = Notification.objects.select_related("user").get(pk=notification_pk)
    return subscriptions.notification_email_send(notification=note)
