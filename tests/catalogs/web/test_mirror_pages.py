"""Mirror pages: sources with status, "sync now", run history with reasons, drift events.

Runs here are recorded rows (the sync itself is the mirroring tests' business): "sync now" only
queues a run, and the queued job is never started because the test transaction never commits.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import DriftEvent, SyncRun

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _loopback_allowed(settings):
    """Sources here name 127.0.0.1:9 (nothing listens): the policy checked at creation allows
    loopback, as an operator's MIRROR_ALLOWED_NETWORKS would."""
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]


@pytest.fixture
def source(db):
    return mirrors.mirror_source_create(
        name="upstream", url="https://127.0.0.1:9/catalog.yaml", actor=None
    )


@pytest.fixture
def history(source):
    """A failed run with its reason and a succeeded run that saw an image tag move."""
    now = timezone.now()
    failed = SyncRun.objects.create(
        source=source,
        status=SyncRun.Status.FAILED,
        reason="Digest pin mismatch: pinned sha256:aa, upstream has sha256:bb.",
        finished_at=now,
    )
    ok = SyncRun.objects.create(
        source=source, status=SyncRun.Status.SUCCEEDED, digest="sha256:" + "c" * 64, finished_at=now
    )
    DriftEvent.objects.create(
        source=source,
        run=ok,
        image="registry.example.org/fn:v1",
        old_digest="sha256:" + "1" * 64,
        new_digest="sha256:" + "2" * 64,
    )
    return failed, ok


@pytest.mark.parametrize(
    ("role", "expected"),
    [("anonymous", 302), ("user", 403), ("owner", 403), ("reviewer", 403), ("staff", 200)],
)
def test_mirror_pages_are_for_operators(as_user, request, source, role, expected):
    user = (
        None
        if role == "anonymous"
        else request.getfixturevalue(
            {"user": "other_user", "owner": "owner", "reviewer": "reviewer", "staff": "staff_user"}[
                role
            ]
        )
    )
    client = as_user(user)
    for url in (
        "/mirrors/",
        f"/mirrors/{source.pk}/",
        "/mirrors/new/",
        f"/mirrors/{source.pk}/edit/",
    ):
        assert client.get(url).status_code == expected, url
    if expected != 200:
        # Neither a new source nor a change gets through.
        data = {"name": "sneaky", "url": "https://127.0.0.1:9/x.yaml", "interval_minutes": 5}
        assert client.post("/mirrors/new/", data).status_code == expected
        assert client.post(f"/mirrors/{source.pk}/edit/", data).status_code == expected
        assert list(mirrors.mirror_source_list().values_list("name", "url")) == [
            ("upstream", "https://127.0.0.1:9/catalog.yaml")
        ]
    response = client.post(f"/mirrors/{source.pk}/sync/")
    if expected == 200:
        assert response.status_code == 302
        assert SyncRun.objects.filter(source=source).count() == 1
    else:
        assert response.status_code == expected
        assert not SyncRun.objects.exists()


def test_the_operate_mirrors_permission_opens_them(as_user, source, other_user):
    from django.contrib.auth.models import Permission

    other_user.user_permissions.add(Permission.objects.get(codename="operate_mirrors"))
    assert as_user(other_user).get("/mirrors/").status_code == 200


def test_list_shows_last_run_status_and_reason(as_user, staff_user, history):
    body = as_user(staff_user).get("/mirrors/").content.decode()
    assert "upstream" in body and "https://127.0.0.1:9/catalog.yaml" in body
    assert "succeeded" in body  # the newest run


def test_detail_shows_run_history_with_reasons_and_drift(as_user, staff_user, source, history):
    body = as_user(staff_user).get(f"/mirrors/{source.pk}/").content.decode()
    assert "Digest pin mismatch: pinned sha256:aa, upstream has sha256:bb." in body
    assert "failed" in body and "succeeded" in body
    assert "registry.example.org/fn:v1" in body and "sha256:" + "2" * 64 in body


def test_sync_now_queues_one_run_at_a_time(as_user, staff_user, source):
    client = as_user(staff_user)
    first = client.post(f"/mirrors/{source.pk}/sync/", follow=True)
    run = SyncRun.objects.get()
    assert run.status == "queued"
    assert f"Sync run {run.pk} queued for upstream." in first.content.decode()
    second = client.post(f"/mirrors/{source.pk}/sync/", follow=True)
    assert (
        f"Source &#x27;upstream&#x27; already has run {run.pk} queued." in second.content.decode()
    )
    assert SyncRun.objects.count() == 1


