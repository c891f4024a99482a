"""Private upstreams through MIRROR_NETRC_FILE: a private catalog of the project's own live
server (gunicorn over HTTPS with a trustme certificate) mirrored with the netrc's entry for its
host, refused without it; a netrc entry never follows a redirect to another host."""

from __future__ import annotations

import os
import ssl

import httpx
import pytest
import trustme

from catalogs.mirroring import services as mirrors
from tests.catalogs.factories import catalog_yaml
from tests.live_registry import live_registry

pytestmark = pytest.mark.django_db


def run_sync(source):
    queued = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
    return mirrors.sync_run_execute(run_pk=queued.pk)


@pytest.fixture(scope="module")
def tls_registry(tmp_path_factory):
    """The live registry over HTTPS, its catalog ``acme/fns`` private, and the CA to trust."""
    work = tmp_path_factory.mktemp("tls-registry")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    files = (work / "cert.pem", work / "key.pem", work / "ca.pem")
    cert.cert_chain_pems[0].write_to_path(str(files[0]))
    cert.private_key_pem.write_to_path(str(files[1]))
    ca.cert_pem.write_to_path(str(files[2]))
    with live_registry(work, workers=1, threads=4, tls=files) as server:
        auth = {"Authorization": f"Bearer {server.token}"}
        verify = ssl.create_default_context(cafile=str(files[2]))
        published = httpx.post(
            f"{server.base}/api/v1/catalogs/acme/fns/versions/",
            content=catalog_yaml(("secret.example", "Hidden", "v1")),
            headers={**auth, "Content-Type": "application/yaml"},
            timeout=120,
            verify=verify,
        )
        assert published.status_code == 201, published.text
        private = httpx.patch(
            f"{server.base}/api/v1/catalogs/acme/fns/",
            json={"visibility": "private"},
            headers=auth,
            timeout=60,
            verify=verify,
        )
        assert private.json()["visibility"] == "private"
        yield server, str(files[2])


def test_private_catalog_of_the_live_server_mirrored_with_a_netrc(
    mirror_settings, tls_registry, tmp_path, client
):
    server, ca_path = tls_registry
    mirror_settings.MIRROR_CA_BUNDLE = ca_path
    url = f"{server.base}/c/acme/fns/catalog.yaml"
    assert httpx.get(url, verify=ssl.create_default_context(cafile=ca_path)).status_code == 404
    source = mirrors.mirror_source_create(name="private", url=url, actor=None)

    # No netrc: the private catalog is not found, nothing is served.
    refused = run_sync(source)
    assert refused.status == "failed"
    assert refused.reason.startswith(f"GET {url} answered HTTP 404"), refused.reason
    assert client.get("/c/mirrors/private/catalog.yaml").status_code == 404

    # An entry for another host only: the same.
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine registry.example login alice password {server.token}\n")
    os.chmod(netrc, 0o600)
    mirror_settings.MIRROR_NETRC_FILE = str(netrc)
    assert run_sync(source).status == "failed"

    # The host's entry: mirrored.
    netrc.write_text(f"machine 127.0.0.1 login alice password {server.token}\n")
    synced = run_sync(source)
    assert synced.status == "succeeded", synced.reason
    served = client.get("/c/mirrors/private/catalog.yaml")
    assert served.status_code == 200 and b"kind: Hidden" in served.content

    # A netrc file that is configured but missing fails the run and names the setting.
    mirror_settings.MIRROR_NETRC_FILE = str(tmp_path / "missing")
    source.refresh_from_db()
    mirrors.mirror_source_update(source=source, actor=None, digest="")
    gone = run_sync(source)
    assert gone.status == "failed"
    assert (
        gone.reason == f"MIRROR_NETRC_FILE {tmp_path / 'missing'} does not exist or is not a file."
    )
    assert client.get("/c/mirrors/private/catalog.yaml").content == served.content


def test_a_netrc_entry_never_follows_a_redirect_to_another_host(
    mirror_settings, https_upstream, tmp_path
):
    from tests.catalogs.mirroring.conftest import catalog_doc

    target = https_upstream.serve("/real/catalog.yaml", catalog_doc("redirected"))
    assert target.startswith("https://127.0.0.1:")
    start = target.replace("127.0.0.1", "localhost").replace("/real/", "/start/")
    https_upstream.serve("/start/catalog.yaml", b"", status=302, location=target)
    netrc = tmp_path / "netrc"
    netrc.write_text(
        "machine localhost login bot password first-host-secret\n"
        "machine 127.0.0.1 login bot password second-host-secret\n"
    )
    mirror_settings.MIRROR_NETRC_FILE = str(netrc)
    source = mirrors.mirror_source_create(name="hop", url=start, actor=None)
    run = run_sync(source)
    assert run.status == "succeeded", run.reason
    sent = {path: headers.get("Authorization") for path, headers in https_upstream.requests}
    assert sent["/start/catalog.yaml"] == "Basic Ym90OmZpcnN0LWhvc3Qtc2VjcmV0"  # bot:first-…
    assert sent["/real/catalog.yaml"] is None


def test_git_over_https_sends_the_netrc_entry_of_its_host(
    mirror_settings, https_upstream, git_upstream, tmp_path
):
    import base64

    from tests.catalogs.mirroring.conftest import catalog_doc

    wanted = "Basic " + base64.b64encode(b"bot:git-netrc-secret").decode()
    https_upstream.git_root = git_upstream.path.parent
    https_upstream.required_authorization = wanted
    commit = git_upstream.commit({"catalog.yaml": catalog_doc("private-git")})
    repo = https_upstream.url(f"/git/{git_upstream.path.name}")
    source = mirrors.mirror_source_create(
        name="private-git", url=f"git+{repo}//catalog.yaml?ref=main", actor=None
    )
    refused = run_sync(source)
    assert refused.status == "failed"
    assert refused.reason.startswith(f"Cannot fetch ref 'main' of {repo}: fatal: could not read ")

    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1\n  login bot\n  password git-netrc-secret\n")
    mirror_settings.MIRROR_NETRC_FILE = str(netrc)
    https_upstream.requests.clear()
    run = run_sync(source)
    assert (run.status, run.reason, run.digest) == ("succeeded", "", commit)
    git_requests = [h for path, h in https_upstream.requests if path.startswith("/git/")]
    assert git_requests and all(h.get("Authorization") == wanted for h in git_requests)
    assert "git-netrc-secret" not in str(run.provenance) + run.reason
