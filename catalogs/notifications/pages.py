"""The inbox page (a user's notifications and subscriptions) and a publisher's webhooks page
(their delivery log)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_http_methods

from catalogs.notifications import services, subscriptions
from catalogs.pages import domain_errors, page_render
from catalogs.publishing import selectors

DELIVERIES_SHOWN = 20


@login_required
@require_http_methods(["GET", "POST"])
def inbox_page(request: HttpRequest) -> HttpResponse:
    """GET lists the inbox (unread first marked as such); POST marks everything read."""
    user = request.user
    if request.method == "POST":
        subscriptions.notification_mark_all_read(user=user)  # type: ignore[arg-type]
    context = {
        "notifications": subscriptions.notification_list(user=user)[:100],  # type: ignore[arg-type]
        "subscriptions": subscriptions.subscription_list(user=user),  # type: ignore[arg-type]
    }
    return page_render(request, "inbox.html", context)


@login_required
@domain_errors
def webhook_list_page(request: HttpRequest, slug: str) -> HttpResponse:
    """A publisher's webhooks and each one's latest deliveries (owners and staff)."""
    publisher = selectors.publisher_get(slug=slug)
    hooks = services.webhook_list(publisher=publisher, actor=request.user)  # type: ignore[arg-type]
    rows = [
        (hook, services.webhook_delivery_list(webhook=hook)[:DELIVERIES_SHOWN]) for hook in hooks
    ]
    context = {"publisher": publisher, "rows": rows, "shown": DELIVERIES_SHOWN}
    return page_render(request, "webhooks.html", context)
