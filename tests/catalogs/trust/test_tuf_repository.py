"""The registry as a TUF repository: what it serves under /tuf/, checked with python-tuf's
ngclient (the client krm uses) reading the registry through Django's test client."""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from securesystemslib.signer import CryptoSigner
from tuf.api import exceptions as tuf_errors
from tuf.api.metadata import Metadata
from tuf.ngclient import Updater, UpdaterConfig
from tuf.ngclient.fetcher import FetcherInterface

from catalogs.publishing import services
from catalogs.trust import revocations, tuf
from catalogs.trust.models import RevocationList, TufMetadata, TufTarget
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

BASE = "http://testserver"


class DjangoFetcher(FetcherInterface):
    """ngclient's downloads answered by the registry through Django's test client."""

    def __init__(self) -> None:
        self.client = Client()
        self.seen: list[str] = []

    def _fetch(self, url: str) -> Iterator[bytes]:
        path = url.removeprefix(BASE)
        self.seen.append(path)
        resp = self.client.get(path)
        if resp.status_code != 200:
            raise tuf_errors.DownloadHTTPError(f"{path}: HTTP {resp.status_code}", resp.status_code)
        body = b"".join(resp.streaming_content) if resp.streaming else resp.content
        return iter([body])


def updater(tmp_path, root: bytes | None = None, name: str = "client") -> Updater:
    directory = tmp_path / name
    (directory / "targets").mkdir(parents=True, exist_ok=True)
    if root is None:
        root = Client().get("/tuf/root.json").content
    return Updater(
        str(directory),
        f"{BASE}/tuf/",
        str(directory / "targets"),
        f"{BASE}/c/",
        DjangoFetcher(),
        UpdaterConfig(prefix_targets_with_hash=False),
        bootstrap=root,
    )


def fetched(up: Updater, path: str) -> bytes:
    info = up.get_targetinfo(path)
    assert info is not None, f"{path} is not a signed target"
    with open(up.download_target(info), "rb") as f:
        return f.read()


def publish(catalog, *functions, name="functions"):
    return services.catalog_version_publish(
        catalog=catalog, content=catalog_yaml(*functions, name=name), actor=None
    )[0]


def test_a_published_catalog_is_a_signed_target_with_its_revocation_list(catalog, tmp_path):
    version = publish(catalog, ("fn.example.com", "A", "v1"))
    up = updater(tmp_path)
    up.refresh()
    slug = catalog.publisher.slug
    assert fetched(up, f"{slug}/functions/versions/1/catalog.yaml") == version.content
    assert fetched(up, f"{slug}/functions/catalog.yaml") == version.content
    listed = fetched(up, f"{slug}/functions/revocations.yaml")
    assert b"kind: RevocationList" in listed and b"sequence: 0" in listed
    assert b"revocations: []" in listed
    # The revocation list answers at its URL (not 404 as for a catalog without revocations).
    assert Client().get(f"/c/{slug}/functions/revocations.yaml").content == listed
    # The layout of docs/trust.md: consistent snapshots, a role named after the publisher.
    targets = Metadata.from_bytes(Client().get("/tuf/1.targets.json").content).signed
    role = targets.delegations.roles[slug]
    assert (role.terminating, role.threshold) == (True, 1)
    assert role.paths == [f"{slug}/*", f"{slug}/*/*", f"{slug}/*/*/*/*"]
    pem = Client().get("/signing-key.pub").content.decode()
    root = Metadata.from_bytes(Client().get("/tuf/1.root.json").content).signed
    [keyid] = root.roles["root"].keyids
    assert root.keys[keyid].keyval["public"].strip() == pem.strip()
    assert root.consistent_snapshot is True


def test_a_new_version_moves_the_latest_pointer_and_keeps_the_old_one(catalog, tmp_path):
    first = publish(catalog, ("fn.example.com", "A", "v1"))
    second = publish(catalog, ("fn.example.com", "A", "v1"), ("fn.example.com", "B", "v1"))
    up = updater(tmp_path)
    up.refresh()
    slug = catalog.publisher.slug
    assert fetched(up, f"{slug}/functions/catalog.yaml") == second.content
    assert fetched(up, f"{slug}/functions/versions/1/catalog.yaml") == first.content
    info = up.get_targetinfo(f"{slug}/functions/catalog.yaml")
    assert info.hashes["sha256"] == hashlib.sha256(second.content).hexdigest()
    # One revocation list only (sequence 0), not one per version.
    assert list(RevocationList.objects.values_list("sequence", flat=True)) == [0]


