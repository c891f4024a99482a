#!/usr/bin/env bash
# CI run on the scale-out stack: PostgreSQL + Redis + object storage + a real Celery worker.
# Starts an S3-compatible object store (moto's standalone server on loopback, a bucket in it) and
# the worker in the background with the test settings (STORAGE_BACKEND=s3: the tests, the worker
# and the web replicas the services tests start share no filesystem), waits until the worker
# answers a ping through the broker, runs `pytest -m services` and then the whole suite against
# PostgreSQL, and always stops the worker and the store. Extra arguments go to both pytest runs.
# Defaults match the CI machine (trust auth): override DATABASE_URL / CELERY_BROKER_URL to move.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=.venv/bin/python
export PYTHONUNBUFFERED=1
export DJANGO_SETTINGS_MODULE=registry.settings.test
export KRM_TEST_SERVICES=1
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
export CELERY_BROKER_URL="${CELERY_BROKER_URL:-redis://127.0.0.1:6379/0}"
export CELERY_RESULT_BACKEND="${CELERY_RESULT_BACKEND:-$CELERY_BROKER_URL}"
# One signing key for the tests and the worker (both sign catalog versions they publish).
export SIGNING_KEY_FILE="${SIGNING_KEY_FILE:-$(mktemp -d -t krm-ci-signing.XXXXXX)/signing-key.pem}"
# Every stored byte goes to the object store; MEDIA_ROOT (shared by nothing) stays empty.
S3_PORT="${S3_PORT:-$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
export STORAGE_BACKEND=s3
export AWS_S3_ENDPOINT_URL="http://127.0.0.1:$S3_PORT"
export AWS_STORAGE_BUCKET_NAME="${AWS_STORAGE_BUCKET_NAME:-krm-ci-services}"
export AWS_S3_REGION_NAME=us-east-1 AWS_S3_ACCESS_KEY_ID=testing AWS_S3_SECRET_ACCESS_KEY=testing
# The tests' S3 fixtures use this same server instead of starting their own.
export KRM_TEST_S3_ENDPOINT="$AWS_S3_ENDPOINT_URL"
export MEDIA_ROOT="${MEDIA_ROOT:-$(mktemp -d -t krm-ci-media.XXXXXX)}"
WORKER_NAME="ci-services-$$@$(hostname)"
# The services tests address this worker by name (KRM_TEST_WORKER).
export KRM_TEST_WORKER="$WORKER_NAME"
if [ -z "${WORKER_LOG:-}" ]; then
    WORKER_LOG="$(mktemp -t krm-ci-worker.XXXXXX.log)"
    REMOVE_LOG_ON_SUCCESS=1
fi
READY_TIMEOUT="${READY_TIMEOUT:-60}"

echo "::: services: checking PostgreSQL and Redis"
"$PY" - <<'EOF'
import os
import sys

import psycopg
import redis

try:
    # The test database itself may not exist yet (pytest-django creates it): use the server's.
    psycopg.connect(os.environ["DATABASE_URL"], dbname="postgres", connect_timeout=5).close()
except psycopg.Error as exc:
    sys.exit(f"PostgreSQL is not reachable at {os.environ['DATABASE_URL']}: {exc}")
try:
    redis.Redis.from_url(os.environ["CELERY_BROKER_URL"], socket_timeout=5).ping()
except redis.RedisError as exc:
    sys.exit(f"Redis is not reachable at {os.environ['CELERY_BROKER_URL']}: {exc}")
EOF

echo "::: services: starting the object store (moto S3 server on port $S3_PORT)"
S3_STARTED=$(date +%s.%N)
"$PY" -m moto.server -H 127.0.0.1 -p "$S3_PORT" >/dev/null 2>"${WORKER_LOG}.s3" &
S3_PID=$!
stop_s3() {
    if kill -0 "$S3_PID" 2>/dev/null; then
        kill -TERM "$S3_PID"
        wait "$S3_PID" 2>/dev/null || true
    fi
}
trap stop_s3 EXIT
if ! S3_PID="$S3_PID" "$PY" - <<'EOF'
import os
import sys
import time

import boto3
import httpx

