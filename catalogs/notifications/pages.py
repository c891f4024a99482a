"""The inbox page: a user's notifications and subscriptions; reading it marks them read."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_http_methods

from catalogs.notifications import subscriptions
from catalogs.pages import page_render


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
