"""Keys DRF's authtoken app issued (kept in plain text in ``authtoken_token``) become hashed,
full-scope tokens named "legacy token", so scripts using them keep working; the plain rows go."""

import hashlib

from django.db import migrations
from django.utils import timezone


def forward(apps, schema_editor):
    connection = schema_editor.connection
    if "authtoken_token" not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("accounts", "ApiToken")
    with connection.cursor() as cursor:
        cursor.execute("SELECT key, user_id, created FROM authtoken_token")
        rows = cursor.fetchall()
    for key, user_id, created in rows:
        ApiToken.objects.create(
            user_id=user_id,
            name="legacy token",
            digest=hashlib.sha256(key.encode()).hexdigest(),
            hint=key[:8],
            scopes=["read", "publish", "review"],
            created_at=created or timezone.now(),
        )
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM authtoken_token")


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_api_tokens")]

    # Backwards: the secrets are gone (only digests were kept), so nothing can be restored.
    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