def test_unknown_source_is_404(as_user, staff_user):
    assert as_user(staff_user).get("/mirrors/999/").status_code == 404


def test_search_filters_mirrored_and_signed(client, source):
    from catalogs.publishing import services
    from tests.catalogs.factories import catalog_yaml

    # A mirror's catalog takes versions only from a running sync of its source.
    run = SyncRun.objects.create(source=source, status=SyncRun.Status.RUNNING)
    services.catalog_version_publish(
        catalog=source.catalog,
        content=catalog_yaml(("m.io", "Mirrored", "v1")),
        actor=None,
        sync_run=run,
    )
    assert [v.kind for v in client.get("/?mirrored=on").context["page"]] == ["Mirrored"]
    # Every version the registry serves is signed by it, mirrored ones included.
    page = client.get("/?signed=on")
    assert [v.kind for v in page.context["page"]] == ["Mirrored"]
    key_id = source.catalog.versions.get().signing_key.key_id
    # The signing key is a facet of the search: its id, the functions it signed, a link.
    body = page.content.decode()
    # Signed by this registry, but not green: nothing verified the upstream (say so beside it).
    assert ' <span class="badge">signed</span>' in body
    assert "mirror · upstream not verified</span>" in body
    assert (
        f'<a href="?signed=on&amp;key={key_id}" role="checkbox" aria-checked="false" '
        'rel="nofollow"><span class="box" aria-hidden="true"></span>'
        f'<span class="label">{key_id}</span><span class="count">1</span>'
    ) in body
    assert [v.kind for v in client.get(f"/?key={key_id}").context["page"]] == ["Mirrored"]
    assert list(client.get("/?key=0000000000000000").context["page"]) == []
    source.catalog.versions.update(signature="", signing_key=None)
    assert list(client.get("/?signed=on").context["page"]) == []


def test_last_synced_counts_only_runs_that_served_upstream(as_user, staff_user, source):
    failed_at = timezone.now()
    SyncRun.objects.create(
        source=source, status=SyncRun.Status.FAILED, reason="unreachable", finished_at=failed_at
    )
    # A failed run sets last_synced_at (for the schedule), but nothing was ever synced.
    type(source).objects.filter(pk=source.pk).update(last_synced_at=failed_at)
    client = as_user(staff_user)
    [item] = client.get("/mirrors/").context["sources"]
    assert item["last_success"] is None
    row = client.get("/mirrors/").content.decode().split('class="grid mirrors"')[1]
    assert "<td>never</td>" in row
    assert (
        "<dt>Last synced</dt><dd>never</dd>"
        in client.get(f"/mirrors/{source.pk}/").content.decode()
    )
    ok = SyncRun.objects.create(
        source=source, status=SyncRun.Status.UNCHANGED, finished_at=timezone.now()
    )
    assert client.get("/mirrors/").context["sources"][0]["last_success"] == ok
    assert f"(run #{ok.pk})" in client.get(f"/mirrors/{source.pk}/").content.decode()


def test_a_changed_url_replaces_the_old_one_everywhere(as_user, staff_user, source):
    new = "https://127.0.0.1:9/v2/catalog.yaml"
    mirrors.mirror_source_update(source=source, actor=None, url=new)
    client = as_user(staff_user)
    for page in ("/catalogs/mirrors/upstream/", f"/mirrors/{source.pk}/", "/mirrors/"):
        body = client.get(page).content.decode()
        assert new in body, page
        assert "https://127.0.0.1:9/catalog.yaml" not in body, page
    # A description an operator wrote is left as it is.
    source.catalog.description = "Our copy of upstream."
    source.catalog.save()
    mirrors.mirror_source_update(source=source, actor=None, url="https://127.0.0.1:9/v3.yaml")
    source.catalog.refresh_from_db()
    assert source.catalog.description == "Our copy of upstream."


NEW_SOURCE = {
    "name": "team-fns",
    "url": "https://127.0.0.1:9/team/catalog.yaml",
    "digest": "",
    "mirror_runtimes": "on",
    "enabled": "on",
    "interval_minutes": "30",
}


