#!/usr/bin/env bash
# Set up .venv with the test tools and run the whole test suite (embedded default: SQLite,
# eager Celery). Extra arguments go to pytest, e.g. scripts/test.sh -k catalog -x
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/system-packages.sh
scripts/bootstrap.sh dev
exec .venv/bin/pytest -n "${PYTEST_WORKERS:-2}" "$@"
