"""The Kubernetes manifests build with the real kustomize (kubectl kustomize) and hang together."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "deploy" / "k8s" / "base"
PRODUCTION = ROOT / "deploy" / "k8s" / "overlays" / "production"

pytestmark = pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl (the kustomize oracle) is not installed"
)


def kustomize(path: Path) -> list[dict]:
    """Build a kustomization with kubectl kustomize and return its documents."""
    proc = subprocess.run(
        ["kubectl", "kustomize", str(path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.load_all(proc.stdout, Loader=yaml.CSafeLoader) if d]


def by_kind_name(docs: list[dict]) -> dict[tuple[str, str], dict]:
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def pod_spec(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]


@pytest.fixture(scope="module")
def production() -> dict[tuple[str, str], dict]:
    return by_kind_name(kustomize(PRODUCTION))


@pytest.fixture(scope="module")
def base() -> dict[tuple[str, str], dict]:
    return by_kind_name(kustomize(BASE))


def test_base_has_every_component(base):
    assert set(base) == {
        ("ConfigMap", "krm-registry-config"),
        ("Deployment", "krm-registry-web"),
        ("Service", "krm-registry-web"),
        ("Deployment", "krm-registry-worker"),
        ("Deployment", "krm-registry-beat"),
        ("Job", "krm-registry-migrate"),
    }
    # The base never ships a Secret: it only references one created out of band.
    assert not any(kind == "Secret" for kind, _ in base)


def test_production_has_web_and_worker_deployments(production):
    web = production[("Deployment", "krm-registry-web")]
    worker = production[("Deployment", "krm-registry-worker")]
    assert pod_spec(web)["containers"][0]["command"][:2] == [
        "gunicorn",
        "registry.wsgi:application",
    ]
    assert pod_spec(worker)["containers"][0]["command"][:4] == [
        "celery",
        "-A",
        "registry",
        "worker",
    ]
    beat = production[("Deployment", "krm-registry-beat")]
    assert pod_spec(beat)["containers"][0]["command"][:4] == ["celery", "-A", "registry", "beat"]


def test_production_namespace_applies_to_everything(production):
    assert ("Namespace", "krm-registry") in production
    for (kind, name), obj in production.items():
        if kind != "Namespace":
            assert obj["metadata"].get("namespace") == "krm-registry", (kind, name)


def test_production_pins_the_image_tag(production):
    images = {
        c["image"]
        for obj in production.values()
        if obj["kind"] in {"Deployment", "Job"}
        for c in pod_spec(obj)["containers"]
    }
    assert images == {"ghcr.io/example-co/krm-catalog-registry:0.1.0"}


def test_production_replicas_and_resources(production, base):
    assert production[("Deployment", "krm-registry-web")]["spec"]["replicas"] == 3
    assert production[("Deployment", "krm-registry-worker")]["spec"]["replicas"] == 2
    # Two schedulers would enqueue every periodic sync twice.
    beat = production[("Deployment", "krm-registry-beat")]
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"]["type"] == "Recreate"
    for name, container in [("krm-registry-web", "web"), ("krm-registry-worker", "worker")]:
        prod_res = pod_spec(production[("Deployment", name)])["containers"][0]["resources"]
        base_res = pod_spec(base[("Deployment", name)])["containers"][0]["resources"]
        assert prod_res["limits"]["cpu"], container
        assert prod_res != base_res, container
    # The strategic merge patch must only change resources, not drop the container's command.
    web = pod_spec(production[("Deployment", "krm-registry-web")])["containers"][0]
    assert web["command"][0] == "gunicorn"
    assert web["ports"][0]["containerPort"] == 8000


def test_every_process_gets_the_config_and_the_secret(production):
    config = production[("ConfigMap", "krm-registry-config")]
    assert config["data"]["DJANGO_SETTINGS_MODULE"] == "registry.settings.production"
    for obj in production.values():
        if obj["kind"] not in {"Deployment", "Job"}:
            continue
        env_from = pod_spec(obj)["containers"][0]["envFrom"]
        refs = {next(iter(k for k in e)): next(iter(e.values()))["name"] for e in env_from}
        assert refs == {
            "configMapRef": "krm-registry-config",
            "secretRef": "krm-registry-secrets",
        }, obj["metadata"]["name"]


def test_selectors_match_and_service_reaches_web(production):
    for obj in production.values():
        if obj["kind"] != "Deployment":
            continue
        labels = obj["spec"]["template"]["metadata"]["labels"]
        selector = obj["spec"]["selector"]["matchLabels"]
        assert selector.items() <= labels.items(), obj["metadata"]["name"]
    service = production[("Service", "krm-registry-web")]
    web_labels = production[("Deployment", "krm-registry-web")]["spec"]["template"]["metadata"][
        "labels"
    ]
    worker_labels = production[("Deployment", "krm-registry-worker")]["spec"]["template"][
        "metadata"
    ]["labels"]
    assert service["spec"]["selector"].items() <= web_labels.items()
    assert not service["spec"]["selector"].items() <= worker_labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "http"


def test_migrate_job_runs_migrations(production):
    job = production[("Job", "krm-registry-migrate")]
    assert pod_spec(job)["containers"][0]["command"] == [
        "python",
        "manage.py",
        "migrate",
        "--noinput",
    ]
    assert pod_spec(job)["restartPolicy"] in {"OnFailure", "Never"}


def test_config_and_documented_secret_start_the_production_settings(production, load_settings):
    config = production[("ConfigMap", "krm-registry-config")]["data"]
    # The keys base/kustomization.yaml documents for the out-of-band krm-registry-secrets.
    documented = (BASE / "kustomization.yaml").read_text()
    secret = {
        "SECRET_KEY": "s3cret",
        "DATABASE_URL": "postgres://registry:pw@postgres.db.svc:5432/registry",
        "CELERY_BROKER_URL": "redis://redis.db.svc:6379/0",
        "CELERY_RESULT_BACKEND": "redis://redis.db.svc:6379/1",
        "SIGNING_KEY_PEM": "-----BEGIN PRIVATE KEY-----",
    }
    assert all(key in documented for key in secret)
    loaded = load_settings({**config, **secret})
    assert loaded["DEBUG"] is False
    assert loaded["DATABASE_ENGINE"] == "django.db.backends.postgresql"
    assert loaded["ALLOWED_HOSTS"] == ["registry.example.co"]
    assert loaded["CELERY_TASK_ALWAYS_EAGER"] is False
