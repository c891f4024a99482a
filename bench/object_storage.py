"""Benchmark: the cost of keeping every stored byte in the object store, local files vs S3.

In one run, on a temporary SQLite registry, for each storage backend (local files under a
temporary MEDIA_ROOT; moto's S3-compatible server on loopback, as CI's services stage uses):

- publish: ``catalog_version_publish`` of ``--versions`` distinct catalogs (the version's bytes,
  its OCI manifest and the signature artifacts are written to the store before the rows commit);
- cold read: ``catalog_version_content`` of each version with the per-process cache emptied
  (one database query and one read from the store);
- warm read: the same again, from the per-process cache (no query, no store);
- GC: one ``blob_garbage_collect`` pass over everything stored (nothing to delete).

    .venv/bin/python bench/object_storage.py [--versions 100] [--json out.json]

Reports milliseconds per operation (wall and process CPU) and the S3/local ratio of each.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def setup_django(workdir: Path) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "registry.settings.base"
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ["MEDIA_ROOT"] = str(workdir / "media")
    os.environ["SIGNING_KEY_FILE"] = str(workdir / "signing-key.pem")
    os.environ["LOG_LEVEL"] = "WARNING"
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def _document(i: int) -> str:
    return (
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n"
        f"  name: bench-{i}\nspec:\n  krmFunctions:\n  - group: example.co\n    names:\n"
        f"      kind: Bench{i}\n    description: object storage benchmark\n"
        "    publisher: example.co\n    versions:\n    - name: v1\n      runtime:\n"
        "        container:\n          image: registry.example.co/bench:v1\n"
    )


def _timed(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def run_backend(name: str, storage: dict, versions: int) -> dict[str, float]:
    from django.conf import settings
    from django.test.utils import override_settings

    with override_settings(STORAGES={**settings.STORAGES, "default": storage}):
        return _run(name, versions)


def _run(name: str, versions: int) -> dict[str, float]:
    from catalogs.distribution.selectors import oci_caches_clear
    from catalogs.mirroring import services as mirrors
    from catalogs.publishing import content, selectors, services

    publisher = services.publisher_create(slug=f"bench-{name}", display_name=name, actor=None)
    catalog = services.catalog_create(publisher=publisher, name="bench", actor=None)
    digests: list[str] = []

    def publish() -> None:
        for i in range(versions):
            version, _ = services.catalog_version_publish(
                catalog=catalog, content=_document(i), actor=None
            )
            digests.append(version.digest)

    def read() -> None:
        for digest in digests:
            assert selectors.catalog_version_content(digest=digest)

    def cold() -> None:
        oci_caches_clear()
        content.content_cache.__init__(max_bytes=content.content_cache.max_bytes)  # type: ignore[misc]
        read()

    figures: dict[str, float] = {}
    for label, fn, count in (
        ("publish", publish, versions),
        ("cold_read", cold, versions),
        ("warm_read", read, versions),
        ("gc_pass", lambda: mirrors.blob_garbage_collect(), 1),
    ):
        wall, cpu = _timed(fn)
        figures[f"{label}_ms"] = round(wall * 1000 / count, 3)
        figures[f"{label}_cpu_ms"] = round(cpu * 1000 / count, 3)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=100)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="krm-bench-storage-") as tmp:
        workdir = Path(tmp)
        setup_django(workdir)
        from tests.s3_server import moto_server, new_bucket, s3_client, storage_options

        results: dict[str, dict[str, float]] = {}
        results["local"] = run_backend(
            "local", {"BACKEND": "django.core.files.storage.FileSystemStorage"}, args.versions
        )
        with moto_server() as endpoint:
            bucket = new_bucket(s3_client(endpoint))
            results["s3"] = run_backend("s3", storage_options(endpoint, bucket), args.versions)
    load = os.getloadavg()
    report = {
        "versions": args.versions,
        "load_average": [round(x, 2) for x in load],
        **results,
        "s3_over_local": {
            key: round(results["s3"][key] / results["local"][key], 2)
            for key in results["local"]
            if results["local"][key]
        },
    }
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
