"""Upstream credentials live in MIRROR_CREDENTIALS, never in a source URL, and never show.

Each protocol is checked against a real local upstream that refuses requests without them: the
trustme HTTPS server, git's smart-HTTP server behind it, and docker-registry with htpasswd.
"""

from __future__ import annotations

import base64
import logging

import pytest
from django.core import serializers
from rest_framework.test import APIClient

from catalogs.exceptions import InvalidInputError
from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import MirrorSource, SyncRun
from catalogs.publishing.models import Catalog
from tests.catalogs.mirroring.conftest import OCI_LOGIN, catalog_doc

pytestmark = pytest.mark.django_db

TOKEN = "tok-3f9a1c-very-secret"
PASSWORD = "pa55-w0rd-very-secret"
CREDENTIALS_HINT = (
    "A source URL must not contain a user name, password or token (user:secret@host): "
    "sources, runs and pages show their URL. Put credentials in the MIRROR_CREDENTIALS "
    'setting instead, per host: {"host": {"token": "..."}} or '
    '{"host": {"username": "...", "password": "..."}}.'
)


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def assert_secret_nowhere(secrets: list[str], source: MirrorSource, staff_user, caplog) -> None:
    """No API response, page, record or log line shows any of ``secrets``."""
    api = APIClient()
    api.force_authenticate(staff_user)
    name = source.name
    shown = [
        api.get("/api/v1/sources/"),
        api.get(f"/api/v1/sources/{source.pk}/"),
        api.get(f"/api/v1/sources/{source.pk}/runs/"),
        api.get(f"/api/v1/catalogs/{source.catalog.publisher.slug}/{name}/"),
        api.get("/api/v1/catalogs/"),
    ]
    shown += [api.get(f"/api/v1/runs/{run.pk}/") for run in SyncRun.objects.all()]
    api.logout()
    pages = APIClient()
    pages.force_login(staff_user)
    shown += [
        pages.get("/mirrors/"),
        pages.get(f"/mirrors/{source.pk}/"),
        pages.get(f"/catalogs/mirrors/{name}/"),
    ]
    assert all(r.status_code == 200 for r in shown), [(r.status_code, r.request) for r in shown]
    records = serializers.serialize(
        "json",
        [*MirrorSource.objects.all(), *SyncRun.objects.all(), *Catalog.objects.all()],
    )
    for secret in secrets:
        for response in shown:
            assert secret.encode() not in response.content, response.request
        assert secret not in records
        assert secret not in caplog.text


# ----------------------------------------------------------------------------- no URL secrets


@pytest.mark.parametrize(
    "url",
    [
        f"https://bot:{TOKEN}@127.0.0.1/catalog.yaml",
        f"https://{TOKEN}@127.0.0.1/catalog.yaml",
        f"git+https://bot:{TOKEN}@git.example.co/r.git//catalog.yaml?ref=main",
        f"oci://bot:{TOKEN}@registry.example.co/catalogs/c:v1",
    ],
)
def test_a_url_with_credentials_is_refused_at_creation(mirror_settings, url, staff_user):
    api = APIClient()
    api.force_authenticate(staff_user)
    response = api.post("/api/v1/sources/", {"name": "leaky", "url": url}, format="json")
    assert (response.status_code, response.json()) == (400, {"detail": CREDENTIALS_HINT})
    assert TOKEN not in response.content.decode()
    assert not MirrorSource.objects.exists()
    assert not Catalog.objects.exists()


def test_a_url_with_credentials_is_refused_at_update(mirror_settings, https_upstream, staff_user):
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    source = mirrors.mirror_source_create(name="clean", url=url, actor=None)
    api = APIClient()
    api.force_authenticate(staff_user)
    leaky = url.replace("https://", f"https://bot:{TOKEN}@")
    response = api.patch(f"/api/v1/sources/{source.pk}/", {"url": leaky}, format="json")
    assert (response.status_code, response.json()) == (400, {"detail": CREDENTIALS_HINT})
    assert MirrorSource.objects.get().url == url


def test_the_service_refuses_system_callers_too(mirror_settings):
    """The management commands and tasks call the same service: no way around the check."""
    with pytest.raises(InvalidInputError) as err:
        mirrors.mirror_source_create(
            name="leaky", url=f"https://bot:{TOKEN}@127.0.0.1/c.yaml", actor=None
        )
    assert err.value.message == CREDENTIALS_HINT
    assert not MirrorSource.objects.exists()


