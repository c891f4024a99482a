"""Base settings: every variable has a safe development default (SQLite, eager Celery, local files).

Environment variables: DEBUG, SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL, CELERY_BROKER_URL,
CELERY_RESULT_BACKEND, CATALOG_MAX_BYTES, CATALOG_LATEST_MAX_AGE, REGISTRY_PUBLIC_URL, KRM_ADDR,
SIGNING_KEY_PEM, SIGNING_KEY_FILE, SIGNING_KEY_CREATE, KRM_DATA_DIR, SIGNING_OCI_ARTIFACTS,
CACHE_URL, CATALOG_SERVING_CACHE_SECONDS, SERVE_X_ACCEL_REDIRECT.
"""

import ipaddress
import os
import warnings
from pathlib import Path
from typing import Any

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()


def env_int(name: str, default: int) -> int:
    """Integer variable ``name``, with an error that names it when it is not a whole number."""
    raw = env.str(name, default=str(default))
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}.") from None


DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env(
    "SECRET_KEY", default="django-insecure-development-only-never-use-this-key-in-production"
)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "axes",
    "catalogs",
    "catalogs.accounts",
    "catalogs.publishing",
    "catalogs.distribution",
    "catalogs.trust",
    "catalogs.mirroring",
    "catalogs.review",
    "catalogs.discovery",
    "catalogs.notifications",
]

MIDDLEWARE = [
    # /metrics, and the request counters (first, so that every answer is counted).
    "registry.metrics.MetricsMiddleware",
    # /healthz and /readyz, answered before host checks and redirects (probes use the pod IP).
    "registry.health.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every answer (django-csp; CONTENT_SECURITY_POLICY below).
    "csp.middleware.CSPMiddleware",
    "catalogs.middleware.RequestBodyLimitMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "catalogs.middleware.UnavailableMiddleware",
    # Sign-in throttling (django-axes): last, as its documentation asks.
    "axes.middleware.AxesMiddleware",
]

# Every password sign-in (the site's and the admin's) goes through django-axes first, then the
# sign-in gate (catalogs/accounts/login_gate.py: LOGIN_CHECKS_PER_ADDRESS below), then the hash.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "catalogs.accounts.login_gate.GatedModelBackend",
]

# The pages load scripts, styles, images and fonts from this site only, run no inline script or
# style and are framed by nobody; forms post only here. The API docs page adds the hash of
# Swagger UI's one <style> (registry/urls.py).
CONTENT_SECURITY_POLICY = {
    # Documents and blobs (catalog YAML, OCI) are no pages; their fast paths send no policy.
    "EXCLUDE_URL_PREFIXES": ["/c/", "/v2/"],
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    },
}

ROOT_URLCONF = "registry.urls"
WSGI_APPLICATION = "registry.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "catalogs.web.context.layout",
                "catalogs.notifications.context.inbox",
            ],
        },
    },
]

# The embedded default is ./db.sqlite3 (git-ignored); DATABASE_URL switches to PostgreSQL.
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
DATABASES["default"].setdefault("CONN_MAX_AGE", env_int("CONN_MAX_AGE", 0))
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Writers take the lock when their transaction starts and wait for it, instead of failing
    # with "database is locked" when two publishes overlap (runserver serves requests in threads).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": env_int("SQLITE_TIMEOUT", 20)}
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
MEDIA_URL = "media/"
MEDIA_ROOT = env.path("MEDIA_ROOT", default=str(BASE_DIR / "media"))
# Where trial runs of contributions keep downloaded runtimes (verified by sha256).
# Run contributed functions in the trial sandbox when a contribution arrives
# (catalogs/review/trials.py).
TRIAL_RUNS_ENABLED = env.bool("TRIAL_RUNS_ENABLED", default=True)
TRIAL_CACHE_DIR = env.path("TRIAL_CACHE_DIR", default=str(Path(MEDIA_ROOT) / "trial-cache"))
# The housekeeping queue prunes that cache (least recently changed entries first) to this size
# every 15 minutes, sparing entries younger than the grace (a trial may be using them).
TRIAL_CACHE_MAX_BYTES = env_int("TRIAL_CACHE_MAX_BYTES", 1024 * 1024 * 1024)
TRIAL_CACHE_GRACE_MINUTES = env_int("TRIAL_CACHE_GRACE_MINUTES", 60)
# Trial runs fetch runtimes and examples from public addresses only (any publisher owner starts
# them): private, loopback and link-local ones only inside these networks (CIDRs). Independent
# of MIRROR_ALLOWED_NETWORKS.
TRIAL_ALLOWED_NETWORKS = env.list("TRIAL_ALLOWED_NETWORKS", default=[])
# Per user: contributions waiting for review at once, and contributions (and resubmissions) per
# window, in the `limits` notation ("30/hour"; empty: no limit). Both answer 429.
CONTRIBUTIONS_PENDING_PER_USER = env_int("CONTRIBUTIONS_PENDING_PER_USER", 20)
CONTRIBUTION_RATE_LIMIT = env("CONTRIBUTION_RATE_LIMIT", default="30/hour")
for _network in TRIAL_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"TRIAL_ALLOWED_NETWORKS: {_network!r} is not an IP address or network."
        ) from None
