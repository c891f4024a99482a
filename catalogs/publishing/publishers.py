"""People and publishers: co-owners invited by owners (who become owners by accepting), and the
verified badge staff grant.

Services (writes) are ``publisher_<verb>``; each change is an entry of the publisher's audit log
(``PublisherEvent``). Creating a publisher is ``services.publisher_create`` (reserved names and
slug rules live there), which the web UI calls as the API does.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User as AuthUser
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from catalogs.accounts.services import api_token_create
from catalogs.exceptions import (
    AlreadyExistsError,
    InvalidInputError,
    NotAllowedError,
    NotFoundError,
)
from catalogs.publishing.models import (
    OwnerInvitation,
    OwnerInvitationStatus,
    Publisher,
    PublisherEvent,
    PublisherEventAction,
    PublisherRobot,
    VerificationRequest,
    VerificationStatus,
)
from catalogs.publishing.selectors import signed_in, user_is_owner_or_staff
from catalogs.publishing.services import Actor, publisher_verified_clear

_signed_in = signed_in


def _check_owner(*, publisher: Publisher, actor: Actor) -> None:
    if actor is None:
        return
    if not user_is_owner_or_staff(publisher=publisher, user=actor):
        raise NotAllowedError(
            f"Only owners of publisher '{publisher.slug}' (or staff) may do this."
        )


def _check_staff(actor: Actor) -> None:
    if actor is None:
        return
    if not (_signed_in(actor) and actor.is_staff):
        raise NotAllowedError("Only staff grant or refuse the verified badge.")


def _log(publisher: Publisher, actor: Actor, action: str, detail: str = "") -> PublisherEvent:
    return PublisherEvent.objects.create(
        publisher=publisher,
        actor=actor if _signed_in(actor) else None,
        action=action,
        detail=detail,
    )


# --------------------------------------------------------------------------- selectors


def publisher_list_owned(*, user: Actor) -> QuerySet[Publisher]:
    """Publishers ``user`` owns."""
    if not _signed_in(user):
        return Publisher.objects.none()
    return Publisher.objects.filter(owners=user)


def publisher_event_list(*, publisher: Publisher) -> QuerySet[PublisherEvent]:
    """A publisher's audit log, oldest first."""
    return PublisherEvent.objects.filter(publisher=publisher).select_related("actor")


def verification_request_list(*, status: str | None = None) -> QuerySet[VerificationRequest]:
    """Requests for the verified badge, newest first, optionally by status."""
    qs = VerificationRequest.objects.select_related("publisher", "requested_by", "decided_by")
    return qs.filter(status=status) if status else qs


def verification_request_get(*, pk: int) -> VerificationRequest:
    """Request ``pk`` or NotFoundError."""
    try:
        return verification_request_list().get(pk=pk)
    except VerificationRequest.DoesNotExist:
        raise NotFoundError(f"Verification request {pk} does not exist.")


# --------------------------------------------------------------------------- services


@transaction.atomic
def publisher_owner_add(*, publisher: Publisher, username: str, actor: Actor) -> OwnerInvitation:
    """An owner (or staff) invites an existing user to co-own ``publisher``.

    Nobody becomes an owner without saying yes: the user accepts the invitation
    (``publisher_invitation_accept``) or declines it.
    """
    _check_owner(publisher=publisher, actor=actor)
    username = (username or "").strip()
    if not username:
        raise InvalidInputError("Give the user name of the new owner.")
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise InvalidInputError(f"Unknown user '{username}': they must sign up first.")
    return publisher_owner_invite(publisher=publisher, user=user, actor=actor)


def publisher_owner_invite(
    *, publisher: Publisher, user: AuthUser, actor: Actor
) -> OwnerInvitation:
    """Invite ``user`` (checked by the caller) to co-own ``publisher``; in the audit log."""
    if publisher.owners.filter(pk=user.pk).exists():
        raise AlreadyExistsError(f"{user.username} already owns publisher '{publisher.slug}'.")
    try:
        with transaction.atomic():
            invitation = OwnerInvitation.objects.create(
                publisher=publisher, invitee=user, invited_by=actor if _signed_in(actor) else None
            )
    except IntegrityError:
        raise AlreadyExistsError(
            f"{user.username} is invited to own publisher '{publisher.slug}' already."
        )
    _log(publisher, actor, PublisherEventAction.OWNER_INVITED, user.username)
    return invitation


def owner_invitation_list_pending(*, user: Actor) -> QuerySet[OwnerInvitation]:
    """Invitations waiting for ``user``'s answer, newest first."""
    if not _signed_in(user):
        return OwnerInvitation.objects.none()
    return OwnerInvitation.objects.filter(
        invitee=user, status=OwnerInvitationStatus.PENDING
    ).select_related("publisher", "invited_by")


@transaction.atomic
def publisher_invitation_decide(
    *, invitation: OwnerInvitation, actor: Actor, accept: bool
) -> OwnerInvitation:
    """The invitee accepts (and becomes a co-owner) or declines; nobody else may answer."""
    locked = (
        OwnerInvitation.objects.select_for_update()
        .select_related("publisher")
        .get(pk=invitation.pk)
    )
    if not _signed_in(actor) or actor.pk != locked.invitee_id:
        raise NotAllowedError("Only the invited user may accept or decline an invitation.")
    if locked.status != OwnerInvitationStatus.PENDING:
        raise InvalidInputError(f"This invitation was {locked.status} already.")
    locked.status = OwnerInvitationStatus.ACCEPTED if accept else OwnerInvitationStatus.DECLINED
    locked.decided_at = timezone.now()
    locked.save(update_fields=["status", "decided_at"])
    publisher = locked.publisher
    username = actor.get_username()
    if accept:
        publisher.owners.add(actor)
        _log(publisher, actor, PublisherEventAction.OWNER_ADDED, username)
        publisher_verified_clear(publisher=publisher, actor=actor, reason=f"owner {username} added")
    else:
        _log(publisher, actor, PublisherEventAction.INVITATION_DECLINED, username)
    return locked


