#!/usr/bin/env bash
# Quick start: set up .venv, migrate, load the demo catalog and serve the registry on
# http://127.0.0.1:8000 with the embedded default (SQLite, local file storage, Celery eager).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export DJANGO_SETTINGS_MODULE="${DJANGO_SETTINGS_MODULE:-registry.settings.base}"
.venv/bin/python manage.py migrate --no-input
.venv/bin/python manage.py load_demo
echo "==> registry on http://${KRM_ADDR:-127.0.0.1:8000}/ (demo catalog: /c/demo/functions/catalog.yaml)"
exec .venv/bin/python manage.py runserver "${KRM_ADDR:-127.0.0.1:8000}"