# E-mail (the notices of users' subscriptions), as django-environ reads EMAIL_URL: the embedded
# default prints them on the console; in production e.g. smtp+tls://user:password@smtp.example:587.
globals().update(env.email_url("EMAIL_URL", default="consolemail://"))
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="krm-registry@localhost")

# Webhooks (catalogs/notifications): deliveries connect to public addresses only, and to private,
# loopback or link-local ones inside these networks (CIDRs), as MIRROR_ALLOWED_NETWORKS does for
# mirrors. Each attempt waits WEBHOOK_TIMEOUT_SECONDS at most; a failed one is retried after
# WEBHOOK_RETRY_BASE_SECONDS, doubling each time up to WEBHOOK_RETRY_MAX_SECONDS, until
# WEBHOOK_MAX_ATTEMPTS attempts.
WEBHOOK_ALLOWED_NETWORKS = env.list("WEBHOOK_ALLOWED_NETWORKS", default=[])
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 10)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 5)
WEBHOOK_RETRY_BASE_SECONDS = env_int("WEBHOOK_RETRY_BASE_SECONDS", 10)
WEBHOOK_RETRY_MAX_SECONDS = env_int("WEBHOOK_RETRY_MAX_SECONDS", 3600)
for _network in WEBHOOK_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"WEBHOOK_ALLOWED_NETWORKS: {_network!r} is not an IP address or network."
        ) from None
STORAGES: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# STORAGE_BACKEND=s3 keeps every stored file (mirrored runtime artifacts) in an
# S3-compatible object store through django-storages; the default "local" uses MEDIA_ROOT.
STORAGE_BACKEND = env("STORAGE_BACKEND", default="local")
if STORAGE_BACKEND == "s3":
    _bucket = env("AWS_STORAGE_BUCKET_NAME", default="")
    if not _bucket:
        raise ImproperlyConfigured("STORAGE_BACKEND=s3 needs AWS_STORAGE_BUCKET_NAME.")
    STORAGES["default"] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": _bucket,
            # Empty values fall back to boto3's own lookup (instance role, AWS_* variables).
            "endpoint_url": env("AWS_S3_ENDPOINT_URL", default="") or None,
            "region_name": env("AWS_S3_REGION_NAME", default="") or None,
            "access_key": env("AWS_S3_ACCESS_KEY_ID", default="") or None,
            "secret_key": env("AWS_S3_SECRET_ACCESS_KEY", default="") or None,
            "location": env("AWS_S3_PREFIX", default=""),
            "addressing_style": env("AWS_S3_ADDRESSING_STYLE", default="") or None,
            "default_acl": None,
            # Blob names are content addresses: the same name always holds the same bytes.
            "file_overwrite": True,
        },
    }
elif STORAGE_BACKEND != "local":
    raise ImproperlyConfigured(f"STORAGE_BACKEND must be 'local' or 's3', got {STORAGE_BACKEND!r}.")
# Serve static files (admin, offline Swagger UI) straight from the apps, so the quick start needs
# no collectstatic; production turns this off and serves the collected, hashed files.
WHITENOISE_USE_FINDERS = env.bool("WHITENOISE_USE_FINDERS", default=True)
# Before collectstatic, STATIC_ROOT does not exist; with finders on, that is expected.
warnings.filterwarnings("ignore", message=r"No directory at: .*staticfiles")

