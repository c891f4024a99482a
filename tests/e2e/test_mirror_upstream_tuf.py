"""A mirror of a registry of this kind verifies the upstream through its TUF metadata.

Registry A (upstream, a subprocess with its own database and key) serves ``upstream/tools``
and its TUF repository; registry B (this process's ``live_server``) mirrors it over ``oci://``
with no key: A's root is pinned on the first sync (or by a configured digest), the catalog and
its revocation list are A's signed targets, B re-publishes both under its own TUF repository
(an independent ngclient downloads them from B), and a root that A's pinned root did not sign
is refused with nothing published.
"""

from __future__ import annotations

import datetime
import hashlib

import httpx
import pytest
import yaml
from securesystemslib.signer import CryptoSigner
from tuf.api.metadata import TOP_LEVEL_ROLE_NAMES, Metadata, Root
from tuf.api.serialization.json import JSONSerializer
from tuf.ngclient import Updater, UpdaterConfig

from tests.e2e.registry_a import registry_a
from tests.e2e.test_revocation_mirror import REVOKE

pytestmark = pytest.mark.django_db(transaction=True)


def _sync(source):
    from catalogs.mirroring import services as mirrors

    run = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
    return mirrors.sync_run_execute(run_pk=run.pk)


def _foreign_root() -> bytes:
    """A valid, self-signed TUF root of keys the upstream never held."""
    signer = CryptoSigner.generate_ecdsa()
    root = Root(expires=datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=30))
    for role in TOP_LEVEL_ROLE_NAMES:
        root.add_key(signer.public_key, role)
    md = Metadata(root)
    md.sign(signer)
    return md.to_bytes(JSONSerializer())


def _download(base: str, directory, path: str) -> bytes:
    """``path`` as an independent ngclient verifies it on registry ``base``."""
    (directory / "targets").mkdir(parents=True)
    updater = Updater(
        str(directory),
        f"{base}/tuf/",
        str(directory / "targets"),
        f"{base}/c/",
        config=UpdaterConfig(prefix_targets_with_hash=False),
        bootstrap=httpx.get(f"{base}/tuf/root.json").content,
    )
    info = updater.get_targetinfo(path)
    assert info is not None, f"{path} is not a signed target of {base}"
    with open(updater.download_target(info), "rb") as f:
        return f.read()


def test_mirror_pins_the_upstream_root_and_verifies_through_tuf(tmp_path, settings, live_server):
    from catalogs.mirroring import services as mirrors
    from catalogs.mirroring.models import SyncRun

    with registry_a(tmp_path / "registry-a", shell=REVOKE) as (base, port):
        settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
        settings.MIRROR_OCI_PLAIN_HTTP_HOSTS = [f"127.0.0.1:{port}"]
        root = httpx.get(f"{base}/tuf/root.json").content
        root_sha = hashlib.sha256(root).hexdigest()
        latest = httpx.get(f"{base}/c/upstream/tools/catalog.yaml").content
        oci = f"oci://127.0.0.1:{port}/upstream/tools:latest"

        # A configured root digest that is not A's: refused, nothing published or pinned.
        pinned = mirrors.mirror_source_create(
            name="pinned", url=oci, actor=None, upstream_root_sha256="0" * 64
        )
        refused = _sync(pinned)
        assert refused.status == SyncRun.Status.FAILED
        assert refused.reason == (
            f"The TUF root of upstream registry {base} (version 1, sha256:{root_sha}) is not "
            f"the one the source pins (sha256:{'0' * 64}), nor a rotation from it."
        )
        pinned.refresh_from_db()
        assert not pinned.catalog.versions.exists()
        assert pinned.upstream_tuf == {}
        # A's digest: verified through A's TUF metadata.
        pinned = mirrors.mirror_source_update(
            source=pinned, actor=None, upstream_root_sha256=root_sha
        )
        good = _sync(pinned)
        assert good.status == SyncRun.Status.SUCCEEDED, good.reason
        assert good.verification["root"]["how"] == "configured root digest"

        # No key and no digest: A's root is pinned on first use.
        source = mirrors.mirror_source_create(name="upstream-tools", url=oci, actor=None)
        run = _sync(source)
        assert run.status == SyncRun.Status.SUCCEEDED, run.reason
        assert run.verification == {
            "type": "tuf",
            "registry": base,
            "root": {"version": 1, "sha256": root_sha, "how": "first use", "trusted_version": 1},
            "timestamp_version": run.verification["timestamp_version"],
            "target": "upstream/tools/catalog.yaml",
            "sha256": "sha256:" + hashlib.sha256(latest).hexdigest(),
            "revocations": run.verification["revocations"],
        }
        assert run.provenance["verification"] == "tuf"
        assert run.provenance["revocations"]["status"] == "carried"
        assert run.provenance["revocations"]["verified"] == "tuf"
        source.refresh_from_db()
        assert source.upstream_tuf["pinned"] == {
            "version": 1,
            "sha256": root_sha,
            "how": "first use",
        }
        assert source.upstream_tuf["registry"] == base

        # B re-publishes the catalog and the carried list under its own TUF repository.
        served = _download(live_server.url, tmp_path / "b-1", "mirrors/upstream-tools/catalog.yaml")
        assert served == latest
        listed = _download(
            live_server.url, tmp_path / "b-2", "mirrors/upstream-tools/revocations.yaml"
        )
        assert [e["kind"] for e in yaml.safe_load(listed)["revocations"]] == ["Lint"]

        # The pinned root is swapped for one A never signed a rotation from: A's metadata does
        # not verify against it, the run fails saying so, and nothing changes.
        foreign = _foreign_root().decode()
        source.upstream_tuf = {**source.upstream_tuf, "root": foreign}
        source.last_digest = ""  # force a full sync
        source.save()
        swapped = _sync(source)
    assert swapped.status == SyncRun.Status.FAILED
    assert swapped.reason.startswith(
        f"The TUF metadata of upstream registry {base} is not signed by the keys of the root "
        "pinned (by first use): "
    ), swapped.reason
    source.refresh_from_db()
    assert source.upstream_tuf["root"] == foreign  # a failed run keeps the trusted state
    assert [v.number for v in source.catalog.versions.all()] == [1]
