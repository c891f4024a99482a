"""Web forms of mirroring: they only check the shape of input; services decide the rest."""

from __future__ import annotations

from django import forms
from django.conf import settings

from catalogs.mirroring.services import MIRROR_SOURCE_FIELDS

SCHEDULE_NEVER_RUNS = (
    "This registry runs without a task queue (the embedded default: no CELERY_BROKER_URL), so "
    'nothing runs schedules here: sync with "Sync now" or `manage.py sync_source <name>` from '
    "cron, or run a broker, a worker and beat (see the operator guide)."
)


def schedules_never_run() -> bool:
    """Whether scheduled syncs never run (no broker: no worker, no beat)."""
    return bool(settings.CELERY_TASK_ALWAYS_EAGER)


class MirrorSourceForm(forms.Form):
    """A mirror source's settings; the mirror services validate URL, pin and policy."""

    name = forms.SlugField(
        max_length=100, help_text="Served as /c/mirrors/<name>/catalog.yaml; cannot change later."
    )
    kind = forms.ChoiceField(
        choices=[
            ("catalog", "A catalog (https, git or OCI)"),
            ("package", "A kustomization package (OCI, Flux's artifact format)"),
        ],
        initial="catalog",
        required=False,
        label="What it mirrors",
        help_text="A package is served at oci://<this registry>/mirrors/<name>:<upstream tag> "
        "and on the mirror's packages page; cannot change later.",
    )
    url = forms.CharField(
        max_length=2048,
        label="Upstream URL",
        help_text="https://…/catalog.yaml, git+https://host/repo.git//path/catalog.yaml?ref=REF, "
        "oci://host/repo:tag or oci://host/repo@sha256:…",
        widget=forms.TextInput(attrs={"size": 70, "spellcheck": "false"}),
    )
    digest = forms.CharField(
        max_length=100,
        required=False,
        label="Digest pin",
        help_text="Optional: sha256:… of the document or OCI manifest, or a git commit.",
    )
    cosign_public_key = forms.CharField(
        required=False,
        label="cosign public key (OCI)",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "class": "code"}),
    )
    sigstore_identity = forms.CharField(max_length=1024, required=False, label="sigstore identity")
    sigstore_issuer = forms.CharField(max_length=1024, required=False, label="sigstore issuer")
    upstream_root_sha256 = forms.CharField(
        max_length=64,
        required=False,
        label="Upstream TUF root sha256",
        help_text="Optional, for a registry of this kind: the sha256 of its /tuf/root.json to "
        "pin (else pinned on the first sync, or by the cosign key when it signs the root).",
    )
    mirror_runtimes = forms.BooleanField(
        required=False,
        label="Mirror runtimes (exec binaries, starlark scripts and container images)",
    )
    enabled = forms.BooleanField(required=False, initial=True, label="Sync on a schedule")
    interval_minutes = forms.IntegerField(
        min_value=1, max_value=7 * 24 * 60, initial=60, label="Every (minutes)"
    )

    FIELDS = MIRROR_SOURCE_FIELDS

    def __init__(self, *args, editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if editing:
            # The name is where the catalog is served, the kind what it serves: they stay.
            del self.fields["name"]
            del self.fields["kind"]
        if schedules_never_run():
            self.fields["enabled"].help_text = SCHEDULE_NEVER_RUNS

    def settings(self) -> dict:
        """The cleaned values as the services' keyword arguments (name aside)."""
        return {key: self.cleaned_data[key] for key in self.FIELDS}
