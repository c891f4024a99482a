"""Publisher pages: create your own, invite co-owners, ask for (and, as staff, decide on) the
verified badge. Thin: each calls one service of catalogs.publishing.services or
catalogs.publishing.publishers."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from catalogs.exceptions import (
    AlreadyExistsError,
    NotAllowedError,
    RegistryError,
    ReservedNameError,
)
from catalogs.pages import domain_errors, page_render
from catalogs.publishing import forms, publishers, selectors, services
from catalogs.publishing.models import VerificationStatus


def _next_url(request: HttpRequest) -> str | None:
    target = request.POST.get("next") or request.GET.get("next")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return None


@login_required
@domain_errors
@require_http_methods(["GET", "POST"])
def publisher_create(request: HttpRequest) -> HttpResponse:
    """Any signed-in user creates a publisher and becomes its first owner."""
    form = forms.PublisherCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            publisher = services.publisher_create(
                slug=form.cleaned_data["slug"],
                display_name=form.cleaned_data["display_name"],
                actor=request.user,
            )
        except ReservedNameError as err:
            form.add_error("slug", err.message)
        except NotAllowedError:
            raise
        except RegistryError as err:
            form.add_error("slug", err.message)
        else:
            messages.success(request, f"Publisher {publisher.slug} created; you own it.")
            return redirect(_next_url(request) or "web:publisher", slug=publisher.slug)
    context = {"form": form, "next": _next_url(request) or ""}
    return page_render(request, "publisher_create.html", context, 400 if form.errors else 200)


# Catalogs per page of a publisher's page, and the newest entries of its audit log shown there.
PAGE_SIZE = 50


def _publisher_page(request: HttpRequest, publisher, status: int = 200, **forms_) -> HttpResponse:
    can_manage = selectors.user_is_owner_or_staff(publisher=publisher, user=request.user)
    # Bounded whatever the publisher holds: a page of catalogs, the newest entries of its log.
    catalogs = Paginator(
        selectors.catalog_list(publisher_slug=publisher.slug, viewer=request.user), PAGE_SIZE
    )
    page = catalogs.get_page(request.GET.get("page"))
    context = {
        "publisher": publisher,
        "catalogs": page.object_list,
        "page": page,
        "query": "",
        "owners": publisher.owners.order_by("username"),
        "can_manage": can_manage,
        "owner_form": forms_.get("owner_form") or forms.OwnerAddForm(),
        "verify_form": forms_.get("verify_form") or forms.VerificationRequestForm(),
    }
    if can_manage:
        events = publishers.publisher_event_list(publisher=publisher)
        context["events"] = list(events.order_by("-created_at", "-pk")[:PAGE_SIZE])[::-1]
        context["pending_request"] = publisher.verification_requests.filter(
            status=VerificationStatus.PENDING
        ).first()
    return page_render(request, "publisher_detail.html", context, status)


@domain_errors
def publisher_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A publisher: its catalogs and owners; for owners, co-owners and the verified badge."""
    return _publisher_page(request, selectors.publisher_get(slug=slug, viewer=request.user))


@login_required
@domain_errors
@require_POST
def publisher_owner_add(request: HttpRequest, slug: str) -> HttpResponse:
    """An owner invites an existing user to co-own the publisher."""
    publisher = selectors.publisher_get(slug=slug, viewer=request.user)
    form = forms.OwnerAddForm(request.POST)
    if form.is_valid():
        try:
            publishers.publisher_owner_add(
                publisher=publisher, username=form.cleaned_data["username"], actor=request.user
            )
        except NotAllowedError:
            raise
        except RegistryError as err:
            form.add_error("username", err.message)
        else:
            messages.success(
                request,
                f"Invitation sent to {form.cleaned_data['username']}: they own {slug} once they "
                "accept it.",
            )
            return redirect("web:publisher", slug=slug)
    return _publisher_page(request, publisher, 400, owner_form=form)


@login_required
@domain_errors
@require_POST
def publisher_verification_request(request: HttpRequest, slug: str) -> HttpResponse:
    """An owner asks staff for the verified badge."""
    publisher = selectors.publisher_get(slug=slug, viewer=request.user)
    form = forms.VerificationRequestForm(request.POST)
    if form.is_valid():
        try:
            publishers.publisher_verification_request(
                publisher=publisher, actor=request.user, message=form.cleaned_data["message"]
            )
        except NotAllowedError:
            raise
        except RegistryError as err:
            form.add_error(None, err.message)
        else:
            messages.success(request, "Request sent; staff will grant or refuse the badge.")
            return redirect("web:publisher", slug=slug)
    return _publisher_page(request, publisher, 400, verify_form=form)


def _require_staff(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise NotAllowedError("Only staff grant or refuse the verified badge.")


@login_required
@domain_errors
def verification_queue(request: HttpRequest) -> HttpResponse:
    """Staff: pending requests for the verified badge, and the ones decided lately."""
    _require_staff(request)
    context = {
        "pending": publishers.verification_request_list(status=VerificationStatus.PENDING),
        "decided": publishers.verification_request_list()
        .exclude(status=VerificationStatus.PENDING)
        .order_by("-decided_at", "-pk")[:20],
        "decide_form": forms.VerificationDecisionForm(),
    }
    return page_render(request, "verification_queue.html", context)


@login_required
@domain_errors
@require_POST
def verification_decide(request: HttpRequest, pk: int) -> HttpResponse:
    """Staff grant (action=grant) or refuse (action=refuse, with a reason) one request."""
    _require_staff(request)
    item = publishers.verification_request_get(pk=pk)
    form = forms.VerificationDecisionForm(request.POST)
    form.is_valid()
    action = request.POST.get("action")
    if action not in ("grant", "refuse"):
        messages.error(request, f"Unknown action {action!r}: use grant or refuse.")
        return redirect("web:verification-queue")
    try:
        publishers.publisher_verification_decide(
            request=item,
            actor=request.user,
            grant=action == "grant",
            reason=form.cleaned_data.get("reason", ""),
        )
    except NotAllowedError:
        raise
    except (AlreadyExistsError, RegistryError) as err:
        messages.error(request, f"{item.publisher.slug}: {err.message}")
    else:
        verb = "granted" if action == "grant" else "refused"
        messages.success(request, f"Verified badge {verb} for {item.publisher.slug}.")
    return redirect("web:verification-queue")


@login_required
@domain_errors
def invitation_list(request: HttpRequest) -> HttpResponse:
    """The signed-in user's invitations to co-own publishers, to accept or decline."""
    invitations = publishers.owner_invitation_list_pending(user=request.user)
    return page_render(request, "invitations.html", {"invitations": invitations})


@login_required
@domain_errors
@require_POST
def invitation_decide(request: HttpRequest, pk: int) -> HttpResponse:
    """The invitee accepts (action=accept) or declines (action=decline) an invitation."""
    invitation = publishers.owner_invitation_get(pk=pk)
    action = request.POST.get("action")
    if action not in ("accept", "decline"):
        messages.error(request, f"Unknown action {action!r}: use accept or decline.")
        return redirect("web:invitations")
    try:
        publishers.publisher_invitation_decide(
            invitation=invitation, actor=request.user, accept=action == "accept"
        )
    except NotAllowedError:
        raise
    except RegistryError as err:
        messages.error(request, err.message)
        return redirect("web:invitations")
    slug = invitation.publisher.slug
    if action == "accept":
        messages.success(request, f"You now own {slug}.")
        return redirect("web:publisher", slug=slug)
    messages.success(request, f"Invitation to own {slug} declined.")
    return redirect("web:invitations")
