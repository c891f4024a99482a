"""Account pages: sign-up, e-mail verification, password reset (Django's views with the site's
templates), "My publishers" and the "Install krm" page. Thin: each calls one service."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse_lazy
from django.views.decorators.http import require_http_methods

from catalogs.accounts import login_gate, verification
from catalogs.exceptions import InvalidInputError, QuotaExceededError
from catalogs.pages import page_forbidden, page_render
from catalogs.publishing import publishers
from catalogs.web import forms


def _send_link(request: HttpRequest, user) -> bool:
    """E-mail ``user`` their verification link; say on the next page whether it went."""
    try:
        verification.email_verification_send(user=user)
    except (InvalidInputError, QuotaExceededError) as err:
        messages.error(request, err.message)
        return False
    except OSError as err:  # the SMTP server refused or could not be reached
        messages.error(
            request,
            f"The verification e-mail could not be sent ({err.__class__.__name__}); try again "
            "from this page later.",
        )
        return False
    return True


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Self sign-up (SIGNUP_ENABLED, on by default): the account, signed in, and a link to
    verify its e-mail address."""
    if not settings.SIGNUP_ENABLED:
        return page_forbidden(request, "Sign-up is closed; ask an administrator for an account.")
    form = forms.SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        verification.email_verification_start(user=user)
        login(request, user, backend=login_gate.BACKEND)
        if _send_link(request, user):
            messages.success(
                request,
                f"Welcome, {user.username}. We sent a link to {user.email}: open it to create "
                "publishers and contribute functions.",
            )
            return redirect("web:search")
        return redirect("web:email")
    return page_render(request, "registration/signup.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def email_status(request: HttpRequest) -> HttpResponse:
    """The account's e-mail address, whether it is verified, and a button to send a new link."""
    pending = verification.email_verification_pending(user=request.user)
    if request.method == "POST":
        if _send_link(request, request.user):
            assert pending is not None  # email_verification_send refuses a verified address
            messages.success(request, f"We sent a new link to {pending.email}.")
        return redirect("web:email")
    return page_render(request, "registration/email.html", {"pending": pending})


@require_http_methods(["GET", "POST"])
def email_verify(request: HttpRequest, token: str) -> HttpResponse:
    """The link of the verification e-mail: a button (a mail scanner's GET changes nothing),
    whose POST verifies the address (and, the first time, in a browser where nobody is signed
    in, signs its account in)."""
    if request.method == "GET":
        return page_render(request, "registration/email_verify.html", {"token": token})
    try:
        user, verified_now = verification.email_verification_confirm(token=token)
    except InvalidInputError as err:
        context = {"token": token, "error": err.message}
        return page_render(request, "registration/email_verify.html", context, status=400)
    messages.success(request, f"Your e-mail address {user.email} is verified.")
    if request.user.pk == user.pk:
        return redirect("web:search")
    if verified_now and not request.user.is_authenticated:
        # The first use of the link signs in (the sign-up's browser may be another one);
        # a link used again is no way in: that takes the password.
        login(request, user, backend=login_gate.BACKEND)
        return redirect("web:search")
    return redirect("web:login")


class PasswordResetView(auth_views.PasswordResetView):
    """Django's password reset, with the site's templates; the link in the e-mail is on
    REGISTRY_PUBLIC_URL, never on whatever Host the request came with."""

    template_name = "catalogs/registration/password_reset_form.html"
    email_template_name = "catalogs/registration/password_reset_email.txt"
    subject_template_name = "catalogs/registration/password_reset_subject.txt"
    success_url = reverse_lazy("web:password-reset-done")

    def form_valid(self, form):
        self.extra_email_context = {"base_url": settings.REGISTRY_PUBLIC_URL.rstrip("/")}
        return super().form_valid(form)


password_reset = PasswordResetView.as_view()
password_reset_done = auth_views.PasswordResetDoneView.as_view(
    template_name="catalogs/registration/password_reset_done.html"
)
password_reset_confirm = auth_views.PasswordResetConfirmView.as_view(
    template_name="catalogs/registration/password_reset_confirm.html",
    success_url=reverse_lazy("web:password-reset-complete"),
)
password_reset_complete = auth_views.PasswordResetCompleteView.as_view(
    template_name="catalogs/registration/password_reset_complete.html"
)


@login_required
def publisher_list_mine(request: HttpRequest) -> HttpResponse:
    """The publishers the user owns, with their catalogs, and invitations waiting for them."""
    owned = (
        publishers.publisher_list_owned(user=request.user)
        .prefetch_related("catalogs")
        .order_by("slug")
    )
    context: dict[str, Any] = {
        "publishers": owned,
        "invitations": publishers.owner_invitation_list_pending(user=request.user),
    }
    return page_render(request, "my_publishers.html", context)


def install_krm(request: HttpRequest) -> HttpResponse:
    """How to install the krm CLI from a checkout of this project or a wheel built from it."""
    context = {"registry_url": settings.REGISTRY_PUBLIC_URL.rstrip("/")}
    return page_render(request, "install.html", context)
