"""The revocations page of a catalog: every entry by list sequence, and the revoke form."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from catalogs.exceptions import AlreadyExistsError, InvalidInputError
from catalogs.pages import domain_errors, page_render
from catalogs.publishing import selectors
from catalogs.trust import revocations
from catalogs.trust.models import RevocationReason


class RevocationForm(forms.Form):
    """A function version (group, kind, version) or a runtime digest, and why."""

    group = forms.CharField(required=False, max_length=253)
    kind = forms.CharField(required=False, max_length=253)
    version = forms.CharField(required=False, max_length=100)
    runtime_digest = forms.CharField(required=False, max_length=71, label="Runtime digest")
    reason = forms.ChoiceField(choices=RevocationReason.choices)
    detail = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    replacement = forms.CharField(
        required=False, max_length=500, help_text="e.g. use version v2, or digest sha256:…"
    )
    # The confirmation before an irreversible act: required here, on the server, and marked
    # ``required`` for the browser (which alone would not be enough).
    confirm = forms.BooleanField(
        label="I understand that a revocation cannot be undone: krm build refuses it for good.",
        error_messages={
            "required": "Tick the confirmation: a revocation cannot be undone, so it is not "
            "made without it."
        },
    )


@domain_errors
def catalog_revocations(request: HttpRequest, publisher: str, catalog: str) -> HttpResponse:
    """GET: the list; POST (owners and staff): revoke, then show the new sequence."""
    cat = selectors.catalog_get(publisher_slug=publisher, name=catalog, viewer=request.user)
    can_revoke = selectors.user_is_owner_or_staff(publisher=cat.publisher, user=request.user)
    form = RevocationForm(request.POST or None, initial=request.GET or None)
    status = 200
    if request.method == "POST":
        from catalogs.publishing.services import publisher_check_can_write

        # Anonymous users are refused too (None would mean "the system").
        publisher_check_can_write(publisher=cat.publisher, actor=request.user)
        if form.is_valid():
            try:
                fields = {k: v for k, v in form.cleaned_data.items() if k != "confirm"}
                row = revocations.revocation_create(catalog=cat, actor=request.user, **fields)
            except (InvalidInputError, AlreadyExistsError) as err:
                form.add_error(None, err.message)
            else:
                messages.success(request, f"Revoked; revocation list sequence {row.sequence}.")
                return redirect("web:catalog-revocations", publisher=publisher, catalog=catalog)
        status = 400
    context = {
        "catalog": cat,
        "revocations": revocations.revocation_list(catalog=cat),
        "listed": revocations.revocation_list_get(catalog=cat),
        "form": form,
        "can_revoke": can_revoke,
    }
    return page_render(request, "revocations.html", context, status=status)
