"""End to end: the registry signs what it publishes; ``krm --catalog-key`` uses only what verifies.

The registry is pytest-django's ``live_server``; ``krm`` runs as a subprocess. The catalog's exec
function touches ``ran-exec-function`` in the app directory: after every refusal that marker must
not exist (no function from a refused catalog runs).
"""

from __future__ import annotations

import base64
import hashlib
import json

import httpx
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from tests.e2e.test_trusted_catalog import (
    EXEC_FN,
    STARLARK_FN,
    _app,
    _catalog,
    _krm,
    _krm_cmd,
    _publish,
    _tgz,
    files_server,  # noqa: F401 - a fixture, used by name
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _registry_without_tuf(settings):
    """These are the rules for a registry that serves no TUF metadata (an older one): krm then
    checks the cosign signatures (tests/e2e/test_tuf_registry.py has the TUF registry)."""
    settings.ROOT_URLCONF = "tests.e2e.urls_without_tuf"


REFUSED = "a signing key applies to it, so it is not used and no function from it runs"


@pytest.fixture
def published(live_server, catalog, owner, files_server, tmp_path):  # noqa: F811
    """A catalog published to the registry, its runtimes served, the registry's key on disk."""
    base, files, ca_file = files_server
    archive = _tgz(EXEC_FN)
    files["/set-tier.tar.gz"] = archive
    files["/set-team.star"] = STARLARK_FN.encode()
    document = _catalog(
        base, hashlib.sha256(archive).hexdigest(), hashlib.sha256(STARLARK_FN.encode()).hexdigest()
    )
    url = _publish(live_server, owner, document)
    pub = httpx.get(f"{live_server.url}/signing-key.pub")
    assert pub.status_code == 200
    key = tmp_path / "registry.pub"
    key.write_bytes(pub.content)
    return url, key, pub.headers["X-Signing-Key-Id"], ca_file, files


def _store_tampered(digest: str, content: bytes) -> None:
    """What a compromised object store would do: other bytes under the same name."""
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from catalogs.publishing import blobstore
    from tests.conftest import _content_caches_clear

    name = blobstore.blob_name(digest)
    default_storage.delete(name)
    assert default_storage.save(name, ContentFile(content)) == name
    _content_caches_clear()


def test_build_with_registry_key(published, tmp_path):
    url, key, key_id, ca_file, _files = published
    app = _app(tmp_path)
    view = _krm_cmd(
        "view", "catalog", url, f"--catalog-key={key}", ca_file=ca_file, home=tmp_path / "h"
    )
    assert view.returncode == 0, view.stderr
    assert f"Signature: verified with key {key_id} ({key}) [{url}.sig]" in view.stdout
    unkeyed = _krm_cmd("view", "catalog", url, ca_file=ca_file, home=tmp_path / "h")
    assert (
        "Signature: present, not verified (pass --catalog-key), "
        f"key id {key_id} as stated by the registry [{url}.sig]"
    ) in unkeyed.stdout
    proc = _krm(
        app,
        f"--trusted-catalog={url}",
        f"--catalog-key={key}",
        ca_file=ca_file,
        home=tmp_path / "h",
    )
    assert proc.returncode == 0, proc.stderr
    assert "tier: web-exec" in proc.stdout
    assert (app / "ran-exec-function").exists()


def test_config_trust_section_key(published, tmp_path):
    url, key, _key_id, ca_file, _files = published
    home = tmp_path / "h"
    (home / "config" / "krm").mkdir(parents=True)
    (home / "config" / "krm" / "config.yaml").write_text(
        f"trust:\n- catalog: {url}\n  key: {key}\n"
    )
    app = _app(tmp_path)
    proc = _krm(app, f"--trusted-catalog={url}", ca_file=ca_file, home=home)
    assert proc.returncode == 0, proc.stderr
    assert (app / "ran-exec-function").exists()


def _refused(proc, app, url: str, reason: str) -> None:
    assert proc.returncode == 1
    # One line: the kustomization whose function needed the catalog, then the catalog and why.
    assert proc.stderr.strip() == (
        f"Error: {app / 'kustomization.yaml'}: catalog {url} {reason}; {REFUSED}"
    )
    assert proc.stdout == ""
    assert not (app / "ran-exec-function").exists()


def test_changed_bytes_are_refused(published, tmp_path):
    from catalogs.publishing.models import CatalogVersion

    url, key, key_id, ca_file, _files = published
    version = CatalogVersion.objects.get()
    # What a compromised store or a proxy in between would do: other bytes, same signature.
    evil = bytes(version.content).replace(b"publisher: example-co", b"publisher: example-c0")
    assert evil != bytes(version.content)
    _store_tampered(version.digest, evil)
    app = _app(tmp_path)
    proc = _krm(
        app,
        f"--trusted-catalog={url}",
        f"--catalog-key={key}",
        ca_file=ca_file,
        home=tmp_path / "h",
    )
    actual = "sha256:" + hashlib.sha256(evil).hexdigest()
    _refused(
        proc,
        app,
        url,
        f"has a bad signature: does not verify with {key_id} ({key}) (the registry says it "
        f"signs {version.digest}; the catalog fetched is {actual}) ({url}.sig)",
    )


def test_signature_by_another_key_is_refused(published, tmp_path):
    from catalogs.publishing.models import CatalogVersion
    from catalogs.publishing.serving import serving_caches_clear

    url, key, key_id, ca_file, _files = published
    version = CatalogVersion.objects.get()
    other = ec.generate_private_key(ec.SECP256R1())
    forged = base64.b64encode(other.sign(bytes(version.content), ec.ECDSA(hashes.SHA256())))
    CatalogVersion.objects.filter(pk=version.pk).update(signature=forged.decode())
    # Written behind the services' back: the serving cache still holds the published signature.
    serving_caches_clear()
    app = _app(tmp_path)
    proc = _krm(
        app,
        f"--trusted-catalog={url}",
        f"--catalog-key={key}",
        ca_file=ca_file,
        home=tmp_path / "h",
    )
    _refused(
        proc,
        app,
        url,
        f"has a bad signature: does not verify with {key_id} ({key}) ({url}.sig)",
    )


def test_missing_signature_is_refused(published, live_server, files_server, tmp_path):  # noqa: F811
    url, key, _key_id, ca_file, _files = published
    base, files, _ca = files_server
    # The same bytes served somewhere without the .sig beside them.
    files["/copy/catalog.yaml"] = httpx.get(url).content
    copy = f"{base}/copy/catalog.yaml"
    app = _app(tmp_path)
    proc = _krm(
        app,
        f"--trusted-catalog={copy}",
        f"--catalog-key={key}",
        ca_file=ca_file,
        home=tmp_path / "h",
    )
    _refused(proc, app, copy, f"has no signature ({copy}.sig not found)")
    view = _krm_cmd("view", "catalog", copy, ca_file=ca_file, home=tmp_path / "h")
    assert f"Signature: none found [{copy}.sig]" in view.stdout


# --- oci:// refs: cosign's sha256-<hex>.sig artifact in the same repository. ---


def _oci_ref(live_server) -> str:
    return f"oci://{live_server.url.removeprefix('http://')}/example-co/functions:latest"


def _sig_tag(version) -> str:
    return version.oci_manifest.digest.replace(":", "-") + ".sig"


def _oci_build(app, ref, key, ca_file, tmp_path):
    return _krm(
        app,
        f"--trusted-catalog={ref}",
        f"--catalog-key={key}",
        ca_file=ca_file,
        home=tmp_path / "h",
    )


def test_oci_build_with_registry_key(published, live_server, tmp_path):
    from catalogs.publishing.models import CatalogVersion

    _url, key, key_id, ca_file, _files = published
    ref = _oci_ref(live_server)
    where = f"oci://{live_server.url.removeprefix('http://')}/example-co/functions:" + _sig_tag(
        CatalogVersion.objects.get()
    )
    view = _krm_cmd(
        "view", "catalog", ref, f"--catalog-key={key}", ca_file=ca_file, home=tmp_path / "h"
    )
    assert view.returncode == 0, view.stderr
    assert f"Signature: verified with key {key_id} ({key}) [{where}]" in view.stdout
    unkeyed = _krm_cmd("view", "catalog", ref, ca_file=ca_file, home=tmp_path / "h")
    assert (
        "Signature: present, not verified (pass --catalog-key), "
        f"key id {key_id} as stated by the registry [{where}]"
    ) in unkeyed.stdout
    app = _app(tmp_path)
    proc = _oci_build(app, ref, key, ca_file, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "tier: web-exec" in proc.stdout
    assert (app / "ran-exec-function").exists()


def test_oci_changed_layer_with_the_old_signature_is_refused(published, live_server, tmp_path):
    """An attacker with write access to the repository swaps the catalog (a new layer and
    manifest under ``latest``) and copies the old signature to the new manifest's .sig tag."""
    from catalogs.distribution import manifests as m
    from catalogs.distribution.models import OciTag
    from catalogs.distribution.selectors import oci_caches_clear
    from catalogs.distribution.services import oci_artifact_store
    from catalogs.publishing.models import CatalogVersion

    _url, key, _key_id, ca_file, _files = published
    version = CatalogVersion.objects.get()
    evil = bytes(version.content).replace(b"publisher: example-co", b"publisher: example-c0")
    manifest = json.loads(bytes(version.oci_manifest.content))
    manifest["layers"][0].update(digest=m.sha256_digest(evil), size=len(evil))
    evil_manifest = m.manifest_bytes(manifest)
    evil_digest = oci_artifact_store(
        catalog=version.catalog,
        manifest=evil_manifest,
        media_type=m.OCI_MANIFEST,
        blobs={m.sha256_digest(evil): evil},
        tags=["evil"],
    )
    old_sig = OciTag.objects.get(name=_sig_tag(version)).manifest
    OciTag.objects.filter(name="latest").update(manifest=OciTag.objects.get(name="evil").manifest)
    OciTag.objects.create(
        catalog=version.catalog, name=evil_digest.replace(":", "-") + ".sig", manifest=old_sig
    )
    oci_caches_clear()
    app = _app(tmp_path)
    ref = _oci_ref(live_server)
    host = live_server.url.removeprefix("http://")
    proc = _oci_build(app, ref, key, ca_file, tmp_path)
    _refused(
        proc,
        app,
        ref,
        f"has a bad signature: the signature signs {version.oci_manifest.digest}, not "
        f"{evil_digest} (oci://{host}/example-co/functions:{evil_digest.replace(':', '-')}.sig)",
    )
    # The changed layer alone (same manifest, other bytes served) fails its digest check.
    OciTag.objects.filter(name="latest").update(manifest=version.oci_manifest)
    _store_tampered(version.digest, evil)
    oci_caches_clear()
    proc = _oci_build(app, ref, key, ca_file, tmp_path / "h2")
    assert proc.returncode == 1
    assert "layer digest mismatch" in proc.stderr
    assert not (app / "ran-exec-function").exists()


def test_oci_signature_by_another_key_is_refused(published, live_server, tmp_path, settings):
    from catalogs.distribution.selectors import oci_caches_clear
    from catalogs.publishing.models import CatalogVersion
    from catalogs.trust import services, signing

    _url, key, key_id, ca_file, _files = published
    version = CatalogVersion.objects.get()
    settings.SIGNING_KEY_PEM = signing.private_key_generate()[1].decode()
    services._oci_signature_store(version=version, resign=True)  # the other key re-signs it
    oci_caches_clear()
    app = _app(tmp_path)
    ref = _oci_ref(live_server)
    host = live_server.url.removeprefix("http://")
    proc = _oci_build(app, ref, key, ca_file, tmp_path)
    _refused(
        proc,
        app,
        ref,
        f"has a bad signature: none of its 1 signature(s) verifies with {key_id} ({key}) "
        f"(oci://{host}/example-co/functions:{_sig_tag(version)})",
    )


def test_oci_missing_signature_is_refused(published, live_server, tmp_path):
    from catalogs.distribution.models import OciTag
    from catalogs.publishing.models import CatalogVersion

    _url, key, _key_id, ca_file, _files = published
    version = CatalogVersion.objects.get()
    OciTag.objects.filter(name=_sig_tag(version)).delete()
    app = _app(tmp_path)
    ref = _oci_ref(live_server)
    host = live_server.url.removeprefix("http://")
    proc = _oci_build(app, ref, key, ca_file, tmp_path)
    _refused(
        proc,
        app,
        ref,
        f"has no signature (oci://{host}/example-co/functions:{_sig_tag(version)} not found)",
    )
