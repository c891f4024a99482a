"""The registry's URLs without ``/tuf/``: a registry of this kind from before it served TUF
metadata, for the tests of the rules ``krm`` keeps for such registries (cosign ``.sig`` files
and revocation lists checked with ``--catalog-key``)."""

from django.urls import URLPattern, URLResolver

from registry import urls

urlpatterns: list[URLPattern | URLResolver] = [
    p for p in urls.urlpatterns if not str(getattr(p, "pattern", "")).startswith("tuf/")
]
handler404 = urls.handler404
