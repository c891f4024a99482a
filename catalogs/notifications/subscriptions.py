"""Users' subscriptions to catalogs and functions, their in-app inbox, and e-mail through
Django's e-mail backend (the console in the embedded default, SMTP where EMAIL_URL says so).

Inbox entries come from what users follow (a published version), what they take part in (a
comment or decision on a contribution) and, for operators, what the mirrors saw (an upstream
tag that moved)."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.models import Permission
from django.contrib.auth.models import User as AuthUser
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from catalogs.exceptions import AlreadyExistsError, InvalidInputError, NotFoundError
from catalogs.jobs import job_enqueue_on_commit
from catalogs.mirroring.events import MirrorDriftDetected
from catalogs.notifications.models import Notification, Subscription
from catalogs.publishing.events import CatalogVersionPublished
from catalogs.publishing.models import Catalog, FunctionDefinition
from catalogs.review import services as review
from catalogs.review.events import ContributionCommented, ContributionDecided
from catalogs.review.models import Contribution, ContributionStatus, ReviewEvent


def subscription_list(*, user: AuthUser) -> QuerySet[Subscription]:
    """``user``'s subscriptions, oldest first."""
    return Subscription.objects.filter(user=user).select_related("catalog__publisher")


@transaction.atomic
def subscription_create(
    *, user: AuthUser, catalog: Catalog | None = None, function: str = ""
) -> Subscription:
    """Follow ``catalog``, or ``function`` (``<group>/<kind>``) in whichever catalog has it."""
    if (catalog is None) == (not function):
        raise InvalidInputError('give either "catalog" (publisher/name) or "function" (group/kind)')
    group = kind = ""
    if function:
        group, _, kind = function.rpartition("/")
        if not group or not kind:
            raise InvalidInputError(f"function: <group>/<kind>, not {function!r}")
    found = Subscription.objects.filter(user=user, catalog=catalog, group=group, kind=kind)
    if found.exists():
        raise AlreadyExistsError(f"You already follow {catalog or function}.")
    return Subscription.objects.create(user=user, catalog=catalog, group=group, kind=kind)


@transaction.atomic
def subscription_delete(*, user: AuthUser, pk: int) -> None:
    """Stop following subscription ``pk``."""
    deleted, _ = Subscription.objects.filter(user=user, pk=pk).delete()
    if not deleted:
        raise NotFoundError(f"You have no subscription {pk}.")


def notification_list(*, user: AuthUser) -> QuerySet[Notification]:
    """``user``'s inbox, newest first."""
    return Notification.objects.filter(user=user)


def notification_unread_count(*, user: AuthUser) -> int:
    """How many of ``user``'s notifications are unread (the count in the navigation)."""
    return Notification.objects.filter(user=user, read_at__isnull=True).count()


def notification_mark_all_read(*, user: AuthUser) -> int:
    """Mark ``user``'s inbox read; returns how many were unread."""
    return Notification.objects.filter(user=user, read_at__isnull=True).update(
        read_at=timezone.now()
    )


def on_catalog_version_published(event: CatalogVersionPublished) -> None:
    """Tell the followers of the catalog, or of a function in the new version: one inbox entry
    (and e-mail) per user."""
    version = event.version
    catalog = version.catalog
    # One query however many functions the version has: a function subscription matches when the
    # version defines its group and kind.
    defines = FunctionDefinition.objects.filter(
        catalog_version=version, group=OuterRef("group"), kind=OuterRef("kind")
    )
    users = (
        Subscription.objects.filter(
            Q(catalog=catalog) | (Q(catalog__isnull=True) & Exists(defines))
        )
        .values_list("user_id", flat=True)
        .distinct()
    )
    notification_send(
        user_ids=users,
        title=f"{catalog.publisher.slug}/{catalog.name} published version {version.number}",
        url=f"/catalogs/{catalog.publisher.slug}/{catalog.name}/",
        reason=Notification.Reason.FOLLOWING,
    )


def notification_send(
    *, user_ids: Iterable[int], title: str, url: str, reason: str
) -> list[Notification]:
    """One inbox entry per user (``url`` is a path on this registry), each e-mailed once the
    transaction commits."""
    base = settings.REGISTRY_PUBLIC_URL.rstrip("/")
    notes = []
    for user_id in sorted(set(user_ids)):
        note = Notification.objects.create(
            user_id=user_id, title=title[:300], url=f"{base}{url}", reason=reason
        )
        job_enqueue_on_commit("catalogs.tasks.notification_email_send_task", note.pk)
        notes.append(note)
    return notes


