"""The registry's TUF metadata for many catalogs: sizes, how they grow, and the cost of a publish.

Runs the registry's own code (``catalogs.trust.tuf``, python-tuf's Metadata API) on a fresh
SQLite database in a temporary directory (migrated, a new signing key): for each layout of
catalogs over publishers it records every catalog's targets (version 1, the latest pointer, the
revocation list: three targets a catalog) in bulk, signs the whole repository once
(``tuf_publish`` over every publisher), then publishes one more version of one catalog and
measures what that re-signs. It reports the size of root, targets, snapshot and timestamp, the
largest publisher role, the total stored, what a client downloads for one catalog on a cold cache
(timestamp, snapshot, targets, the publisher's role and, when it is in hashed bins, one bin)
and the time of both signings. A publisher past ``TRUST_HASHED_BINS_THRESHOLD`` targets
(default 2048) is in ``TRUST_HASHED_BINS`` hashed bins (default 256; PEP 458).

    .venv/bin/python bench/tuf_metadata_sizes.py [--catalogs 10000] [--json]

Layouts: every catalog its own publisher; 100 catalogs a publisher; one publisher with them all.
Also run at a tenth of the catalogs, so the growth per catalog and per publisher shows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _setup(workdir: str) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="registry.settings.base",
        DATABASE_URL=f"sqlite:///{workdir}/db.sqlite3",
        MEDIA_ROOT=f"{workdir}/media",
        SIGNING_KEY_FILE=f"{workdir}/signing-key.pem",
        SECRET_KEY="bench-only",
        LOG_LEVEL="WARNING",
    )
    sys.path.insert(0, REPO)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _layout(catalogs: int, per_publisher: int) -> dict[str, object]:
    import hashlib

    from django.db import transaction

    from catalogs.publishing.models import Publisher
    from catalogs.trust import tuf
    from catalogs.trust.models import TufMetadata, TufTarget

    TufMetadata.objects.all().delete()
    TufTarget.objects.all().delete()
    Publisher.objects.all().delete()
    count = (catalogs + per_publisher - 1) // per_publisher
    publishers = Publisher.objects.bulk_create(
        Publisher(slug=f"publisher-{i:05d}", display_name=f"P{i}") for i in range(count)
    )
    rows = []
    for n in range(catalogs):
        publisher = publishers[n // per_publisher]
        base = f"{publisher.slug}/catalog-{n:05d}"
        sha = hashlib.sha256(base.encode()).hexdigest()
        for path, length in (
            (f"{base}/versions/1/catalog.yaml", 2400),
            (f"{base}/catalog.yaml", 2400),
            (f"{base}/revocations.yaml", 140),
        ):
            rows.append(TufTarget(path=path, publisher=publisher, length=length, sha256=sha))
    TufTarget.objects.bulk_create(rows, batch_size=5000)
    slugs = [p.slug for p in publishers]

    started = time.perf_counter()
    with transaction.atomic():
        tuf.tuf_publish(publishers=slugs)
    full = time.perf_counter() - started

    def size(role: str) -> int:
        row = tuf.current(role)
        return len(row.data.encode()) if row else 0

    roles = {r: size(r) for r in ("root", "targets", "snapshot", "timestamp")}
    # The newest version of every role; a publisher's role and, when it is in hashed bins,
    # its largest bin (a client downloads the role and the one bin its target falls in).
    newest: dict[str, tuple[int, int]] = {}
    stored = 0
    for role, version, data in TufMetadata.objects.values_list("role", "version", "data"):
        stored += len(data.encode())
        if version >= newest.get(role, (0, 0))[0]:
            newest[role] = (version, len(data.encode()))
    largest_bin: dict[str, int] = {}
    for role, (_, n) in newest.items():
        if tuf.BIN_INFIX in role:
            slug = tuf.role_publisher(role)
            largest_bin[slug] = max(largest_bin.get(slug, 0), n)
    biggest = max(newest[s][1] + largest_bin.get(s, 0) for s in slugs)
    bins = sum(1 for role in newest if tuf.BIN_INFIX in role)
    # One more version of one catalog: its publisher's role, snapshot and timestamp re-signed.
    first = publishers[0]
    base = f"{first.slug}/catalog-00000"
    before = set(TufMetadata.objects.values_list("pk", flat=True))
    started = time.perf_counter()
    with transaction.atomic():
        tuf.target_set(publisher=first, path=f"{base}/versions/2/catalog.yaml", content=b"v2")
        tuf.target_set(publisher=first, path=f"{base}/catalog.yaml", content=b"v2")
        tuf.tuf_publish(publishers=[first.slug])
    one = time.perf_counter() - started
    written = TufMetadata.objects.exclude(pk__in=before)
    return {
        "catalogs": catalogs,
        "publishers": count,
        "catalogs_per_publisher": per_publisher,
        "bytes": roles,
        "largest_publisher_role": biggest,
        "hashed_bins": bins,
        "stored_total": stored,
        "client_cold_download": roles["timestamp"] + roles["snapshot"] + roles["targets"] + biggest,
        "sign_all_seconds": round(full, 2),
        "publish_one_seconds": round(one, 3),
        "publish_one_written": [
            (
                r.role if r.role in tuf.TOP_LEVEL else "bin" if tuf.BIN_INFIX in r.role else "role",
                len(r.data),
            )
            for r in written.order_by("role")
        ],  # fmt: skip
    }


def _kib(n: int) -> str:
    return f"{n / 1024:,.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:,.2f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalogs", type=int, default=10000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="krm-bench-tuf-") as workdir:
        _setup(workdir)
        for catalogs in (args.catalogs // 10, args.catalogs):
            for per_publisher in sorted({1, 100, catalogs}):
                results.append(_layout(catalogs, per_publisher))
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    print(
        f"{'catalogs':>8} {'publishers':>10} {'targets.json':>13} {'snapshot.json':>14} "
        f"{'timestamp':>10} {'largest role':>13} {'client cold':>12} {'stored':>11} "
        f"{'sign all':>9} {'publish 1':>10} {'written by publish 1':>20}"
    )
    for r in results:
        b = r["bytes"]
        print(
            f"{r['catalogs']:>8} {r['publishers']:>10} {_kib(b['targets']):>13} "
            f"{_kib(b['snapshot']):>14} {_kib(b['timestamp']):>10} "
            f"{_kib(r['largest_publisher_role']):>13} {_kib(r['client_cold_download']):>12} "
            f"{_kib(r['stored_total']):>11} {r['sign_all_seconds']:>8}s "
            f"{r['publish_one_seconds']:>9}s "
            f"{_kib(sum(n for _, n in r['publish_one_written'])):>20}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
