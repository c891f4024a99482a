"""A private catalog pulled from a live registry (gunicorn) by the real ``krm`` CLI with a
``.netrc``, and by ``skopeo`` with credentials; refused to both without them."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys

import httpx
import pytest

from tests.catalogs.factories import catalog_yaml
from tests.live_registry import ROOT, live_registry


def _krm(
    *args: str, netrc: str, tmp_path, cache: str = "cache", docker_config: str = ""
) -> subprocess.CompletedProcess:
    env = {
        "DOCKER_CONFIG": docker_config or str(tmp_path / "no-docker-config"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / cache),
        "NETRC": netrc,
    }
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _private_registry(workdir, **env: str):
    """A live registry whose catalog ``acme/fns`` has one version and is private."""
    with live_registry(workdir, workers=1, threads=4, **env) as server:
        auth = {"Authorization": f"Bearer {server.token}"}
        published = httpx.post(
            f"{server.base}/api/v1/catalogs/acme/fns/versions/",
            content=catalog_yaml(("secret.example", "Hidden", "v1")),
            headers={**auth, "Content-Type": "application/yaml"},
            timeout=120,
        )
        assert published.status_code == 201, published.text
        private = httpx.patch(
            f"{server.base}/api/v1/catalogs/acme/fns/",
            json={"visibility": "private"},
            headers=auth,
            timeout=60,
        )
        assert private.json()["visibility"] == "private"
        yield server


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    yield from _private_registry(tmp_path_factory.mktemp("private"))


@pytest.fixture(scope="module")
def registry_without_tuf(tmp_path_factory):
    yield from _private_registry(
        tmp_path_factory.mktemp("private-no-tuf"),
        DJANGO_SETTINGS_MODULE="tests.e2e.settings_without_tuf",
    )


def test_krm_pulls_a_private_catalog_with_a_netrc(registry, tmp_path):
    url = f"{registry.base}/c/acme/fns/catalog.yaml"
    assert httpx.get(url).status_code == 404
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login alice password {registry.token}\n")
    os.chmod(netrc, 0o600)
    shown = _krm("view", "catalog", url, netrc=str(netrc), tmp_path=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "Hidden" in shown.stdout

    # A fresh cache: the first run's verified copy would answer without the network.
    refused = _krm(
        "view", "catalog", url, netrc=str(tmp_path / "none"), tmp_path=tmp_path, cache="cache2"
    )
    assert refused.returncode != 0
    assert "HTTP 404: not found or you lack access; krm reads credentials from ~/.netrc" in (
        refused.stderr
    )
    assert "Hidden" not in refused.stdout


def test_krm_pulls_a_private_oci_catalog_with_the_docker_config(registry_without_tuf, tmp_path):
    """A registry without TUF metadata: krm pulls the catalog over OCI itself, with the docker
    config's credentials sent before any 401."""
    registry = registry_without_tuf
    host = registry.base.removeprefix("http://")
    ref = f"oci://{host}/acme/fns:latest"
    config = tmp_path / "docker"
    config.mkdir()
    auth = base64.b64encode(f"alice:{registry.token}".encode()).decode()
    (config / "config.json").write_text(json.dumps({"auths": {host: {"auth": auth}}}))
    none = str(tmp_path / "none")
    shown = _krm("view", "catalog", ref, netrc=none, tmp_path=tmp_path, docker_config=str(config))
    assert shown.returncode == 0, shown.stderr
    assert "Hidden" in shown.stdout
    refused = _krm("view", "catalog", ref, netrc=none, tmp_path=tmp_path, cache="cache2")
    assert refused.returncode != 0
    assert "Hidden" not in refused.stdout
    assert "404" in refused.stderr, refused.stderr


def test_krm_pulls_an_oci_reference_of_a_tuf_registry_with_the_netrc(registry, tmp_path):
    """A registry that serves TUF: the oci:// reference is verified through TUF, whose signed
    target krm fetches over HTTP with the netrc's credentials."""
    host = registry.base.removeprefix("http://")
    ref = f"oci://{host}/acme/fns:latest"
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login alice password {registry.token}\n")
    os.chmod(netrc, 0o600)
    shown = _krm("view", "catalog", ref, netrc=str(netrc), tmp_path=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "Hidden" in shown.stdout


def test_skopeo_pulls_a_private_repository_with_credentials(registry, tmp_path):
    if shutil.which("skopeo") is None:
        pytest.fail("skopeo is missing: scripts/system-packages.sh installs it")
    host = registry.base.removeprefix("http://")
    ref = f"docker://{host}/acme/fns:latest"
    base = ["skopeo", "inspect", "--raw", "--tls-verify=false"]
    env = {**os.environ, "HOME": str(tmp_path), "REGISTRY_AUTH_FILE": str(tmp_path / "auth.json")}
    ok = subprocess.run(
        [*base, "--creds", f"alice:{registry.token}", ref],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert "application/vnd.cncf.krm" in ok.stdout or '"layers"' in ok.stdout
    anonymous = subprocess.run([*base, ref], capture_output=True, text=True, env=env, timeout=120)
    assert anonymous.returncode != 0
    assert "not known to registry" in anonymous.stderr or "unknown" in anonymous.stderr.lower()