def _may_review(user_ids: Iterable[int], contribution: Contribution) -> set[int]:
    """Those of ``user_ids`` who review the contribution's catalog now (a participant who lost
    the right, or a follower who never had it, is told nothing about a contribution)."""
    catalog = contribution.catalog
    perm_app, _, perm_codename = review.REVIEW_PERMISSION.partition(".")
    # A cheap filter first (a catalog may have many followers), the exact check after it.
    candidates = (
        AuthUser.objects.filter(pk__in=set(user_ids), is_active=True)
        .filter(
            Q(is_staff=True)
            | Q(is_superuser=True)
            | Q(owned_publishers=catalog.publisher_id)
            | Q(groups__name=review.REVIEWERS_GROUP)
            | Q(
                user_permissions__codename=perm_codename,
                user_permissions__content_type__app_label=perm_app,
            )
            | Q(
                groups__permissions__codename=perm_codename,
                groups__permissions__content_type__app_label=perm_app,
            )
        )
        .distinct()
    )
    return {u.pk for u in candidates if review.user_can_review_catalog(user=u, catalog=catalog)}


def _contribution_reviewers(contribution: Contribution) -> set[int]:
    """Reviewers who took part in the contribution (decided or commented), and reviewers who
    follow its catalog."""
    acted = ReviewEvent.objects.filter(contribution=contribution, actor__isnull=False).values_list(
        "actor_id", flat=True
    )
    following = Subscription.objects.filter(catalog_id=contribution.catalog_id).values_list(
        "user_id", flat=True
    )
    ids = {*acted, *following}
    if contribution.reviewer_id:
        ids.add(contribution.reviewer_id)
    ids.discard(contribution.author_id)
    return _may_review(ids, contribution)


def _contribution_label(contribution: Contribution) -> str:
    catalog = contribution.catalog
    return (
        f"contribution #{contribution.pk} ({contribution.kind} to "
        f"{catalog.publisher.slug}/{catalog.name})"
    )


def on_contribution_commented(event: ContributionCommented) -> None:
    """Tell the other participants of the conversation: the author (unless they wrote it) and
    the reviewers who took part in it or follow the catalog; never the commenter."""
    comment = event.comment
    contribution = comment.contribution
    commenter = comment.actor
    recipients = _contribution_reviewers(contribution) | {contribution.author_id}
    if commenter is not None:
        recipients.discard(commenter.pk)
    who = commenter.get_username() if commenter is not None else "someone"
    notification_send(
        user_ids=recipients,
        title=f"{who} commented on {_contribution_label(contribution)}",
        url=f"/contributions/{contribution.pk}/",
        reason=Notification.Reason.TAKING_PART,
    )


_DECIDED = {
    ContributionStatus.APPROVED: "approved",
    ContributionStatus.REJECTED: "rejected",
    ContributionStatus.CHANGES_REQUESTED: "changes requested",
}


def on_contribution_decided(event: ContributionDecided) -> None:
    """Tell the author of a decision on their contribution (approved, rejected, or changes
    requested: then they are the one to act)."""
    contribution = event.contribution
    if contribution.author_id == contribution.reviewer_id:
        return  # an owner deciding on their own contribution knows
    what = _DECIDED.get(ContributionStatus(contribution.status), contribution.status)
    by = f" by {contribution.reviewer.get_username()}" if contribution.reviewer else ""
    notification_send(
        user_ids=[contribution.author_id],
        title=f"Your {_contribution_label(contribution)}: {what}{by}",
        url=f"/contributions/{contribution.pk}/",
        reason=Notification.Reason.TAKING_PART,
    )


def mirror_operator_ids() -> set[int]:
    """Active staff and holders of ``mirroring.operate_mirrors`` (the mirrors' operators)."""
    # As has_perm grants it (ModelBackend): held directly, through a group, or by a superuser.
    perm = {"codename": "operate_mirrors", "content_type__app_label": "mirroring"}
    holds = Q(user_permissions__in=Permission.objects.filter(**perm)) | Q(
        groups__permissions__in=Permission.objects.filter(**perm)
    )
    return set(
        AuthUser.objects.filter(is_active=True)
        .filter(Q(is_staff=True) | Q(is_superuser=True) | holds)
        .values_list("pk", flat=True)
    )


def on_mirror_drift_detected(event: MirrorDriftDetected) -> None:
    """Tell the operators that an upstream tag a mirror follows moved (a catalog's or package's
    own tag, or a container image tag it lists)."""
    drift = event.drift
    source = drift.source
    notification_send(
        user_ids=mirror_operator_ids(),
        title=(
            f"Mirror {source.name}: upstream tag {drift.image} moved from "
            f"{drift.old_digest[:19]} to {drift.new_digest[:19]}"
        ),
        url=f"/mirrors/{source.pk}/",
        reason=Notification.Reason.OPERATING,
    )


def notification_email_send(*, notification: Notification) -> bool:
    """E-mail ``notification`` to its user, if they have an address; whether one was sent."""
    email = notification.user.email
    if not email:
        return False
    body = (
        f"{notification.title}\n\n{notification.url}\n\n"
        f"You get this because you {Notification.Reason(notification.reason).label} on the KRM "
        "Catalog Registry; your inbox and subscriptions are under /inbox/.\n"
    )
    send_mail(
        subject=f"[KRM Catalog Registry] {notification.title}",
        message=body,
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[email],
    )
    return True
