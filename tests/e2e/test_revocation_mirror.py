"""Mirrors carry revocations: registry B mirrors registry A's catalog over ``oci://`` and, in the
same commit as the catalog, A's revocation list (a TUF target of A, whose root A's key signed)
is republished by B, signed by B; a list that cannot be carried fails the run and publishes
nothing.

Registry A runs as a subprocess (its own database and key under the test's tmp dir), as in
``test_federation.py``; B is this process's ``live_server``.
"""

from __future__ import annotations

import httpx
import pytest
import yaml

from tests.catalogs.trust.test_signing import independently_verified
from tests.e2e.registry_a import registry_a, registry_a_shell
from tests.e2e.test_federation import _sync

pytestmark = pytest.mark.django_db(transaction=True)

REVOKE = """
from catalogs.trust import revocations
from catalogs.publishing import selectors
cat = selectors.catalog_get(publisher_slug="upstream", name="tools")
revocations.revocation_create(catalog=cat, actor=None, group="tools.example.co", kind="Lint",
    version="v1", reason="compromised", replacement="tools.example.co/v2 Lint")
"""


@pytest.fixture
def upstream_revoked(tmp_path):
    """Registry A with ``upstream/tools`` published and its Lint v1 revoked."""
    with registry_a(tmp_path / "registry-a", shell=REVOKE) as found:
        yield found


def test_mirror_carries_upstream_revocations(upstream_revoked, settings, live_server):
    from catalogs.mirroring.models import SyncRun
    from catalogs.trust.models import Revocation

    base, port = upstream_revoked
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MIRROR_OCI_PLAIN_HTTP_HOSTS = [f"127.0.0.1:{port}"]
    a_pub = httpx.get(f"{base}/signing-key.pub").text
    url = f"oci://127.0.0.1:{port}/upstream/tools:latest"
    source, run = _sync("upstream-tools", url, a_pub)
    assert run.status == SyncRun.Status.SUCCEEDED, run.reason
    assert run.provenance["revocations"] == {
        "url": f"{base}/c/upstream/tools/revocations.yaml",
        "verified": "tuf",
        "status": "carried",
        "added": 1,
        "upstream_sequence": 1,
    }
    assert run.verification["revocations"]["target"] == "upstream/tools/revocations.yaml"
    served = httpx.get(f"{live_server.url}/c/mirrors/upstream-tools/revocations.yaml")
    assert served.status_code == 200
    doc = yaml.safe_load(served.content)
    [entry] = doc["revocations"]
    assert (entry["kind"], entry["reason"], entry["replacement"]) == (
        "Lint",
        "compromised",
        "tools.example.co/v2 Lint",
    )
    sig = httpx.get(f"{live_server.url}/c/mirrors/upstream-tools/revocations.yaml.sig").content
    b_pub = httpx.get(f"{live_server.url}/signing-key.pub").content
    assert independently_verified(b_pub, sig, served.content)

    # A second sync adds nothing: the list keeps its one sequence.
    from catalogs.mirroring import services as mirrors

    again = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
    again = mirrors.sync_run_execute(run_pk=again.pk)
    assert again.provenance["revocations"]["added"] == 0
    assert Revocation.objects.filter(catalog=source.catalog).count() == 1


def test_list_that_does_not_verify_is_not_carried(upstream_revoked, settings, live_server):
    """Without TUF metadata upstream, the list's ``.sig`` must verify with the source's key:
    a key that did not sign it carries nothing (RevocationCarryError, which fails a run)."""
    from catalogs.mirroring.models import SyncRun
    from catalogs.trust.models import Revocation

    _base, port = upstream_revoked
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MIRROR_OCI_PLAIN_HTTP_HOSTS = [f"127.0.0.1:{port}"]

    # Carry with another key than the one that signed the upstream list.
    a_pub = httpx.get(f"http://127.0.0.1:{port}/signing-key.pub").text
    source, run = _sync("upstream-tools", f"oci://127.0.0.1:{port}/upstream/tools:latest", a_pub)
    assert run.status == SyncRun.Status.SUCCEEDED, run.reason
    Revocation.objects.all().delete()
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    other = ec.generate_private_key(ec.SECP256R1()).public_key()
    source.cosign_public_key = other.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    from catalogs.mirroring.revocations import RevocationCarryError, upstream_list_fetch

    with pytest.raises(RevocationCarryError) as caught:
        upstream_list_fetch(source=source)
    assert caught.value.outcome["status"] == "refused: bad signature"
    assert not Revocation.objects.exists()


REVOKE_THREE = """
from catalogs.publishing import selectors, services
from catalogs.trust import revocations
from tests.catalogs.factories import catalog_yaml
cat = selectors.catalog_get(publisher_slug="upstream", name="tools")
services.catalog_version_publish(catalog=cat, actor=None, content=catalog_yaml(
    ("tools.example.co", "Lint", "v1"), ("tools.example.co", "Fmt", "v1"),
    ("tools.example.co", "Vet", "v1")))
for kind in ("Lint", "Fmt", "Vet"):
    revocations.revocation_create(catalog=cat, actor=None, group="tools.example.co", kind=kind,
        version="v1", reason="compromised")
"""


