"""Project-level views that belong to no domain app."""

from __future__ import annotations

from django.apps import apps
from django.http import Http404, HttpRequest, HttpResponsePermanentRedirect

# The apps that took over the models of the single catalogs app (their admin pages moved with them).
DOMAIN_APPS = ("publishing", "distribution", "trust", "mirroring", "review")


def admin_moved_model(request: HttpRequest, model: str, rest: str) -> HttpResponsePermanentRedirect:
    """``/admin/catalogs/<model>/…`` (bookmarks from before the domain apps) to the model's app."""
    for label in DOMAIN_APPS:
        if model in apps.all_models[label]:
            query = request.META.get("QUERY_STRING", "")
            target = f"/admin/{label}/{model}/{rest}" + (f"?{query}" if query else "")
            return HttpResponsePermanentRedirect(target)
    raise Http404("No such admin page.")
