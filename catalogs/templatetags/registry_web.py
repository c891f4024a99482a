"""Template helpers of the web UI."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def web_url(value: object) -> str:
    """``value`` if it is an http(s) URL, else "" (catalog text must never become javascript:)."""
    text = str(value or "")
    return text if text.lower().startswith(("https://", "http://")) else ""