# CACHE_URL (e.g. redis://host:6379/2) shares one cache between every web process and worker, so
# what one invalidates (a publish, an API write) no other serves stale; the embedded default keeps a
# per-process memory cache.
CACHES = {"default": env.cache_url("CACHE_URL", default="locmemcache://")}
# The serving cache (catalogs.publishing.serving: which version `latest` is, signatures): same
# place, own
# key prefix (and its own memory store when process-local).
CACHES["serving"] = {**CACHES["default"], "KEY_PREFIX": "krm-serving"}
_CACHE_SHARED = "locmem" not in CACHES["default"]["BACKEND"].lower()
if not _CACHE_SHARED:
    CACHES["serving"]["LOCATION"] = "krm-serving"
# Seconds a web process trusts the serving cache for what can change (`latest`, a signature).
# Publishes and re-signs rewrite the entries, but only a shared cache (CACHE_URL) carries that to
# the other processes: with the per-process default, 0 (ask the database every time).
CATALOG_SERVING_CACHE_SECONDS = env_int(
    "CATALOG_SERVING_CACHE_SECONDS", 300 if _CACHE_SHARED else 0
)

# Pull counting (catalogs.publishing.pulls): each process counts pulls in memory and adds them to
# the database every USAGE_FLUSH_SECONDS (0: only when asked, as the tests do), or sooner once
# USAGE_FLUSH_THRESHOLD are waiting. USAGE_CATALOG_PULLS_FROM_PROXY: nginx logs every /c/ pull
# and `manage.py pulls_collect` counts them from its log (deploy/nginx), so the registry does not.
USAGE_FLUSH_SECONDS = env_int("USAGE_FLUSH_SECONDS", 5)
USAGE_FLUSH_THRESHOLD = env_int("USAGE_FLUSH_THRESHOLD", 10_000)
USAGE_CATALOG_PULLS_FROM_PROXY = env.bool("USAGE_CATALOG_PULLS_FROM_PROXY", default=False)

# Celery: with no broker configured, tasks run eagerly in the calling process.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="")
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", default="")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
# With eager tasks, long jobs (trial runs) run in a thread of the web process, not in the
# request that queued them (a contribution is answered at once, its trials follow).
EAGER_JOBS_IN_BACKGROUND = env.bool("EAGER_JOBS_IN_BACKGROUND", default=True)
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "memory://"
if not CELERY_RESULT_BACKEND:
    CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
# Separate queues, so that a flood of one kind of job does not starve another: trial runs of
# contributions, mirror syncs, housekeeping (storage GC), and "celery" for the rest. A worker
# started without -Q takes jobs from all four; dedicated ones take one each, e.g.
#   celery -A registry worker -Q mirroring --concurrency 4
#   celery -A registry worker -Q trials --concurrency 1 --max-tasks-per-child 50
#   celery -A registry worker -Q housekeeping,celery --concurrency 1
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES: dict[str, dict[str, str]] = {
    name: {} for name in ("celery", "trials", "mirroring", "housekeeping")
}
CELERY_TASK_ROUTES = {
    "catalogs.tasks.contribution_trials_run_task": {"queue": "trials"},
    "catalogs.tasks.mirror_source_sync_task": {"queue": "mirroring"},
    "catalogs.tasks.mirror_sources_sync_due_task": {"queue": "mirroring"},
    "catalogs.tasks.blobs_garbage_collect_task": {"queue": "housekeeping"},
    "catalogs.tasks.oci_uploads_gc_task": {"queue": "housekeeping"},
    "catalogs.tasks.trial_cache_prune_task": {"queue": "housekeeping"},
}

REST_FRAMEWORK = {
    # Token first: a request without (valid) credentials gets 401 with "WWW-Authenticate: Token"
    # (DRF takes the challenge from the first class); a signed-in user who may not act gets 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "catalogs.accounts.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # A token request also needs the scope of its method and action (catalogs/accounts/auth.py).
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticatedOrReadOnly",
        "catalogs.accounts.auth.TokenHasScope",
    ],
    # Bounded memory and nesting for JSON bodies (catalogs.api.parsers), on every endpoint.
    "DEFAULT_PARSER_CLASSES": [
        "catalogs.api.parsers.CatalogJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "catalogs.api.pagination.StandardPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "catalogs.api.handlers.exception_handler",
}

