"""registry.wsgi's fast path for cached blobs answers exactly as the Django view does."""

from __future__ import annotations

import io

import pytest

from registry.wsgi import application

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """Called raw, the WSGI handler closes the database connection when a request ends (Django's
    test client disconnects that, as here): on PostgreSQL that is the test's transaction."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _call(path: str, method: str = "GET", **headers: str) -> tuple[str, dict[str, str], bytes]:
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.url_scheme": "http",
        **headers,
    }
    answer: dict = {}
    # Again at each call: Django's test client connects the handler back after each request.
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)

    def start_response(status: str, response_headers: list[tuple[str, str]]) -> None:
        answer["status"], answer["headers"] = status, dict(response_headers)

    body = application(environ, start_response)
    try:
        data = b"".join(body)
    finally:
        getattr(body, "close", lambda: None)()
    return answer["status"], answer["headers"], data


def test_second_get_is_answered_from_the_cache_with_the_views_headers(published, monkeypatch):
    from catalogs.distribution import selectors
    from registry.metrics import OCI_BLOB_VIEW, REQUESTS

    path = f"/v2/example-co/functions/blobs/{published.digest}"
    assert selectors.oci_blob_cached("example-co", "functions", published.digest) is None
    first = _call(path)  # through Django: a query, then cached
    counted = REQUESTS.labels(OCI_BLOB_VIEW, "GET", "200")._value.get()
    assert counted >= 1  # the view counted it under that name
    assert selectors.oci_blob_cached("example-co", "functions", published.digest) is not None
    # Proof that Django does not answer the second: the wrapped application is not called.
    monkeypatch.setattr(application, "application", lambda *args: pytest.fail("reached Django"))
    second = _call(path)
    assert first[0] == second[0] == "200 OK"
    assert first[2] == second[2] == bytes(published.content)
    # Every header Django sent (the view's and the security middleware's), the same values.
    assert second[1] == first[1]
    # Counted in the request metrics under the view's name, like the first.
    assert REQUESTS.labels(OCI_BLOB_VIEW, "GET", "200")._value.get() == counted + 1

    monkeypatch.undo()
    status, headers, body = _call(path, method="HEAD")
    assert (status, body) == ("200 OK", b"")
    assert headers["Content-Length"] == str(len(bytes(published.content)))


def test_ranges_conditionals_and_credentials_still_go_to_django(published):
    path = f"/v2/example-co/functions/blobs/{published.digest}"
    _call(path)
    status, headers, body = _call(path, HTTP_RANGE="bytes=0-3")
    assert status.startswith("206") and body == bytes(published.content)[:4]
    status, _, _ = _call(path, HTTP_IF_NONE_MATCH=f'"{published.digest}"')
    assert status.startswith("304")
    status, _, _ = _call(path, HTTP_AUTHORIZATION="Basic b3duZXI6bm9wZQ==")
    assert status.startswith("401")
    # Another repository never sees this one's cached blob.
    status, _, _ = _call(f"/v2/example-co/other/blobs/{published.digest}")
    assert status.startswith("404")


def test_the_fast_path_answers_only_allowed_hosts(published, settings):
    path = f"/v2/example-co/functions/blobs/{published.digest}"
    _call(path)  # cached
    settings.ALLOWED_HOSTS = ["registry.example.co"]
    status, _, body = _call(path, HTTP_HOST="evil.example.net")
    assert status.startswith("400") and bytes(published.content) not in body
    status, _, body = _call(path, HTTP_HOST="registry.example.co")
    assert status == "200 OK" and body == bytes(published.content)


def test_a_private_catalogs_cached_blob_goes_to_django_and_is_404_to_outsiders(
    published, owner, monkeypatch
):
    import base64

    from catalogs.accounts.services import api_token_create
    from catalogs.distribution import selectors
    from catalogs.publishing import services

    path = f"/v2/example-co/functions/blobs/{published.digest}"
    assert _call(path)[0] == "200 OK"  # public: cached by this process
    assert selectors.oci_blob_cached("example-co", "functions", published.digest) is not None
    services.catalog_update(catalog=published.catalog, actor=owner, visibility="private")
    status, _headers, body = _call(path)
    assert status.startswith("404")
    assert b"NAME_UNKNOWN" in body and bytes(published.content) not in body
    secret = api_token_create(user=owner, name="t")[1]
    basic = base64.b64encode(f"owner:{secret}".encode()).decode()
    status, _headers, body = _call(path, HTTP_AUTHORIZATION=f"Basic {basic}")
    assert (status, body) == ("200 OK", bytes(published.content))
    # Public again: the fast path answers again, without Django.
    services.catalog_update(catalog=published.catalog, actor=owner, visibility="public")
    monkeypatch.setattr(application, "application", lambda *args: pytest.fail("reached Django"))
    assert _call(path)[2] == bytes(published.content)


def test_an_anonymous_pull_token_is_answered_by_the_fast_path_and_other_tokens_are_not(
    published, basic, client, monkeypatch, settings
):
    """The Docker CLI and skopeo send an anonymous bearer token with a public pull (``/v2/`` is a
    401 challenge): it gets the fast path, checked (signature, expiry, the repository's pull)."""
    from django.core import signing

    from catalogs.distribution.auth import _SALT

    path = f"/v2/example-co/functions/blobs/{published.digest}"
    _call(path)  # cached
    scope = {"scope": "repository:example-co/functions:pull"}
    anonymous = client.get("/v2/token", scope).json()["token"]
    other_repository = client.get("/v2/token", {"scope": "repository:example-co/x:pull"})
    user = client.get("/v2/token", scope, HTTP_AUTHORIZATION=basic).json()["token"]
    forged = signing.dumps({"u": None, "a": {"example-co/functions": ["pull"]}}, salt="x")
    expired = signing.dumps({"u": None, "a": {"example-co/functions": ["pull"]}}, salt=_SALT)

    with monkeypatch.context() as django_unreachable:
        django_unreachable.setattr(
            application, "application", lambda *args: pytest.fail("reached Django")
        )
        status, headers, body = _call(path, HTTP_AUTHORIZATION=f"Bearer {anonymous}")
        assert (status, body) == ("200 OK", bytes(published.content))
        assert headers["Cache-Control"] == "public, max-age=31536000, immutable"

    settings.OCI_TOKEN_TTL_SECONDS = -1  # from now on every token is expired
    assert _call(path, HTTP_AUTHORIZATION=f"Bearer {expired}")[0].startswith("401")
    settings.OCI_TOKEN_TTL_SECONDS = 300
    reached = []
    django = application.application

    def counting(*args):
        reached.append(1)
        return django(*args)

    monkeypatch.setattr(application, "application", counting)
    without_pull = other_repository.json()["token"]
    for token, status in ((without_pull, "401"), (forged, "401"), (user, "200")):
        assert _call(path, HTTP_AUTHORIZATION=f"Bearer {token}")[0].startswith(status)
    assert len(reached) == 3  # each went to Django, which checked it
