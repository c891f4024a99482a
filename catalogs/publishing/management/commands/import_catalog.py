"""``manage.py import_catalog FILE --publisher SLUG --catalog NAME [--owner USERNAME]``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse

from catalogs.exceptions import InvalidCatalogError, RegistryError
from catalogs.publishing import services


def format_problems(err: InvalidCatalogError) -> str:
    """``err`` as one line per problem, with line and column where known."""
    lines = [err.message]
    for problem in err.problems:
        where = problem.path or "(document)"
        if problem.line is not None and problem.column is not None:
            where += f" (line {problem.line}, column {problem.column})"
        elif problem.line is not None:
            where += f" (line {problem.line})"
        lines.append(f"  {where}: {problem.message}")
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Publish a catalog YAML file, creating the publisher and catalog if absent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="catalog YAML file ('-' for standard input)")
        parser.add_argument("--publisher", required=True, help="publisher slug")
        parser.add_argument("--catalog", required=True, help="catalog name")
        parser.add_argument("--owner", help="user name to add as an owner of the publisher")

    def handle(self, *args: Any, **options: Any) -> None:
        content = _read(options["file"])
        try:
            version, created = services.catalog_import(
                publisher_slug=options["publisher"],
                catalog_name=options["catalog"],
                content=content,
                owner_username=options["owner"],
            )
        except InvalidCatalogError as err:
            raise CommandError(format_problems(err))
        except RegistryError as err:
            raise CommandError(err.message)
        self.stdout.write(catalog_version_summary(version, created))


def _read(name: str) -> bytes:
    """The bytes of file ``name`` (or standard input), or a CommandError saying why not."""
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(name).read_bytes()
    except OSError as err:
        raise CommandError(f"Cannot read {name}: {err.strerror}.")


def catalog_version_summary(version: Any, created: bool) -> str:
    """What was published and where it is served (REGISTRY_PUBLIC_URL, as no request is at hand)."""
    catalog = version.catalog
    kwargs = {"publisher": catalog.publisher.slug, "catalog": catalog.name}
    base = settings.REGISTRY_PUBLIC_URL.rstrip("/")
    latest = reverse("catalogs:latest", kwargs=kwargs)
    pinned = reverse("catalogs:version", kwargs={**kwargs, "number": version.number})
    verb = "Published" if created else "Already published"
    return (
        f"{verb} {catalog} version {version.number} ({version.digest})\n"
        f"  latest: {base}{latest}\n"
        f"  pinned: {base}{pinned}"
    )
