"""test.py: fast and in-process by default; PostgreSQL, Redis and a real worker in CI run 2."""

MODULE = "registry.settings.test"


def test_default_is_fast_and_eager(load_settings):
    values = load_settings(MODULE)
    assert values["PASSWORD_HASHERS"] == ["django.contrib.auth.hashers.MD5PasswordHasher"]
    assert values["CACHE"] == "django.core.cache.backends.locmem.LocMemCache"
    assert values["API_LIST_CACHE"] == "on"  # one process: every test runs with the list cache
    assert values["CELERY_TASK_ALWAYS_EAGER"] is True
    assert values["CELERY_TASK_EAGER_PROPAGATES"] is True
    assert values["DB_ENGINE"] == "django.db.backends.sqlite3"


def test_services_mode_uses_postgresql_redis_and_a_worker(load_settings):
    values = load_settings(MODULE, KRM_TEST_SERVICES="1")
    assert values["DB_ENGINE"] == "django.db.backends.postgresql"
    assert values["DB_NAME"] == "test"
    # The worker connects to the same database name as the tests.
    assert values["DB_TEST_NAME"] == "test"
    assert values["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/0"
    assert values["CELERY_TASK_ALWAYS_EAGER"] is False
    # The worker's writes end the tests' cached API pages through one shared cache.
    assert values["CACHE"] == "django.core.cache.backends.redis.RedisCache"
    assert values["CACHE_LOCATION"] == "redis://127.0.0.1:6379/2"


def test_services_mode_follows_the_environment(load_settings):
    values = load_settings(
        MODULE,
        KRM_TEST_SERVICES="1",
        DATABASE_URL="postgres://ci:pw@pg:5433/ci",
        CELERY_BROKER_URL="redis://redis:6379/3",
    )
    assert (values["DB_NAME"], values["DB_TEST_NAME"]) == ("ci", "ci")
    assert values["CELERY_BROKER_URL"] == "redis://redis:6379/3"
    assert values["CELERY_RESULT_BACKEND"] == "redis://redis:6379/3"
