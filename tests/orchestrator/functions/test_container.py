"""The container runtime's exact command line.

No container engine can run on this machine, so a stand-in executable named ``docker`` (or
``podman``) is put first on PATH: it records its argv and stdin and answers like a function
that passes its input through. This is the one place these tests use a stand-in, because no real
peer can exist here.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from orchestrator.functions import (
    CatalogSet,
    FunctionError,
    TrustConfig,
    container,
    run_function_config,
)
from orchestrator.resource import Resource

STAND_IN = f"""#!{sys.executable}
import json, os, sys
if sys.argv[1:2] in (["version"], ["info"]):  # krm's probe: can it run containers?
    print("24.0.0")
    sys.exit(0)
data = sys.stdin.buffer.read()
with open(os.environ["RECORD"], "w") as f:
    json.dump({{"argv": sys.argv, "name": os.path.basename(sys.argv[0])}}, f)
sys.stdout.buffer.write(data)
"""

# What docker prints with no daemon to talk to, for any command; it counts its calls.
DEAD = """#!/bin/sh
echo "$*" >> "$CALLS"
echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon \\
running?" >&2
exit 1
"""

SHA = "a" * 64


@pytest.fixture
def engines(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("docker", "podman"):
        p = bindir / name
        p.write_text(STAND_IN)
        p.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.setenv("RECORD", str(tmp_path / "record.json"))
    return tmp_path / "record.json"


def _res():
    return [Resource(obj={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})]


def _catalog(tmp_path, *, network: bool = False, mount: bool = False) -> CatalogSet:
    extra = ("          requireNetwork: true\n" if network else "") + (
        "          requireStorageMount: true\n" if mount else ""
    )
    (tmp_path / "cat.yaml").write_text(
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: c\n"
        "spec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: App\n"
        "    versions:\n    - name: v1\n      runtime:\n        container:\n"
        f"          image: ghcr.io/example/app:v1.2.3\n          sha256: {SHA}\n{extra}"
    )
    trust = TrustConfig.load([str(tmp_path / "cat.yaml")], config=str(tmp_path / "none"))
    return trust


def _run(tmp_path, trust, opts):
    cs = CatalogSet.for_kustomization(
        [], kustomization_dir=str(tmp_path), trust=trust, options=opts
    )
    cfg = {"apiVersion": "example.com/v1", "kind": "App", "metadata": {"name": "a"}}
    return run_function_config(
        cfg, _res(), role="transformer", kustomization_dir=str(tmp_path), catalogs=cs, options=opts
    )


def test_catalog_container_command_is_locked_down_and_pinned(tmp_path, engines, options):
    out = _run(tmp_path, _catalog(tmp_path), options(env=["A=1"]))
    assert out.resources[0].name == "a"
    rec = json.loads(engines.read_text())
    assert rec["name"] == "docker"
    assert rec["argv"][1:] == [
        "run",
        "--rm",
        "-i",
        "--network",
        "none",
        "--user",
        "65534",
        "--security-opt=no-new-privileges",
        "-e",
        "A=1",
        f"ghcr.io/example/app@sha256:{SHA}",
    ]


def test_as_current_user_runs_as_the_callers_uid_and_gid(tmp_path, engines, options):
    # kustomize's --as-current-user: --user uid:gid instead of nobody.
    _run(tmp_path, _catalog(tmp_path), options(as_current_user=True))
    argv = json.loads(engines.read_text())["argv"]
    assert argv[argv.index("--user") + 1] == f"{os.getuid()}:{os.getgid()}"


def test_container_runtime_flag_chooses_podman(tmp_path, engines, options):
    _run(tmp_path, _catalog(tmp_path), options(container_runtime="podman"))
    assert json.loads(engines.read_text())["name"] == "podman"


def test_network_only_when_required_and_allowed(tmp_path, engines, options):
    trust = _catalog(tmp_path, network=True)
    with pytest.raises(FunctionError) as exc:
        _run(tmp_path, trust, options())
    assert str(exc.value) == (
        "function example.com/v1/App 'a' (image ghcr.io/example/app:v1.2.3, from catalog "
        f"{tmp_path / 'cat.yaml'}) requires network access: pass --network to allow it"
    )
    assert not engines.exists()
    _run(tmp_path, trust, options(network=True))
    argv = json.loads(engines.read_text())["argv"]
    assert argv[argv.index("--network") + 1] == "host"
    # --network alone does not open the network to a function that did not ask for it
    _run(tmp_path, _catalog(tmp_path), options(network=True))
    argv = json.loads(engines.read_text())["argv"]
    assert argv[argv.index("--network") + 1] == "none"


def test_mounts_only_from_flag(tmp_path, engines, options):
    trust = _catalog(tmp_path, mount=True)
    with pytest.raises(FunctionError) as exc:
        _run(tmp_path, trust, options())
    assert str(exc.value).endswith("requires a storage mount: pass --mount to provide one")
    m = "type=bind,src=/data,dst=/data"
    _run(tmp_path, trust, options(mounts=[m]))
    argv = json.loads(engines.read_text())["argv"]
    assert argv[argv.index("--mount") + 1] == m


def test_no_engine_and_no_bwrap_is_a_clear_error(tmp_path, monkeypatch, options):
    # No docker or podman: the builtin runtime, which needs bubblewrap before it pulls anything.
    monkeypatch.setenv("PATH", str(tmp_path))
    opts = options(cache_dir=str(tmp_path / "cache"))
    with pytest.raises(FunctionError) as exc:
        _run(tmp_path, _catalog(tmp_path), opts)
    assert str(exc.value) == (
        "function example.com/v1/App 'a' (image ghcr.io/example/app:v1.2.3, from catalog "
        f"{tmp_path / 'cat.yaml'}): no docker or podman, and the builtin container runtime "
        "needs bubblewrap (bwrap) on PATH; refusing to run it unsandboxed"
    )
    assert not (tmp_path / "cache" / "images").exists()


@pytest.fixture
def dead_docker(tmp_path, monkeypatch):
    """A docker whose daemon cannot be reached, alone on PATH (no podman, no bubblewrap)."""
    bindir = tmp_path / "dead-bin"
    bindir.mkdir()
    (bindir / "docker").write_text(DEAD)
    (bindir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setenv("CALLS", str(tmp_path / "calls"))
    monkeypatch.setattr(container, "_PROBED", {})
    monkeypatch.setattr(container, "_NOTICES", set())
    return tmp_path / "calls"


def test_a_docker_that_cannot_run_containers_falls_back_to_builtin(
    tmp_path, dead_docker, options, capsys
):
    opts = options(cache_dir=str(tmp_path / "cache"))
    for _ in range(2):
        with pytest.raises(FunctionError) as exc:
            _run(tmp_path, _catalog(tmp_path), opts)
        # the builtin runtime was chosen: it is the one asking for bubblewrap
        assert "the builtin container runtime needs bubblewrap (bwrap) on PATH" in str(exc.value)
    assert capsys.readouterr().err == (
        "Notice: docker (Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
        "Is the docker daemon running?) cannot run containers here; using the builtin "
        "container runtime\n"
    )  # once per process
    # docker was asked once (the probe, cached), and never asked to run anything
    assert dead_docker.read_text() == "version --format {{.Server.Version}}\n"


def test_an_explicit_docker_that_cannot_run_containers_is_a_clear_error(
    tmp_path, dead_docker, options
):
    with pytest.raises(FunctionError) as exc:
        _run(tmp_path, _catalog(tmp_path), options(container_runtime="docker"))
    assert str(exc.value) == (
        "container runtime 'docker' cannot run containers here: Cannot connect to the Docker "
        "daemon at unix:///var/run/docker.sock. Is the docker daemon running? "
        "(--container-runtime builtin runs them without a daemon)"
    )
    assert dead_docker.read_text() == "version --format {{.Server.Version}}\n"
