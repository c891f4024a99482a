"""The probes deploy/ wires in: web /healthz and /readyz, the worker's ping through the broker.

The worker probe is run for real: against a broker on a closed loopback port it must fail (the
kernel refuses the connection; no mock). Against a running worker it is run by
tests/services/test_probes_services.py (CI's services stage).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "deploy" / "k8s" / "base"
COMPOSE = ROOT / "deploy" / "compose.yaml"


def load(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=yaml.CSafeLoader)


def container(name: str) -> dict:
    return load(BASE / f"{name}-deployment.yaml")["spec"]["template"]["spec"]["containers"][0]


def worker_probe_command() -> list[str]:
    """The worker's exec probe from the base manifest."""
    return container("worker")["livenessProbe"]["exec"]["command"]


def test_web_probes_use_healthz_and_readyz():
    web = container("web")
    assert web["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert web["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert web["ports"][0]["name"] == "http"


def test_worker_probe_pings_its_own_node_through_the_broker():
    command = worker_probe_command()
    assert command[:2] == ["sh", "-c"]
    assert command[2].startswith("celery -A registry inspect ping --destination celery@$HOSTNAME")
    probe = container("worker")["livenessProbe"]
    # Celery's ping retries a refused broker for about 11 s: the probe must outlast that.
    assert probe["timeoutSeconds"] >= 20


def test_compose_healthchecks():
    services = load(COMPOSE)["services"]
    web = " ".join(services["web"]["healthcheck"]["test"])
    assert "http://127.0.0.1:8000/readyz" in web
    worker = services["worker"]["healthcheck"]["test"]
    # $$ is compose's escape for a literal $: the shell in the container expands HOSTNAME.
    assert worker == [
        "CMD-SHELL",
        "celery -A registry inspect ping --destination celery@$$HOSTNAME --timeout 10",
    ]


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_worker_probe_fails_when_the_broker_refuses():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    bindir = str(ROOT / ".venv" / "bin")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("KRM_", "CELERY_"))},
        "PATH": f"{bindir}:{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "registry.settings.base",
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{port}/0",
        "HOSTNAME": "probe-test",
    }
    proc = subprocess.run(
        worker_probe_command(), cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0
    assert "Connection refused" in proc.stdout + proc.stderr
