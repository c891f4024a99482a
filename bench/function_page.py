"""Benchmark: server time of the function page, against the catalog page in the same run.

Seeds a temporary SQLite database with a catalog published ``--history`` times whose function has
two versions, a 120-field schema, 8 KB of Markdown usage and a runtime that changes every time
(so the page compares eight catalog versions), plus the 3-function demo catalog. Then renders, in
process with Django's test client (no network; DEBUG off), the rich function page, the demo
function page and the catalog page, interleaved, ``--repeat`` times each. Prints p50/p95 wall
time and CPU time per page, the function/catalog ratio and the load average. Target: the rich
function page's p95 ≤ 50 ms, the search page's budget in issue 14 (exit 1 when not met).

    .venv/bin/python bench/function_page.py [--repeat 200] [--history 15] [--json out.json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_P95_MS = 50.0


def _setup(db: Path) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "registry.settings.base"
    os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ.setdefault("DEBUG", "false")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_demo", stdout=io.StringIO())


def _seed(history: int) -> str:
    from catalogs.publishing import services
    from catalogs.publishing.models import Catalog, Publisher

    publisher = Publisher.objects.create(slug="bench", display_name="Bench")
    catalog = Catalog.objects.create(publisher=publisher, name="functions")
    fields = "".join(
        f"                f{i}: {{type: string, description: Field {i} of the function.}}\n"
        for i in range(120)
    )
    usage = "# Usage\\n\\n" + "".join(
        f"## Part {i}\\n\\nSome **text** with `code` and a [link](https://example.com/{i}).\\n\\n"
        for i in range(100)
    )

    def version(name: str, i: int) -> str:
        return (
            f"    - name: {name}\n      schema:\n        openAPIV3Schema:\n"
            "          type: object\n          properties:\n            spec:\n"
            "              type: object\n              required: [f0, f1]\n"
            f"              properties:\n{fields}"
            f"      runtime:\n        container:\n          image: r.example.co/fn:{name}.{i}\n"
            f'          sha256: "{i % 16:x}{name[-1]}' + "0" * 62 + '"\n'
            f'      usage: "{usage}"\n      license: Apache 2.0\n'
        )

    for i in range(history):
        text = (
            "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: b\n"
            "spec:\n  krmFunctions:\n  - group: example.co\n    names:\n      kind: Rich\n"
            "    tags: [mutator]\n    versions:\n" + version("v2", i) + version("v1", i)
        )
        services.catalog_version_publish(catalog=catalog, content=text, actor=None)
    return "/catalogs/bench/functions/functions/example.co/Rich/"


def _measure(client, path: str) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--history", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        _setup(Path(tmp) / "bench.sqlite3")
        rich = _seed(args.history)
        from django.test import Client

        client = Client()
        pages = {
            "function (rich)": rich,
            "function (demo)": "/catalogs/demo/functions/functions/example.com/SetNamespace/",
            "catalog (demo)": "/catalogs/demo/functions/",
        }
        for path in pages.values():  # warm up: imports, template compilation
            _measure(client, path)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in pages}
        for _ in range(args.repeat):
            for name, path in pages.items():
                samples[name].append(_measure(client, path))
        size = len(client.get(rich).content)
    results = {}
    for name, values in samples.items():
        walls = sorted(v[0] for v in values)
        cpus = sorted(v[1] for v in values)
        results[name] = {
            "p50_ms": round(statistics.median(walls), 2),
            "p95_ms": round(walls[int(len(walls) * 0.95) - 1], 2),
            "cpu_p50_ms": round(statistics.median(cpus), 2),
            "cpu_p95_ms": round(cpus[int(len(cpus) * 0.95) - 1], 2),
        }
    load = os.getloadavg()
    for name, r in results.items():
        print(
            f"{name:16} p50 {r['p50_ms']:7.2f} ms  p95 {r['p95_ms']:7.2f} ms  "
            f"(CPU p50 {r['cpu_p50_ms']:.2f} ms, p95 {r['cpu_p95_ms']:.2f} ms)"
        )
    ratio = results["function (rich)"]["p50_ms"] / results["catalog (demo)"]["p50_ms"]
    print(f"rich function page / catalog page (p50): {ratio:.2f}; rich page HTML {size} bytes")
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; repeat {args.repeat}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "ratio": ratio, "load": load}))
    met = results["function (rich)"]["p95_ms"] <= TARGET_P95_MS
    print(f"target p95 ≤ {TARGET_P95_MS:.0f} ms: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
