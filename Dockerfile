# Image for the registry: web (gunicorn), Celery worker and beat all run from it.
# Used by deploy/compose.yaml and deploy/k8s; not built in tests (no container runtime there).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    DJANGO_SETTINGS_MODULE=registry.settings.production

WORKDIR /app

# bubblewrap: the jail the worker runs contributed functions' trial runs in (catalogs/review/sandbox.py).
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*

# Dependencies first so code edits do not invalidate the pip layer.
COPY requirements.txt ./
RUN pip install -r requirements.txt

COPY . .
# Production serves hashed static files through WhiteNoise's manifest storage, collected here.
# The placeholder values only satisfy production.py's checks; collectstatic touches no database.
RUN pip install --no-deps -e . \
    && SECRET_KEY=collectstatic-only SIGNING_KEY_PEM=collectstatic-only ALLOWED_HOSTS=localhost \
       REGISTRY_PUBLIC_URL=http://localhost \
       DATABASE_URL=postgres://unused@localhost/unused CELERY_BROKER_URL=redis://localhost \
       python manage.py collectstatic --noinput \
    && useradd --system --uid 10001 --home-dir /app registry \
    && mkdir -p /app/var/media \
    && chown -R registry /app/var

USER 10001
EXPOSE 8000

# gunicorn takes its worker count from WEB_CONCURRENCY (set in the ConfigMap / compose file).
CMD ["gunicorn", "registry.wsgi:application", "--bind", "0.0.0.0:8000", "--access-logfile", "-"]