# API list pages are cached until a write (catalogs/api/cache.py): "auto" caches them when
# CACHE_URL names a cache every process shares, "on" always (one process), "off" never.
API_LIST_CACHE = env.str("API_LIST_CACHE", default="auto").lower()
if API_LIST_CACHE not in ("auto", "on", "off"):
    raise ImproperlyConfigured(f"API_LIST_CACHE must be auto, on or off, not {API_LIST_CACHE!r}.")
API_LIST_CACHE_SECONDS = env_int("API_LIST_CACHE_SECONDS", 300)

SPECTACULAR_SETTINGS = {
    "TITLE": "KRM Catalog Registry API",
    "DESCRIPTION": "Publish, version and search catalogs of KRM functions (KEP-2906).",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Public like the rest of the API, and a token still needs its read scope.
    "SERVE_PERMISSIONS": [
        "rest_framework.permissions.AllowAny",
        "catalogs.accounts.auth.TokenHasScope",
    ],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Two choice sets share the field name "status": name each (StatusEnum as it was before).
    # The refusals every operation can answer (catalogs.api.schema), after the enum hook.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "catalogs.api.schema.add_problem_responses",
        "catalogs.api.schema.forbid_nul_in_inputs",
        "catalogs.api.schema.empty_query_choices_mean_any",
    ],
    "ENUM_NAME_OVERRIDES": {
        "StatusEnum": "catalogs.mirroring.models.SyncRun.Status",
        "ContributionStatusEnum": "catalogs.review.models.ContributionStatus",
    },
}

# The registry's own limits and URLs.
CATALOG_MAX_BYTES = env_int("CATALOG_MAX_BYTES", 5 * 1024 * 1024)
# One limit drives every request body: twice CATALOG_MAX_BYTES (a JSON-escaped catalog), enforced
# by catalogs.middleware.RequestBodyLimitMiddleware (413 naming the limit, chunked bodies too);
# Django's own check (a bare 400) then only bounds the non-file fields of multipart forms.
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * CATALOG_MAX_BYTES
# Seconds a client is told to wait (Retry-After) when the database is busy (SQLite write lock).
DATABASE_BUSY_RETRY_AFTER = env_int("DATABASE_BUSY_RETRY_AFTER", 2)
CATALOG_LATEST_MAX_AGE = env_int("CATALOG_LATEST_MAX_AGE", 60)
# Bytes of catalog versions (and uploaded OCI blobs) one publisher's catalogs may hold when its
# users publish (429 past it; imports, mirrors and staff are not held to it).
PUBLISHER_STORAGE_MAX_BYTES = env_int("PUBLISHER_STORAGE_MAX_BYTES", 2 * 1024 * 1024 * 1024)
# Functions per page of a catalog's web page (its trust view and function list).
CATALOG_PAGE_FUNCTIONS = env_int("CATALOG_PAGE_FUNCTIONS", 100)
# With nginx in front (deploy/nginx/) and local storage: the internal location prefix under which
# nginx sends stored files itself (e.g. /_krm_media/, an alias of MEDIA_ROOT); the registry then
# answers blob downloads with X-Accel-Redirect and no body. Empty: Django streams them.
SERVE_X_ACCEL_REDIRECT = env("SERVE_X_ACCEL_REDIRECT", default="")


def public_url_from_addr(addr: str) -> str:
    """``http://host:port`` of runserver's ``[host:]port`` (all interfaces -> this machine)."""
    host, _, port = addr.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port or '8000'}"


# Where people and `krm` reach this registry: the base of every absolute URL written into a
# document (mirrored runtime `uri`s) or printed by a command. The quick start derives it from
# KRM_ADDR, where scripts/serve.sh serves; production requires it.
REGISTRY_PUBLIC_URL = env(
    "REGISTRY_PUBLIC_URL", default=public_url_from_addr(env("KRM_ADDR", default="127.0.0.1:8000"))
).rstrip("/")

