"""The demo catalog builds offline: every runtime is served by the registry itself.

``load_demo`` builds the container image with umoci from busybox-static and stores it, the exec
archive and the starlark script in the registry's own ``/v2/demo/functions``; a newcomer who
copies the snippets of each demo function page builds with ``krm`` and nothing but the registry,
in a network namespace that has only loopback.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from catalogs.distribution.models import OciManifest, OciTag
from catalogs.publishing.models import CatalogVersion
from tests.catalogs.mirroring.conftest import free_port

HERE = Path(__file__).resolve().parent
needs_tools = pytest.mark.skipif(
    None in (shutil.which("umoci"), shutil.which("bwrap"), shutil.which("busybox")),
    reason="needs umoci, busybox-static and bubblewrap",
)


def _runtime_refs(doc: dict) -> dict[str, dict]:
    return {fn["names"]["kind"]: fn["versions"][0]["runtime"] for fn in doc["spec"]["krmFunctions"]}


@needs_tools
@pytest.mark.django_db
def test_load_demo_serves_every_runtime_from_the_registry(client, settings, capsys):
    settings.REGISTRY_PUBLIC_URL = "http://127.0.0.1:8123"
    call_command("load_demo")
    served = client.get("/c/demo/functions/catalog.yaml")
    runtimes = _runtime_refs(yaml.safe_load(served.content))
    assert set(runtimes) == {"SetNamespace", "SetLogger", "JavaApplication"}
    container = runtimes["SetNamespace"]["container"]
    assert container["image"] == "127.0.0.1:8123/demo/functions:set-namespace"
    image = OciTag.objects.get(catalog__name="functions", name="set-namespace").manifest
    assert container["sha256"] == image.digest.removeprefix("sha256:")
    manifest = json.loads(client.get(f"/v2/demo/functions/manifests/{image.digest}").content)
    assert [layer["mediaType"] for layer in manifest["layers"]] == [
        "application/vnd.oci.image.layer.v1.tar+gzip"
    ]
    config = json.loads(
        client.get(f"/v2/demo/functions/blobs/{manifest['config']['digest']}").content
    )
    assert config["config"]["Entrypoint"] == ["/bin/set-namespace"]
    assert config["config"]["User"] == "65534:65534"
    starlark = runtimes["JavaApplication"]["starlark"]
    [platform, *_] = runtimes["SetLogger"]["exec"]["platforms"]
    for ref in (starlark, platform):
        prefix = "http://127.0.0.1:8123/v2/demo/functions/blobs/sha256:"
        assert ref["uri"] == prefix + ref["sha256"]
        body = client.get(ref["uri"].removeprefix("http://127.0.0.1:8123"))
        assert body.status_code == 200
        assert (
            hashlib.sha256(
                b"".join(body.streaming_content if body.streaming else [body.content])
            ).hexdigest()
            == ref["sha256"]
        )
    # again: nothing new (the image is not rebuilt, the catalog not republished)
    manifests = OciManifest.objects.count()
    call_command("load_demo")
    assert CatalogVersion.objects.count() == 1
    assert OciManifest.objects.count() == manifests
    assert "Already published demo/functions version 1" in capsys.readouterr().out


@needs_tools
def test_a_newcomer_builds_every_demo_function_offline(tmp_path):
    """migrate, load_demo, runserver, then each function page's snippets and build line, all in
    a network namespace with nothing but loopback: no network beyond the registry."""
    out = tmp_path / "results.json"
    isolate = ["bwrap", "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent"]
    if os.geteuid() != 0:
        isolate.append("--unshare-user")
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(HERE.parents[2]))}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    proc = subprocess.run(
        [
            *isolate,
            "--",
            sys.executable,
            str(HERE / "demo_offline.py"),
            str(tmp_path),
            str(out),
            str(free_port()),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(out.read_text())
    for kind, run in results.items():
        assert run["returncode"] == 0, (kind, run["argv"], run["stderr"])
    docs = {k: [d for d in yaml.safe_load_all(r["stdout"]) if d] for k, r in results.items()}
    [web] = docs["SetNamespace"]
    assert web["metadata"]["namespace"] == "my-namespace"
    [web] = docs["SetLogger"]
    assert web["metadata"]["annotations"] == {"logging.example.com/path": "my-log-path"}
    generated = sorted((d["kind"], d["metadata"]["name"]) for d in docs["JavaApplication"])
    assert generated == [
        ("ConfigMap", "my-application-jvm"),
        ("Deployment", "my-application"),
        ("Service", "my-application"),
    ]
