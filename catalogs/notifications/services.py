"""Webhooks: create and delete them (targets checked with the mirror's network policy), turn the
apps' events into CloudEvents 1.0 (structured JSON), deliver them signed with the webhook's secret
(``X-Hub-Signature-256: sha256=<HMAC-SHA256 hex of the body>``), and log every attempt.

Event handlers run in the emitter's transaction: they only store a delivery row per matching
webhook and queue its job on commit, so a rolled-back write sends nothing and a slow receiver
never holds a publish up.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from catalogs.exceptions import (
    DestinationRefusedError,
    FetchError,
    InvalidInputError,
    NotAllowedError,
    NotFoundError,
)
from catalogs.jobs import job_enqueue_on_commit
from catalogs.mirroring.events import MirrorDriftDetected, MirrorRunFailed
from catalogs.mirroring.fetchers.base import Limits, default_port, resolve_checked
from catalogs.mirroring.fetchers.https import pinned_transport
from catalogs.notifications.models import Webhook, WebhookDelivery, WebhookEventType
from catalogs.publishing.events import CatalogVersionPublished
from catalogs.publishing.models import Publisher
from catalogs.publishing.selectors import signed_in, user_is_owner_or_staff
from catalogs.publishing.services import Actor
from catalogs.review.events import (
    ContributionCommented,
    ContributionDecided,
    ContributionSubmitted,
)
from catalogs.trust.events import RevocationCreated

CONTENT_TYPE = "application/cloudevents+json; charset=utf-8"
EXCERPT_BYTES = 1000
_POLICY = "allow its network with WEBHOOK_ALLOWED_NETWORKS"


def webhook_limits() -> Limits:
    """Where deliveries may connect: public addresses, and WEBHOOK_ALLOWED_NETWORKS."""
    return Limits(
        max_bytes=0,
        timeout=float(settings.WEBHOOK_TIMEOUT_SECONDS),
        max_redirects=0,
        allowed_networks=tuple(settings.WEBHOOK_ALLOWED_NETWORKS),
    )


def webhook_url_check(url: str) -> None:
    """InvalidInputError unless ``url`` is http(s) and its host resolves to allowed addresses."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInputError(f"url: an http:// or https:// URL with a host, not {url!r}")
    try:
        resolve_checked(parts.hostname, default_port(url), limits=webhook_limits(), url=url)
    except DestinationRefusedError:
        raise InvalidInputError(
            f"url: {url} is refused: its host '{parts.hostname}' is a private, loopback or "
            f"link-local address ({_POLICY}); nothing was stored."
        ) from None
    except (FetchError, ValueError) as exc:
        raise InvalidInputError(f"url: {exc}; nothing was stored.") from None


def _check_owner(*, publisher: Publisher, actor: Actor) -> None:
    if actor is not None and not user_is_owner_or_staff(publisher=publisher, user=actor):
        raise NotAllowedError(
            f"Only owners of publisher '{publisher.slug}' (or staff) may manage its webhooks."
        )


def webhook_list(*, publisher: Publisher, actor: Actor) -> QuerySet[Webhook]:
    """A publisher's webhooks (owners and staff see them)."""
    _check_owner(publisher=publisher, actor=actor)
    return Webhook.objects.filter(publisher=publisher)


def webhook_get(*, publisher: Publisher, actor: Actor, pk: int) -> Webhook:
    """Webhook ``pk`` of ``publisher`` or NotFoundError."""
    found = webhook_list(publisher=publisher, actor=actor).filter(pk=pk).first()
    if found is None:
        raise NotFoundError(f"Publisher '{publisher.slug}' has no webhook {pk}.")
    return found


@transaction.atomic
def webhook_create(
    *, publisher: Publisher, actor: Actor, url: str, secret: str, events: list[str]
) -> Webhook:
    """A webhook of ``publisher`` for ``events``; the URL is checked before anything is kept."""
    _check_owner(publisher=publisher, actor=actor)
    if not events:
        raise InvalidInputError(
            f"events: give at least one of {', '.join(WebhookEventType.values)}"
        )
    unknown = [e for e in events if e not in WebhookEventType.values]
    if unknown:
        raise InvalidInputError(
            f"events: unknown event type {unknown[0]!r}; use {', '.join(WebhookEventType.values)}"
        )
    if not secret or len(secret) > 200:
        raise InvalidInputError("secret: 1 to 200 characters, to sign every delivery with")
    webhook_url_check(url)
    return Webhook.objects.create(
        publisher=publisher,
        url=url,
        secret=secret,
        events=[e for e in WebhookEventType.values if e in events],
        created_by=actor if signed_in(actor) else None,
    )


