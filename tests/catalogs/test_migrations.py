"""Committed migrations match the models."""

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_missing_migrations(capsys):
    call_command("makemigrations", "--check", "--dry-run")
    assert capsys.readouterr().out.strip() == "No changes detected"
