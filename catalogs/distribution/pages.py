"""The packages page of a repository: the kustomization trees pushed to it, with their files."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from catalogs.distribution.selectors import oci_package_list
from catalogs.pages import domain_errors, page_render
from catalogs.publishing import selectors


@domain_errors
def catalog_packages(request: HttpRequest, publisher: str, catalog: str) -> HttpResponse:
    """GET: every package (tags, digest, signature, files) and how to build one as a base."""
    cat = selectors.catalog_get(publisher_slug=publisher, name=catalog)
    host = urlsplit(settings.REGISTRY_PUBLIC_URL).netloc
    context = {
        "catalog": cat,
        "packages": oci_package_list(catalog=cat),
        "repository": f"oci://{host}/{cat.publisher.slug}/{cat.name}",
    }
    return page_render(request, "packages.html", context)