def query_hint(*names: str) -> str:
    shown = ", ".join(f"{name}=" for name in names)
    return (
        f"A source URL must not carry a token, key or signature in its query string ({shown}): "
        "sources, runs and pages show their URL. Put credentials in the MIRROR_CREDENTIALS "
        'setting instead, per host: {"host": {"token": "..."}} or '
        '{"host": {"username": "...", "password": "..."}}.'
    )


@pytest.mark.parametrize(
    ("url", "names"),
    [
        (f"https://127.0.0.1/catalog.yaml?token={TOKEN}", ["token"]),
        (f"https://127.0.0.1/catalog.yaml?v=1&access_token={TOKEN}", ["access_token"]),
        (f"https://127.0.0.1/c.yaml?Private_Token={TOKEN}&Private_Token=x", ["Private_Token"]),
        (
            "https://bucket.s3.amazonaws.com/c.yaml?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            f"&X-Amz-Credential=AKIA%2F20260101&X-Amz-Signature={TOKEN}",
            ["X-Amz-Credential", "X-Amz-Signature"],
        ),
        (f"https://acct.blob.core.windows.net/c/c.yaml?sv=2022&sp=r&sig={TOKEN}", ["sig"]),
        (f"https://storage.googleapis.com/b/c.yaml?X-Goog-Signature={TOKEN}", ["X-Goog-Signature"]),
        (f"https://127.0.0.1/c.yaml?api_key={TOKEN}", ["api_key"]),
        (f"https://127.0.0.1/c.yaml?client_secret={TOKEN}", ["client_secret"]),
        (f"git+https://git.example.co/r.git//catalog.yaml?ref=main&token={TOKEN}", ["token"]),
    ],
)
def test_a_url_with_a_query_string_secret_is_refused_at_creation(
    mirror_settings, url, names, staff_user
):
    api = APIClient()
    api.force_authenticate(staff_user)
    response = api.post("/api/v1/sources/", {"name": "leaky", "url": url}, format="json")
    assert (response.status_code, response.json()) == (400, {"detail": query_hint(*names)})
    assert TOKEN not in response.content.decode()
    assert not MirrorSource.objects.exists()
    assert not Catalog.objects.exists()


def test_a_query_string_secret_is_refused_at_update(mirror_settings, https_upstream, staff_user):
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    source = mirrors.mirror_source_create(name="clean", url=url, actor=None)
    api = APIClient()
    api.force_authenticate(staff_user)
    response = api.patch(
        f"/api/v1/sources/{source.pk}/", {"url": f"{url}?access_token={TOKEN}"}, format="json"
    )
    assert (response.status_code, response.json()) == (400, {"detail": query_hint("access_token")})
    assert MirrorSource.objects.get().url == url


def test_the_web_form_refuses_a_query_string_secret(mirror_settings, https_upstream, staff_user):
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    source = mirrors.mirror_source_create(name="clean", url=url, actor=None)
    client = APIClient()
    client.force_login(staff_user)
    data = {"name": "leaky", "url": f"{url}?token={TOKEN}", "interval_minutes": 60}
    response = client.post("/mirrors/new/", data)
    assert response.status_code == 400
    assert query_hint("token").replace('"', "&quot;") in response.content.decode()
    edit = client.post(f"/mirrors/{source.pk}/edit/", {**data, "name": "clean"})
    assert edit.status_code == 400
    assert query_hint("token").replace('"', "&quot;") in edit.content.decode()
    assert list(MirrorSource.objects.values_list("name", "url")) == [("clean", url)]


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/catalog.yaml?version=2&format=yaml",
        "git+https://git.example.co/r.git//catalog.yaml?ref=main",
        "https://127.0.0.1/catalog.yaml?monkey=1",  # "key" inside a longer name is no key
    ],
)
def test_a_query_string_without_secrets_is_accepted(mirror_settings, url):
    mirror_settings.MIRROR_ALLOWED_HOSTS = [*mirror_settings.MIRROR_ALLOWED_HOSTS, "git.example.co"]
    source = mirrors.mirror_source_create(name="plain", url=url, actor=None)
    assert MirrorSource.objects.get(pk=source.pk).url == url


def test_an_at_sign_in_the_path_is_no_credential(mirror_settings):
    mirror_settings.MIRROR_ALLOWED_HOSTS = [*mirror_settings.MIRROR_ALLOWED_HOSTS, "*.example.co"]
    source = mirrors.mirror_source_create(
        name="oci-digest", url="oci://registry.example.co/c/catalog@sha256:" + "a" * 64, actor=None
    )
    assert source.url.endswith("a" * 64)