def test_an_operator_creates_a_source_in_the_web_ui(as_user, staff_user, db):
    client = as_user(staff_user)
    page = client.get("/mirrors/").content.decode()
    assert 'href="/mirrors/new/"' in page
    response = client.post("/mirrors/new/", NEW_SOURCE)
    source = mirrors.mirror_source_get_by_name(name="team-fns")
    assert response.status_code == 302 and response["Location"] == f"/mirrors/{source.pk}/"
    assert (source.url, source.mirror_runtimes, source.enabled, source.interval_minutes) == (
        "https://127.0.0.1:9/team/catalog.yaml",
        True,
        True,
        30,
    )
    assert source.catalog.publisher.slug == "mirrors"
    detail = client.get(response["Location"]).content.decode()
    assert "Source team-fns created." in detail and f'href="/mirrors/{source.pk}/edit/"' in detail


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"url": "ftp://example.org/c.yaml"}, "url", "ftp://example.org/c.yaml"),
        ({"digest": "sha256:nothex"}, "digest", "digest must be sha256: and 64 lower-case"),
        (
            {"cosign_public_key": "-----BEGIN PUBLIC KEY-----"},
            "cosign_public_key",
            "cosign_public_key is not a PEM public key.",
        ),
        ({"sigstore_identity": "me@example.org"}, None, "needs both sigstore_identity and"),
        ({"name": "not a slug"}, "name", "Enter a valid “slug”"),
        ({"interval_minutes": "0"}, "interval_minutes", "greater than or equal to 1"),
        ({"name": "upstream"}, "name", "Mirror source &#x27;upstream&#x27; already exists."),
    ],
)
def test_a_bad_new_source_shows_the_error_and_creates_nothing(
    as_user, staff_user, source, change, field, message
):
    before = list(mirrors.mirror_source_list().values_list("name", "url"))
    response = as_user(staff_user).post("/mirrors/new/", {**NEW_SOURCE, **change})
    assert response.status_code == 400
    body = response.content.decode()
    assert message in body, body[-3000:]
    form = response.context["form"]
    errors = form.errors.get(field or "__all__")
    assert errors, form.errors
    assert list(mirrors.mirror_source_list().values_list("name", "url")) == before


def test_an_operator_edits_a_source_and_a_bad_edit_keeps_it(as_user, staff_user, source):
    client = as_user(staff_user)
    page = client.get(f"/mirrors/{source.pk}/edit/")
    form = page.context["form"]
    assert "name" not in form.fields
    assert form.initial["url"] == "https://127.0.0.1:9/catalog.yaml"
    bad = {**NEW_SOURCE, "url": "https://127.0.0.1:9/v2.yaml", "digest": "sha256:short"}
    response = client.post(f"/mirrors/{source.pk}/edit/", bad)
    assert response.status_code == 400
    assert "digest must be sha256:" in response.content.decode()
    source.refresh_from_db()
    assert (source.url, source.digest, source.interval_minutes) == (
        "https://127.0.0.1:9/catalog.yaml",
        "",
        60,
    )
    good = {**NEW_SOURCE, "url": "https://127.0.0.1:9/v2.yaml"}
    response = client.post(f"/mirrors/{source.pk}/edit/", good)
    assert response.status_code == 302
    source.refresh_from_db()
    assert (source.url, source.interval_minutes, source.mirror_runtimes) == (
        "https://127.0.0.1:9/v2.yaml",
        30,
        True,
    )
    assert source.name == "upstream"


@pytest.mark.django_db(transaction=True)
def test_sync_now_says_how_a_run_that_already_ended_ended(
    as_user, staff_user, source, jobs_in_this_process, settings
):
    """Without a broker the job runs before the page answers: the flash says so, not "queued"
    (here it fails: the upstream is on loopback, which MIRROR_ALLOWED_NETWORKS no longer
    allows)."""
    settings.MIRROR_ALLOWED_NETWORKS = []
    page = as_user(staff_user).post(f"/mirrors/{source.pk}/sync/", follow=True)
    run = SyncRun.objects.get()
    assert run.status == "failed"
    body = page.content.decode()
    assert f"Sync run {run.pk} of upstream failed: " in body
    assert "queued for upstream" not in body
    assert "MIRROR_ALLOWED_NETWORKS" in body


@pytest.mark.parametrize("eager", [True, False])
def test_the_schedule_says_when_nothing_runs_it(as_user, staff_user, source, settings, eager):
    settings.CELERY_TASK_ALWAYS_EAGER = eager
    client = as_user(staff_user)
    form = client.get("/mirrors/new/").content.decode()
    detail = client.get(f"/mirrors/{source.pk}/").content.decode()
    said = "nothing runs schedules here" in form, "Never runs here:" in detail
    assert said == ((True, True) if eager else (False, False))
