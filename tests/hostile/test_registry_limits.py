"""Request body limits on real servers: chunked bodies (no Content-Length) and declared sizes.

gunicorn decodes chunked request bodies for the application; Django alone would read them as
empty. The limit is twice CATALOG_MAX_BYTES (here 2 × 20,000 bytes), and every refusal is a JSON
problem that names it; nothing is published.
"""

from __future__ import annotations

import http.client
import json
import socket
from urllib.parse import urlsplit

import pytest

from tests.catalogs.factories import catalog_yaml
from tests.live_registry import live_registry

PATH = "/api/v1/catalogs/acme/fns/versions/"
LIMIT = 2 * 20_000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_registry(
        tmp_path_factory.mktemp("limits"), workers=1, threads=4, CATALOG_MAX_BYTES="20000"
    ) as running:
        yield running


def _post(base: str, token: str, chunks: list[bytes] | bytes, *, content_type: str):
    """A raw HTTP/1.1 POST; a list of chunks goes as Transfer-Encoding: chunked.

    Returns (status, content type, body). The server may answer and close before the whole
    body is sent (that is the point of a limit): a broken pipe while sending is expected.
    """
    url = urlsplit(base)
    head = [
        f"POST {PATH} HTTP/1.1",
        f"Host: {url.netloc}",
        f"Authorization: Token {token}",
        f"Content-Type: {content_type}",
        "Connection: close",
    ]
    if isinstance(chunks, list):
        head.append("Transfer-Encoding: chunked")
        payload = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    else:
        head.append(f"Content-Length: {len(chunks)}")
        payload = chunks
    with socket.create_connection((url.hostname, url.port), timeout=120) as sock:
        try:
            sock.sendall("\r\n".join(head).encode() + b"\r\n\r\n" + payload)
            sock.shutdown(socket.SHUT_WR)
        except OSError:  # broken pipe, reset, or ENOTCONN from shutdown once it has closed
            pass
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, response.getheader("Content-Type"), response.read()


def _versions(server) -> list[tuple]:
    return server.query("SELECT number, digest FROM catalogs_catalogversion ORDER BY number")


def test_a_chunked_body_within_the_limit_is_published(server):
    document = catalog_yaml(("example.co", "Chunked", "v1")).encode()
    chunks = [document[i : i + 100] for i in range(0, len(document), 100)]
    status, _, body = _post(server.base, server.token, chunks, content_type="application/yaml")
    assert (status, json.loads(body)["version"]) == (201, 1), body[:500]


@pytest.mark.parametrize("content_type", ["application/yaml", "application/json"])
def test_a_chunked_body_over_the_limit_is_413_naming_it(server, content_type):
    before = _versions(server)
    chunks = [b"#" * 1000] * 50  # 50,000 bytes, no Content-Length
    status, media, body = _post(server.base, server.token, chunks, content_type=content_type)
    assert (status, media, json.loads(body)) == (
        413,
        "application/json",
        {
            "detail": f"The request body is 50000 bytes, over the limit of {LIMIT} bytes.",
            "limit": LIMIT,
        },
    )
    assert _versions(server) == before


def test_an_endless_chunked_body_is_cut_off_without_its_size(server):
    before = _versions(server)
    chunks = [b"#" * 10_000] * 40  # 400,000 bytes: more than the server counts (4 × the limit)
    status, _, body = _post(server.base, server.token, chunks, content_type="application/yaml")
    assert (status, json.loads(body)) == (
        413,
        {"detail": f"The request body is over the limit of {LIMIT} bytes.", "limit": LIMIT},
    )
    assert _versions(server) == before


def test_a_declared_body_over_the_limit_is_413_naming_it(server):
    before = _versions(server)
    status, _, body = _post(
        server.base, server.token, b"#" * 50_000, content_type="application/yaml"
    )
    assert (status, json.loads(body)) == (
        413,
        {
            "detail": f"The request body is 50000 bytes, over the limit of {LIMIT} bytes.",
            "limit": LIMIT,
        },
    )
    assert _versions(server) == before


@pytest.mark.django_db(transaction=True)
def test_a_server_that_cannot_read_chunked_bodies_says_so(live_server, admin_user):
    """Django's own server (wsgiref) hands chunked bytes over undecoded: 411, not a guess."""
    from catalogs.publishing.models import CatalogVersion
    from tests.catalogs.factories import api_token_key

    token = api_token_key(admin_user)
    status, _, body = _post(
        live_server.url, token, [b"apiVersion: x\n"], content_type="application/yaml"
    )
    assert (status, json.loads(body)) == (
        411,
        {
            "detail": "This server cannot read a chunked request body: send it with a "
            "Content-Length header."
        },
    )
    assert not CatalogVersion.objects.exists()