def test_a_revocation_is_signed_in_the_same_transaction(catalog, owner, tmp_path):
    publish(catalog, ("fn.example.com", "A", "v1"))
    up = updater(tmp_path)
    up.refresh()
    before = TufMetadata.objects.get(role="timestamp", version=tuf.current("timestamp").version)
    revocations.revocation_create(
        catalog=catalog, actor=owner, reason="compromised", group="fn.example.com", kind="A",
        version="v1",
    )  # fmt: skip
    assert tuf.current("timestamp").version == before.version + 1
    up = updater(tmp_path, name="again")
    up.refresh()
    listed = fetched(up, f"{catalog.publisher.slug}/functions/revocations.yaml")
    assert b"sequence: 1" in listed and b"kind: A" in listed


def test_another_publishers_catalog_is_not_this_ones_target(catalog, tmp_path):
    from tests.catalogs.factories import CatalogFactory, PublisherFactory

    publish(catalog, ("fn.example.com", "A", "v1"))
    mallory = CatalogFactory(publisher=PublisherFactory(slug="mallory"), name="functions")
    theirs = publish(mallory, ("fn.example.com", "A", "v1"), ("x.example.com", "Evil", "v1"))
    up = updater(tmp_path)
    up.refresh()
    info = up.get_targetinfo("example-co/functions/catalog.yaml")
    assert info.hashes["sha256"] != hashlib.sha256(theirs.content).hexdigest()
    # Mallory's role cannot name acme's paths: the delegation is terminating and by prefix.
    targets = Metadata.from_bytes(Client().get("/tuf/2.targets.json").content).signed
    assert not targets.delegations.roles["mallory"].is_delegated_path(
        "example-co/functions/catalog.yaml"
    )


def test_timestamp_is_resigned_on_demand_before_it_expires(catalog, settings, tmp_path):
    settings.TRUST_TIMESTAMP_TTL = 3600
    publish(catalog, ("fn.example.com", "A", "v1"))
    row = tuf.current("timestamp")
    expires = Metadata.from_bytes(row.data.encode()).signed.expires
    assert datetime.timedelta(minutes=59) < expires - timezone.now() <= datetime.timedelta(hours=1)
    # Past half of its lifetime: the next GET signs a new one.
    TufMetadata.objects.filter(pk=row.pk).update(
        expires=timezone.now() + datetime.timedelta(1 / 48)
    )
    served = Client().get("/tuf/timestamp.json")
    assert served["Cache-Control"] == "no-cache"
    assert Metadata.from_bytes(served.content).signed.version == row.version + 1
    # Not on demand (production): the GET serves the row as it is; beat's task signs it.
    settings.TRUST_TIMESTAMP_ON_DEMAND = False
    newest = tuf.current("timestamp")
    TufMetadata.objects.filter(pk=newest.pk).update(expires=timezone.now())
    assert Client().get("/tuf/timestamp.json").content.decode() == newest.data
    from catalogs.trust.tasks import tuf_refresh_task

    assert tuf_refresh_task()["timestamp_version"] == newest.version + 1


def test_expired_timestamp_is_refused_by_ngclient(catalog, settings, tmp_path):
    settings.TRUST_TIMESTAMP_ON_DEMAND = False
    publish(catalog, ("fn.example.com", "A", "v1"))
    row = tuf.current("timestamp")
    md = Metadata.from_bytes(row.data.encode())
    md.signed.expires = timezone.now() - datetime.timedelta(hours=2)
    md.sign(tuf.online_signer())
    TufMetadata.objects.filter(pk=row.pk).update(data=md.to_bytes(tuf.SERIALIZER).decode())
    with pytest.raises(tuf_errors.ExpiredMetadataError):
        updater(tmp_path).refresh()


def test_metadata_urls_are_those_of_the_contract(catalog):
    publish(catalog, ("fn.example.com", "A", "v1"))
    client = Client()
    found = ["/tuf/root.json", "/tuf/1.root.json", "/tuf/timestamp.json", "/tuf/1.snapshot.json"]
    for url in [*found, "/tuf/1.targets.json", "/tuf/1.example-co.json"]:
        assert client.get(url).status_code == 200, url
        json.loads(client.get(url).content)
    assert client.get("/tuf/1.example-co.json")["Cache-Control"].endswith("immutable")
    for url in ("/tuf/2.root.json", "/tuf/1.timestamp.json", "/tuf/snapshot.json",
                "/tuf/0.root.json", "/tuf/1.nobody.json"):  # fmt: skip
        assert client.get(url).status_code == 404, url


def test_an_upgraded_registry_signs_what_it_already_serves(catalog, tmp_path):
    version = publish(catalog, ("fn.example.com", "A", "v1"))
    # As if published before the registry was a TUF repository.
    TufMetadata.objects.all().delete()
    TufTarget.objects.all().delete()
    RevocationList.objects.all().delete()
    up = updater(tmp_path)
    up.refresh()
    assert fetched(up, "example-co/functions/catalog.yaml") == version.content
    assert b"sequence: 0" in fetched(up, "example-co/functions/revocations.yaml")


