"""Web forms of publishers: they only check the shape of input; services decide the rest."""

from __future__ import annotations

from django import forms


class PublisherCreateForm(forms.Form):
    """A new publisher; the signed-in user becomes its first owner."""

    slug = forms.CharField(
        max_length=100,
        label="Slug",
        help_text="Letters, numbers, hyphens, underscores; in every URL of your catalogs "
        "(/c/<slug>/…). It cannot change later.",
    )
    display_name = forms.CharField(max_length=200, required=False, label="Display name")


class OwnerAddForm(forms.Form):
    """Invite a co-owner by user name."""

    username = forms.CharField(max_length=150, label="User name of the new owner")


class VerificationRequestForm(forms.Form):
    """Ask staff for the verified badge."""

    message = forms.CharField(
        required=False,
        max_length=2000,
        label="Who you are (a web site, a repository) — for staff",
        widget=forms.Textarea(attrs={"rows": 2}),
    )


class VerificationDecisionForm(forms.Form):
    """Staff's answer; a refusal needs a reason, which the owners see."""

    reason = forms.CharField(
        required=False,
        max_length=2000,
        label="Reason (required to refuse)",
        widget=forms.Textarea(attrs={"rows": 2}),
    )
