"""On PostgreSQL, index function search text for substring search (pg_trgm GIN).

SQLite has no such index and needs none at the embedded default's size, so this is a no-op
there. Where the database user may not create the extension, search still works, unindexed.
"""

import logging

from django.db import migrations, transaction

logger = logging.getLogger(__name__)

INDEXES = {
    "function_version_search_trgm": "search_text",
    "function_version_tags_trgm": "tags_index",
}


def create_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    try:
        # A savepoint, so that a refused CREATE EXTENSION does not abort the migration.
        with transaction.atomic(using=schema_editor.connection.alias):
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except Exception as exc:  # noqa: BLE001 - any refusal means: run without the index
        logger.warning("pg_trgm unavailable, function search stays unindexed: %s", exc)
        return
    for name, column in INDEXES.items():
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON catalogs_functionversion "
            f"USING gin ({column} gin_trgm_ops)"
        )


def drop_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("catalogs", "0001_initial")]

    operations = [migrations.RunPython(create_indexes, drop_indexes, elidable=False)]