# /metrics (Prometheus) answers these addresses (IPs or CIDRs), or a request with
# "Authorization: Bearer <METRICS_TOKEN>" when that is set. PROMETHEUS_MULTIPROC_DIR (read by
# prometheus-client) makes N gunicorn processes report their request counters together.
METRICS_ALLOWED_IPS = env.list("METRICS_ALLOWED_IPS", default=["127.0.0.1/32", "::1/128"])
METRICS_TOKEN = env("METRICS_TOKEN", default="")
for _network in METRICS_ALLOWED_IPS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"METRICS_ALLOWED_IPS: {_network!r} is not an IP address or network."
        ) from None

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
}

# --- Mirroring: sources fetched over HTTPS, Git and OCI, verified, served locally. ---
# Largest catalog document and largest runtime artifact a sync downloads.
MIRROR_MAX_BYTES = env_int("MIRROR_MAX_BYTES", CATALOG_MAX_BYTES)
MIRROR_ARTIFACT_MAX_BYTES = env_int("MIRROR_ARTIFACT_MAX_BYTES", 256 * 1024 * 1024)
# Largest container image a sync mirrors: configs and layers of all its platforms together.
MIRROR_IMAGE_MAX_BYTES = env_int("MIRROR_IMAGE_MAX_BYTES", 1024 * 1024 * 1024)
MIRROR_TIMEOUT = float(env("MIRROR_TIMEOUT", default="30"))
MIRROR_MAX_REDIRECTS = env_int("MIRROR_MAX_REDIRECTS", 5)
# Runtime artifacts a sync downloads at the same time (one pooled HTTPS client).
MIRROR_DOWNLOAD_CONCURRENCY = env_int("MIRROR_DOWNLOAD_CONCURRENCY", 4)
# Hosts a source (and every redirect) may point at; "*" allows any public host.
MIRROR_ALLOWED_HOSTS = env.list("MIRROR_ALLOWED_HOSTS", default=["*"])
# Private, loopback and link-local destinations are refused unless listed here (CIDRs).
MIRROR_ALLOWED_NETWORKS = env.list("MIRROR_ALLOWED_NETWORKS", default=[])
# Local git paths and file:// URLs read this machine's disk: off unless an operator opts in.
MIRROR_ALLOW_LOCAL_PATHS = env.bool("MIRROR_ALLOW_LOCAL_PATHS", default=False)
# OCI registries reached over plain HTTP (host:port), e.g. a registry on the operator's LAN.
MIRROR_OCI_PLAIN_HTTP_HOSTS = env.list("MIRROR_OCI_PLAIN_HTTP_HOSTS", default=[])
# CA bundle for HTTPS and OCI fetches; empty means the system's trust store (certifi).
MIRROR_CA_BUNDLE = env("MIRROR_CA_BUNDLE", default="")
# Sigstore trusted root (JSON); empty means sigstore's embedded production root, offline.
MIRROR_SIGSTORE_TRUSTED_ROOT = env("MIRROR_SIGSTORE_TRUSTED_ROOT", default="")
# Publisher under which mirrored catalogs are served; created on first use, reserved.
MIRROR_PUBLISHER_SLUG = env("MIRROR_PUBLISHER_SLUG", default="mirrors")
# Credentials for mirror upstreams, per host (or host:port), as JSON, e.g.
# {"git.example.co": {"username": "bot", "password": "..."}, "ghcr.io": {"token": "..."}}.
# Never put them in a source URL: sources, runs and pages would show them.
MIRROR_CREDENTIALS = env.json("MIRROR_CREDENTIALS", default={})
# A netrc file (machine <host> login <user> password <token>) whose entries the https, git over
# https and OCI (over TLS) fetchers send to the host they name, after MIRROR_CREDENTIALS; never
# to another host a redirect leads to. Empty: none.
MIRROR_NETRC_FILE = env("MIRROR_NETRC_FILE", default="")
MIRROR_DEFAULT_INTERVAL_MINUTES = env_int("MIRROR_DEFAULT_INTERVAL_MINUTES", 60)
# A queued or running run older than this is taken as lost when a new sync is requested; keep
# it above CELERY_VISIBILITY_TIMEOUT so that a redelivered job is never cut short.
MIRROR_RUN_STALE_MINUTES = env_int("MIRROR_RUN_STALE_MINUTES", 120)
# Mirrored runtime artifacts live in the default storage under this prefix.
MIRROR_BLOB_PREFIX = "blobs/sha256"
# Blobs that no row references (a worker died between storing and recording them) are deleted
# by `manage.py gc_blobs` / the hourly beat task once older than this; keep it above the
# longest sync.
BLOB_GC_GRACE_MINUTES = env_int("BLOB_GC_GRACE_MINUTES", 24 * 60)

