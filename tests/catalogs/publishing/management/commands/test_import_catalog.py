"""``manage.py import_catalog``, run as a real subprocess and in-process."""

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from catalogs.publishing.models import Catalog, CatalogVersion, Publisher
from tests.catalogs.bad_documents import BAD_DOCUMENTS
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[5]


@pytest.fixture
def catalog_file(tmp_path) -> Path:
    path = tmp_path / "catalog.yaml"
    path.write_text(catalog_yaml(("example.co", "SetLabels", "v1")))
    return path


def test_creates_publisher_catalog_and_version_and_prints_urls(catalog_file, capsys, owner):
    call_command(
        "import_catalog",
        str(catalog_file),
        "--publisher",
        "acme",
        "--catalog",
        "tools",
        "--owner",
        "owner",
    )
    version = CatalogVersion.objects.get()
    assert str(version.catalog) == "acme/tools"
    assert list(Publisher.objects.get(slug="acme").owners.all()) == [owner]
    assert capsys.readouterr().out == (
        f"Published acme/tools version 1 ({version.digest})\n"
        "  latest: http://testserver/c/acme/tools/catalog.yaml\n"
        "  pinned: http://testserver/c/acme/tools/versions/1/catalog.yaml\n"
    )


def test_second_import_of_the_same_file_changes_nothing(catalog_file, capsys):
    args = ["import_catalog", str(catalog_file), "--publisher", "acme", "--catalog", "tools"]
    call_command(*args)
    call_command(*args)
    assert CatalogVersion.objects.count() == 1
    assert (
        capsys.readouterr().out.splitlines()[3].startswith("Already published acme/tools version 1")
    )


def test_existing_publisher_and_catalog_get_a_new_version(catalog, catalog_file):
    call_command(
        "import_catalog", str(catalog_file), "--publisher", "example-co", "--catalog", "functions"
    )
    assert Catalog.objects.get().latest_version.number == 1


def test_bad_document_lists_problems_and_creates_nothing(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_DOCUMENTS["schema-errors"][0])
    with pytest.raises(CommandError) as err:
        call_command("import_catalog", str(path), "--publisher", "acme", "--catalog", "tools")
    assert str(err.value) == (
        "The catalog document is invalid (2 problems).\n"
        "  spec.krmFunctions[0].versions[0].idempotent (line 12): must be true or false, "
        "got 'maybe'\n"
        "  spec.krmFunctions[0].versions[0].runtime.exec.platforms[0].sha256 (line 16): "
        "required field is missing"
    )
    assert not Publisher.objects.exists()


def test_syntax_error_shows_line_and_column(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_DOCUMENTS["yaml-syntax"][0])
    with pytest.raises(CommandError) as err:
        call_command("import_catalog", str(path), "--publisher", "acme", "--catalog", "tools")
    assert str(err.value).splitlines()[1] == (
        "  (document) (line 5, column 1): did not find expected ',' or ']' "
        "(while parsing a flow sequence at line 4, column 9)"
    )


def test_unknown_owner_is_refused(catalog_file):
    with pytest.raises(CommandError, match=r"^Unknown user\(s\): ghost\.$"):
        call_command(
            "import_catalog",
            str(catalog_file),
            "--publisher",
            "acme",
            "--catalog",
            "t",
            "--owner",
            "ghost",
        )
    assert not Publisher.objects.exists()


def test_bad_publisher_slug_is_refused(catalog_file):
    with pytest.raises(CommandError) as err:
        call_command("import_catalog", str(catalog_file), "--publisher", "a b", "--catalog", "t")
    assert str(err.value) == (
        "Invalid publisher slug 'a b': use only letters, numbers, hyphens and underscores."
    )


def test_bad_catalog_name_is_refused_and_creates_nothing(catalog_file):
    with pytest.raises(CommandError) as err:
        call_command("import_catalog", str(catalog_file), "--publisher", "acme", "--catalog", "a/b")
    assert str(err.value) == (
        "Invalid catalog name 'a/b': use only letters, numbers, hyphens and underscores."
    )
    # The publisher created on the way is rolled back with the refused catalog.
    assert not Publisher.objects.exists()
    assert not Catalog.objects.exists()


def test_missing_file_is_a_clear_error(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(CommandError) as err:
        call_command("import_catalog", str(missing), "--publisher", "acme", "--catalog", "t")
    assert str(err.value) == f"Cannot read {missing}: No such file or directory."


@pytest.mark.django_db(transaction=True)
def test_real_command_line_against_a_sqlite_file(tmp_path, catalog_file):
    """The command as a user runs it: its own process and database, exit codes and stderr."""
    env = {
        "PATH": "/usr/bin:/bin",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "registry.settings.base",
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=ROOT, check=True)
    ok = subprocess.run(
        [*manage, "import_catalog", str(catalog_file), "--publisher", "acme", "--catalog", "t"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("Published acme/t version 1 (sha256:")
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_DOCUMENTS["wrong-kind"][0])
    refused = subprocess.run(
        [*manage, "import_catalog", str(bad), "--publisher", "acme", "--catalog", "t"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1
    assert refused.stderr == (
        "CommandError: The catalog document is invalid (1 problem).\n"
        "  kind (line 2): must be Catalog or KRMFunctionCatalog, got 'ConfigMap'\n"
    )
