"""The links README's quick start promises work once the demo catalog is loaded."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.core.management import call_command

README = Path(__file__).resolve().parents[1] / "README.md"
# Markdown autolinks (<http://...>) to the quick-start server; curl examples are not links.
LINK = re.compile(r"<http://127\.0\.0\.1:8000(/[^>]*)>")


def test_readme_has_quick_start_links():
    assert len(LINK.findall(README.read_text())) >= 3


@pytest.mark.django_db
@pytest.mark.parametrize("path", LINK.findall(README.read_text()))
def test_quick_start_link_answers_200(client, path):
    call_command("load_demo", stdout=io.StringIO())
    response = client.get(path)
    assert response.status_code == 200, (
        f"README links to {path}, which answers {response.status_code}"
    )
