"""WSGI entry point (gunicorn registry.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings.base")

application = get_wsgi_application()

# Imported once Django is set up: it reads the OCI endpoint's serving cache.
from catalogs.oci.wsgi import OciBlobFastPath  # noqa: E402

application = OciBlobFastPath(application)
