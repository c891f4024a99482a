"""The variables deploy/ sets are the ones the code reads, and production's required ones are set.

"Read" is measured two ways, so that a setting added later is caught without editing this file:
- traced: a fresh interpreter whose os.environ records every name looked up (django-environ,
  os.environ.get and os.getenv all go through it) imports the production settings, sets Django
  up and loads the WSGI application and the Celery app, with the deployment's own environment;
- parsed: every string literal passed to ``env(...)``, ``env.<cast>(...)``, ``env_int(...)``,
  ``_required(...)``, ``os.environ.get(...)``/``os.getenv(...)`` in registry/settings/*.py (the
  branches a given environment does not take).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "deploy" / "k8s" / "base"
PRODUCTION = ROOT / "deploy" / "k8s" / "overlays" / "production"
COMPOSE = ROOT / "deploy" / "compose.yaml"
DEPLOY_README = ROOT / "deploy" / "README.md"
SETTINGS = ROOT / "registry" / "settings"

# Set for a program other than the Django code: gunicorn reads its worker count itself.
READ_BY_OTHER_PROGRAMS = {"WEB_CONCURRENCY": "gunicorn"}


def _signing_key_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


# A value for each required secret key, good enough for the production settings to load.
SECRET_SAMPLES = {
    "SECRET_KEY": "s3cret",
    "SIGNING_KEY_PEM": _signing_key_pem(),
    "DATABASE_URL": "postgres://registry:pw@postgres.db.svc:5432/registry",
    "CELERY_BROKER_URL": "redis://redis.db.svc:6379/0",
    "CELERY_RESULT_BACKEND": "redis://redis.db.svc:6379/1",
}

TRACE = r"""
import json, os, sys

seen = set()
# Walking the whole environment (items(), copy()) is no lookup of a name: ignore it.
def walking():
    name = sys._getframe(2).f_code.co_filename
    return "_collections_abc" in name or name.endswith("/os.py")

class Recording(type(os.environ)):
    def __getitem__(self, key):
        if not walking():
            seen.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        seen.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        seen.add(key)
        return super().__contains__(key)

