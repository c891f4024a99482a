"""Issue 10 repairs on existing databases (data only, reversible as a no-op).

- Reserved publishers (RESERVED_PUBLISHER_SLUGS and the mirror publisher) lose their user owners:
  they belong to the registry. Catalogs a user put under the mirror publisher are reported.
- Credentials in mirror source URLs (``https://user:token@host``) are removed from the sources,
  their catalogs' descriptions and their runs' reasons and provenance; the hosts are reported so
  that an operator puts the credentials in MIRROR_CREDENTIALS.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from django.conf import settings
from django.db import migrations

logger = logging.getLogger("catalogs.migrations")

# scheme://userinfo@ -> scheme:// ; userinfo stops at the first "/", so "repo@sha256:" is kept.
USERINFO_RE = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s?#\"']+@")


def strip_userinfo(value: Any) -> Any:
    """``value`` with user names and passwords removed from every URL in it (JSON too)."""
    if isinstance(value, str):
        return USERINFO_RE.sub(r"\g<scheme>", value)
    if isinstance(value, dict):
        return {key: strip_userinfo(item) for key, item in value.items()}
    if isinstance(value, list):
        return [strip_userinfo(item) for item in value]
    return value


def repair(apps, schema_editor) -> None:
    """Give reserved publishers back to the registry; take credentials out of mirror records."""
    publisher_model = apps.get_model("catalogs", "Publisher")
    source_model = apps.get_model("catalogs", "MirrorSource")
    run_model = apps.get_model("catalogs", "SyncRun")
    mirror_slug = settings.MIRROR_PUBLISHER_SLUG
    reserved = {s.lower() for s in [*settings.RESERVED_PUBLISHER_SLUGS, mirror_slug]}

    for publisher in publisher_model.objects.all():
        if publisher.slug.lower() not in reserved:
            continue
        owners = sorted(publisher.owners.values_list("username", flat=True))
        if owners:
            logger.warning(
                "Reserved publisher '%s' was owned by %s: owners removed, it belongs to the "
                "registry now.",
                publisher.slug,
                ", ".join(owners),
            )
            publisher.owners.clear()
        if publisher.slug == mirror_slug:
            strays = publisher.catalogs.filter(mirror_source__isnull=True)
            for catalog in strays.order_by("name"):
                logger.warning(
                    "Catalog '%s/%s' is not a mirror but sits under the mirror publisher: review "
                    "it (it may be a squatter's) and move or remove it.",
                    publisher.slug,
                    catalog.name,
                )

    for source in source_model.objects.select_related("catalog"):
        clean = strip_userinfo(source.url)
        if clean == source.url:
            continue
        source.url = clean
        source.last_digest = source.last_etag = source.last_modified = ""
        source.save(update_fields=["url", "last_digest", "last_etag", "last_modified"])
        catalog = source.catalog
        catalog.description = strip_userinfo(catalog.description)
        catalog.save(update_fields=["description"])
        logger.warning(
            "Mirror source '%s': credentials removed from its URL (now %s); put them in "
            "MIRROR_CREDENTIALS for its host.",
            source.name,
            clean,
        )
    for run in run_model.objects.all().iterator():
        reason, provenance = strip_userinfo(run.reason), strip_userinfo(run.provenance)
        if (reason, provenance) != (run.reason, run.provenance):
            run.reason, run.provenance = reason, provenance
            run.save(update_fields=["reason", "provenance"])


class Migration(migrations.Migration):
    dependencies = [
        ("catalogs", "0004_mirrors"),
    ]

    operations = [
        migrations.RunPython(repair, migrations.RunPython.noop, elidable=True),
    ]
