"""End to end: what the function page says to paste really builds.

The registry runs as pytest-django's ``live_server``; the function is a starlark script served by
a local HTTPS server (trustme). The test reads the function page over HTTP as a browser would,
writes its functionConfig and kustomization.yaml into an empty directory (plus the manifest the
kustomization names), and runs its ``krm build`` lines, latest and pinned, as a subprocess.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from catalogs.publishing import services
from tests.catalogs.web.test_function_page import _code
from tests.e2e.test_trusted_catalog import files_server  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = """
cfg = ctx.resource_list["functionConfig"]
for r in ctx.resource_list["items"]:
  a = r["metadata"].setdefault("annotations", {})
  a["example.co/team"] = cfg["spec"]["team"]
  a["example.co/mode"] = cfg["spec"]["mode"]
  a["example.co/replicas"] = str(cfg["spec"]["replicas"])
"""
SCHEMA = """\
      schema:
        openAPIV3Schema:
          type: object
          required: [spec]
          properties:
            spec:
              type: object
              required: [team, mode, replicas]
              properties:
                team: {type: string, minLength: 2}
                mode: {type: string, enum: [audit, enforce]}
                replicas: {type: integer, minimum: 2}
                note: {type: string}
"""
DEPLOYMENT = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"


def _catalog(base: str, sha: str, examples: str = "") -> str:
    return (
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: fns\n"
        "spec:\n  krmFunctions:\n  - group: fn.example.co\n    names:\n      kind: SetTeam\n"
        "    tags: [mutator]\n    versions:\n    - name: v1\n"
        + SCHEMA
        + f"      runtime:\n        starlark:\n          uri: {base}/set-team.star\n"
        f'          sha256: "{sha}"\n' + examples
    )


def _paste_and_build(live_server, tmp_path: Path, ca_file: str) -> dict[str, str]:
    page = httpx.get(
        f"{live_server.url}/catalogs/example-co/functions/functions/fn.example.co/SetTeam/"
    )
    assert page.status_code == 200
    body = page.text
    app = tmp_path / "app"
    app.mkdir()
    file_name = yaml.safe_load(_code(body, "kustomization"))["transformers"][0]
    (app / file_name).write_text(_code(body, "cfg-use"))
    (app / "kustomization.yaml").write_text(_code(body, "kustomization"))
    (app / "deployment.yaml").write_text(DEPLOYMENT)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "SSL_CERT_FILE": ca_file,
    }
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    outputs = {}
    for line_id in ("build-latest", "build-pinned"):
        argv = shlex.split(_code(body, line_id))
        assert argv[:3] == ["krm", "build", "."]
        proc = subprocess.run(
            [sys.executable, "-m", "orchestrator", *argv[1:]],
            cwd=app,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        outputs[line_id] = proc.stdout
    return outputs


def test_the_generated_config_builds(live_server, catalog, files_server, tmp_path):  # noqa: F811
    base, files, ca_file = files_server
    files["/set-team.star"] = SCRIPT.encode()
    sha = hashlib.sha256(SCRIPT.encode()).hexdigest()
    services.catalog_version_publish(catalog=catalog, content=_catalog(base, sha), actor=None)
    outputs = _paste_and_build(live_server, tmp_path, ca_file)
    for out in outputs.values():
        annotations = yaml.safe_load(out)["metadata"]["annotations"]
        # The placeholders the schema led to: a string, the first enum value, the minimum.
        assert annotations == {
            "example.co/team": "my-team",
            "example.co/mode": "audit",
            "example.co/replicas": "2",
        }


def test_the_example_config_builds(live_server, catalog, files_server, tmp_path):  # noqa: F811
    base, files, ca_file = files_server
    files["/set-team.star"] = SCRIPT.encode()
    sha = hashlib.sha256(SCRIPT.encode()).hexdigest()
    example = (
        "apiVersion: fn.example.co/v1\nkind: SetTeam\nmetadata:\n  name: payments\n"
        "spec:\n  team: payments\n  mode: enforce\n  replicas: 3\n"
    )
    # A multi-line example as YAML text in the catalog: a quoted scalar.
    examples = "      examples:\n      - " + '"' + example.replace("\n", "\\n") + '"\n'
    services.catalog_version_publish(
        catalog=catalog, content=_catalog(base, sha, examples), actor=None
    )
    outputs = _paste_and_build(live_server, tmp_path, ca_file)
    annotations = yaml.safe_load(outputs["build-pinned"])["metadata"]["annotations"]
    assert annotations == {
        "example.co/team": "payments",
        "example.co/mode": "enforce",
        "example.co/replicas": "3",
    }