# ----------------------------------------------------------------------------- HTTPS


def test_https_token_reaches_the_upstream_and_shows_nowhere(
    mirror_settings, https_upstream, sync, staff_user, caplog
):
    caplog.set_level(logging.DEBUG)
    mirror_settings.MIRROR_CREDENTIALS = {"127.0.0.1": {"token": TOKEN}}
    https_upstream.required_authorization = f"Bearer {TOKEN}"
    url = https_upstream.serve("/private/catalog.yaml", catalog_doc("private"))
    source = mirrors.mirror_source_create(name="private", url=url, actor=None)

    run = sync(source)

    assert (run.status, run.reason) == ("succeeded", "")
    assert https_upstream.requests[-1][1]["Authorization"] == f"Bearer {TOKEN}"
    assert_secret_nowhere([TOKEN], source, staff_user, caplog)


def test_https_without_credentials_says_where_they_go(mirror_settings, https_upstream, sync):
    https_upstream.required_authorization = f"Bearer {TOKEN}"
    url = https_upstream.serve("/private/catalog.yaml", catalog_doc("private"))
    source = mirrors.mirror_source_create(name="private", url=url, actor=None)

    run = sync(source)

    assert (run.status, run.reason) == (
        "failed",
        f"GET {url} answered HTTP 401: add credentials for host '127.0.0.1' to MIRROR_CREDENTIALS",
    )
    assert "Authorization" not in https_upstream.requests[-1][1]
    assert source.catalog.versions.count() == 0


def test_host_and_port_entry_wins_and_other_hosts_get_nothing(
    mirror_settings, https_upstream, sync
):
    port = https_upstream.port
    mirror_settings.MIRROR_CREDENTIALS = {
        "127.0.0.1": {"token": "wrong-one"},
        f"127.0.0.1:{port}": {"username": "bot", "password": PASSWORD},
        "localhost": {"token": "for-another-host"},
    }
    https_upstream.required_authorization = basic("bot", PASSWORD)
    url = https_upstream.serve("/private/catalog.yaml", catalog_doc("private"))
    source = mirrors.mirror_source_create(name="private", url=url, actor=None)
    assert sync(source).status == "succeeded"
    sent = {headers.get("Authorization") for _, headers in https_upstream.requests}
    assert sent == {basic("bot", PASSWORD)}


@pytest.mark.parametrize(
    "entry",
    [{"token": ""}, {"username": "bot"}, {"token": TOKEN, "password": PASSWORD}, "plain-string"],
)
def test_a_bad_credentials_entry_fails_the_run_naming_the_host_only(
    mirror_settings, https_upstream, sync, entry
):
    mirror_settings.MIRROR_CREDENTIALS = {"127.0.0.1": entry}
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    source = mirrors.mirror_source_create(name="bad-entry", url=url, actor=None)

    run = sync(source)

    assert run.status == "failed"
    assert run.reason == (
        'MIRROR_CREDENTIALS entry for host \'127.0.0.1\' must be {"token": "..."} or '
        '{"username": "...", "password": "..."} with non-empty strings.'
    )
    assert TOKEN not in run.reason and PASSWORD not in run.reason
    assert https_upstream.requests == []


# ----------------------------------------------------------------------------- git over HTTPS


def test_git_https_basic_credentials_reach_the_smart_http_server(
    mirror_settings, https_upstream, git_upstream, sync, staff_user, caplog
):
    caplog.set_level(logging.DEBUG)
    https_upstream.git_root = git_upstream.path.parent
    https_upstream.required_authorization = basic("bot", PASSWORD)
    mirror_settings.MIRROR_CREDENTIALS = {
        f"127.0.0.1:{https_upstream.port}": {"username": "bot", "password": PASSWORD}
    }
    commit = git_upstream.commit({"catalog.yaml": catalog_doc("private-git")})
    repo = https_upstream.url(f"/git/{git_upstream.path.name}")
    source = mirrors.mirror_source_create(
        name="private-git", url=f"git+{repo}//catalog.yaml?ref=main", actor=None
    )

    run = sync(source)

    assert (run.status, run.reason, run.digest) == ("succeeded", "", commit)
    git_requests = [h for path, h in https_upstream.requests if path.startswith("/git/")]
    assert git_requests and all(
        h.get("Authorization") == basic("bot", PASSWORD) for h in git_requests
    )
    secrets = [PASSWORD, basic("bot", PASSWORD).removeprefix("Basic ")]
    assert_secret_nowhere(secrets, source, staff_user, caplog)


