"""Server time of the search page over 1,000 functions: p50/p95/p99, queries, bytes per page.

Seeds a temporary database (SQLite by default, or ``--database-url``) with ``--functions``
distinct functions published through ``catalogs.publishing.services`` in 10 catalogs of 5
publishers (2
verified), each catalog published twice (only the latest version is searched), plus a fork
carrying 15% of them and a mirrored catalog carrying 10% (so those functions are carried by
several catalogs), 1-3 versions each and every runtime kind. Then requests the search page in
process through Django's full handler (``django.test.Client``, middleware included, DEBUG off)
for representative queries, facets, sorts and pages, signed out and signed in, ``--repeat`` times
each after a warm-up, and reports the wall and CPU time per request (p50/p95/p99, and p95 per
URL), the database queries per request (a separate pass, so counting costs nothing in the timed
one), the page sizes (with the assets they link) and the load average. Target: p95 ≤ 50 ms
and every page ≤ 100 KB (exit 1 when not met).

    .venv/bin/python bench/search_page.py [--functions 1000] [--repeat 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_P95_MS = 50.0
MAX_PAGE_BYTES = 100 * 1024

VERBS = ["Set", "Apply", "Ensure", "Remove", "Validate", "Generate", "Inject", "Render"]
NOUNS = [
    "Namespace", "Labels", "Annotations", "Image", "Replicas", "Resources", "Policy", "Secret",
    "ConfigMap", "Ingress", "Probes", "Tolerations", "Affinity", "Sidecar", "Quota", "Owner",
]  # fmt: skip
GROUPS = [
    f"{name}.example.co" for name in ("fn", "apps", "policy", "net", "sec", "ops", "kpt", "infra")
]
TAGS = ["mutator", "validator", "generator", "labels", "security", "networking", "storage"]
PUBLISHERS = [("acme", True), ("globex", True), ("initech", False), ("umbrella", False)]
PUBLISHERS += [("hooli", False)]

# (name, path): the queries people type, facets they click, sorts and deep pages.
URLS = [
    ("front page", "/"),
    ("word", "/?q=namespace"),
    ("two words", "/?q=set+labels"),
    ("prefix", "/?q=gen"),
    ("exact kind", "/?q=ValidatePolicy"),
    ("facet runtime", "/?runtime=exec"),
    ("facets tag+verified", "/?tag=security&verified=on"),
    ("publisher, updated", "/?publisher=globex&sort=updated"),
    ("word, most catalogs", "/?q=image&sort=catalogs"),
    ("name, page 7", "/?sort=name&page=7"),
    ("word, page 2 of 30", "/?q=e&page=2&page_size=30"),
    ("no hits", "/?q=no-such-function"),
    ("two publishers", "/?publisher=acme&publisher=globex"),
    ("two tags, a runtime", "/?tag=security&tag=labels&runtime=exec&runtime=starlark"),
    ("typo", "/?q=namespce"),
    ("most pulled", "/?sort=pulls"),
]
SIGNED_IN_URLS = [("signed in, word", "/?q=secret"), ("signed in, front", "/")]


def _function(index: int, *, version_count: int, fork: str = "") -> dict:
    verb, noun = VERBS[index % len(VERBS)], NOUNS[(index // len(VERBS)) % len(NOUNS)]
    group = GROUPS[index // (len(VERBS) * len(NOUNS)) % len(GROUPS)]
    kind = f"{verb}{noun}"
    runtime_kind = ("container", "container", "container", "exec", "starlark")[index % 5]
    versions = []
    for n in range(1, version_count + 1):
        digest = hashlib.sha256(f"{index} {n}".encode()).hexdigest()
        if runtime_kind == "container":
            runtime: dict = {
                "container": {
                    "image": f"ghcr.io/example/{kind.lower()}:v{n}",
                    "sha256": digest,
                    "requireNetwork": index % 11 == 0,
                    "requireStorageMount": index % 17 == 0,
                }
            }
        elif runtime_kind == "exec":
            runtime = {
                "exec": {
                    "platforms": [
                        {
                            "bin": kind.lower(),
                            "os": "linux",
                            "arch": "amd64",
                            "uri": f"https://dl.example.co/{kind.lower()}-v{n}.tar.gz",
                            "sha256": digest,
                        }
                    ]
                }
            }
        else:
            runtime = {
                "starlark": {
                    "uri": f"https://dl.example.co/{kind.lower()}-v{n}.star",
                    "sha256": digest,
                }
            }
        versions.append(
            {
                "name": f"v{n}",
                "runtime": runtime,
                "schema": {"openAPIV3Schema": {"type": "object"}},
                "license": "Apache-2.0",
            }
        )
    return {
        "group": group,
        "names": {"kind": kind},
        "description": f"{verb}s the {noun.lower()} of every matching resource{fork}.",
        "publisher": group,
        "tags": [TAGS[index % len(TAGS)], TAGS[(index // 3) % len(TAGS)]],
        "versions": versions,
    }


def catalog_document(name: str, indexes: list[int], *, fork: str = "", revision: int = 1) -> str:
    """A KEP-2906 catalog with the functions ``indexes`` (1-3 versions each)."""
    import yaml

    functions = [_function(i, version_count=1 + (i + revision) % 3, fork=fork) for i in indexes]
    doc = {
        "apiVersion": "config.kubernetes.io/v1alpha1",
        "kind": "Catalog",
        "metadata": {"name": name, "annotations": {"revision": str(revision)}},
        "spec": {"krmFunctions": functions},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def setup_django(workdir: Path, database_url: str | None) -> None:
    """Base settings, DEBUG off, a fresh database (SQLite in ``workdir`` unless given)."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "registry.settings.base"
    os.environ["DEBUG"] = "false"
    os.environ["DATABASE_URL"] = database_url or f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ["MEDIA_ROOT"] = str(workdir / "media")
    os.environ["SIGNING_KEY_FILE"] = str(workdir / "signing-key.pem")
    os.environ["ALLOWED_HOSTS"] = "testserver,127.0.0.1,localhost"
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ.pop("CACHE_URL", None)
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def seed(functions: int) -> dict:
    """Publishers, catalogs and versions as the module docstring says; returns what was made."""
    from django.conf import settings
    from django.contrib.auth.models import User

    from catalogs.mirroring.models import MirrorSource
    from catalogs.publishing import services
    from catalogs.publishing.models import Catalog, FunctionVersion, Publisher

    owner = User.objects.create_user("bench-owner")
    publishers = []
    for slug, verified in PUBLISHERS:
        publisher = Publisher.objects.create(
            slug=slug, display_name=slug.title(), verified=verified
        )
        publisher.owners.add(owner)
        publishers.append(publisher)
    per_catalog = -(-functions // 10)
    for c in range(10):
        catalog = Catalog.objects.create(publisher=publishers[c % len(publishers)], name=f"cat-{c}")
        indexes = list(range(c * per_catalog, min(functions, (c + 1) * per_catalog)))
        for revision in (1, 2):  # the first version is history: search sees the latest only
            document = catalog_document(catalog.name, indexes, revision=revision)
            services.catalog_version_publish(catalog=catalog, content=document, actor=owner)
    fork = Catalog.objects.create(publisher=publishers[3], name="fork")
    forked = list(range(0, functions, 7))[: functions * 15 // 100]
    services.catalog_version_publish(
        catalog=fork, content=catalog_document("fork", forked, fork=" (forked)"), actor=owner
    )
    mirror_publisher = Publisher.objects.create(
        slug=settings.MIRROR_PUBLISHER_SLUG, display_name="Mirrors"
    )
    mirrored = Catalog.objects.create(publisher=mirror_publisher, name="upstream")
    services.catalog_version_publish(
        catalog=mirrored,
        content=catalog_document("upstream", list(range(0, functions, 10))),
        actor=None,
    )
    # Made a mirror after its publish: a mirror's catalog otherwise changes only by sync runs.
    MirrorSource.objects.create(name="upstream", url="https://h.example/c.yaml", catalog=mirrored)
    latest = FunctionVersion.objects.filter(catalog_version__latest_of__isnull=False)
    return {
        "functions": latest.values("group", "kind").distinct().count(),
        "function_versions_latest": latest.count(),
        "function_versions_all": FunctionVersion.objects.count(),
        "catalogs": Catalog.objects.count(),
        "publishers": Publisher.objects.count(),
    }


def percentile(samples: list[float], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of ``samples``."""
    ordered = sorted(samples)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def asset_bytes(body: str) -> int:
    """The size of every static file the page links (what a first visit also downloads)."""
    from django.conf import settings
    from django.contrib.staticfiles import finders

    paths = set(re.findall(r'(?:href|src)="' + re.escape(settings.STATIC_URL) + r'([^"]+)"', body))
    return sum(Path(str(finders.find(p))).stat().st_size for p in paths)


def found_count(body: str) -> int:
    """The number of functions the page says it found (0 for "No function")."""
    match = re.search(r'<p class="summary"><strong>(\d+)</strong>', body)
    return int(match.group(1)) if match else 0


def measure(repeat: int) -> dict:
    """Time every URL ``repeat`` times (after one warm-up each) and count its queries once."""
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    anonymous, signed_in = Client(), Client()
    signed_in.force_login(User.objects.get(username="bench-owner"))
    plan = [(name, path, anonymous) for name, path in URLS]
    plan += [(name, path, signed_in) for name, path in SIGNED_IN_URLS]
    per_url: dict[str, dict] = {}
    for name, path, client in plan:
        response = client.get(path)  # warm-up: templates compiled, connection open
        if response.status_code != 200:
            raise SystemExit(f"bench/search_page: {path} answered {response.status_code}")
        with CaptureQueriesContext(connection) as queries:
            client.get(path)
        per_url[name] = {
            "path": path,
            "queries": len(queries),
            "bytes": len(response.content) + asset_bytes(response.content.decode()),
            "functions": found_count(response.content.decode()),
            "wall_ms": [],
            "cpu_ms": [],
        }
    # Interleaved rounds, so that a burst of load from elsewhere spreads over every URL.
    for _ in range(repeat):
        for name, path, client in plan:
            wall, cpu = time.perf_counter(), time.process_time()
            response = client.get(path)
            cpu = time.process_time() - cpu
            wall = time.perf_counter() - wall
            assert response.status_code == 200
            per_url[name]["wall_ms"].append(wall * 1000)
            per_url[name]["cpu_ms"].append(cpu * 1000)
    return per_url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--database-url", help="e.g. postgres://user@host/db (default: SQLite)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="krm-bench-search-") as tmp:
        setup_django(Path(tmp), args.database_url)
        from django.db import connection

        load_before = os.getloadavg()
        started = time.perf_counter()
        seeded = seed(args.functions)
        seed_s = time.perf_counter() - started
        per_url = measure(args.repeat)
        load_after = os.getloadavg()
        vendor = connection.vendor
        connection.close()
    wall = [ms for u in per_url.values() for ms in u["wall_ms"]]
    cpu = [ms for u in per_url.values() for ms in u["cpu_ms"]]
    figures = {
        "database": vendor,
        **seeded,
        "seed_s": round(seed_s, 1),
        "requests": len(wall),
        "wall_ms": {p: round(percentile(wall, p), 2) for p in (50, 95, 99)},
        "cpu_ms": {p: round(percentile(cpu, p), 2) for p in (50, 95, 99)},
        "max_queries": max(u["queries"] for u in per_url.values()),
        "max_bytes": max(u["bytes"] for u in per_url.values()),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
        "urls": {
            name: {
                "path": u["path"],
                "functions": u["functions"],
                "queries": u["queries"],
                "bytes": u["bytes"],
                "wall_p50_ms": round(statistics.median(u["wall_ms"]), 2),
                "wall_p95_ms": round(percentile(u["wall_ms"], 95), 2),
                "cpu_p50_ms": round(statistics.median(u["cpu_ms"]), 2),
            }
            for name, u in per_url.items()
        },
    }
    figures["meets_target"] = (
        figures["wall_ms"][95] <= TARGET_P95_MS and figures["max_bytes"] <= MAX_PAGE_BYTES
    )
    print(
        f"search page over {seeded['functions']} functions "
        f"({seeded['function_versions_latest']} versions searched, "
        f"{seeded['catalogs']} catalogs, {vendor}); {len(wall)} requests, seed {seed_s:.1f} s"
    )
    header = ("found", "queries", "KB", "p50 ms", "p95 ms", "cpu ms")
    print(f"{'url':<24} " + " ".join(f"{h:>7}" for h in header))
    for name, u in figures["urls"].items():
        print(
            f"{name:<24} {u['functions']:>7} {u['queries']:>7} {u['bytes'] / 1024:>7.1f} "
            f"{u['wall_p50_ms']:>7.2f} {u['wall_p95_ms']:>7.2f} {u['cpu_p50_ms']:>7.2f}"
        )
    w, c = figures["wall_ms"], figures["cpu_ms"]
    print(f"wall ms p50 {w[50]}  p95 {w[95]}  p99 {w[99]}   (target p95 <= {TARGET_P95_MS:.0f})")
    print(f"cpu  ms p50 {c[50]}  p95 {c[95]}  p99 {c[99]}")
    print(
        f"queries per request <= {figures['max_queries']}; "
        f"largest page {figures['max_bytes']} B with its assets"
    )
    print(
        f"load average {figures['load_average_before']} -> {figures['load_average_after']} "
        f"on {figures['cpus']} CPUs"
    )
    print("target met" if figures["meets_target"] else "TARGET NOT MET")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0 if figures["meets_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
