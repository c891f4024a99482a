"""The models move to the domain apps (publishing, trust, distribution, mirroring, review).

The tables keep their names and rows: the catalogs app forgets the models (state only) and
their content types move with them, so permissions granted on them (and admin log entries)
follow. Each app's ``0001_initial`` takes the models over in the migration state.
"""

from django.db import migrations

MOVED = {
    "publishing": [
        "publisher",
        "catalog",
        "signingkey",
        "catalogversion",
        "functiondefinition",
        "functionversion",
        "verificationrequest",
        "publisherevent",
    ],
    "review": ["contribution", "reviewevent", "trialrun"],
    "mirroring": ["mirrorsource", "syncrun", "runtimeartifact", "driftevent"],
    "trust": ["revocationlist", "revocation"],
    "distribution": ["ocimanifest", "ocitag", "ociblob", "ociupload"],
}


def content_types_move(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    for app, models in MOVED.items():
        content_type.objects.filter(app_label="catalogs", model__in=models).update(app_label=app)


def content_types_back(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    for app, models in MOVED.items():
        content_type.objects.filter(app_label=app, model__in=models).update(app_label="catalogs")


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0001_initial"),
        ("trust", "0001_initial"),
        ("distribution", "0001_initial"),
        ("mirroring", "0001_initial"),
        ("review", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("catalogs", "0015_object_storage"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables exist (made by the catalogs app's migrations): state only.
            database_operations=[],
            state_operations=[
                migrations.RemoveField(
                    model_name="catalog",
                    name="latest_version",
                ),
                migrations.RemoveField(
                    model_name="catalog",
                    name="publisher",
                ),
                migrations.RemoveField(
                    model_name="ociupload",
                    name="catalog",
                ),
                migrations.RemoveField(
                    model_name="contribution",
                    name="catalog",
                ),
                migrations.RemoveField(
                    model_name="ocimanifest",
                    name="catalog",
                ),
                migrations.RemoveField(
                    model_name="catalogversion",
                    name="catalog",
                ),
                migrations.RemoveField(
                    model_name="revocationlist",
                    name="catalog",
                ),
                migrations.RemoveField(
                    model_name="ocitag",
                    name="catalog",
                ),
                migrations.RemoveField(
                    model_name="mirrorsource",
                    name="catalog",
                ),
                migrations.RemoveField(
                    model_name="revocation",
                    name="catalog",
                ),
                migrations.RemoveField(
                    model_name="catalogversion",
                    name="created_by",
                ),
                migrations.RemoveField(
                    model_name="catalogversion",
                    name="signing_key",
                ),
                migrations.RemoveField(
                    model_name="ocimanifest",
                    name="catalog_version",
                ),
                migrations.RemoveField(
                    model_name="runtimeartifact",
                    name="catalog_versions",
                ),
                migrations.RemoveField(
                    model_name="functionversion",
                    name="catalog_version",
                ),
                migrations.RemoveField(
                    model_name="contribution",
                    name="published_version",
                ),
                migrations.RemoveField(
                    model_name="reviewevent",
                    name="catalog_version",
                ),
                migrations.RemoveField(
                    model_name="functiondefinition",
                    name="catalog_version",
                ),
                migrations.RemoveField(
                    model_name="syncrun",
                    name="catalog_version",
                ),
                migrations.RemoveField(
                    model_name="contribution",
                    name="author",
                ),
                migrations.RemoveField(
                    model_name="contribution",
                    name="reviewer",
                ),
                migrations.RemoveField(
                    model_name="trialrun",
                    name="contribution",
                ),
                migrations.RemoveField(
                    model_name="reviewevent",
                    name="contribution",
                ),
                migrations.RemoveField(
                    model_name="driftevent",
                    name="run",
                ),
                migrations.RemoveField(
                    model_name="driftevent",
                    name="source",
                ),
                migrations.RemoveField(
                    model_name="functionversion",
                    name="function",
                ),
                migrations.RemoveField(
                    model_name="syncrun",
                    name="source",
                ),
                migrations.RemoveField(
                    model_name="ocitag",
                    name="manifest",
                ),
                migrations.RemoveField(
                    model_name="ociupload",
                    name="user",
                ),
                migrations.RemoveField(
                    model_name="publisher",
                    name="owners",
                ),
                migrations.RemoveField(
                    model_name="publisherevent",
                    name="publisher",
                ),
                migrations.RemoveField(
                    model_name="verificationrequest",
                    name="publisher",
                ),
                migrations.RemoveField(
                    model_name="publisherevent",
                    name="actor",
                ),
                migrations.RemoveField(
                    model_name="reviewevent",
                    name="actor",
                ),
                migrations.RemoveField(
                    model_name="revocation",
                    name="created_by",
                ),
                migrations.RemoveField(
                    model_name="revocationlist",
                    name="signing_key",
                ),
                migrations.RemoveField(
                    model_name="verificationrequest",
                    name="decided_by",
                ),
                migrations.RemoveField(
                    model_name="verificationrequest",
                    name="requested_by",
                ),
                migrations.DeleteModel(
                    name="OciBlob",
                ),
                migrations.DeleteModel(
                    name="Catalog",
                ),
                migrations.DeleteModel(
                    name="RuntimeArtifact",
                ),
                migrations.DeleteModel(
                    name="CatalogVersion",
                ),
                migrations.DeleteModel(
                    name="TrialRun",
                ),
                migrations.DeleteModel(
                    name="Contribution",
                ),
                migrations.DeleteModel(
                    name="DriftEvent",
                ),
                migrations.DeleteModel(
                    name="FunctionDefinition",
                ),
                migrations.DeleteModel(
                    name="FunctionVersion",
                ),
                migrations.DeleteModel(
                    name="MirrorSource",
                ),
                migrations.DeleteModel(
                    name="SyncRun",
                ),
                migrations.DeleteModel(
                    name="OciManifest",
                ),
                migrations.DeleteModel(
                    name="OciTag",
                ),
                migrations.DeleteModel(
                    name="OciUpload",
                ),
                migrations.DeleteModel(
                    name="Publisher",
                ),
                migrations.DeleteModel(
                    name="PublisherEvent",
                ),
                migrations.DeleteModel(
                    name="ReviewEvent",
                ),
                migrations.DeleteModel(
                    name="Revocation",
                ),
                migrations.DeleteModel(
                    name="RevocationList",
                ),
                migrations.DeleteModel(
                    name="SigningKey",
                ),
                migrations.DeleteModel(
                    name="VerificationRequest",
                ),
            ],
        ),
        migrations.RunPython(content_types_move, content_types_back),
    ]