def test_git_https_without_credentials_fails_with_gits_reason(
    mirror_settings, https_upstream, git_upstream, sync
):
    https_upstream.git_root = git_upstream.path.parent
    https_upstream.required_authorization = basic("bot", PASSWORD)
    git_upstream.commit({"catalog.yaml": catalog_doc()})
    repo = https_upstream.url(f"/git/{git_upstream.path.name}")
    source = mirrors.mirror_source_create(
        name="private-git", url=f"git+{repo}//catalog.yaml?ref=main", actor=None
    )

    run = sync(source)

    assert run.status == "failed"
    assert run.reason.startswith(f"Cannot fetch ref 'main' of {repo}: fatal: could not read ")


# ----------------------------------------------------------------------------- OCI


@pytest.fixture
def oci_auth_settings(mirror_settings, oci_auth_upstream):
    mirror_settings.MIRROR_OCI_PLAIN_HTTP_HOSTS = [oci_auth_upstream.host]
    return mirror_settings


def test_oci_htpasswd_credentials_reach_the_registry_and_show_nowhere(
    oci_auth_settings, oci_auth_upstream, sync, staff_user, caplog
):
    caplog.set_level(logging.DEBUG)
    user, password = OCI_LOGIN
    oci_auth_settings.MIRROR_CREDENTIALS = {
        oci_auth_upstream.host: {"username": user, "password": password}
    }
    digest = oci_auth_upstream.push_catalog("private/catalog:v1", catalog_doc("private-oci"))
    source = mirrors.mirror_source_create(
        name="private-oci", url=oci_auth_upstream.url("private/catalog:v1"), actor=None
    )

    run = sync(source)

    assert (run.status, run.reason, run.digest) == ("succeeded", "", digest)
    secrets = [password, basic(user, password).removeprefix("Basic ")]
    assert_secret_nowhere(secrets, source, staff_user, caplog)


@pytest.mark.parametrize("configured", [False, True])
def test_oci_without_or_with_wrong_credentials_fails_with_a_reason(
    oci_auth_settings, oci_auth_upstream, sync, configured
):
    oci_auth_upstream.push_catalog("private/catalog:v2", catalog_doc("private-oci"))
    if configured:
        oci_auth_settings.MIRROR_CREDENTIALS = {
            oci_auth_upstream.host: {"username": OCI_LOGIN[0], "password": "not-it"}
        }
    ref = "private/catalog:v2"
    source = mirrors.mirror_source_create(
        name="private-oci", url=oci_auth_upstream.url(ref), actor=None
    )

    run = sync(source)

    manifest = f"http://{oci_auth_upstream.host}/v2/private/catalog/manifests/v2"
    if configured:
        assert (run.status, run.reason) == ("failed", f"GET {manifest} answered HTTP 401")
    else:
        assert (run.status, run.reason) == (
            "failed",
            f"GET {manifest} requires authentication: add credentials for host "
            f"'{oci_auth_upstream.host}' in MIRROR_CREDENTIALS",
        )
    assert "not-it" not in run.reason


def test_django_debug_pages_mask_the_secrets(settings):
    """DEBUG error pages list settings: Django masks the token and password keys inside."""
    from django.views.debug import SafeExceptionReporterFilter

    settings.MIRROR_CREDENTIALS = {
        "ghcr.io": {"token": TOKEN},
        "git.example.co": {"username": "bot", "password": PASSWORD},
    }
    shown = str(SafeExceptionReporterFilter().get_safe_settings()["MIRROR_CREDENTIALS"])
    assert TOKEN not in shown and PASSWORD not in shown
    assert "git.example.co" in shown


def test_a_redirect_to_another_host_does_not_carry_the_credential(
    mirror_settings, https_upstream, sync
):
    """Credentials are looked up per hop: ``localhost`` (same server) has none configured."""
    mirror_settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32", "::1/128"]
    port = https_upstream.port
    mirror_settings.MIRROR_CREDENTIALS = {f"127.0.0.1:{port}": {"token": TOKEN}}
    https_upstream.serve("/moved.yaml", catalog_doc("moved"))
    url = https_upstream.serve("/catalog.yaml", location=f"https://localhost:{port}/moved.yaml")
    source = mirrors.mirror_source_create(name="moved", url=url, actor=None)

    assert sync(source).status == "succeeded"
    sent = [(path, headers.get("Authorization")) for path, headers in https_upstream.requests]
    assert sent == [("/catalog.yaml", f"Bearer {TOKEN}"), ("/moved.yaml", None)]
