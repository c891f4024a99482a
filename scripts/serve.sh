#!/usr/bin/env bash
# Quick start: set up .venv, migrate, load the demo catalog and serve the registry on
# http://127.0.0.1:8000 (or KRM_ADDR=[host:]port) with the embedded default (SQLite, local file
# storage, Celery eager). The URLs the registry writes into documents and prints follow KRM_ADDR
# (settings.REGISTRY_PUBLIC_URL), unless REGISTRY_PUBLIC_URL is set.
# load_demo stores the demo functions' runtimes in the registry itself (the container image is
# built with umoci from busybox-static, both from scripts/system-packages.sh): every demo function
# page's snippets build offline with krm (the container one with --container-runtime builtin
# where there is no docker or podman).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export DJANGO_SETTINGS_MODULE="${DJANGO_SETTINGS_MODULE:-registry.settings.base}"
export KRM_ADDR="${KRM_ADDR:-127.0.0.1:8000}"
.venv/bin/python manage.py migrate --no-input
.venv/bin/python manage.py load_demo
url=$(.venv/bin/python manage.py shell -v0 -c 'from django.conf import settings; print(settings.REGISTRY_PUBLIC_URL)')
echo "==> registry on $url/ (demo catalog: $url/c/demo/functions/catalog.yaml)"
echo "==> first administrator: .venv/bin/python manage.py createsuperuser (then sign in at $url/admin/)"
exec .venv/bin/python manage.py runserver "$KRM_ADDR"