# --- Many workers: upstream hosts are shared by every worker. ---
# At most this many sync runs and trial runs start against one upstream host per window, counted
# across all workers, in the notation of the `limits` library: "10/second", "120/minute",
# "1 per 2 seconds". Empty turns the limit off. A run over the limit is not failed: its job is
# retried when the window has room (SyncRun.deferrals counts how often).
UPSTREAM_RATE_LIMIT = env("UPSTREAM_RATE_LIMIT", default="")
# Per-host exceptions as JSON, e.g. {"github.com": "5/second", "ghcr.io": ""} ("" = no limit).
UPSTREAM_RATE_LIMITS = env.json("UPSTREAM_RATE_LIMITS", default={})
# Where the counts live, as a `limits` storage URL: a Redis URL shared by every worker (e.g.
# redis://redis:6379/2). Empty means the Celery broker when it is Redis, else this process's
# memory (one process: the embedded default, with eager tasks).
UPSTREAM_RATE_LIMIT_STORAGE_URL = env("UPSTREAM_RATE_LIMIT_STORAGE_URL", default="")


def _rate_limit_checked(name: str, value: object) -> None:
    from limits import parse

    if value == "":
        return
    try:
        parse(str(value))
    except ValueError:
        raise ImproperlyConfigured(
            f"{name}: {value!r} is not a rate limit; write it like '10/second', '120/minute' "
            "or '1 per 2 seconds'."
        ) from None


_rate_limit_checked("UPSTREAM_RATE_LIMIT", UPSTREAM_RATE_LIMIT)
_rate_limit_checked("CONTRIBUTION_RATE_LIMIT", CONTRIBUTION_RATE_LIMIT)
if not isinstance(UPSTREAM_RATE_LIMITS, dict):
    raise ImproperlyConfigured(
        "UPSTREAM_RATE_LIMITS must be a JSON object of host to limit, "
        'e.g. {"github.com": "5/second"}.'
    )
for _host, _limit in UPSTREAM_RATE_LIMITS.items():
    _rate_limit_checked(f"UPSTREAM_RATE_LIMITS[{_host!r}]", _limit)

# Celery beat keeps its schedule (and when each entry last ran) in the database
# (django-celery-beat), so a restarted or rescheduled beat carries on where it stopped; the
# entries of registry/celery.py are written there when beat starts. Operators can change
# intervals in the admin (Periodic tasks).
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"

# Publisher slugs no user may take (the mirror publisher's always is): names that look official
# or shadow a path of this site. A system caller (import_catalog) may still create them.
RESERVED_PUBLISHER_SLUGS = env.list(
    "RESERVED_PUBLISHER_SLUGS",
    default=[
        "official",
        "admin",
        # TUF's top-level roles: a publisher's delegated role is named after its slug.
        "root",
        "targets",
        "snapshot",
        "timestamp",
        "administrator",
        "api",
        "system",
        "registry",
        "krm",
        "kubernetes",
        "k8s",
        "c",
        "v1",
        "v2",
        "oci",
        "static",
        "media",
        "accounts",
        "blobs",
        "catalogs",
        "contribute",
        "contributions",
        "review",
        "mirror",
        "mirrors",
        "sources",
        "runs",
        "new",
        "root",
        "staff",
        "security",
        "support",
        "www",
    ],
)