url, pid = os.environ["AWS_S3_ENDPOINT_URL"], int(os.environ["S3_PID"])
deadline = time.monotonic() + 60
while True:
    try:
        httpx.get(f"{url}/moto-api/", timeout=1)
        break
    except httpx.TransportError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            sys.exit("the moto S3 server exited before it was ready")
        if time.monotonic() > deadline:
            sys.exit(f"the moto S3 server did not answer at {url} within 60s")
        time.sleep(0.1)
boto3.client(
    "s3",
    endpoint_url=url,
    region_name=os.environ["AWS_S3_REGION_NAME"],
    aws_access_key_id=os.environ["AWS_S3_ACCESS_KEY_ID"],
    aws_secret_access_key=os.environ["AWS_S3_SECRET_ACCESS_KEY"],
).create_bucket(Bucket=os.environ["AWS_STORAGE_BUCKET_NAME"])
print(f"object store ready at {url}, bucket {os.environ['AWS_STORAGE_BUCKET_NAME']}")
EOF
then
    cat "${WORKER_LOG}.s3"
    exit 1
fi
echo "::: services: object store up in $("$PY" -c "import time; print(round(time.time() - $S3_STARTED, 1))")s"

echo "::: services: starting celery worker $WORKER_NAME (log: $WORKER_LOG)"
# --purge drops messages left in the queue by an earlier, interrupted run.
.venv/bin/celery -A registry worker --loglevel INFO --concurrency 2 --hostname "$WORKER_NAME" \
    --purge --without-gossip --without-mingle >"$WORKER_LOG" 2>&1 &
WORKER_PID=$!

stop_worker() {
    if kill -0 "$WORKER_PID" 2>/dev/null; then
        echo "::: services: stopping celery worker (pid $WORKER_PID)"
        kill -TERM "$WORKER_PID"
        # Warm shutdown finishes running tasks; do not wait forever for a stuck one.
        for _ in $(seq 1 30); do
            kill -0 "$WORKER_PID" 2>/dev/null || break
            sleep 1
        done
        if kill -0 "$WORKER_PID" 2>/dev/null; then
            kill -KILL "$WORKER_PID"
        fi
        wait "$WORKER_PID" 2>/dev/null || true
    fi
}
trap 'stop_worker; stop_s3' EXIT

echo "::: services: waiting for the worker to answer through the broker"
if ! WORKER_NAME="$WORKER_NAME" WORKER_PID="$WORKER_PID" READY_TIMEOUT="$READY_TIMEOUT" \
    "$PY" - <<'EOF'
import os
import sys
import time

from registry.celery import app

name, pid = os.environ["WORKER_NAME"], int(os.environ["WORKER_PID"])
deadline = time.monotonic() + int(os.environ["READY_TIMEOUT"])
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("celery worker exited before it was ready; see its log above")
    if app.control.ping(destination=[name], timeout=1.0):
        print(f"worker {name} is ready")
        sys.exit(0)
sys.exit(f"celery worker {name} did not answer a ping within {os.environ['READY_TIMEOUT']}s")
EOF
then
    cat "$WORKER_LOG"
    exit 1
fi

# No -n: every pytest process must share the one test database the worker is configured with.
echo "::: services: pytest -m services"
set +e
.venv/bin/pytest -m services "$@"
services_status=$?
echo "::: services: the whole suite on PostgreSQL + Redis + object storage"
# The replica tests (their own gunicorns and worker) ran above: not twice. The engine's tests
# (tests/orchestrator, the conformance corpus, real-world trees) import no Django and touch no
# database, store or worker: CI's first stage ran them, this stage has nothing to add to them.
suite_args=("$@")
if [ "$#" -eq 0 ]; then
    suite_args=(--ignore=tests/orchestrator --ignore=tests/test_conformance.py
        --ignore=tests/realworld)
fi
.venv/bin/pytest -m "not replicas" "${suite_args[@]}"
suite_status=$?
set -e

if [ "$services_status" -ne 0 ] || [ "$suite_status" -ne 0 ]; then
    echo "::: services: failed (services tests: $services_status, whole suite: $suite_status);" \
        "worker log follows"
    tail -n 200 "$WORKER_LOG"
    exit 1
fi
echo "::: services: passed"
if [ "${REMOVE_LOG_ON_SUCCESS:-0}" = 1 ]; then
    stop_worker
    rm -f "$WORKER_LOG" "${WORKER_LOG}.s3"
fi
