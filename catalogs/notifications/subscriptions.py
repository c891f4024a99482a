"""Users' subscriptions to catalogs and functions, their in-app inbox, and e-mail through
Django's e-mail backend (the console in the embedded default, SMTP where EMAIL_URL says so)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User as AuthUser
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from catalogs.exceptions import AlreadyExistsError, InvalidInputError, NotFoundError
from catalogs.jobs import job_enqueue_on_commit
from catalogs.notifications.models import Notification, Subscription
from catalogs.publishing.events import CatalogVersionPublished
from catalogs.publishing.models import Catalog, FunctionDefinition


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
    base = settings.REGISTRY_PUBLIC_URL.rstrip("/")
    title = f"{catalog.publisher.slug}/{catalog.name} published version {version.number}"
    url = f"{base}/catalogs/{catalog.publisher.slug}/{catalog.name}/"
    for user_id in sorted(set(users)):
        note = Notification.objects.create(user_id=user_id, title=title, url=url)
        job_enqueue_on_commit("catalogs.tasks.notification_email_send_task", note.pk)


def notification_email_send(*, notification: Notification) -> bool:
    """E-mail ``notification`` to its user, if they have an address; whether one was sent."""
    email = notification.user.email
    if not email:
        return False
    body = (
        f"{notification.title}\n\n{notification.url}\n\n"
        "You get this because you follow it on the KRM Catalog Registry; your inbox and "
        "subscriptions are under /inbox/.\n"
    )
    send_mail(
        subject=f"[KRM Catalog Registry] {notification.title}",
        message=body,
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[email],
    )
    return True
