"""A moved upstream tag of a mirror (a catalog's or a kustomization package's, on Debian's
docker-registry) tells the operators (an inbox entry for staff and holders of
``mirroring.operate_mirrors``, e-mailed to a real local SMTP server) and the mirror publisher's
webhooks (``mirror.drift.detected``, at a real local receiver that checks the HMAC itself)."""

# The shared fixtures are imported by name: F811.
# ruff: noqa: F811

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import Permission

from catalogs.distribution import manifests as m
from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import DriftEvent
from catalogs.notifications import services as notifications
from catalogs.notifications.models import Notification
from catalogs.publishing.models import Publisher
from tests.catalogs.factories import UserFactory
from tests.catalogs.mirroring.conftest import catalog_doc
from tests.catalogs.mirroring.test_package_mirror import tree
from tests.catalogs.notifications.test_webhooks import SECRET, receiver_for  # noqa: F401
from tests.smtp_server import smtp  # noqa: F401

pytestmark = pytest.mark.django_db


def _push(kind: str, upstream, ref: str, n: int) -> str:
    if kind == "package":
        return upstream.push(ref, [(tree("web", str(n)), m.FLUX_CONTENT, {})])
    kinds = ("SetLabels",) if n == 1 else ("SetLabels", "SetAnnotations")
    return upstream.push_catalog(ref, catalog_doc("drift", kinds=kinds))


@pytest.mark.parametrize("kind", ["catalog", "package"])
def test_a_moved_upstream_tag_reaches_operators_and_webhooks(
    kind, oci_settings, oci_upstream, sync, smtp, receiver_for
):
    UserFactory(username="ops-staff", is_staff=True)
    operator = UserFactory(username="ops-perm")
    operator.user_permissions.add(Permission.objects.get(codename="operate_mirrors"))
    plain = UserFactory(username="plain")
    UserFactory(username="gone-staff", is_staff=True, is_active=False)
    repo = f"drift/{kind}-{uuid.uuid4().hex[:8]}"
    first = _push(kind, oci_upstream, f"{repo}:stable", 1)
    source = mirrors.mirror_source_create(
        name=f"drift-{kind}", kind=kind, url=oci_upstream.url(f"{repo}:stable"), actor=None
    )
    receiver = receiver_for()
    notifications.webhook_create(
        publisher=Publisher.objects.get(slug=oci_settings.MIRROR_PUBLISHER_SLUG),
        actor=None,
        url=receiver.url,
        secret=SECRET,
        events=["mirror.drift.detected"],
    )
    assert sync(source).status == "succeeded"
    assert not Notification.objects.exists() and receiver.received == []

    moved = _push(kind, oci_upstream, f"{repo}:stable", 2)
    run = sync(source)
    assert run.status == "succeeded", run.reason

    drift = DriftEvent.objects.get(source=source)
    title = (
        f"Mirror drift-{kind}: upstream tag {source.url} moved from {first[:19]} to {moved[:19]}"
    )
    by_user = {n.user.username: n for n in Notification.objects.select_related("user")}
    assert sorted(by_user) == ["ops-perm", "ops-staff"]
    assert by_user["ops-staff"].title == title
    assert by_user["ops-staff"].url == f"http://testserver/mirrors/{source.pk}/"
    assert not Notification.objects.filter(user=plain).exists()
    [(subject, body)] = smtp.bodies_to("ops-staff@example.co")
    assert subject == f"[KRM Catalog Registry] {title}"
    assert "because you operate this registry's mirrors" in body
    assert len(smtp.bodies_to("ops-perm@example.co")) == 1
    assert smtp.bodies_to("plain@example.co") == []

    [got] = receiver.received
    assert got["signed"] is True
    event = got["event"]
    assert event["type"] == "mirror.drift.detected"
    assert event["subject"] == f"sources/{source.pk}/runs/{run.pk}"
    assert event["data"] == {
        "source": f"drift-{kind}",
        "catalog": f"{oci_settings.MIRROR_PUBLISHER_SLUG}/{source.catalog.name}",
        "kind": kind,
        "image": source.url,
        "old_digest": first,
        "new_digest": moved,
    }
    assert (drift.old_digest, drift.new_digest) == (first, moved)

    # The same manifest again: no drift, nobody told twice.
    assert sync(source).status == "unchanged"
    assert Notification.objects.count() == 2 and len(receiver.received) == 1
