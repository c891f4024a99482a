"""Benchmark: five exec KRM functions over 1,000 resources, ``krm build`` vs ``kpt fn render``.

In a temporary directory it writes 1,000 resources (ConfigMaps and Deployments) and five exec
functions (``sed`` scripts, so the functions themselves cost the same under both tools and the
orchestrators' own work is what is compared). Then, in the same run, median of --repeat:

1. ``krm build --enable-exec`` on a kustomization whose ``transformers:`` are five function
   configs with explicit exec runtimes, against ``kpt fn render --allow-exec -o unwrap`` on a
   package whose Kptfile pipeline runs the same five scripts (target ratio krm/kpt <= 0.8);
   the outputs are checked to hold the same resources first;
2. the same five functions as starlark scripts run in process by ``krm build`` (reported);
3. catalog resolution with a warm cache: the five functions named only by apiVersion/kind,
   found in a catalog given with ``--trusted-catalog`` (exec runtimes as .tar.gz archives,
   sha256-verified, cached) against the explicit-runtime build of step 1 (target <= 5%);
4. functionConfig schema validation: each catalog entry carries a CRD-style
   ``openAPIV3Schema`` (nested objects, patterns, enums, int-or-string, nullable, int32, an
   embedded resource) and each config a ``spec`` that satisfies it; the catalog build against
   the same build with ``--skip-schema``, and the check itself (walk, resolve, compile,
   validate) measured directly in a fresh process, as a share of the build (target <= 5%).

    .venv/bin/python bench/fn_pipeline.py [--resources 1000] [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PYTHON = os.path.join(REPO, ".venv", "bin", "python")
if not os.path.exists(PYTHON):
    PYTHON = sys.executable
FUNCTIONS = 5


def _resources(n: int) -> str:
    docs = []
    for i in range(n):
        if i % 2:
            docs.append(
                f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{i}\n"
                f"  labels:\n    app: app-{i}\n    stage: s0\nspec:\n  replicas: 1\n"
                f"  selector:\n    matchLabels:\n      app: app-{i}\n  template:\n"
                f"    metadata:\n      labels:\n        app: app-{i}\n    spec:\n"
                f"      containers:\n      - name: main\n        image: nginx:1.25\n"
            )
        else:
            docs.append(
                f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n"
                f"  labels:\n    stage: s0\ndata:\n  key: value-{i}\n"
            )
    return "---\n".join(docs)


def _script(k: int) -> str:
    # Function k moves every resource from stage s<k> to s<k+1>: each one changes every item.
    return f"#!/bin/sh\nexec sed -e 's/stage: s{k}$/stage: s{k + 1}/'\n"


def _starlark(k: int) -> str:
    return (
        "for r in ctx.resource_list['items']:\n"
        "  labels = r['metadata'].get('labels')\n"
        f"  if labels and labels.get('stage') == 's{k}':\n"
        f"    labels['stage'] = 's{k + 1}'\n"
    )


def _write(path: str, text: str, mode: int | None = None) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    if mode is not None:
        os.chmod(path, mode)


def _config(k: int, runtime: str | None) -> str:
    text = f"apiVersion: bench.example.com/v1\nkind: Stage{k}\nmetadata:\n  name: stage-{k}\n"
    if runtime:
        text += runtime
    return text


# A CRD-style functionConfig schema of a realistic size, for the catalog entries.
SCHEMA = """      schema:
        openAPIV3Schema:
          type: object
          required: [spec]
          properties:
            spec:
              type: object
              required: [stage, selector, rules]
              properties:
                stage: {type: string, enum: [s0, s1, s2, s3, s4, s5]}
                replicas: {type: integer, format: int32, minimum: 0, nullable: true}
                port: {x-kubernetes-int-or-string: true}
                owner: {type: string, pattern: "^[a-z][a-z0-9-]*$", maxLength: 63}
                selector:
                  type: object
                  properties:
                    matchLabels: {type: object, additionalProperties: {type: string}}
                    kinds: {type: array, items: {type: string}}
                rules:
                  type: array
                  items:
                    type: object
                    required: [name, value]
                    properties:
                      name: {type: string, pattern: "^[a-z][a-z0-9.-]*$"}
                      value: {type: string}
                      optional: {type: boolean}
                      weight: {type: number, minimum: 0, maximum: 1}
                template:
                  type: object
                  x-kubernetes-embedded-resource: true
                  x-kubernetes-preserve-unknown-fields: true
