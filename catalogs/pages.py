"""What every web page of the registry shares: rendering a template of the site, and turning the
domain errors NotAllowedError and NotFoundError into 403 and 404 pages.

Below the apps: the layout's flags (reviewer, operator, sign-up) come from the context processor
``catalogs.web.context.layout``, so that rendering a page needs no app.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import render

from catalogs.exceptions import NotAllowedError, NotFoundError


def page_render(
    request: HttpRequest, template: str, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    """Render ``catalogs/<template>`` with the layout's context."""
    return render(request, f"catalogs/{template}", context, status=status)


def page_forbidden(request: HttpRequest, message: str) -> HttpResponse:
    """The 403 page with ``message``."""
    context = {"title": "Not allowed", "message": message, "status": 403}
    response = page_render(request, "error.html", context, 403)
    return HttpResponseForbidden(response.content)


def domain_errors(view: Callable) -> Callable:
    """Turn NotAllowedError and NotFoundError into 403 and 404 pages."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except NotAllowedError as err:
            return page_forbidden(request, err.message)
        except NotFoundError as err:
            raise Http404(err.message) from None

    return wrapper