# Web UI: sign-in pages, self sign-up (open by default; SIGNUP_ENABLED=false leaves account
# creation to administrators). A signed-up account proves its e-mail address with a signed link
# that works for EMAIL_VERIFICATION_DAYS; until then it may not create publishers or contribute.
# EMAIL_VERIFICATION_RATE bounds the links one user may have sent ("limits" notation). Password
# reset links (Django's) work for PASSWORD_RESET_TIMEOUT seconds (3 days).
LOGIN_URL = "web:login"
LOGIN_REDIRECT_URL = "web:search"
LOGOUT_REDIRECT_URL = "web:search"
SIGNUP_ENABLED = env.bool("SIGNUP_ENABLED", default=True)
EMAIL_VERIFICATION_DAYS = env_int("EMAIL_VERIFICATION_DAYS", 3)
EMAIL_VERIFICATION_RATE = env("EMAIL_VERIFICATION_RATE", default="5/hour")
_rate_limit_checked("EMAIL_VERIFICATION_RATE", EMAIL_VERIFICATION_RATE)
# Where the navigation's "Docs" link goes: the built MkDocs site of docs/ wherever the operator
# serves it; empty: the registry's own "Install krm" page, which says how to build and read them.
DOCS_URL = env("DOCS_URL", default="")
# Sign-in throttling (django-axes): after LOGIN_FAILURE_LIMIT failed sign-ins of one user name from
# one address, that pair is locked out (429) for LOGIN_LOCKOUT_MINUTES, counted again from each
# further failure (a backoff a guesser cannot wait out by trying on).
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = env_int("LOGIN_LOCKOUT_MINUTES", 15) / 60  # hours, as django-axes counts
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Its banner on every start would end up in management commands' output.
AXES_VERBOSE = False
AXES_LOCKOUT_TEMPLATE = "catalogs/registration/locked.html"
# Where the client's address comes from: REMOTE_ADDR, unless a proxy that sets (and overwrites)
# the header is in front, e.g. LOGIN_CLIENT_IP_HEADERS=HTTP_X_FORWARDED_FOR,REMOTE_ADDR with
# LOGIN_PROXY_COUNT=1. Trusting a header no proxy overwrites lets a guesser pick its address.
AXES_IPWARE_META_PRECEDENCE_ORDER = env.list("LOGIN_CLIENT_IP_HEADERS", default=["REMOTE_ADDR"])
AXES_IPWARE_PROXY_COUNT = env_int("LOGIN_PROXY_COUNT", 0) or None
# The address the nearest proxy appended (nginx's $proxy_add_x_forwarded_for), not the client's.
AXES_IPWARE_PROXY_ORDER = "right-most"
# The sign-in gate: one password check in flight per user name, at most this many per client
# address; any other sign-in meanwhile gets the lockout answer at once, nothing hashed, and is
# not counted as a failure. A place left by a process that died frees itself after
# LOGIN_GATE_SECONDS. Shared by every process through CACHE_URL (else each process has its own).
LOGIN_CHECKS_PER_ADDRESS = env_int("LOGIN_CHECKS_PER_ADDRESS", 1)
LOGIN_GATE_SECONDS = env_int("LOGIN_GATE_SECONDS", 30)
AXES_WHITELIST_CALLABLE = "catalogs.accounts.login_gate.refused_by_gate"

# Redis broker: a job left unacknowledged by a worker that died (tasks acknowledge late) is
# redelivered after this many seconds; keep it above the longest sync.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
}

# --- OCI distribution endpoint: /v2/ pull and push. ---
# Largest manifest a push may send, and largest blob an upload session may hold.
OCI_MANIFEST_MAX_BYTES = env_int("OCI_MANIFEST_MAX_BYTES", 4 * 1024 * 1024)
OCI_UPLOAD_MAX_BYTES = env_int("OCI_UPLOAD_MAX_BYTES", CATALOG_MAX_BYTES)
# Descriptors (config, layers, an index's manifests, subject) and annotations (all maps together)
# one manifest may hold; a manifest over either is refused before its blobs are looked up.
OCI_MANIFEST_MAX_DESCRIPTORS = env_int("OCI_MANIFEST_MAX_DESCRIPTORS", 256)
OCI_MANIFEST_MAX_ANNOTATIONS = env_int("OCI_MANIFEST_MAX_ANNOTATIONS", 256)
# Kustomization packages (a pushed Flux-format artifact): entries of the layer's tar, and bytes
# its files hold together, at most (the layer itself is an upload: OCI_UPLOAD_MAX_BYTES).
OCI_PACKAGE_MAX_FILES = env_int("OCI_PACKAGE_MAX_FILES", 10000)
OCI_PACKAGE_MAX_UNPACKED_BYTES = env_int("OCI_PACKAGE_MAX_UNPACKED_BYTES", 64 * 1024 * 1024)
# Upload sessions and uploaded blobs no manifest references are removed after this many minutes
# by `manage.py oci_gc_uploads` and by celery beat every 15 minutes.
OCI_UPLOAD_GC_MINUTES = env_int("OCI_UPLOAD_GC_MINUTES", 60)
# ... and every session once this old, however recently written to (no client postpones the GC).
OCI_UPLOAD_MAX_MINUTES = env_int("OCI_UPLOAD_MAX_MINUTES", 240)
# Per user: upload sessions open at once, and bytes they hold together (429 TOOMANYREQUESTS).
OCI_UPLOAD_SESSIONS_PER_USER = env_int("OCI_UPLOAD_SESSIONS_PER_USER", 10)
OCI_UPLOAD_BYTES_PER_USER = env_int("OCI_UPLOAD_BYTES_PER_USER", 4 * OCI_UPLOAD_MAX_BYTES)
# Lifetime of the bearer tokens GET /v2/token hands out.
OCI_TOKEN_TTL_SECONDS = env_int("OCI_TOKEN_TTL_SECONDS", 300)

