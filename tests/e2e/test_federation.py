"""Federation: one registry mirrors another's catalog over ``oci://``, trusting its public key.

Registry A (upstream) runs as a subprocess (``manage.py runserver`` with its own SQLite database,
media folder and signing key, all under the test's tmp dir); registry B is the test process's
own (``live_server``). B mirrors A's catalog with A's ``/signing-key.pub`` as the source's cosign
key, re-signs what it serves with its own key, and ``krm`` verifies B's copy with B's key.
"""

from __future__ import annotations

import hashlib

import httpx
import pytest

from tests.catalogs.trust.test_signing import independently_verified
from tests.e2e.registry_a import registry_a
from tests.e2e.test_trusted_catalog import _krm_cmd

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    """Registry A on a free loopback port, with one published catalog ``upstream/tools``."""
    with registry_a(tmp_path_factory.mktemp("registry-a")) as found:
        yield found


@pytest.fixture
def mirror_settings(settings, upstream):
    _base, port = upstream
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MIRROR_OCI_PLAIN_HTTP_HOSTS = [f"127.0.0.1:{port}"]
    return settings


def _sync(name: str, url: str, key_pem: str):
    from catalogs.mirroring import services as mirrors

    source = mirrors.mirror_source_create(name=name, url=url, actor=None, cosign_public_key=key_pem)
    run = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
    return source, mirrors.sync_run_execute(run_pk=run.pk)


def test_registry_mirrors_another_over_oci_with_its_key(
    upstream, mirror_settings, live_server, tmp_path
):
    from catalogs.mirroring.models import SyncRun

    base, port = upstream
    a_pub = httpx.get(f"{base}/signing-key.pub").text
    upstream_bytes = httpx.get(f"{base}/c/upstream/tools/catalog.yaml").content
    url = f"oci://127.0.0.1:{port}/upstream/tools:latest"

    source, run = _sync("upstream-tools", url, a_pub)
    assert run.status == SyncRun.Status.SUCCEEDED, run.reason
    # A serves TUF metadata: its root, signed by A's key (the source's cosign key), is pinned,
    # and the catalog is the target A signed for its latest pointer.
    assert run.verification["type"] == "tuf", run.verification
    assert run.verification["root"]["how"] == "cosign public key"
    assert run.verification["target"] == "upstream/tools/catalog.yaml"
    assert run.verification["sha256"] == "sha256:" + hashlib.sha256(upstream_bytes).hexdigest()
    assert run.provenance["verification"] == "tuf"
    root = httpx.get(f"{base}/tuf/root.json").content
    source.refresh_from_db()
    assert source.upstream_tuf["pinned"]["sha256"] == hashlib.sha256(root).hexdigest()
    version = source.catalog.versions.get()
    assert bytes(version.content) == upstream_bytes

    # B serves it signed by B (not A): B's key verifies B's .sig, A's does not.
    b_pub = httpx.get(f"{live_server.url}/signing-key.pub")
    served = httpx.get(f"{live_server.url}/c/mirrors/upstream-tools/catalog.yaml").content
    sig = httpx.get(f"{live_server.url}/c/mirrors/upstream-tools/catalog.yaml.sig").content
    assert served == upstream_bytes
    assert independently_verified(b_pub.content, sig, served)
    assert not independently_verified(a_pub.encode(), sig, served)

    # krm checks B's copy over oci:// through B's TUF metadata, whose root B's key signed.
    b_key = tmp_path / "b.pub"
    b_key.write_bytes(b_pub.content)
    ref = f"oci://{live_server.url.removeprefix('http://')}/mirrors/upstream-tools:latest"
    view = _krm_cmd(
        "view", "catalog", ref, f"--catalog-key={b_key}", ca_file="", home=tmp_path / "h"
    )
    assert view.returncode == 0, view.stderr
    assert (
        "Signature: verified through TUF target mirrors/upstream-tools/catalog.yaml of "
        f"{live_server.url} (role mirrors, root pinned by --catalog-key "
        f"{b_pub.headers['X-Signing-Key-Id']})"
    ) in view.stdout


def test_mirror_with_another_key_is_refused_and_publishes_nothing(
    upstream, mirror_settings, live_server
):
    from catalogs.mirroring.models import SyncRun

    base, port = upstream
    # B's own key is not the key A signs with: it is no root key of A's TUF root.
    b_pub = httpx.get(f"{live_server.url}/signing-key.pub").text
    source, run = _sync("wrong-key", f"oci://127.0.0.1:{port}/upstream/tools:latest", b_pub)
    assert run.status == SyncRun.Status.FAILED
    assert run.reason == (
        f"The TUF root of upstream registry {base} (version 1) is not signed by the source's "
        "cosign public key: that key is not a root key of the upstream."
    )
    assert not source.catalog.versions.exists()
    source.refresh_from_db()
    assert source.upstream_tuf == {}
