"""The navigation's inbox count, computed only when a template asks."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject


def inbox(request: HttpRequest) -> dict[str, Any]:
    """``inbox_unread``: the signed-in user's unread notifications (0 for anonymous)."""
    from catalogs.notifications.subscriptions import notification_unread_count

    user = getattr(request, "user", None)

    def count() -> int:
        if not getattr(user, "is_authenticated", False):
            return 0
        return notification_unread_count(user=user)  # type: ignore[arg-type]

    return {"inbox_unread": SimpleLazyObject(count)}