"""


def _spec(k: int) -> str:
    rules = "".join(
        f"  - name: rule-{i}.k{k}\n    value: v{i}\n    optional: false\n    weight: 0.5\n"
        for i in range(20)
    )
    return (
        f"spec:\n  stage: s{k}\n  replicas: null\n  port: http\n  owner: team-{k}\n"
        "  selector:\n    matchLabels:\n      app: bench\n    kinds: [ConfigMap, Deployment]\n"
        f"  rules:\n{rules}"
        "  template:\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: t}\n"
    )


def setup(root: str, n: int) -> dict[str, str]:
    """Write every tree; returns the paths the runs need."""
    resources = _resources(n)
    fns = os.path.join(root, "fns")
    for k in range(FUNCTIONS):
        _write(os.path.join(fns, f"fn{k}.sh"), _script(k), 0o755)
        _write(os.path.join(fns, f"fn{k}.star"), _starlark(k))

    # 1. explicit exec runtimes
    app = os.path.join(root, "krm-exec")
    _write(os.path.join(app, "resources.yaml"), resources)
    names = []
    for k in range(FUNCTIONS):
        runtime = (
            "  annotations:\n    config.kubernetes.io/function: |\n      exec:\n"
            f"        path: {os.path.join(fns, f'fn{k}.sh')}\n"
        )
        _write(os.path.join(app, f"fn{k}.yaml"), _config(k, runtime))
        names.append(f"fn{k}.yaml")
    kust = "resources:\n- resources.yaml\ntransformers:\n" + "".join(f"- {x}\n" for x in names)
    _write(os.path.join(app, "kustomization.yaml"), kust)

    # 2. starlark (scripts below the kustomization: a file out of its root is refused)
    star = os.path.join(root, "krm-starlark")
    _write(os.path.join(star, "resources.yaml"), resources)
    for k in range(FUNCTIONS):
        _write(os.path.join(star, "fns", f"fn{k}.star"), _starlark(k))
        runtime = f"runtime:\n  starlark:\n    path: fns/fn{k}.star\n"
        _write(os.path.join(star, f"fn{k}.yaml"), _config(k, runtime))
    _write(os.path.join(star, "kustomization.yaml"), kust)

    # 3. catalog: the same scripts packed as .tar.gz, found by apiVersion/kind only
    cat_app = os.path.join(root, "krm-catalog")
    _write(os.path.join(cat_app, "resources.yaml"), resources)
    from orchestrator.functions.resolve import host_platform

    os_name, arch = host_platform()
    entries = []
    for k in range(FUNCTIONS):
        archive = os.path.join(root, "archives", f"fn{k}.tar.gz")
        os.makedirs(os.path.dirname(archive), exist_ok=True)
        data = _script(k).encode()
        with tarfile.open(archive, "w:gz") as tar:
            info = tarfile.TarInfo("bin/fn")
            info.size = len(data)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
        with open(archive, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        entries.append(
            f"  - group: bench.example.com\n    names:\n      kind: Stage{k}\n    versions:\n"
            f"    - name: v1\n      runtime:\n        exec:\n          platforms:\n"
            f"          - bin: bin/fn\n            os: {os_name}\n            arch: {arch}\n"
            f"            uri: file://{archive}\n            sha256: {sha}\n" + SCHEMA
        )
        _write(os.path.join(cat_app, f"fn{k}.yaml"), _config(k, None) + _spec(k))
    catalog = os.path.join(root, "catalog.yaml")
    _write(
        catalog,
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n"
        "  name: bench\nspec:\n  krmFunctions:\n" + "".join(entries),
    )
    _write(os.path.join(cat_app, "kustomization.yaml"), kust)

    # kpt: the same five scripts in a Kptfile pipeline
    pkg = os.path.join(root, "kpt-pkg")
    _write(os.path.join(pkg, "resources.yaml"), resources)
    mutators = "".join(f"  - exec: {os.path.join(fns, f'fn{k}.sh')}\n" for k in range(FUNCTIONS))
    _write(
        os.path.join(pkg, "Kptfile"),
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bench\npipeline:\n"
        "  mutators:\n" + mutators,
    )
    return {"exec": app, "starlark": star, "catalog": cat_app, "catalog_file": catalog, "kpt": pkg}


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr}")
    return elapsed, proc.stdout


def _docs(text: str) -> list[tuple[str, str, str]]:
    import yaml

    out = []
    for doc in yaml.load_all(text, Loader=yaml.CSafeLoader):
        if not doc or doc.get("kind") == "Kptfile":
            continue
        out.append((doc["kind"], doc["metadata"]["name"], doc["metadata"]["labels"]["stage"]))
    return sorted(out)


def _resolution_seconds(paths: dict[str, str], env: dict[str, str], repeat: int) -> float:
    """Median time to resolve and verify the five catalog functions (in process, warm cache)."""
    from orchestrator import yamlio
    from orchestrator.functions import CatalogSet, FnOptions, TrustConfig
    from orchestrator.functions.fetch import exec_binary
    from orchestrator.functions.resolve import resolve

    configs = []
    for k in range(FUNCTIONS):
        with open(os.path.join(paths["catalog"], f"fn{k}.yaml"), encoding="utf-8") as f:
            configs.append(yamlio.load(f.read()))
    cache = os.path.join(env["XDG_CACHE_HOME"], "krm")
    samples = []
    for _ in range(max(repeat, 5)):
        start = time.perf_counter()
        opts = FnOptions(cache_dir=cache)
        trust = TrustConfig.load(
            [paths["catalog_file"]], config=os.path.join(env["XDG_CONFIG_HOME"], "none")
        )
        catalogs = CatalogSet.for_kustomization(
            [], kustomization_dir=paths["catalog"], trust=trust, options=opts
        )
        for config in configs:
            exec_binary(resolve(config, catalogs, opts).spec, options=opts, base_dir=None)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


SCHEMA_PROBE = """
import sys, time
start = time.perf_counter()
from orchestrator.build import BuildOptions, BuildState, Target
from orchestrator.fs import Loader
from orchestrator.functions import FnOptions
from orchestrator.functions import schema, walk
path, catalog, cache = sys.argv[1:4]
state = BuildState(BuildOptions(functions=FnOptions(cache_dir=cache), trusted_catalogs=[catalog]))
target = Target(state, Loader(path))
state.functions().catalogs([], path, None).find("bench.example.com", "Stage0", "v1")
ready = time.perf_counter()  # what the build does anyway: kustomization read, catalog loaded
schema.precheck(target, walk.function_configs(target))
done = time.perf_counter()
assert len(state.functions().options.__dict__["_schema_validators"]) == 5
print(done - ready)
"""


def _schema_seconds(paths: dict[str, str], env: dict[str, str], repeat: int) -> float:
    """Median cost of the schema check of one build, in a fresh process each time (so the
    lazy jsonschema import and the compile of the five schemas are counted)."""
    samples = []
    cache = os.path.join(env["XDG_CACHE_HOME"], "krm")
    argv = [PYTHON, "-c", SCHEMA_PROBE, paths["catalog"], paths["catalog_file"], cache]
    for _ in range(max(repeat, 5)):
        samples.append(float(_run(argv, env)[1]))
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--resources", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    kpt = shutil.which("kpt")
    if kpt is None:
        raise SystemExit("kpt is not installed")
    with tempfile.TemporaryDirectory() as root:
        paths = setup(root, args.resources)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(root, "cache"))
        env["XDG_CONFIG_HOME"] = os.path.join(root, "config")  # no official catalog
        krm = [PYTHON, "-m", "orchestrator", "build"]
        runs = {
            "krm exec": krm + [paths["exec"], "--enable-exec"],
            "kpt fn render": [kpt, "fn", "render", paths["kpt"], "--allow-exec", "-o", "unwrap"],
            "krm starlark": krm + [paths["starlark"], "--enable-alpha-plugins"],
            "krm catalog": krm + [paths["catalog"], f"--trusted-catalog={paths['catalog_file']}"],
            "krm catalog --skip-schema": krm
            + [paths["catalog"], f"--trusted-catalog={paths['catalog_file']}", "--skip-schema"],
        }
        outputs = {name: _run(argv, env)[1] for name, argv in runs.items()}  # warm caches
        expected = _docs(outputs["kpt fn render"])
        assert all(stage == f"s{FUNCTIONS}" for _, _, stage in expected), "kpt did not run all"
        for name, text in outputs.items():
            if _docs(text) != expected:
                raise SystemExit(f"{name}: output differs from kpt fn render")
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.repeat):
            for name, argv in runs.items():  # interleaved: same machine state for each
                times[name].append(_run(argv, env)[0])
        resolution = _resolution_seconds(paths, env, args.repeat)
        schema_check = _schema_seconds(paths, env, args.repeat)
    med = {name: statistics.median(t) for name, t in times.items()}
    figures = {
        "resources": args.resources,
        "functions": FUNCTIONS,
        "repeat": args.repeat,
        "median_seconds": {k: round(v, 4) for k, v in med.items()},
        "ratio_krm_exec_vs_kpt": round(med["krm exec"] / med["kpt fn render"], 3),
        "ratio_krm_starlark_vs_kpt": round(med["krm starlark"] / med["kpt fn render"], 3),
        "catalog_overhead_pct": round(100 * (med["krm catalog"] / med["krm exec"] - 1), 2),
        # The same overhead measured directly: find the five functions in the catalog, verify
        # the cached archives (sha256) and locate their binaries, per build, warm cache.
        "catalog_resolution_ms": round(resolution * 1000, 2),
        "catalog_resolution_pct": round(100 * resolution / med["krm exec"], 3),
        "schema_overhead_pct": round(
            100 * (med["krm catalog"] / med["krm catalog --skip-schema"] - 1), 2
        ),
        # Measured directly: walk the tree, resolve, import jsonschema, compile and validate
        # the five configs, once per build (fresh process).
        "schema_check_ms": round(schema_check * 1000, 2),
        "schema_check_pct": round(100 * schema_check / med["krm catalog"], 3),
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{args.resources} resources, {FUNCTIONS} functions, median of {args.repeat}")
    for name, value in med.items():
        print(f"  {name:<26} {value * 1000:8.1f} ms")
    print(f"  krm exec / kpt fn render:     {figures['ratio_krm_exec_vs_kpt']:.3f} (target <= 0.8)")
    print(f"  krm starlark / kpt fn render: {figures['ratio_krm_starlark_vs_kpt']:.3f}")
    print(f"  catalog resolution overhead:  {figures['catalog_overhead_pct']:+.2f}% (target <= 5%)")
    print(
        f"  catalog resolution, direct:   {figures['catalog_resolution_ms']:.2f} ms per build "
        f"= {figures['catalog_resolution_pct']:.3f}% of krm exec"
    )
    print(f"  schema check overhead:        {figures['schema_overhead_pct']:+.2f}% (target <= 5%)")
    print(
        f"  schema check, direct:         {figures['schema_check_ms']:.2f} ms per build "
        f"= {figures['schema_check_pct']:.3f}% of the catalog build"
    )


if __name__ == "__main__":
    main()
