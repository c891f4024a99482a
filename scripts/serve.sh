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
# The development signing key lives outside the tree (KRM_DATA_DIR); move one an older checkout
# left in the repository root, so that it never ends up in an image or a commit.
data_dir="${KRM_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/krm-registry}"
if [[ -z "${SIGNING_KEY_FILE:-}" && -f signing-key.pem && ! -e "$data_dir/signing-key.pem" ]]; then
  mkdir -p -m 700 "$data_dir" && mv signing-key.pem "$data_dir/signing-key.pem"
  echo "==> moved ./signing-key.pem to $data_dir/signing-key.pem (KRM_DATA_DIR)"
fi
.venv/bin/python manage.py migrate --no-input
.venv/bin/python manage.py load_demo
url=$(.venv/bin/python manage.py shell -v0 -c 'from django.conf import settings; print(settings.REGISTRY_PUBLIC_URL)')
echo "==> registry on $url/ (demo catalog: $url/c/demo/functions/catalog.yaml)"
echo "==> first administrator: .venv/bin/python manage.py createsuperuser (then sign in at $url/admin/)"
exec .venv/bin/python manage.py runserver "$KRM_ADDR"