# --- Signing: every catalog version the registry serves is signed (ECDSA P-256). ---
# SIGNING_KEY_PEM (the private key itself, PKCS#8 or SEC1 PEM) wins over SIGNING_KEY_FILE (a path
# to it). The embedded default creates the file on first use in KRM_DATA_DIR, outside the source
# tree (so that no `COPY . .` bakes it into an image); production creates nothing and refuses to
# start without one of the two.
KRM_DATA_DIR = env.path(
    "KRM_DATA_DIR",
    default=str(
        Path(env.str("XDG_DATA_HOME", default="") or os.path.expanduser("~/.local/share"))
        / "krm-registry"
    ),
)
SIGNING_KEY_PEM = env.str("SIGNING_KEY_PEM", default="")
SIGNING_KEY_FILE = env.str("SIGNING_KEY_FILE", default=str(Path(KRM_DATA_DIR) / "signing-key.pem"))
SIGNING_KEY_CREATE = env.bool("SIGNING_KEY_CREATE", default=True)
# Also store cosign's signature artifact (tag sha256-<hex>.sig, listed by the referrers API) of
# each version's OCI manifest, for `cosign verify --key` and `krm` with oci:// refs.
SIGNING_OCI_ARTIFACTS = env.bool("SIGNING_OCI_ARTIFACTS", default=True)

# The registry is a TUF repository (catalogs.trust.tuf, docs/trust.md): lifetimes of its
# metadata in seconds. The timestamp is re-signed by Celery beat (and, with
# TRUST_TIMESTAMP_ON_DEMAND, when served) once half of its lifetime has passed.
TRUST_TIMESTAMP_TTL = env.int("TRUST_TIMESTAMP_TTL", default=86400)
TRUST_SNAPSHOT_TTL = env.int("TRUST_SNAPSHOT_TTL", default=7 * 86400)
TRUST_TARGETS_TTL = env.int("TRUST_TARGETS_TTL", default=90 * 86400)
TRUST_ROOT_TTL = env.int("TRUST_ROOT_TTL", default=365 * 86400)
TRUST_TIMESTAMP_ON_DEMAND = env.bool("TRUST_TIMESTAMP_ON_DEMAND", default=True)
# Root keys besides the online signing key (private PEM files, mounted only for a root
# ceremony: 'manage.py tuf_root'), and how many root keys must sign a root.
TRUST_ROOT_KEY_FILES = env.list("TRUST_ROOT_KEY_FILES", default=[])
TRUST_ROOT_THRESHOLD = env.int("TRUST_ROOT_THRESHOLD", default=1)
# Hashed bins (PEP 458): a publisher role the registry signs that lists more than
# TRUST_HASHED_BINS_THRESHOLD targets delegates them to TRUST_HASHED_BINS roles (16, 256 or
# 4096) by the sha256 of their paths, so a publish re-signs one small bin, not the whole role.
TRUST_HASHED_BINS_THRESHOLD = env.int("TRUST_HASHED_BINS_THRESHOLD", default=2048)
TRUST_HASHED_BINS = env.int("TRUST_HASHED_BINS", default=256)
