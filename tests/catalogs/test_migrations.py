"""Committed migrations match the models."""

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_missing_migrations(capsys):
    call_command("makemigrations", "--check", "--dry-run")
    assert capsys.readouterr().out.strip() == "No changes detected"


@pytest.mark.django_db
def test_function_search_is_trigram_indexed_on_postgresql():
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the trigram index exists only on PostgreSQL (CI run 3 checks it)")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'catalogs_functionversion'"
        )
        names = {row[0] for row in cursor.fetchall()}
    assert {"function_version_search_trgm", "function_version_tags_trgm"} <= names
