"""End to end: runtime artifacts the registry serves are TUF targets, and ``krm`` checks them.

A mirror source (``mirror_runtimes``) on this process's ``live_server`` copies an exec archive
and a starlark script from an HTTPS upstream (trustme); the registry serves them at
``/c/blobs/sha256/<hex>`` and signs them as targets of the ``mirrors`` role,
``mirrors/<catalog>/blobs/sha256/<hex>``. ``krm build`` (the real command line, no key: trust
on first use) reaches the registry through a rewriting proxy on loopback, whose address is the
registry's public URL, so the catalog names the artifacts through the proxy too. The exec
function touches ``ran-exec-function``: after a refusal it must not exist.
"""

from __future__ import annotations

import hashlib
import io
import tarfile

import httpx
import pytest
import yaml
from tuf.ngclient import Updater, UpdaterConfig

from tests.catalogs.mirroring.conftest import (  # noqa: F401 - fixtures, used by name
    https_upstream,
    https_upstream_session,
)
from tests.e2e.test_trusted_catalog import EXEC_FN, _app, _krm, serve_catalog_with_runtimes
from tests.orchestrator.functions.tufrepo import Proxy

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def mirrored(live_server, settings, https_upstream, tmp_path):  # noqa: F811
    """The mirrored catalog behind a proxy: its URL through the proxy, the artifacts' URIs."""
    from catalogs.mirroring import services as mirrors
    from catalogs.mirroring.models import SyncRun

    proxy = Proxy(live_server.url)
    settings.MIRROR_ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MIRROR_CA_BUNDLE = https_upstream.ca_path
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.REGISTRY_PUBLIC_URL = proxy.base
    source = mirrors.mirror_source_create(
        name="upstream", url=serve_catalog_with_runtimes(https_upstream), actor=None,
        mirror_runtimes=True,
    )  # fmt: skip
    run = mirrors.sync_run_execute(
        run_pk=mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False).pk
    )
    assert run.status == SyncRun.Status.SUCCEEDED, run.reason
    url = f"{proxy.base}/c/mirrors/upstream/catalog.yaml"
    doc = yaml.safe_load(httpx.get(url).content)
    exec_uri, star_uri = (
        doc["spec"]["krmFunctions"][0]["versions"][0]["runtime"]["exec"]["platforms"][0]["uri"],
        doc["spec"]["krmFunctions"][1]["versions"][0]["runtime"]["starlark"]["uri"],
    )
    assert exec_uri.startswith(f"{proxy.base}/c/blobs/sha256/")
    yield {
        "proxy": proxy,
        "url": url,
        "live": live_server.url,
        "exec": exec_uri,
        "star": star_uri,
        "ca": https_upstream.ca_path,
        "app": _app(tmp_path),
        "tmp": tmp_path,
    }
    proxy.close()


def _build(m, home: str):
    (m["app"] / "ran-exec-function").unlink(missing_ok=True)
    return _krm(m["app"], f"--trusted-catalog={m['url']}", ca_file=m["ca"], home=m["tmp"] / home)


def _refused(m, proc, message: str) -> None:
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, proc.stderr
    assert errors[0].endswith(message), proc.stderr
    assert not (m["app"] / "ran-exec-function").exists(), "the function ran"


def _hex(uri: str) -> str:
    return uri.rsplit("/", 1)[1]


def test_mirrored_runtime_artifacts_are_signed_targets_an_independent_client_downloads(
    mirrored, tmp_path
):
    live = mirrored["live"]
    (tmp_path / "ng" / "targets").mkdir(parents=True)
    updater = Updater(
        str(tmp_path / "ng"),
        f"{live}/tuf/",
        str(tmp_path / "ng" / "targets"),
        f"{live}/c/",
        config=UpdaterConfig(prefix_targets_with_hash=False),
        bootstrap=httpx.get(f"{live}/tuf/root.json").content,
    )
    updater.refresh()
    for uri in (mirrored["exec"], mirrored["star"]):
        info = updater.get_targetinfo(f"mirrors/upstream/blobs/sha256/{_hex(uri)}")
        assert info is not None, uri
        with open(updater.download_target(info), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == _hex(uri)
    # At its target path only for the catalog that serves it.
    other = f"{live}/c/mirrors/other/blobs/sha256/{_hex(mirrored['exec'])}"
    assert httpx.get(other).status_code == 404


def test_krm_checks_runtime_artifacts_against_their_targets(mirrored):
    proxy = mirrored["proxy"]
    proc = _build(mirrored, "h1")
    assert proc.returncode == 0, proc.stderr
    assert "tier: web-exec" in proc.stdout and "starlark.example.com/team: payments" in proc.stdout
    assert (mirrored["app"] / "ran-exec-function").exists()
    blob = "/c/blobs/sha256/" + _hex(mirrored["exec"])
    assert blob in proxy.seen
    # A warm build (same cache) checks it again, from the record of what was verified under
    # the same timestamp: two requests in all, the artifacts' bytes from the blob cache.
    del proxy.seen[:]
    proc = _build(mirrored, "h1")
    assert proc.returncode == 0, proc.stderr
    assert proxy.seen == ["/tuf/2.root.json", "/tuf/timestamp.json"]

    # The proxy swaps the exec archive for another one (an empty cache, as in CI).
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = EXEC_FN.replace("web-exec", "evil").encode()
        info = tarfile.TarInfo("bin/set-tier")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    proxy.rewrite[blob] = buf.getvalue()
    path = f"mirrors/upstream/blobs/sha256/{_hex(mirrored['exec'])}"
    size = len(httpx.get(mirrored["exec"].replace(proxy.base, mirrored["live"])).content)
    _refused(
        mirrored,
        _build(mirrored, "h2"),
        f"runtime artifact {mirrored['exec']} of catalog {mirrored['url']} is not the one "
        f"registry {proxy.base} signed for {path} (sha256 {_hex(mirrored['exec'])}, {size} "
        "bytes): altered on the way or swapped on the registry; nothing was unpacked or run",
    )
    del proxy.rewrite[blob]


def test_krm_refuses_a_registry_artifact_that_is_not_a_target(mirrored):
    from catalogs.trust import tuf
    from catalogs.trust.models import TufTarget

    path = f"mirrors/upstream/blobs/sha256/{_hex(mirrored['exec'])}"
    # The registry stops signing the artifact (a fault, or a role signed without it).
    TufTarget.objects.filter(path=path).delete()
    tuf.tuf_publish(publishers=["mirrors"])
    _refused(
        mirrored,
        _build(mirrored, "h3"),
        f"runtime artifact {mirrored['exec']} of catalog {mirrored['url']}: registry "
        f"{mirrored['proxy'].base} signs no target {path}; it is not an artifact the registry "
        "serves for this catalog, so nothing was fetched or run",
    )
    assert "/c/blobs/sha256/" + _hex(mirrored["exec"]) not in mirrored["proxy"].seen
