"""No DNS-rebinding window: a fetch connects only to the addresses it resolved and checked.

The resolver is the one thing replaced here (``catalogs.mirroring.fetchers.base.getaddrinfo``,
which every
fetcher uses for its checks and its connections): a rebinding DNS server is the only peer this
needs, and no real one can be used, because the system resolver can neither be pointed at a test
server nor be made to answer differently from one call to the next. Everything else is real: the
trustme HTTPS server (with a certificate for the test name only), git's smart-HTTP server behind
it, Debian's docker-registry, and a "rogue" listener on the refused address that must never see
a connection.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator

import pytest
import trustme

from catalogs.exceptions import DestinationRefusedError, FetchError
from catalogs.mirroring import services as mirrors
from catalogs.mirroring.fetchers import base, fetch
from catalogs.mirroring.limits import mirror_limits
from tests.catalogs.mirroring.conftest import HttpsUpstream, catalog_doc

NAME = "upstream.test"  # resolvable only through the replaced resolver
ROGUE = "127.0.0.2"  # loopback, but outside MIRROR_ALLOWED_NETWORKS: refused


class RebindingResolver:
    """Answers ``NAME`` with ``answers`` in turn (the last one repeats); records every call."""

    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.calls: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int) -> list[tuple]:
        self.calls.append((host, port))
        if host != NAME:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        address = self.answers[min(len(self.calls) - 1, len(self.answers) - 1)]
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]


@pytest.fixture(scope="module")
def named_upstream(tmp_path_factory) -> Iterator[HttpsUpstream]:
    """The HTTPS upstream on 127.0.0.1 with a certificate for ``NAME`` only (not its address)."""
    ca = trustme.CA()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert(NAME).configure_cert(context)
    ca_path = tmp_path_factory.mktemp("named-ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    server = HttpsUpstream(str(ca_path), context)
    yield server
    server.close()


@pytest.fixture
def upstream(named_upstream, mirror_settings):
    named_upstream.routes.clear()
    named_upstream.requests.clear()
    named_upstream.git_root = None
    mirror_settings.MIRROR_CA_BUNDLE = named_upstream.ca_path
    mirror_settings.MIRROR_ALLOWED_HOSTS = [NAME, "127.0.0.1"]
    mirror_settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    return named_upstream


@pytest.fixture
def resolver(monkeypatch):
    def install(*answers: str) -> RebindingResolver:
        fake = RebindingResolver(*answers)
        monkeypatch.setattr(base, "getaddrinfo", fake)
        return fake

    return install


@pytest.fixture
def rogue(request) -> Iterator:
    """``rogue(port)``: a listener on ROGUE:port; ``.connected()`` says if anything connected."""
    sockets = []

    class Listener:
        def __init__(self, port: int):
            self.sock = socket.socket()
            self.sock.bind((ROGUE, port))
            self.sock.listen(8)
            self.sock.setblocking(False)
            sockets.append(self.sock)

        def connected(self) -> bool:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return False
            conn.close()
            return True

    yield Listener
    for sock in sockets:
        sock.close()


def named(url: str) -> str:
    return url.replace("127.0.0.1", NAME)


# ----------------------------------------------------------------------------- HTTPS


def test_https_connects_to_the_checked_address_and_verifies_the_name(upstream, resolver, rogue):
    doc = catalog_doc("pinned")
    url = named(upstream.serve("/catalog.yaml", doc))
    fake = resolver("127.0.0.1")
    listener = rogue(upstream.port)

    fetched = fetch(url, limits=mirror_limits())

    assert fetched.content == doc
    # The system resolver cannot resolve NAME: the connection went where the check said.
    assert fake.calls and all(host == NAME for host, _ in fake.calls)
    assert upstream.requests[-1][1]["Host"] == f"{NAME}:{upstream.port}"
    assert not listener.connected()


def test_https_rebinding_to_a_refused_address_at_connect_time_is_refused(upstream, resolver, rogue):
    url = named(upstream.serve("/catalog.yaml", catalog_doc()))
    resolver("127.0.0.1", ROGUE)  # the check sees an allowed address, the connection another
    listener = rogue(upstream.port)

    with pytest.raises(DestinationRefusedError) as err:
        fetch(url, limits=mirror_limits())

    assert err.value.message == (
        f"Address {ROGUE} of host '{NAME}' is private, loopback or link-local; refusing "
        f"https://{NAME}:{upstream.port}/ (allow it with MIRROR_ALLOWED_NETWORKS)"
    )
    assert not listener.connected()
    assert upstream.requests == []


def test_tls_still_verifies_the_host_name_not_the_pinned_address(upstream, monkeypatch):
    """The certificate names NAME only; asked for another name, the same server is refused."""
    upstream.serve("/catalog.yaml", catalog_doc())
    other = "elsewhere.test"
    monkeypatch.setattr(
        base,
        "getaddrinfo",
        lambda host, port: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))],
    )
    limits = mirror_limits()
    limits = type(limits)(**{**limits.__dict__, "allowed_hosts": ("*",)})

    with pytest.raises(FetchError) as err:
        fetch(f"https://{other}:{upstream.port}/catalog.yaml", limits=limits)

    assert "CERTIFICATE_VERIFY_FAILED" in err.value.message
    assert f"Hostname mismatch, certificate is not valid for '{other}'" in err.value.message


# ----------------------------------------------------------------------------- git over HTTPS


@pytest.mark.django_db
def test_git_connects_only_to_the_checked_address(
    upstream, resolver, rogue, git_upstream, sync, mirror_settings
):
    upstream.git_root = git_upstream.path.parent
    commit = git_upstream.commit({"catalog.yaml": catalog_doc("pinned-git")})
    repo = named(upstream.url(f"/git/{git_upstream.path.name}"))
    # Created first: the check at creation asks the system's resolver (NAME resolves nowhere).
    source = mirrors.mirror_source_create(
        name="pinned-git", url=f"git+{repo}//catalog.yaml?ref=main", actor=None
    )
    fake = resolver("127.0.0.1", ROGUE)  # git must never get to ask again
    listener = rogue(upstream.port)

    run = sync(source)

    # git cannot resolve NAME itself: it connected to the address the check resolved, once.
    assert (run.status, run.reason, run.digest) == ("succeeded", "", commit)
    assert fake.calls == [(NAME, upstream.port)]
    assert any(path.endswith("/git-upload-pack") for path, _ in upstream.requests)
    assert not listener.connected()


# ----------------------------------------------------------------------------- OCI


@pytest.fixture
def named_oci(oci_upstream, mirror_settings):
    port = int(oci_upstream.host.rpartition(":")[2])
    mirror_settings.MIRROR_ALLOWED_HOSTS = [NAME]
    mirror_settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    mirror_settings.MIRROR_OCI_PLAIN_HTTP_HOSTS = [f"{NAME}:{port}"]
    return port


def test_oci_connects_to_the_checked_address(named_oci, oci_upstream, resolver, rogue):
    digest = oci_upstream.push_catalog("pinned/catalog:v1", catalog_doc("pinned-oci"))
    fake = resolver("127.0.0.1")
    listener = rogue(named_oci)

    fetched = fetch(f"oci://{NAME}:{named_oci}/pinned/catalog:v1", limits=mirror_limits())

    assert fetched.digest == digest
    assert fake.calls and all(call == (NAME, named_oci) for call in fake.calls)
    assert not listener.connected()


def test_oci_rebinding_to_a_refused_address_at_connect_time_is_refused(
    named_oci, oci_upstream, resolver, rogue
):
    oci_upstream.push_catalog("pinned/catalog:v2", catalog_doc("pinned-oci"))
    resolver("127.0.0.1", ROGUE)
    listener = rogue(named_oci)

    with pytest.raises(DestinationRefusedError) as err:
        fetch(f"oci://{NAME}:{named_oci}/pinned/catalog:v2", limits=mirror_limits())

    assert err.value.message == (
        f"Address {ROGUE} of host '{NAME}' is private, loopback or link-local; refusing "
        f"{NAME}:{named_oci} (allow it with MIRROR_ALLOWED_NETWORKS)"
    )
    assert not listener.connected()


def test_oci_over_tls_verifies_the_host_name_on_the_pinned_connection(upstream, resolver, rogue):
    """The HTTPS upstream speaks the registry URLs; its certificate names NAME only."""
    from tests.catalogs.mirroring.test_fetchers import broken_registry

    doc = catalog_doc("pinned-oci-tls")
    url = named(broken_registry(upstream, "tls/catalog", layer=doc, declared=doc))
    fake = resolver("127.0.0.1")
    listener = rogue(upstream.port)

    fetched = fetch(url, limits=mirror_limits())

    assert fetched.content == doc
    assert fake.calls and all(host == NAME for host, _ in fake.calls)
    assert {headers["Host"] for _, headers in upstream.requests} == {f"{NAME}:{upstream.port}"}
    assert not listener.connected()