@transaction.atomic
def webhook_delete(*, webhook: Webhook, actor: Actor) -> None:
    """Delete ``webhook`` and its delivery log."""
    _check_owner(publisher=webhook.publisher, actor=actor)
    webhook.delete()


def webhook_delivery_list(*, webhook: Webhook) -> QuerySet[WebhookDelivery]:
    """A webhook's deliveries, newest first."""
    return webhook.deliveries.all()


# ----------------------------------------------------------------------------- events


def _cloud_event(*, publisher: Publisher, type: str, subject: str, data: dict[str, Any]) -> dict:
    base = settings.REGISTRY_PUBLIC_URL.rstrip("/")
    return {
        "specversion": "1.0",
        "id": str(uuid.uuid4()),
        "source": f"{base}/publishers/{publisher.slug}/",
        "type": type,
        "subject": subject,
        "time": timezone.now().isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json",
        "data": data,
    }


def webhook_event_dispatch(
    *, publisher_id: int, type: str, subject: str, data: dict[str, Any]
) -> list[WebhookDelivery]:
    """Store a delivery of the event for each webhook of the publisher that wants ``type`` and
    queue it once the transaction commits."""
    hooks = [
        h
        for h in Webhook.objects.filter(publisher_id=publisher_id).select_related("publisher")
        if type in h.events
    ]
    deliveries = []
    for hook in hooks:
        event = _cloud_event(publisher=hook.publisher, type=type, subject=subject, data=data)
        delivery = WebhookDelivery.objects.create(
            webhook=hook,
            event_id=event["id"],
            event_type=type,
            body=json.dumps(event, separators=(",", ":"), sort_keys=True),
        )
        job_enqueue_on_commit(
            "catalogs.tasks.webhook_delivery_send_task", delivery.pk, background=True
        )
        deliveries.append(delivery)
    return deliveries


def on_catalog_version_published(event: CatalogVersionPublished) -> None:
    """``catalog.version.published`` to the catalog's publisher's webhooks."""
    version = event.version
    catalog = version.catalog
    webhook_event_dispatch(
        publisher_id=catalog.publisher_id,
        type=WebhookEventType.CATALOG_VERSION_PUBLISHED,
        subject=f"{catalog.publisher.slug}/{catalog.name}/versions/{version.number}",
        data={
            "publisher": catalog.publisher.slug,
            "catalog": catalog.name,
            "version": version.number,
            "digest": version.digest,
        },
    )


def on_revocation_created(event: RevocationCreated) -> None:
    """``catalog.revocation.created``."""
    row = event.revocation
    catalog = row.catalog
    webhook_event_dispatch(
        publisher_id=catalog.publisher_id,
        type=WebhookEventType.CATALOG_REVOCATION_CREATED,
        subject=f"{catalog.publisher.slug}/{catalog.name}/revocations/{row.sequence}",
        data={
            "publisher": catalog.publisher.slug,
            "catalog": catalog.name,
            "sequence": row.sequence,
            "group": row.group,
            "kind": row.kind,
            "version": row.version,
            "runtime_digest": row.runtime_digest,
            "reason": row.reason,
            "replacement": row.replacement,
        },
    )


def _contribution_data(contribution: Any) -> dict[str, Any]:
    catalog = contribution.catalog
    return {
        "id": contribution.pk,
        "publisher": catalog.publisher.slug,
        "catalog": catalog.name,
        "group": contribution.group,
        "kind": contribution.kind,
        "revision": contribution.revision,
        "status": contribution.status,
        "author": contribution.author.get_username(),
    }


def on_contribution_submitted(event: ContributionSubmitted) -> None:
    """``contribution.submitted`` (resubmissions too, with ``resubmitted``)."""
    contribution = event.contribution
    data = {**_contribution_data(contribution), "resubmitted": event.resubmitted}
    webhook_event_dispatch(
        publisher_id=contribution.catalog.publisher_id,
        type=WebhookEventType.CONTRIBUTION_SUBMITTED,
        subject=f"contributions/{contribution.pk}",
        data=data,
    )


def on_contribution_decided(event: ContributionDecided) -> None:
    """``contribution.decided``: approved, rejected or changes requested (``status``), with
    the reviewer's reason."""
    contribution = event.contribution
    data = {
        **_contribution_data(contribution),
        "reviewer": contribution.reviewer.get_username() if contribution.reviewer else None,
        "reason": contribution.reason,
    }
    webhook_event_dispatch(
        publisher_id=contribution.catalog.publisher_id,
        type=WebhookEventType.CONTRIBUTION_DECIDED,
        subject=f"contributions/{contribution.pk}",
        data=data,
    )


