"""Differential tests against ``kpt fn eval --exec``: same package and function, same output.

kpt (installed on this machine) is the oracle: it builds the ResourceList from the package's files
(path/index annotations from the file names), runs the exec function, and prints the resulting
resources with ``-o unwrap``. The engine runs the same function on the same resources.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from orchestrator import yamlio
from orchestrator.functions import run_function_config
from orchestrator.resource import Resource

KPT = shutil.which("kpt")
pytestmark = pytest.mark.skipif(KPT is None, reason="kpt is not installed")

PACKAGE = {
    "cm.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    keep: me\n"
        "data:\n  x: '1'\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
        "spec:\n  replicas: 2\n"
    ),
    "sub/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n  namespace: ns\n",
}

HEADER = f"#!{sys.executable}\nimport sys, yaml\nrl = yaml.safe_load(sys.stdin)\n"
FOOTER = "yaml.safe_dump(rl, sys.stdout)\n"
FUNCTIONS = {
    # what path/index each item was given, and the functionConfig's value
    "sees-annotations": HEADER + "for it in rl['items']:\n"
    "    a = it['metadata']['annotations']\n"
    "    it['metadata'].setdefault('labels', {})['where'] = (\n"
    "        a['internal.config.kubernetes.io/path'].replace('/', '_') + '-'\n"
    "        + a['internal.config.kubernetes.io/index'] + '-' + a['config.kubernetes.io/path']\n"
    "        .replace('/', '_') + '-' + rl['functionConfig']['data']['value'])\n" + FOOTER,
    # drops one resource and adds one
    "add-remove": HEADER + "rl['items'] = [i for i in rl['items'] if i['kind'] != 'Service']\n"
    "rl['items'].append({'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'new'}})\n"
    + FOOTER,
    # renames and edits nested fields
    "mutate": HEADER + "for it in rl['items']:\n"
    "    it['metadata']['name'] = 'p-' + it['metadata']['name']\n"
    "    if it['kind'] == 'Deployment':\n"
    "        it['spec']['replicas'] = 5\n" + FOOTER,
}
FN_CONFIG = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  value: hello\n"


def _package(tmp_path):
    pkg = tmp_path / "pkg"
    for rel, text in PACKAGE.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


def _resources(pkg) -> list[Resource]:
    out = []
    for rel in sorted(PACKAGE):
        for doc in yamlio.load_all((pkg / rel).read_text()):
            out.append(Resource(obj=doc, source=str(pkg / rel)))
    return out


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_same_output_as_kpt_fn_eval_exec(tmp_path, options, name):
    pkg = _package(tmp_path)
    fn = tmp_path / "fn.py"
    fn.write_text(FUNCTIONS[name])
    fn.chmod(0o755)
    (tmp_path / "fc.yaml").write_text(FN_CONFIG)
    proc = subprocess.run(
        [
            KPT,
            "fn",
            "eval",
            str(pkg),
            "--exec",
            str(fn),
            "--fn-config",
            str(tmp_path / "fc.yaml"),
            "-o",
            "unwrap",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = yamlio.load_all(proc.stdout)
    config = yamlio.load(FN_CONFIG)
    config["metadata"]["annotations"] = {"config.kubernetes.io/function": f"exec:\n  path: {fn}\n"}
    out = run_function_config(
        config,
        _resources(pkg),
        role="transformer",
        kustomization_dir=str(pkg),
        catalogs=None,
        options=options(enable_exec=True),
    )
    got = [r.obj for r in out.resources]
    key = lambda o: (o["kind"], o["metadata"]["name"])  # noqa: E731 - kpt orders by file
    # the annotation differs only in how the config names its runtime; kpt does not see it
    assert sorted(got, key=key) == sorted(expected, key=key)
    assert len(got) == len(expected)