def owner_invitation_get(*, pk: int) -> OwnerInvitation:
    """Invitation ``pk`` or NotFoundError."""
    found = OwnerInvitation.objects.select_related("publisher").filter(pk=pk).first()
    if found is None:
        raise NotFoundError(f"Invitation {pk} does not exist.")
    return found


@transaction.atomic
def publisher_verification_request(
    *, publisher: Publisher, actor: Actor, message: str = ""
) -> VerificationRequest:
    """An owner asks staff for the verified badge (one pending request at a time)."""
    _check_owner(publisher=publisher, actor=actor)
    locked = Publisher.objects.select_for_update().get(pk=publisher.pk)
    if locked.verified:
        raise InvalidInputError(f"Publisher '{locked.slug}' is verified already.")
    if locked.verification_requests.filter(status=VerificationStatus.PENDING).exists():
        raise AlreadyExistsError(
            f"Publisher '{locked.slug}' has a pending request already; staff will answer it."
        )
    try:
        with transaction.atomic():
            request = VerificationRequest.objects.create(
                publisher=locked,
                requested_by=actor if _signed_in(actor) else None,
                message=(message or "").strip(),
            )
    except IntegrityError:
        raise AlreadyExistsError(f"Publisher '{locked.slug}' has a pending request already.")
    _log(locked, actor, PublisherEventAction.VERIFICATION_REQUESTED, request.message)
    return request


@transaction.atomic
def publisher_verification_decide(
    *, request: VerificationRequest, actor: Actor, grant: bool, reason: str = ""
) -> VerificationRequest:
    """Staff grant the badge (the publisher becomes verified) or refuse it with a reason."""
    _check_staff(actor)
    locked = VerificationRequest.objects.select_for_update().get(pk=request.pk)
    if locked.status != VerificationStatus.PENDING:
        raise InvalidInputError(f"This request was {locked.status} already.")
    reason = (reason or "").strip()
    if not grant and not reason:
        raise InvalidInputError("A reason is required to refuse the verified badge.")
    locked.status = VerificationStatus.GRANTED if grant else VerificationStatus.REFUSED
    locked.decided_by = actor if _signed_in(actor) else None
    locked.decided_at = timezone.now()
    locked.reason = reason
    locked.save()
    publisher = locked.publisher
    if grant:
        Publisher.objects.filter(pk=publisher.pk).update(verified=True, updated_at=timezone.now())
        publisher.verified = True
    action = (
        PublisherEventAction.VERIFICATION_GRANTED
        if grant
        else PublisherEventAction.VERIFICATION_REFUSED
    )
    _log(publisher, actor, action, reason)
    return locked


# --------------------------------------------------------------------------- robot accounts

ROBOT_SCOPES = ("read", "publish")


def publisher_robot_list(*, publisher: Publisher, actor: Actor) -> QuerySet[PublisherRobot]:
    """A publisher's robot accounts, by name, with their users' tokens (owners see them)."""
    _check_owner(publisher=publisher, actor=actor)
    return publisher.robots.select_related("user").prefetch_related("user__api_tokens")


@transaction.atomic
def publisher_robot_create(
    *, publisher: Publisher, actor: Actor, name: str, expires_in_days: int | None = None
) -> tuple[PublisherRobot, str]:
    """A robot account for CI and its first token (read, publish), returned once.

    The robot is a user without a password named ``robot+<publisher>+<name>``; it may publish to
    this publisher only (catalogs, versions, OCI pushes), never manage its people or robots.
    """
    _check_owner(publisher=publisher, actor=actor)
    name = (name or "").strip().lower()
    if not name or len(name) > 50 or not all(c.isalnum() or c == "-" for c in name):
        raise InvalidInputError(
            f"name: 1 to 50 lowercase letters, digits and hyphens, not {name!r}"
        )
    if publisher.robots.filter(name=name).exists():
        raise AlreadyExistsError(
            f"name: publisher '{publisher.slug}' already has a robot account named {name!r}"
        )
    username = f"robot+{publisher.slug}+{name}"
    if get_user_model().objects.filter(username=username).exists():
        raise AlreadyExistsError(f"name: the user name {username!r} is taken")
    user = get_user_model().objects.create_user(username=username)  # no usable password
    robot = PublisherRobot.objects.create(
        publisher=publisher, user=user, name=name, created_by=actor if _signed_in(actor) else None
    )
    _, secret = api_token_create(
        user=user, name=name, scopes=ROBOT_SCOPES, expires_in_days=expires_in_days
    )
    _log(publisher, actor, PublisherEventAction.ROBOT_CREATED, username)
    return robot, secret


@transaction.atomic
def publisher_robot_delete(*, publisher: Publisher, actor: Actor, name: str) -> None:
    """Delete robot ``name`` and its tokens: they stop working at once."""
    _check_owner(publisher=publisher, actor=actor)
    robot = publisher.robots.select_related("user").filter(name=name).first()
    if robot is None:
        raise NotFoundError(f"Publisher '{publisher.slug}' has no robot account {name!r}.")
    user = robot.user
    username = user.get_username()
    # The user stays, inactive and renamed, so that what it published still names it; its
    # tokens go (they stop working at once) and the name is free for a new robot.
    user.api_tokens.all().delete()
    robot.delete()
    user.is_active = False
    user.username = f"{username}-deleted-{user.pk}"[:150]
    user.save(update_fields=["is_active", "username"])
    _log(publisher, actor, PublisherEventAction.ROBOT_DELETED, username)
