"""Publisher webhooks: CloudEvents delivered to a real local HTTP receiver, which checks the
HMAC signature itself (hmac + hashlib, nothing of the project's); retries with backoff; the
delivery log; targets checked with the mirror's network policy (WEBHOOK_ALLOWED_NETWORKS)."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client
from rest_framework.test import APIClient

from catalogs import events
from catalogs.mirroring.events import MirrorDriftDetected, MirrorRunFailed
from catalogs.notifications import services
from catalogs.notifications.models import Webhook, WebhookDelivery
from catalogs.publishing.services import catalog_version_publish
from catalogs.review import services as contributions
from catalogs.trust.revocations import revocation_create
from tests.catalogs.factories import catalog_yaml
from tests.catalogs.review import contribution_fixtures

pytestmark = pytest.mark.django_db

contributor = contribution_fixtures.contributor
reviewer = contribution_fixtures.reviewer
published = contribution_fixtures.published
pending = contribution_fixtures.pending

HOOKS = "/api/v1/publishers/example-co/webhooks/"
SECRET = "s3cret-for-the-test"
ALL_EVENTS = [
    "catalog.version.published",
    "catalog.revocation.created",
    "contribution.submitted",
    "contribution.decided",
    "mirror.run.failed",
    "mirror.drift.detected",
]


class Receiver:
    """A real HTTP server on loopback that answers with ``statuses`` in turn (the last one
    repeats) and keeps every request, with whether its signature checked out."""

    def __init__(self, statuses: list[int]):
        self.statuses = list(statuses)
        self.received: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
                given = self.headers.get("X-Hub-Signature-256", "")
                receiver.received.append(
                    {
                        "content_type": self.headers.get("Content-Type"),
                        "signed": hmac.compare_digest(expected, given),
                        "event": json.loads(body),
                    }
                )
                status = (
                    receiver.statuses.pop(0) if len(receiver.statuses) > 1 else receiver.statuses[0]
                )
                answer = f"answer {len(receiver.received)} ({status})".encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver_for(settings, jobs_in_this_process):
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0
    started = []

    def start(statuses: list[int] | None = None) -> Receiver:
        started.append(Receiver(statuses or [200]))
        return started[-1]

    yield start
    for receiver in started:
        receiver.close()


def _as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _hook(owner, url: str, events: list[str] = ALL_EVENTS) -> dict:
    response = _as(owner).post(
        HOOKS, {"url": url, "secret": SECRET, "events": events}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def _publish(catalog, owner, django_capture_on_commit_callbacks, version: str = "v1"):
    with django_capture_on_commit_callbacks(execute=True):
        catalog_version_publish(
            catalog=catalog, content=catalog_yaml(("example.co", "SetLabels", version)), actor=owner
        )


def test_a_published_version_reaches_the_receiver_signed(
    receiver_for, owner, catalog, django_capture_on_commit_callbacks
):
    receiver = receiver_for()
    hook = _hook(owner, receiver.url, ["catalog.version.published"])
    assert "secret" not in hook
    _publish(catalog, owner, django_capture_on_commit_callbacks)
    [got] = receiver.received
    assert got["content_type"] == "application/cloudevents+json; charset=utf-8"
    assert got["signed"] is True
    event = got["event"]
    assert event["specversion"] == "1.0" and event["type"] == "catalog.version.published"
    assert event["source"].endswith("/publishers/example-co/")
    assert event["subject"] == "example-co/functions/versions/1"
    assert event["data"]["version"] == 1 and event["data"]["digest"].startswith("sha256:")
    assert {"id", "time", "datacontenttype"} <= event.keys()
    # The delivery log, through the API.
    log = _as(owner).get(f"{HOOKS}{hook['id']}/deliveries/").json()["results"]
    [delivery] = log
    assert (delivery["status"], delivery["attempts"], delivery["response_status"]) == (
        "succeeded",
        1,
        200,
    )
    assert delivery["response_excerpt"] == "answer 1 (200)"
    assert delivery["event"]["id"] == event["id"]
    # ... and on the publisher's webhooks page.
    client = Client()
    client.force_login(owner)
    page = client.get("/publishers/example-co/webhooks/").content.decode()
    assert receiver.url in page and "succeeded" in page and "answer 1 (200)" in page


def test_a_failing_receiver_is_retried_until_it_answers(
    receiver_for, owner, catalog, django_capture_on_commit_callbacks
):
    receiver = receiver_for([500, 503, 200])
    _hook(owner, receiver.url, ["catalog.version.published"])
    _publish(catalog, owner, django_capture_on_commit_callbacks)
    assert len(receiver.received) == 3
    # The very same event (id and bytes) each time, signed each time.
    assert len({r["event"]["id"] for r in receiver.received}) == 1
    assert all(r["signed"] for r in receiver.received)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("succeeded", 3)
    assert [a["status"] for a in delivery.log] == [500, 503, 200]


def test_a_receiver_that_keeps_failing_is_given_up_after_the_last_attempt(
    receiver_for, owner, catalog, django_capture_on_commit_callbacks, settings
):
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    receiver = receiver_for([500])
    _hook(owner, receiver.url, ["catalog.version.published"])
    _publish(catalog, owner, django_capture_on_commit_callbacks)
    assert len(receiver.received) == 2
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("failed", 2, 500)
    assert delivery.finished_at is not None


def test_backoff_is_exponential_and_capped(settings):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 10
    settings.WEBHOOK_RETRY_MAX_SECONDS = 60
    assert [services.webhook_retry_delay(n) for n in (1, 2, 3, 4, 5)] == [10, 20, 40, 60, 60]


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:9/hook", "http://169.254.169.254/latest/meta-data/", "http://[::1]/x"],
)
def test_a_private_target_is_refused_and_nothing_is_stored(owner, publisher, url):
    response = _as(owner).post(
        HOOKS, {"url": url, "secret": SECRET, "events": ALL_EVENTS}, format="json"
    )
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith(f"url: {url} is refused: its host ")
    assert "private, loopback or link-local address (allow its network with " in detail
    assert detail.endswith("WEBHOOK_ALLOWED_NETWORKS); nothing was stored.")
    assert not Webhook.objects.exists()


def test_the_policy_is_checked_again_at_delivery(
    receiver_for, owner, catalog, django_capture_on_commit_callbacks, settings
):
    receiver = receiver_for()
    _hook(owner, receiver.url, ["catalog.version.published"])
    settings.WEBHOOK_ALLOWED_NETWORKS = []  # the operator closed loopback since
    _publish(catalog, owner, django_capture_on_commit_callbacks)
    assert receiver.received == []
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("failed", 1)  # not retried
    assert delivery.error.startswith("refused by the network policy (allow its network with ")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"url": "ftp://example.org/x", "events": ALL_EVENTS}, "url: an http:// or https:// URL"),
        ({"url": "https://example.org/x", "events": ["nope"]}, '"nope" is not a valid choice.'),
        ({"url": "https://example.org/x", "events": []}, "This list may not be empty."),
    ],
)
def test_bad_webhook_requests_say_why_and_store_nothing(owner, publisher, body, message):
    response = _as(owner).post(HOOKS, {"secret": SECRET, **body}, format="json")
    assert response.status_code == 400
    assert message in repr(response.json())
    assert not Webhook.objects.exists()


def test_only_owners_manage_webhooks(receiver_for, owner, other_user, publisher):
    hook = _hook(owner, receiver_for().url)
    for response in (
        _as(other_user).get(HOOKS),
        _as(other_user).post(
            HOOKS, {"url": "https://x.org", "secret": "s", "events": ALL_EVENTS}, format="json"
        ),
        _as(other_user).delete(f"{HOOKS}{hook['id']}/"),
        _as(other_user).get(f"{HOOKS}{hook['id']}/deliveries/"),
    ):
        assert response.status_code == 403
        assert response.json() == {
            "detail": "Only owners of publisher 'example-co' (or staff) may manage its webhooks."
        }
    client = Client()
    client.force_login(other_user)
    page = client.get("/publishers/example-co/webhooks/")
    assert page.status_code == 403
    assert "may manage its webhooks" in page.content.decode()
    assert Webhook.objects.count() == 1
    assert _as(owner).delete(f"{HOOKS}{hook['id']}/").status_code == 204
    assert not Webhook.objects.exists()


def test_revocations_and_contributions_are_delivered(
    receiver_for, owner, reviewer, contributor, pending, django_capture_on_commit_callbacks
):
    receiver = receiver_for()
    _hook(owner, receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        contributions.contribution_request_changes(
            contribution=pending, actor=reviewer, reason="tests?"
        )
    with django_capture_on_commit_callbacks(execute=True):
        contributions.contribution_resubmit(
            contribution=pending, content=pending.content, actor=contributor
        )
    with django_capture_on_commit_callbacks(execute=True):
        revocation_create(
            catalog=pending.catalog,
            actor=owner,
            reason="compromised",
            group="example.co",
            kind="Fn",
            version="v1",
        )
    types = [(r["event"]["type"], r["signed"]) for r in receiver.received]
    assert types == [
        ("contribution.decided", True),
        ("contribution.submitted", True),
        ("catalog.revocation.created", True),
    ]
    decided, submitted, revoked = (r["event"]["data"] for r in receiver.received)
    assert (decided["status"], decided["reason"], decided["reviewer"]) == (
        "changes_requested",
        "tests?",
        "reviewer",
    )
    assert submitted["resubmitted"] is True and submitted["revision"] == 2
    assert (revoked["kind"], revoked["reason"]) == ("Fn", "compromised")


def test_the_mirror_events_are_subscribed():
    assert services.on_mirror_run_failed in events.subscribers(MirrorRunFailed)
    assert services.on_mirror_drift_detected in events.subscribers(MirrorDriftDetected)


def test_a_failed_mirror_run_is_delivered(
    receiver_for, settings, tmp_path, django_capture_on_commit_callbacks
):
    from catalogs.mirroring import services as mirrors
    from catalogs.publishing.models import Publisher

    settings.MIRROR_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MIRROR_TIMEOUT = 2.0
    settings.MEDIA_ROOT = str(tmp_path / "media")
    receiver = receiver_for()
    with socket.socket() as probe:  # a port nothing listens on: the sync fails to connect
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    source = mirrors.mirror_source_create(
        name="upstream", url=f"https://127.0.0.1:{closed}/catalog.yaml", actor=None
    )
    mirror_publisher = Publisher.objects.get(slug=settings.MIRROR_PUBLISHER_SLUG)
    services.webhook_create(
        publisher=mirror_publisher,
        actor=None,
        url=receiver.url,
        secret=SECRET,
        events=["mirror.run.failed"],
    )
    with django_capture_on_commit_callbacks(execute=True):
        queued = mirrors.mirror_source_sync_request(source=source, actor=None)
    assert mirrors.sync_run_get(pk=queued.pk).status == "failed"
    [got] = receiver.received
    assert got["signed"] and got["event"]["type"] == "mirror.run.failed"
    assert got["event"]["data"]["source"] == "upstream"
    assert got["event"]["data"]["run"] == queued.pk and got["event"]["data"]["reason"]
