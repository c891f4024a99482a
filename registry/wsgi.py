"""WSGI entry point (gunicorn registry.wsgi)."""

import os
from collections.abc import Callable, Iterable

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings.base")

application: Callable[..., Iterable[bytes]] = get_wsgi_application()

# Imported once Django is set up: it reads the OCI endpoint's serving cache.
from catalogs.distribution.wsgi import OciBlobFastPath  # noqa: E402
from registry.metrics import count_oci_blob_fast_path  # noqa: E402

application = OciBlobFastPath(application, on_served=count_oci_blob_fast_path)
