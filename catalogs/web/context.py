"""Template context every page's layout needs, also on pages rendered outside our views
(sign-in, the 404 and 403 handlers)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject


def layout(request: HttpRequest) -> dict[str, Any]:
    """Who may see which navigation links; computed only when a template asks."""
    from catalogs.accounts import verification
    from catalogs.mirroring import services as mirrors
    from catalogs.publishing import publishers
    from catalogs.review import services as contributions

    user = getattr(request, "user", None)

    def is_operator() -> bool:
        # user_is_mirror_operator(None) means "the system"; a page always has a user.
        authenticated = getattr(user, "is_authenticated", False)
        return bool(authenticated and mirrors.user_is_mirror_operator(user))

    return {
        "is_reviewer": SimpleLazyObject(lambda: contributions.user_can_review(user=user)),
        "is_operator": SimpleLazyObject(is_operator),
        "signup_enabled": settings.SIGNUP_ENABLED,
        "docs_url": settings.DOCS_URL,
        "email_pending": SimpleLazyObject(
            lambda: verification.email_verification_pending(user=user) or ""
        ),
        "invitation_count": SimpleLazyObject(
            lambda: publishers.owner_invitation_list_pending(user=user).count()
        ),
    }
