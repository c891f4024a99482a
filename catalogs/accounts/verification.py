"""E-mail verification of self-signed-up accounts: a signed, expiring link sent through Django's
e-mail backend, and the check that keeps an unverified account from creating publishers and
contributions (it may sign in, read, search, pull and make API tokens)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.core import signing
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from catalogs.accounts.models import EmailVerification
from catalogs.exceptions import InvalidInputError, NotAllowedError, QuotaExceededError
from catalogs.ratelimits import rate_limit_hit

if TYPE_CHECKING:
    from typing_extensions import TypeIs

# What the signature of a verification link is bound to: no other signed value of the site
# (a password reset, a session) can stand in for one.
SALT = "catalogs.accounts.email-verification"


def _signed_in(user: AuthUser | AnonymousUser | None) -> TypeIs[AuthUser]:
    return user is not None and bool(getattr(user, "is_authenticated", False))


# --------------------------------------------------------------------------- selectors


def email_verification_pending(
    *, user: AuthUser | AnonymousUser | None
) -> EmailVerification | None:
    """The unproven address of a self-signed-up ``user``, or None (verified, or an account an
    administrator made)."""
    if not _signed_in(user):
        return None
    return EmailVerification.objects.filter(user_id=user.pk, verified_at__isnull=True).first()


def user_email_verified(*, user: AuthUser | AnonymousUser | None) -> bool:
    """Whether ``user`` may do what needs a proven address (signed-out visitors may not)."""
    return _signed_in(user) and email_verification_pending(user=user) is None


def user_check_verified(*, user: AuthUser | AnonymousUser | None, what: str) -> None:
    """NotAllowedError when ``user`` signed up and has not opened their verification link yet."""
    pending = email_verification_pending(user=user)
    if pending is not None:
        raise NotAllowedError(
            f"Verify your e-mail address to {what}: open the link we sent to {pending.email}, "
            "or send a new one from /accounts/email/."
        )


# --------------------------------------------------------------------------- services


def email_verification_token(*, user: AuthUser) -> str:
    """A signed token naming ``user`` and their address; it expires after
    EMAIL_VERIFICATION_DAYS and stops working when the address changes."""
    return signing.dumps({"user": user.pk, "email": user.email.lower()}, salt=SALT)


@transaction.atomic
def email_verification_start(*, user: AuthUser) -> EmailVerification:
    """Record ``user``'s address as unproven (a new sign-up, or a changed address)."""
    if not user.email:
        raise InvalidInputError("email: give an e-mail address to verify")
    record, _ = EmailVerification.objects.update_or_create(
        user=user, defaults={"email": user.email, "verified_at": None}
    )
    return record


def email_verification_send(*, user: AuthUser) -> None:
    """E-mail ``user`` their verification link (at most EMAIL_VERIFICATION_RATE per user)."""
    pending = email_verification_pending(user=user)
    if pending is None:
        raise InvalidInputError("Your e-mail address is already verified.")
    wait = rate_limit_hit(
        namespace="krm-email-verification",
        key=str(user.pk),
        limit=settings.EMAIL_VERIFICATION_RATE,
    )
    if wait is not None:
        raise QuotaExceededError(
            f"Too many verification e-mails: at most {settings.EMAIL_VERIFICATION_RATE} "
            f"(EMAIL_VERIFICATION_RATE); try again in {math.ceil(wait)} s."
        )
    token = email_verification_token(user=user)
    path = reverse("web:email-verify", kwargs={"token": token})
    link = settings.REGISTRY_PUBLIC_URL.rstrip("/") + path
    days = settings.EMAIL_VERIFICATION_DAYS
    send_mail(
        subject="[KRM Catalog Registry] Verify your e-mail address",
        message=(
            f"Hello {user.username},\n\n"
            f"open this link to verify the e-mail address of your account on the KRM Catalog "
            f"Registry (it works for {days} day{'s' if days != 1 else ''}):\n\n{link}\n\n"
            "Until then you can sign in and look around, but not create a publisher or "
            "contribute a function.\nIf you did not sign up, ignore this e-mail.\n"
        ),
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[pending.email],
    )


@transaction.atomic
def email_verification_confirm(*, token: str) -> tuple[AuthUser, bool]:
    """Mark the address a verification link names as proven; the account it belongs to, and
    whether this use of the link verified it (False: it was verified already).

    InvalidInputError for a link that was altered, has expired, or names an address the account
    no longer has (nothing is changed then).
    """
    try:
        data = signing.loads(token, salt=SALT, max_age=settings.EMAIL_VERIFICATION_DAYS * 24 * 3600)
    except signing.SignatureExpired:
        raise InvalidInputError(
            "This verification link has expired: sign in and send a new one from /accounts/email/."
        )
    except signing.BadSignature:
        raise InvalidInputError(
            "This verification link is not valid: copy the whole link from the e-mail, or send "
            "a new one from /accounts/email/."
        )
    record = (
        EmailVerification.objects.select_for_update()
        .select_related("user")
        .filter(user_id=data.get("user"))
        .first()
    )
    email = str(data.get("email", ""))
    if (
        record is None
        or record.email.lower() != email
        or record.user.email.lower() != email
        or not record.user.is_active
    ):
        raise InvalidInputError(
            "This verification link is for an address the account no longer has: sign in and "
            "send a new one from /accounts/email/."
        )
    if record.verified_at is not None:
        return record.user, False
    record.verified_at = timezone.now()
    record.save(update_fields=["verified_at"])
    return record.user, True


@transaction.atomic
def email_verification_vouch(*, user: AuthUser, actor: AuthUser | AnonymousUser | None) -> bool:
    """Staff ``actor`` vouches for ``user``'s address (say the mail never arrived): whether it
    was unverified until now."""
    if not (_signed_in(actor) and actor.is_staff):
        raise NotAllowedError("Only staff may verify another user's e-mail address.")
    updated = EmailVerification.objects.filter(user=user, verified_at__isnull=True).update(
        verified_at=timezone.now()
    )
    return bool(updated)
