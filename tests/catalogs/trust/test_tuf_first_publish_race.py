"""Two first publishes at once on an empty TUF repository, each on its own thread, database
connection and transaction: both must commit, on one root version 1 (SQLite and PostgreSQL).

Thread A creates the repository (root version 1, targets, snapshot, timestamp) and holds its
transaction open while thread B, which began after A wrote, creates its own first metadata.
On PostgreSQL B does not see A's uncommitted root: its insert of root version 1 waits on the
unique (role, version) index and fails once A commits, and B must then go on under A's root.
On SQLite (``transaction_mode: IMMEDIATE``) B waits for A's whole transaction instead: the
test database, in memory with a shared cache, answers "database table is locked" to a second
writer at once, so this test runs on a file copy of it, as the embedded default does.
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from django.db import connection, connections, transaction
from tuf.api.metadata import Metadata

from catalogs.publishing import services
from catalogs.trust import signing, tuf
from catalogs.trust.models import TufMetadata
from tests.catalogs.factories import CatalogFactory, PublisherFactory, catalog_yaml

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def file_database(tmp_path):
    """On SQLite, every connection of this test on a file copy of the (migrated) test database."""
    if connection.vendor != "sqlite":
        yield
        return
    database = connections.settings["default"]
    memory = database["NAME"]
    # Keeps the in-memory database alive while Django's connection to it is closed.
    keeper = sqlite3.connect(memory, uri=True)
    copy = sqlite3.connect(tmp_path / "db.sqlite3")
    keeper.backup(copy)
    copy.close()
    database["NAME"] = str(tmp_path / "db.sqlite3")
    connections.close_all()
    try:
        yield
    finally:
        connections.close_all()
        database["NAME"] = memory
        connection.ensure_connection()  # holds the in-memory database before the keeper lets go
        keeper.close()


def test_two_first_publishes_at_once_share_one_root_version_1(file_database):
    catalogs = [
        CatalogFactory(publisher=PublisherFactory(slug=slug), name="functions")
        for slug in ("acme", "globex")
    ]
    # The signing key is recorded already (it signed something, or served /signing-key.pub):
    # its row, created in A's transaction otherwise, would make B wait for A by itself.
    signing.signing_key_current()
    assert not TufMetadata.objects.exists()
    a_wrote = threading.Event()
    b_started = threading.Event()
    errors: dict[str, BaseException] = {}

    def publish(name: str, catalog) -> None:
        return services.catalog_version_publish(
            catalog=catalog, content=catalog_yaml(("fn.example.com", name, "v1")), actor=None
        )

    def first() -> None:
        try:
            with transaction.atomic():
                publish("A", catalogs[0])
                a_wrote.set()
                # B is now waiting (on the root row's index, or on SQLite's write lock).
                b_started.wait(timeout=30)
                time.sleep(0.5)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors["A"] = exc
            a_wrote.set()
        finally:
            connections.close_all()

    def second() -> None:
        try:
            a_wrote.wait(timeout=30)
            b_started.set()
            publish("B", catalogs[1])
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors["B"] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    assert not any(thread.is_alive() for thread in threads)
    assert not errors, errors

    # One root version 1, and the newest metadata delegate to, and sign, both publishers.
    assert TufMetadata.objects.filter(role="root").count() == 1
    targets = Metadata.from_bytes(tuf.current("targets").data.encode()).signed
    assert sorted(targets.delegations.roles) == ["acme", "globex"]
    snapshot = Metadata.from_bytes(tuf.current("snapshot").data.encode()).signed
    assert {"acme.json", "globex.json", "targets.json"} <= set(snapshot.meta)
    for slug, name in (("acme", "A"), ("globex", "B")):
        role = Metadata.from_bytes(tuf.current(slug).data.encode()).signed
        assert f"{slug}/functions/versions/1/catalog.yaml" in role.targets, (slug, name)
