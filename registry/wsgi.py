"""WSGI entry point (gunicorn registry.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings.base")

application = get_wsgi_application()