def on_contribution_commented(event: ContributionCommented) -> None:
    """``contribution.commented``: a message of the conversation, by its author or a reviewer."""
    comment = event.comment
    contribution = comment.contribution
    data = {
        **_contribution_data(contribution),
        "comment": comment.pk,
        "commenter": comment.actor.get_username() if comment.actor else None,
        "body": comment.reason,
        "comment_revision": comment.revision,
    }
    webhook_event_dispatch(
        publisher_id=contribution.catalog.publisher_id,
        type=WebhookEventType.CONTRIBUTION_COMMENTED,
        subject=f"contributions/{contribution.pk}/comments/{comment.pk}",
        data=data,
    )


def on_mirror_run_failed(event: MirrorRunFailed) -> None:
    """``mirror.run.failed`` to the mirror catalog's publisher's webhooks."""
    run = event.run
    source = run.source
    catalog = source.catalog
    webhook_event_dispatch(
        publisher_id=catalog.publisher_id,
        type=WebhookEventType.MIRROR_RUN_FAILED,
        subject=f"sources/{source.pk}/runs/{run.pk}",
        data={
            "source": source.name,
            "run": run.pk,
            "catalog": f"{catalog.publisher.slug}/{catalog.name}",
            "reason": run.reason,
        },
    )


def on_mirror_drift_detected(event: MirrorDriftDetected) -> None:
    """``mirror.drift.detected``: an upstream tag moved, the source's own (``kind``: its
    ``catalog`` or ``package``) or a container image tag its catalog lists (``image``)."""
    drift = event.drift
    source = drift.source
    catalog = source.catalog
    kind = source.kind if drift.image == source.url else "image"
    webhook_event_dispatch(
        publisher_id=catalog.publisher_id,
        type=WebhookEventType.MIRROR_DRIFT_DETECTED,
        subject=f"sources/{source.pk}/runs/{drift.run_id}",
        data={
            "source": source.name,
            "catalog": f"{catalog.publisher.slug}/{catalog.name}",
            "kind": kind,
            "image": drift.image,
            "old_digest": drift.old_digest,
            "new_digest": drift.new_digest,
        },
    )


# ----------------------------------------------------------------------------- delivery


def webhook_signature(secret: str, body: bytes) -> str:
    """``sha256=<hex>``: the HMAC-SHA256 of ``body`` keyed with ``secret`` (GitHub's header)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def webhook_retry_delay(attempts: int) -> float:
    """Seconds before attempt ``attempts + 1``: exponential, capped."""
    base = float(settings.WEBHOOK_RETRY_BASE_SECONDS)
    return min(base * 2 ** (attempts - 1), float(settings.WEBHOOK_RETRY_MAX_SECONDS))


def webhook_delivery_send(*, delivery: WebhookDelivery) -> float | None:
    """Make one attempt; log it. Returns the delay before the next attempt, or None when the
    delivery is over (succeeded, refused by the network policy, or out of attempts)."""
    hook = delivery.webhook
    body = delivery.body.encode()
    headers = {
        "Content-Type": CONTENT_TYPE,
        "X-Hub-Signature-256": webhook_signature(hook.secret, body),
        "User-Agent": "krm-catalog-registry-webhooks/1",
    }
    status: int | None = None
    excerpt = error = ""
    final = False
    try:
        with (
            httpx.Client(
                transport=pinned_transport(limits=webhook_limits()),
                timeout=float(settings.WEBHOOK_TIMEOUT_SECONDS),
                follow_redirects=False,
                trust_env=False,
            ) as client,
            client.stream("POST", hook.url, content=body, headers=headers) as response,
        ):
            status = response.status_code
            read = b""
            for chunk in response.iter_bytes():
                read += chunk
                if len(read) >= EXCERPT_BYTES:
                    break
            excerpt = read[:EXCERPT_BYTES].decode("utf-8", "replace")
    except DestinationRefusedError as exc:
        error = f"refused by the network policy ({_POLICY}): {exc.message.split(';')[0]}"
        final = True
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
    now = timezone.now()
    delivery.attempts += 1
    delivery.response_status = status
    delivery.response_excerpt = excerpt
    delivery.error = error
    delivery.log = [
        *delivery.log,
        {"at": now.isoformat(), "status": status, "excerpt": excerpt[:200], "error": error},
    ]
    ok = status is not None and 200 <= status < 300
    out = final or delivery.attempts >= int(settings.WEBHOOK_MAX_ATTEMPTS)
    if ok:
        delivery.status = WebhookDelivery.Status.SUCCEEDED
    elif out:
        delivery.status = WebhookDelivery.Status.FAILED
    if ok or out:
        delivery.finished_at = now
    delivery.save()
    if ok or out:
        return None
    return webhook_retry_delay(delivery.attempts)


def webhook_delivery_get(*, pk: int) -> WebhookDelivery:
    """Delivery ``pk`` with its webhook."""
    return WebhookDelivery.objects.select_related("webhook").get(pk=pk)