def test_rotating_the_signing_key_rotates_the_root(catalog, tmp_path):
    publish(catalog, ("fn.example.com", "A", "v1"))
    root_v1 = Client().get("/tuf/root.json").content
    up = updater(tmp_path)
    up.refresh()
    call_command("rotate_signing_key", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert Metadata.from_bytes(Client().get("/tuf/root.json").content).signed.version == 2
    # A client that pinned root 1 follows the signed rotation and verifies everything again.
    up = updater(tmp_path, root=root_v1, name="pinned")
    up.refresh()
    assert fetched(up, "example-co/functions/catalog.yaml") == catalog.latest_version.content
    new_root = Metadata.from_bytes(Client().get("/tuf/root.json").content).signed
    [keyid] = new_root.roles["timestamp"].keyids
    pem = Client().get("/signing-key.pub").content.decode()
    assert new_root.keys[keyid].keyval["public"].strip() == pem.strip()


def test_a_root_rotation_out_of_the_old_roots_reach_is_refused(catalog, settings, tmp_path):
    publish(catalog, ("fn.example.com", "A", "v1"))
    offline = [CryptoSigner.generate_ecdsa(), CryptoSigner.generate_ecdsa()]
    assert tuf.root_rotate(signers=offline, threshold=2) == 2
    # Root 2 needs two of its three keys: the online key alone cannot rotate it.
    with pytest.raises(Exception) as info:
        tuf.root_rotate(signers=[], threshold=1)
    assert str(info.value) == (
        "The new root is not signed by a threshold of the keys of root version 2 (2 of 3); "
        "give its keys (TRUST_ROOT_KEY_FILES); nothing was changed."
    )
    assert tuf.current("root").version == 2
    assert tuf.root_rotate(signers=offline[:1], threshold=2) == 3


def test_tuf_root_command_rotates_with_the_configured_offline_keys(catalog, settings, tmp_path):
    from io import StringIO

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from django.core.management.base import CommandError

    publish(catalog, ("fn.example.com", "A", "v1"))
    files = []
    for name in ("a.pem", "b.pem"):
        key = ec.generate_private_key(ec.SECP256R1())
        (tmp_path / name).write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        files.append(str(tmp_path / name))
    settings.TRUST_ROOT_KEY_FILES = files
    settings.TRUST_ROOT_THRESHOLD = 2
    out = StringIO()
    call_command("tuf_root", "--rotate", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Signed TUF root version 2."
    assert lines[1].startswith("TUF root version 2, expires ") and lines[1].endswith(
        ", 2 of 3 key(s):"
    )
    assert sum(line.endswith("(online signing key)") for line in lines) == 1
    # The offline keys unmounted: the online key alone cannot sign root 3.
    settings.TRUST_ROOT_KEY_FILES = []
    with pytest.raises(CommandError) as info:
        call_command("tuf_root", "--rotate", "--threshold", "1", stdout=StringIO())
    assert str(info.value) == (
        "The new root is not signed by a threshold of the keys of root version 2 (2 of 3); "
        "give its keys (TRUST_ROOT_KEY_FILES); nothing was changed."
    )
    # A client that pinned root 1 follows the rotation.
    up = updater(tmp_path, root=Client().get("/tuf/1.root.json").content)
    up.refresh()
    assert fetched(up, "example-co/functions/catalog.yaml") == catalog.latest_version.content


def test_a_private_catalogs_targets_are_in_the_private_role_only(catalog, owner, tmp_path):
    from catalogs.publishing.models import Visibility
    from tests.catalogs.factories import CatalogFactory

    publish(catalog, ("fn.example.com", "A", "v1"))
    secret = CatalogFactory(publisher=catalog.publisher, name="secret")
    publish(secret, ("fn.example.com", "S", "v1"), name="secret")
    slug = catalog.publisher.slug

    def role(name: str) -> dict:
        return Metadata.from_bytes(tuf.current(name).data.encode()).signed.targets

    assert f"{slug}/secret/catalog.yaml" in role(slug)
    assert tuf.current(f"{slug}.private") is None
    services.catalog_update(catalog=secret, visibility=Visibility.PRIVATE, actor=owner)
    assert not [p for p in role(slug) if "/secret/" in p]
    assert sorted(role(f"{slug}.private")) == [
        f"{slug}/secret/catalog.yaml",
        f"{slug}/secret/revocations.yaml",
        f"{slug}/secret/versions/1/catalog.yaml",
    ]
    top = Metadata.from_bytes(tuf.current("targets").data.encode()).signed.delegations.roles
    assert [(name, r.terminating) for name, r in top.items()] == [
        (slug, False),
        (f"{slug}.private", True),
    ]
    # Anonymous: the same 404 as a role that does not exist; the owner: served.
    version = tuf.current(f"{slug}.private").version
    anonymous = Client().get(f"/tuf/{version}.{slug}.private.json")
    assert anonymous.status_code == 404
    owned = Client()
    owned.force_login(owner)
    assert owned.get(f"/tuf/{version}.{slug}.private.json").status_code == 200
    # ngclient (the owner's session) finds the private catalog through the private role; the
    # public one without it.
    up = updater(tmp_path)
    up.refresh()
    assert fetched(up, f"{slug}/functions/catalog.yaml")
    with pytest.raises(tuf_errors.DownloadError):
        up.get_targetinfo(f"{slug}/secret/catalog.yaml")
    member = updater(tmp_path, name="member")
    member._fetcher.client = owned  # the owner's session, as krm sends ~/.netrc credentials
    member.refresh()
    assert fetched(member, f"{slug}/secret/catalog.yaml") == secret.latest_version.content
    # Re-signed by the refresh before it expires, like the publisher's role.
    private = tuf.current(f"{slug}.private")
    TufMetadata.objects.filter(pk=private.pk).update(expires=timezone.now())
    assert tuf.tuf_refresh()
    assert tuf.current(f"{slug}.private").version == private.version + 1
    # Public again: back in the publisher's role, which terminates again.
    services.catalog_update(catalog=secret, visibility=Visibility.PUBLIC, actor=owner)
    assert f"{slug}/secret/catalog.yaml" in role(slug)
    top = Metadata.from_bytes(tuf.current("targets").data.encode()).signed.delegations.roles
    assert [(name, r.terminating) for name, r in top.items()] == [(slug, True)]


def test_hashed_bins_for_a_publisher_with_many_targets(catalog, settings, tmp_path):
    """Past TRUST_HASHED_BINS_THRESHOLD targets the publisher's role delegates them to
    TRUST_HASHED_BINS bins by path hash (PEP 458); a publish re-signs the bins it changed."""
    settings.TRUST_HASHED_BINS_THRESHOLD = 4
    settings.TRUST_HASHED_BINS = 16
    first = publish(catalog, ("fn.example.com", "A", "v1"))  # 3 targets: no bins yet
    slug = catalog.publisher.slug
    assert Metadata.from_bytes(tuf.current(slug).data.encode()).signed.delegations is None
    second = publish(catalog, ("fn.example.com", "B", "v1"))  # 4 targets: still none
    third = publish(catalog, ("fn.example.com", "C", "v1"))  # 5: binned
    role = Metadata.from_bytes(tuf.current(slug).data.encode()).signed
    assert role.targets == {}
    bins = role.delegations.roles
    assert sorted(bins) == [f"{slug}.bin-{i:x}" for i in range(16)]
    assert {tuple(r.path_hash_prefixes) for r in bins.values()} == {(f"{i:x}",) for i in range(16)}
    # ngclient finds every target through its bin, and downloads them.
    up = updater(tmp_path)
    up.refresh()
    assert fetched(up, f"{slug}/functions/catalog.yaml") == third.content
    assert fetched(up, f"{slug}/functions/versions/1/catalog.yaml") == first.content
    assert fetched(up, f"{slug}/functions/versions/2/catalog.yaml") == second.content
    assert b"sequence: 0" in fetched(up, f"{slug}/functions/revocations.yaml")
    # The next publish re-signs only the bins whose targets changed (the new version's and
    # the latest pointer's), not the publisher's role nor the other bins.
    versions = {name: tuf.current(name).version for name in [slug, *bins]}
    publish(catalog, ("fn.example.com", "D", "v1"))
    moved = {name for name in versions if tuf.current(name).version != versions[name]}
    assert slug not in moved and 1 <= len(moved) <= 2, moved
    up = updater(tmp_path, name="again")
    up.refresh()
    assert fetched(up, f"{slug}/functions/versions/4/catalog.yaml")
    # Bins are served like the role they belong to.
    name = sorted(moved)[0]
    assert Client().get(f"/tuf/{tuf.current(name).version}.{name}.json").status_code == 200


def test_a_binned_publish_leaves_nothing_pending(catalog, settings):
    settings.TRUST_HASHED_BINS_THRESHOLD = 1
    settings.TRUST_HASHED_BINS = 16
    publish(catalog, ("fn.example.com", "A", "v1"))
    publish(catalog, ("fn.example.com", "B", "v1"))
    # The publish re-signed bins, not the publisher's role: still nothing to sign again.
    assert tuf._pending() == []
    assert tuf.tuf_refresh() is False
