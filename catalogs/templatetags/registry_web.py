"""Template helpers of the web UI."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def web_url(value: object) -> str:
    """``value`` if it is an http(s) URL, else "" (catalog text must never become javascript:)."""
    text = str(value or "")
    return text if text.lower().startswith(("https://", "http://")) else ""


@register.inclusion_tag("catalogs/partials/landing.html", takes_context=True)
def landing(context: template.Context) -> dict[str, object]:
    """The landing section above the search: for a signed-out visitor without a query only."""
    from django.urls import reverse

    from catalogs.publishing import selectors

    request = context.get("request")
    user = context.get("user")
    if request is None or request.GET or (user is not None and user.is_authenticated):
        return {"show": False}
    featured = list(selectors.catalog_list_featured(viewer=user))
    top_url = ""
    if featured:
        top = featured[0]
        top_url = request.build_absolute_uri(
            reverse(
                "catalogs:latest", kwargs={"publisher": top.publisher.slug, "catalog": top.name}
            )
        )
    return {
        "show": True,
        "featured": featured,
        "top": featured[0] if featured else None,
        "build_line": f"krm build . --trusted-catalog={top_url}" if top_url else "",
        "signup_enabled": context.get("signup_enabled"),
    }
