"""krm sends ``~/.netrc`` (``$NETRC``) credentials to the host they name, over https or plain
http to loopback, and never to another host after a redirect (real local servers)."""

from __future__ import annotations

import base64
import os

import pytest

from orchestrator.functions.fetch import FetchError, http_get, netrc_authorization


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def netrc_file(tmp_path, monkeypatch):
    path = tmp_path / "netrc"
    path.write_text("machine 127.0.0.1 login alice password tok-123\n")
    os.chmod(path, 0o600)
    monkeypatch.setenv("NETRC", str(path))
    return path


def test_credentials_go_to_their_host_over_https(https_server, options, netrc_file):
    https_server.files["/c/acme/private/catalog.yaml"] = b"kind: Catalog\n"
    resp = http_get(
        https_server.url("/c/acme/private/catalog.yaml"),
        options=options(ca_file=https_server.ca_file),
        max_bytes=1000,
    )
    assert resp.body == b"kind: Catalog\n"
    assert https_server.authorizations == [_basic("alice", "tok-123")]


def test_plain_http_only_to_loopback(netrc_file):
    assert netrc_authorization("http://127.0.0.1:8000/c/a/b/catalog.yaml") == _basic(
        "alice", "tok-123"
    )
    netrc_file.write_text("machine registry.example login alice password tok-123\n")
    assert netrc_authorization("http://registry.example/c/a/b/catalog.yaml") is None
    assert netrc_authorization("https://registry.example/c/a/b/catalog.yaml") == _basic(
        "alice", "tok-123"
    )
    assert netrc_authorization("https://other.example/c/a/b/catalog.yaml") is None


def test_never_sent_to_another_host_on_redirect(https_server, http_server, options, netrc_file):
    """The redirect goes to another origin (another port of loopback, plain http): it gets no
    credentials, although the netrc has some for its host name."""
    http_server.files["/elsewhere.yaml"] = b"kind: Catalog\n"
    https_server.redirects["/c/acme/x/catalog.yaml"] = http_server.url("/elsewhere.yaml")
    resp = http_get(
        https_server.url("/c/acme/x/catalog.yaml"),
        options=options(ca_file=https_server.ca_file),
        max_bytes=1000,
    )
    assert resp.body == b"kind: Catalog\n"
    assert https_server.authorizations == [_basic("alice", "tok-123")]
    assert http_server.authorizations == [""]


def test_not_found_says_where_credentials_come_from(https_server, options, netrc_file):
    url = https_server.url("/c/acme/private/catalog.yaml")
    with pytest.raises(FetchError) as exc:
        http_get(url, options=options(ca_file=https_server.ca_file), max_bytes=1000)
    assert str(exc.value) == (
        f"downloading {url}: HTTP 404: not found or you lack access; krm reads credentials "
        f"from ~/.netrc ({netrc_file}: sent the credentials of machine 127.0.0.1)"
    )


def test_a_broken_netrc_is_one_clear_error(https_server, options, netrc_file):
    netrc_file.write_text("machine 127.0.0.1 login alice password tok\nbogus line\n")
    url = https_server.url("/c/acme/private/catalog.yaml")
    with pytest.raises(FetchError) as exc:
        http_get(url, options=options(ca_file=https_server.ca_file), max_bytes=1000)
    assert str(exc.value).startswith(f"cannot read credentials from {netrc_file}: ")
    assert https_server.requests == []  # nothing was sent
