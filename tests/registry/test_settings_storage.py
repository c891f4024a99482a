"""STORAGE_BACKEND chooses local files or S3-compatible object storage, from the environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, django
from django.conf import settings
django.setup()
print(json.dumps(settings.STORAGES["default"]))
"""


def _signing_key_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    return (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )


PRODUCTION = {
    "SECRET_KEY": "s3cret",
    # Production refuses to start without a signing key (any P-256 key does here).
    "SIGNING_KEY_PEM": _signing_key_pem(),
    "ALLOWED_HOSTS": "registry.example.co",
    "REGISTRY_PUBLIC_URL": "https://registry.example.co",
    "DATABASE_URL": "postgres://registry:pw@db:5432/registry",
    "CELERY_BROKER_URL": "redis://redis:6379/0",
}


def run(module: str, **env: str) -> subprocess.CompletedProcess:
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DJANGO_SETTINGS_MODULE": module}
    return subprocess.run(
        [sys.executable, "-c", PROBE], env={**full, **env}, cwd=ROOT, capture_output=True, text=True
    )


def test_local_files_by_default():
    proc = run("registry.settings.base")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["BACKEND"] == "django.core.files.storage.FileSystemStorage"


def test_s3_in_production():
    proc = run(
        "registry.settings.production",
        **PRODUCTION,
        STORAGE_BACKEND="s3",
        AWS_STORAGE_BUCKET_NAME="krm-blobs",
        AWS_S3_ENDPOINT_URL="http://minio.storage.svc:9000",
        AWS_S3_ACCESS_KEY_ID="id",
        AWS_S3_SECRET_ACCESS_KEY="key",
    )
    assert proc.returncode == 0, proc.stderr
    default = json.loads(proc.stdout)
    assert default["BACKEND"] == "storages.backends.s3.S3Storage"
    options = default["OPTIONS"]
    assert (options["bucket_name"], options["endpoint_url"]) == (
        "krm-blobs",
        "http://minio.storage.svc:9000",
    )
    assert (options["access_key"], options["secret_key"]) == ("id", "key")


def test_s3_without_a_bucket_is_refused():
    proc = run("registry.settings.base", STORAGE_BACKEND="s3")
    assert proc.returncode != 0
    assert "STORAGE_BACKEND=s3 needs AWS_STORAGE_BUCKET_NAME." in proc.stderr


def test_unknown_backend_is_refused():
    proc = run("registry.settings.base", STORAGE_BACKEND="ftp")
    assert proc.returncode != 0
    assert "STORAGE_BACKEND must be 'local' or 's3', got 'ftp'." in proc.stderr
