"""deploy/compose.yaml parses and runs its seven services (nginx in front, its pulls counted),
production settings."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose.yaml"
# ${VAR}, ${VAR:-default}, ${VAR:?message} — the subset of compose interpolation the file uses.
INTERPOLATION = re.compile(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}")


def interpolate(value: str, env: dict[str, str]) -> str:
    """Expand compose-style variables the way `docker compose config` would."""

    def expand(match: re.Match[str]) -> str:
        name, op, arg = match.groups()
        if env.get(name):
            return env[name]
        if op == ":-":
            return arg
        raise ValueError(f"required variable {name} is missing: {arg}")

    return INTERPOLATION.sub(expand, value)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.load(COMPOSE.read_text(), Loader=yaml.CSafeLoader)


def command(service: dict) -> str:
    cmd = service["command"]
    return cmd if isinstance(cmd, str) else " ".join(cmd)


def test_seven_services(compose):
    assert set(compose["services"]) == {
        "nginx",
        "web",
        "worker",
        "beat",
        "pulls",
        "postgres",
        "redis",
    }


def test_commands(compose):
    services = compose["services"]
    assert "gunicorn registry.wsgi:application --bind 0.0.0.0:8000" in command(services["web"])
    assert "manage.py migrate --noinput" in command(services["web"])
    assert command(services["worker"]).startswith("celery -A registry worker")
    assert command(services["beat"]).startswith("celery -A registry beat")
    # The pulls nginx logs are counted by pulls_collect, reading the file nginx writes.
    log = services["nginx"]["environment"]["KRM_PULLS_LOG"]
    assert command(services["pulls"]) == f"python manage.py pulls_collect --log {log}"
    volume = next(v for v in services["nginx"]["volumes"] if log.startswith(v.split(":")[1]))
    assert f"{volume.split(':')[0]}:{volume.split(':')[1]}:ro" in services["pulls"]["volumes"]
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["redis"]["image"].startswith("redis:")
    # Published through nginx, which renders deploy/nginx/'s template and proxies to web.
    assert "ports" not in services["web"]
    assert services["nginx"]["ports"] == ["${WEB_PORT:-8000}:8080"]
    nginx_env = services["nginx"]["environment"]
    assert (nginx_env["KRM_UPSTREAM"], nginx_env["KRM_LISTEN"]) == ("web:8000", "8080")
    template, target = services["nginx"]["volumes"][0].split(":")[:2]
    assert (COMPOSE.parent / template).is_file()
    assert target.startswith("/etc/nginx/templates/") and target.endswith(".template")
    rendered = (COMPOSE.parent / template).read_text()
    assert set(re.findall(r"\$\{(KRM_\w+)\}", rendered)) <= set(nginx_env)


SECRETS = {"SECRET_KEY": "s3cret", "SIGNING_KEY_PEM": "-----BEGIN PRIVATE KEY-----"}


def test_app_services_share_production_env(compose):
    services = compose["services"]
    envs = [services[name]["environment"] for name in ("web", "worker", "beat", "pulls")]
    assert envs[0] == envs[1] == envs[2] == envs[3]
    env = {k: interpolate(v, SECRETS) for k, v in envs[0].items()}
    assert env["DJANGO_SETTINGS_MODULE"] == "registry.settings.production"
    assert env["SECRET_KEY"] == "s3cret"
    db = urlsplit(env["DATABASE_URL"])
    assert (db.scheme, db.hostname, db.port, db.path) == ("postgres", "postgres", 5432, "/registry")
    # The DB credentials in the URL are the ones the postgres container is created with.
    pg_env = {k: interpolate(v, {}) for k, v in services["postgres"]["environment"].items()}
    assert (db.username, db.password) == (pg_env["POSTGRES_USER"], pg_env["POSTGRES_PASSWORD"])
    broker = urlsplit(env["CELERY_BROKER_URL"])
    assert (broker.scheme, broker.hostname) == ("redis", "redis")


def test_secret_key_is_required(compose):
    env = compose["services"]["web"]["environment"]
    with pytest.raises(ValueError, match="required variable SECRET_KEY is missing: set SECRET_KEY"):
        interpolate(env["SECRET_KEY"], {})


def test_signing_key_is_required(compose):
    env = compose["services"]["web"]["environment"]
    with pytest.raises(ValueError, match="required variable SIGNING_KEY_PEM is missing"):
        interpolate(env["SIGNING_KEY_PEM"], {})


def test_dependencies_point_at_defined_services(compose):
    services = compose["services"]
    for name, service in services.items():
        for dep, cond in service.get("depends_on", {}).items():
            assert dep in services, (name, dep)
            if cond["condition"] == "service_healthy":
                assert "healthcheck" in services[dep], (name, dep)
    assert set(services["web"]["depends_on"]) == {"postgres", "redis"}
    assert {"postgres", "redis"} <= set(services["worker"]["depends_on"])


def test_build_context_has_a_dockerfile(compose):
    build = compose["services"]["web"]["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).is_file()


def test_env_starts_the_production_settings(compose, load_settings):
    raw = compose["services"]["web"]["environment"]
    env = {k: interpolate(v, SECRETS) for k, v in raw.items()}
    loaded = load_settings(env)
    assert loaded["DEBUG"] is False
    assert loaded["DATABASE_ENGINE"] == "django.db.backends.postgresql"
    assert (loaded["DATABASE_HOST"], loaded["DATABASE_NAME"]) == ("postgres", "registry")
    assert loaded["CELERY_BROKER_URL"] == "redis://redis:6379/0"
    assert loaded["CELERY_TASK_ALWAYS_EAGER"] is False
    assert "localhost" in loaded["ALLOWED_HOSTS"]
