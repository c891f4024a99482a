"""Generate ``patchkeys.json``, the patch-merge-key table, from kustomize's embedded OpenAPI.

Origin (Apache-2.0, kubernetes-sigs/kustomize): kustomize v5.5.0 (kyaml v0.18.1) embeds the
Kubernetes v1.21.2 OpenAPI schema as ``kyaml/openapi/kubernetesapi/v1_21_2/swagger.pb``
(protobuf, sha256 5d171b55e9601912807a870d73ffe70bb306f5889a00e76986042a0f2d7b6bc2) plus
``kyaml/openapi/kustomizationapi/swagger.json``. Later kustomize commits ship the same
protobuf converted to JSON as
``kyaml/openapi/kubernetesapi/data/kubernetes-openapi-union-v1.21.2.bundle-v1.json.gz``
(its ``sources[0].sha256`` records that same digest); this script reads that JSON bundle
(or any swagger.json with ``definitions``) so no protobuf decoder is needed.

Usage::

    git --git-dir=<kustomize>/.git show <rev>:kyaml/openapi/kubernetesapi/data/\\
kubernetes-openapi-union-v1.21.2.bundle-v1.json.gz > /tmp/bundle.json.gz
    git --git-dir=<kustomize>/.git show kustomize/v5.5.0:kyaml/openapi/\\
kustomizationapi/swagger.json > /tmp/kustomization.json
    python orchestrator/data/gen_patchkeys.py /tmp/bundle.json.gz /tmp/kustomization.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

from orchestrator.openapi import DATA_FILE, compile_definitions

EXPECTED_SHA256 = "5d171b55e9601912807a870d73ffe70bb306f5889a00e76986042a0f2d7b6bc2"


def _read(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    data: dict[str, Any] = json.loads(raw)
    return data


def main(argv: list[str] | None = None) -> int:
    """Write the table; return the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kubernetes", type=Path, help="bundle JSON (.json or .json.gz)")
    parser.add_argument("kustomization", type=Path, help="kustomizationapi/swagger.json")
    parser.add_argument("-o", "--output", type=Path, default=DATA_FILE)
    args = parser.parse_args(argv)

    kube = _read(args.kubernetes)
    sources = kube.get("sources") or []
    if sources and sources[0].get("sha256") != EXPECTED_SHA256:
        print(f"warning: bundle source digest is {sources[0].get('sha256')}", file=sys.stderr)
    definitions = dict(kube["definitions"])
    definitions.update(_read(args.kustomization)["definitions"])
    table = compile_definitions(definitions)
    table = {
        "origin": "kustomize v5.5.0 embedded OpenAPI: Kubernetes v1.21.2 (swagger.pb sha256 "
        f"{EXPECTED_SHA256}) + kustomizationapi/swagger.json; Apache-2.0",
        **table,
    }
    args.output.write_text(json.dumps(table, separators=(",", ":"), sort_keys=True) + "\n")
    print(
        f"{args.output}: {len(table['gvks'])} kinds, {len(table['types'])} types, "
        f"{args.output.stat().st_size} bytes"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