os.environ.__class__ = Recording
import django
django.setup()
import registry.wsgi  # the middleware (metrics, probes) and the OCI fast path
import registry.celery
print(json.dumps(sorted(seen)))
"""

ENV_CALL = re.compile(r"^(env|env_int|_required)$")


def traced_reads(env: dict[str, str]) -> set[str]:
    """Names the code looks up when started with ``env`` (plus PATH)."""
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), **env}
    proc = subprocess.run(
        [sys.executable, "-c", TRACE], cwd=ROOT, env=full, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return set(json.loads(proc.stdout.splitlines()[-1]))


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id == "env":
            return "env"
        if isinstance(owner, ast.Name) and owner.id == "os" and func.attr == "getenv":
            return "os.getenv"
        if (
            isinstance(owner, ast.Attribute)
            and owner.attr == "environ"
            and func.attr in {"get", "setdefault"}
        ):
            return "os.environ.get"
    return ""


def parsed_reads() -> dict[str, set[str]]:
    """Names passed as literals to the settings' environment readers, by reader."""
    found: dict[str, set[str]] = {}
    for path in sorted(SETTINGS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = _call_name(node)
            first = node.args[0]
            reader = ENV_CALL.match(name) or name.startswith("os.")
            literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
            if reader and literal and first.value.isupper():
                found.setdefault(name, set()).add(first.value)
    return found


def documented_secret_keys() -> tuple[set[str], set[str]]:
    """(required, optional) keys of krm-registry-secrets, from deploy/README.md's two lines."""
    text = DEPLOY_README.read_text()
    sets = []
    for label in ("Required secret keys", "Optional secret keys"):
        match = re.search(rf"^{label}[^:]*:(.*?)(?:\n\n|\Z)", text, re.M | re.S)
        assert match, f"deploy/README.md lacks a line starting with {label!r}"
        sets.append(set(re.findall(r"`([A-Z][A-Z0-9_]*)`", match.group(1))))
    return sets[0], sets[1]


def kustomize_config(path: Path) -> dict[str, str]:
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "krm"), "build", str(path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    docs = [d for d in yaml.load_all(proc.stdout, Loader=yaml.CSafeLoader) if d]
    (config,) = [d for d in docs if d["kind"] == "ConfigMap"]
    env: dict[str, str] = dict(config["data"])
    for doc in docs:
        if doc["kind"] in {"Deployment", "Job"}:
            for container in doc["spec"]["template"]["spec"]["containers"]:
                env.update({e["name"]: e.get("value", "") for e in container.get("env", [])})
    return env


def compose_env() -> dict[str, str]:
    services = yaml.load(COMPOSE.read_text(), Loader=yaml.CSafeLoader)["services"]
    env: dict[str, str] = {}
    for name in ("web", "worker", "beat"):
        env.update(services[name]["environment"])
    # ${VAR:-default} and ${VAR:?message}: the default, or a sample for a required one.
    return {
        k: re.sub(r"\$\{(\w+)(?::-([^}]*)|:\?[^}]*)?\}", lambda m: m.group(2) or "x", v)
        for k, v in env.items()
    }


@pytest.fixture(scope="module")
def production_env() -> dict[str, str]:
    return kustomize_config(PRODUCTION)


@pytest.fixture(scope="module")
def read_names(production_env) -> set[str]:
    names = {n for group in parsed_reads().values() for n in group}
    required_secrets, optional_secrets = documented_secret_keys()
    samples = {k: SECRET_SAMPLES.get(k, "") for k in required_secrets}
    return names | traced_reads({**production_env, **samples})


def test_the_parser_finds_the_settings_readers():
    """The parsed half of the check works at all (it must see the known settings)."""
    parsed = parsed_reads()
    assert {"SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL"} <= parsed["_required"]
    assert "CATALOG_MAX_BYTES" in parsed["env_int"]
    assert {"MIRROR_CREDENTIALS", "REGISTRY_PUBLIC_URL"} <= parsed["env"]


def test_every_variable_the_manifests_set_is_read(production_env, read_names):
    base_env = kustomize_config(BASE)
    for origin, env in (("k8s production", production_env), ("k8s base", base_env)):
        unread = set(env) - read_names - set(READ_BY_OTHER_PROGRAMS)
        assert not unread, f"{origin} sets variables nothing reads: {sorted(unread)}"


def test_every_variable_compose_sets_is_read(read_names):
    unread = set(compose_env()) - read_names - set(READ_BY_OTHER_PROGRAMS)
    assert not unread, f"compose.yaml sets variables nothing reads: {sorted(unread)}"


def test_every_documented_secret_key_is_read(read_names):
    required, optional = documented_secret_keys()
    assert not (required | optional) - read_names
    assert not required & optional


def test_required_production_variables_are_provided(production_env):
    """Each ``_required(...)`` name is a documented secret key or set by the manifests."""
    required_secrets, _ = documented_secret_keys()
    required = parsed_reads()["_required"]
    missing = required - set(production_env) - required_secrets
    assert not missing, f"production requires {sorted(missing)}: set or document them"
    assert set(SECRET_SAMPLES) >= required_secrets, "give the new secret key a sample value"


def test_manifests_and_required_secrets_alone_start_production(production_env):
    """Nothing else is required (this catches requirements not made with ``_required``), and
    the trace tells a read name from one that is only present."""
    required_secrets, _ = documented_secret_keys()
    samples = {k: SECRET_SAMPLES[k] for k in required_secrets}
    reads = traced_reads({**production_env, **samples, "KRM_NOT_A_SETTING": "1"})
    assert {"DJANGO_SETTINGS_MODULE", "SECRET_KEY", "ALLOWED_HOSTS"} <= reads
    assert "KRM_NOT_A_SETTING" not in reads