def test_mirror_carries_three_new_entries_at_once(tmp_path, settings, live_server):
    """Three upstream entries new to the mirror share one list sequence of the mirror's (they
    used to collide on a unique sequence: IntegrityError, no list, and a run that said
    "succeeded")."""
    from catalogs.mirroring.models import SyncRun
    from catalogs.trust.models import Revocation, RevocationList

    with registry_a(tmp_path / "registry-a", shell=REVOKE_THREE) as (base, port):
        settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
        settings.MIRROR_OCI_PLAIN_HTTP_HOSTS = [f"127.0.0.1:{port}"]
        a_pub = httpx.get(f"{base}/signing-key.pub").text
        oci = f"oci://127.0.0.1:{port}/upstream/tools:latest"
        source, run = _sync("upstream-tools", oci, a_pub)
    assert run.status == SyncRun.Status.SUCCEEDED, run.reason
    assert run.provenance["revocations"] == {
        "url": f"{base}/c/upstream/tools/revocations.yaml",
        "verified": "tuf",
        "status": "carried",
        "added": 3,
        "upstream_sequence": 3,
    }
    rows = Revocation.objects.filter(catalog=source.catalog).order_by("kind")
    assert [(r.kind, r.sequence) for r in rows] == [("Fmt", 1), ("Lint", 1), ("Vet", 1)]
    assert list(
        RevocationList.objects.filter(catalog=source.catalog).values_list("sequence", flat=True)
    ) == [1, 0]
    served = yaml.safe_load(
        httpx.get(f"{live_server.url}/c/mirrors/upstream-tools/revocations.yaml").content
    )
    assert served["sequence"] == 1
    assert sorted(e["kind"] for e in served["revocations"]) == ["Fmt", "Lint", "Vet"]


PUBLISH_V2_AND_REVOKE = """
from catalogs.publishing import selectors, services
from catalogs.trust import revocations
from tests.catalogs.factories import catalog_yaml
cat = selectors.catalog_get(publisher_slug="upstream", name="tools")
services.catalog_version_publish(catalog=cat, actor=None, content=catalog_yaml(
    ("tools.example.co", "Lint", "v1"), ("tools.example.co", "Fmt", "v1"),
    ("tools.example.co", "Vet", "v1")))
revocations.revocation_create(catalog=cat, actor=None, group="tools.example.co", kind="Fmt",
    version="v1", reason="compromised")
"""


def test_a_run_whose_carry_fails_publishes_nothing(tmp_path, settings, live_server):
    """Fault 4: A publishes version 2 and revokes Fmt, then the stored list is damaged (its
    object store lost the bytes): A cannot serve the list it signed, so the carry fails, and
    so does the run, which publishes nothing. B keeps serving version 1, as before the run
    (the version used to stay published, and served, while the run said "failed")."""
    import sqlite3

    from catalogs.mirroring import services as mirrors
    from catalogs.mirroring.models import SyncRun
    from catalogs.publishing.blobstore import blob_name

    data = tmp_path / "registry-a"
    with registry_a(data, shell=REVOKE) as (base, port):
        settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
        settings.MIRROR_OCI_PLAIN_HTTP_HOSTS = [f"127.0.0.1:{port}"]
        a_pub = httpx.get(f"{base}/signing-key.pub").text
        oci = f"oci://127.0.0.1:{port}/upstream/tools:latest"
        source, first = _sync("upstream-tools", oci, a_pub)
        assert first.status == SyncRun.Status.SUCCEEDED, first.reason
        served_v1 = httpx.get(f"{live_server.url}/c/mirrors/upstream-tools/catalog.yaml")
        assert served_v1.status_code == 200

        registry_a_shell(data, port, PUBLISH_V2_AND_REVOKE)
        with sqlite3.connect(data / "db.sqlite3") as conn:
            [(digest,)] = conn.execute(
                "SELECT digest FROM catalogs_revocationlist WHERE sequence = 2"
            ).fetchall()
        (data / "media" / blob_name(digest)).write_bytes(b"not the list")
        second = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
        second = mirrors.sync_run_execute(run_pk=second.pk)
    url = f"{base}/c/upstream/tools/revocations.yaml"
    assert second.status == SyncRun.Status.FAILED
    status = second.provenance["revocations"]["status"]
    # A notices its damaged bytes and answers 503: the signed list cannot be fetched.
    assert status == f"failed: {url}: HTTP 503; a missing list is not an empty one"
    assert second.reason == (
        f"The upstream revocation list {url} was not carried ({status}): nothing was "
        "published, and the mirror keeps serving its previous version (a mirror without an "
        "upstream revocation would run what upstream revoked)."
    )
    # Nothing of the run is kept: one version, still the one served, and the run names none.
    source.refresh_from_db()
    assert second.catalog_version is None
    assert [v.number for v in source.catalog.versions.all()] == [1]
    assert source.catalog.latest_version.number == 1
    assert source.last_digest == first.digest
    served = httpx.get(f"{live_server.url}/c/mirrors/upstream-tools/catalog.yaml")
    assert served.content == served_v1.content
    assert "Vet" not in served.text
    # The mirror's list is the one the first run carried (Lint), untouched.
    listed = yaml.safe_load(
        httpx.get(f"{live_server.url}/c/mirrors/upstream-tools/revocations.yaml").content
    )
    assert [e["kind"] for e in listed["revocations"]] == ["Lint"]
