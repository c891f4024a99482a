"""Web forms: they only check the shape of input; services decide everything else."""

from __future__ import annotations

from typing import cast

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm
from django.db.models import QuerySet

from catalogs.oversized import OversizedDocument
from catalogs.publishing.models import Catalog, Publisher
from catalogs.review.models import ContributionStatus


def _document_from(
    cleaned: dict, *, file_field: str = "file", text_field: str = "content"
) -> bytes | str | OversizedDocument:
    """The uploaded file's bytes if one came, else the pasted text."""
    upload = cleaned.get(file_field)
    if upload:
        limit = settings.CATALOG_MAX_BYTES
        if upload.size > limit:
            return OversizedDocument(size=upload.size)
        return upload.read()
    return cleaned.get(text_field) or ""


class DocumentForm(forms.Form):
    """A YAML document, uploaded as a file or pasted."""

    file = forms.FileField(required=False, label="Upload a YAML file")
    content = forms.CharField(
        required=False,
        label="…or paste YAML",
        strip=False,
        widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false", "class": "code"}),
    )

    def clean(self) -> dict:
        super().clean()
        cleaned = self.cleaned_data
        if self.errors:  # e.g. a NUL in the text: that error says it, not "paste the text"
            return cleaned
        if not cleaned.get("file") and not (cleaned.get("content") or "").strip():
            raise forms.ValidationError("Upload a YAML file or paste the YAML text.")
        return cleaned

    def document(self) -> bytes | str | OversizedDocument:
        """The submitted document."""
        return _document_from(self.cleaned_data)


class PublishForm(DocumentForm):
    """A catalog document to preview or publish."""


class ContributionForm(DocumentForm):
    """A KRMFunctionDefinition for a chosen catalog."""

    catalog = forms.ModelChoiceField(queryset=Catalog.objects.none(), label="Target catalog")

    field_order = ["catalog", "file", "content"]

    def __init__(self, *args, catalogs: QuerySet[Catalog], **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["catalog"]).queryset = catalogs

    def text(self) -> str:
        """The definition as text (uploads must be UTF-8)."""
        doc = self.document()
        if isinstance(doc, OversizedDocument):
            raise forms.ValidationError(
                f"The file is {doc.size} bytes, over the limit of {settings.CATALOG_MAX_BYTES}."
            )
        if isinstance(doc, bytes):
            try:
                return doc.decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError("The file is not UTF-8 text.")
        return doc


class DefinitionFieldsForm(forms.Form):
    """The common case of a KRMFunctionDefinition as form fields: one version, a container image."""

    catalog = forms.ModelChoiceField(queryset=Catalog.objects.none(), label="Target catalog")
    group = forms.CharField(max_length=253, help_text="e.g. example.org")
    kind = forms.CharField(max_length=253, help_text="e.g. SetLabels")
    version = forms.CharField(max_length=100, initial="v1")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    image = forms.CharField(max_length=2048, label="Container image")
    license = forms.CharField(max_length=200, required=False, initial="Apache-2.0")
    usage = forms.URLField(required=False, assume_scheme="https", label="Usage URL")
    requires_network = forms.BooleanField(required=False, label="Needs network")

    def __init__(self, *args, catalogs: QuerySet[Catalog], **kwargs):
        kwargs["prefix"] = "fn"
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["catalog"]).queryset = catalogs

    def text(self) -> str:
        """The definition as a KRMFunctionDefinition YAML document."""
        from orchestrator.catalog import API_VERSION, dump_canonical

        d = self.cleaned_data
        container: dict = {"image": d["image"]}
        if d["requires_network"]:
            container["requireNetwork"] = True
        version: dict = {"name": d["version"], "runtime": {"container": container}}
        for key in ("usage", "license"):
            if d[key]:
                version[key] = d[key]
        spec: dict = {"group": d["group"], "names": {"kind": d["kind"]}}
        if d["description"]:
            spec["description"] = d["description"]
        spec["versions"] = [version]
        doc = {"apiVersion": API_VERSION, "kind": "KRMFunctionDefinition", "spec": spec}
        return dump_canonical(doc)


class ResubmitForm(forms.Form):
    """The edited definition of a contribution a reviewer asked changes of."""

    content = forms.CharField(
        strip=False,
        label="Definition (YAML)",
        widget=forms.Textarea(attrs={"rows": 22, "spellcheck": "false", "class": "code"}),
    )


class ApproveForm(forms.Form):
    """An approval may carry a comment, which the author sees."""

    comment = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Comment for the author (optional)",
    )


class RejectForm(forms.Form):
    """A rejection needs a reason, which the author sees. The browser requires it too
    (``required``); the service refuses a blank one whatever the browser did."""

    reason = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "required": True}),
        label="Reason (required)",
    )


class RequestChangesForm(forms.Form):
    """A request for changes says what to change (required, like a rejection's reason)."""

    changes = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "required": True}),
        label="What to change (required)",
    )


class CommentForm(forms.Form):
    """One message of a contribution's conversation."""

    body = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "required": True}),
        label="Comment",
    )


class CatalogCreateForm(forms.Form):
    """A new, empty catalog under a publisher the user owns."""

    publisher = forms.ModelChoiceField(queryset=Publisher.objects.none())
    name = forms.CharField(max_length=100, help_text="Letters, numbers, hyphens, underscores.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args, publishers: QuerySet[Publisher], **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["publisher"]).queryset = publishers


class ReviewFilterForm(forms.Form):
    """Review queue filters."""

    status = forms.ChoiceField(
        required=False,
        choices=[("", "Any status"), *ContributionStatus.choices],
    )
    catalog = forms.ModelChoiceField(
        required=False, queryset=Catalog.objects.none(), empty_label="Any"
    )

    def __init__(self, *args, catalogs: QuerySet[Catalog], **kwargs):
        super().__init__(*args, **kwargs)
        field = cast(forms.ModelChoiceField, self.fields["catalog"])
        field.queryset = catalogs.select_related("publisher")


USERNAME_UNAVAILABLE = "This user name is not available: choose another."


class SignUpForm(UserCreationForm):
    """Self sign-up (only when SIGNUP_ENABLED).

    A name that is taken (in any case, so that ``Owner`` is no second ``owner``) gets an answer
    that says only that it cannot be had, not that an account of that name exists.
    """

    email = forms.EmailField(
        max_length=254,
        label="E-mail address",
        help_text="We send a link to it: open it to create publishers and contribute.",
    )

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    def clean_username(self) -> str:
        """The user name, unless it is taken (case-insensitively)."""
        username = self.cleaned_data.get("username") or ""
        if get_user_model().objects.filter(username__iexact=username).exists():
            raise forms.ValidationError(USERNAME_UNAVAILABLE, code="unavailable")
        return username
