"""End to end: revoke in a live registry, and ``krm build`` refuses what was revoked.

The registry is pytest-django's ``live_server``; ``krm`` runs as a subprocess. The app's first
function (SetTier, exec) touches ``ran-exec-function``: after a refusal it must not exist.
"""

from __future__ import annotations

import base64
import hashlib
import re

import httpx
import pytest
import yaml
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from tests.catalogs.factories import api_token_key
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


@pytest.fixture
def published(live_server, catalog, owner, files_server, tmp_path):  # noqa: F811
    """A published catalog, its runtimes served, the registry key on disk, an owner's token."""
    base, files, ca_file = files_server
    archive = _tgz(EXEC_FN)
    files["/set-tier.tar.gz"] = archive
    files["/set-team.star"] = STARLARK_FN.encode()
    document = _catalog(
        base, hashlib.sha256(archive).hexdigest(), hashlib.sha256(STARLARK_FN.encode()).hexdigest()
    )
    url = _publish(live_server, owner, document)
    key = tmp_path / "registry.pub"
    key.write_bytes(httpx.get(f"{live_server.url}/signing-key.pub").content)
    token = api_token_key(owner)
    return url, key, ca_file, token, "sha256:" + hashlib.sha256(archive).hexdigest()


def _revoke(live_server, token: str | None, **body) -> httpx.Response:
    headers = {"Authorization": f"Token {token}"} if token else {}
    return httpx.post(
        f"{live_server.url}/api/v1/catalogs/example-co/functions/revocations/",
        json=body,
        headers=headers,
    )


def test_revoked_version_is_refused_before_anything_runs(live_server, published, tmp_path):
    url, key, ca_file, token, _digest = published
    home = tmp_path / "h"
    app = _app(tmp_path)
    # Built once before the revocation: the list is absent (404), the build runs.
    ok = _krm(app, f"--trusted-catalog={url}", f"--catalog-key={key}", ca_file=ca_file, home=home)
    assert ok.returncode == 0, ok.stderr
    (app / "ran-exec-function").unlink()

    resp = _revoke(
        live_server,
        token,
        group="fn.example.com",
        kind="SetTier",
        version="v1",
        reason="compromised",
        detail="leaked signing credentials",
        replacement="fn.example.com/v2 SetTier",
    )
    assert resp.status_code == 201, resp.text
    assert resp.json()["sequence"] == 1

    proc = _krm(app, f"--trusted-catalog={url}", f"--catalog-key={key}", ca_file=ca_file, home=home)
    assert proc.returncode == 1
    assert proc.stdout == ""
    lists = url.removesuffix("catalog.yaml") + "revocations.yaml"
    assert proc.stderr.strip() == (
        f"Error: {app / 'kustomization.yaml'}: fn.example.com/v1 SetTier from catalog {url} is "
        "revoked: compromised (leaked signing credentials); use instead: fn.example.com/v2 "
        f"SetTier (revocation list sequence 1, {lists}); it is not run"
    )
    assert not (app / "ran-exec-function").exists()

    # krm view catalog lists it, with the list's signature verified.
    view = _krm_cmd("view", "catalog", url, f"--catalog-key={key}", ca_file=ca_file, home=home)
    assert view.returncode == 0, view.stderr
    assert f"Revocations: sequence 1 [{lists}]" in view.stdout
    assert "  signature: verified with key" in view.stdout
    assert (
        "  #1 fn.example.com/v1 SetTier: compromised (leaked signing credentials); "
        "use instead: fn.example.com/v2 SetTier" in view.stdout
    )

    # --offline uses the cached list and says how old it is.
    offline = _krm(app, f"--trusted-catalog={url}", "--offline", ca_file=ca_file, home=home)
    assert offline.returncode == 1
    assert "Warning: --offline: using the revocation list of catalog" in offline.stderr
    assert re.search(r"\(sequence 1\) cached \d+ seconds ago", offline.stderr)
    assert "is revoked: compromised" in offline.stderr
    assert not (app / "ran-exec-function").exists()


def test_a_revoked_later_function_stops_the_build_before_the_first_runs(
    live_server, published, tmp_path
):
    """The app runs SetTier (exec) and then SetTeam (starlark): revoking SetTeam must stop the
    build before SetTier runs, also with --skip-schema."""
    url, _key, ca_file, token, _digest = published
    resp = _revoke(
        live_server, token, group="fn.example.com", kind="SetTeam", version="v1", reason="broken"
    )
    assert resp.status_code == 201, resp.text
    app = _app(tmp_path)
    for extra in ([], ["--skip-schema"]):
        proc = _krm(app, f"--trusted-catalog={url}", *extra, ca_file=ca_file, home=tmp_path / "h")
        assert proc.returncode == 1
        assert proc.stdout == ""
        assert proc.stderr.startswith(
            f"Error: {app / 'kustomization.yaml'}: fn.example.com/v1 SetTeam from catalog {url} "
            "is revoked: broken"
        ), proc.stderr
        assert not (app / "ran-exec-function").exists()


def test_revoked_runtime_digest_is_refused(live_server, published, tmp_path):
    url, _key, ca_file, token, digest = published
    resp = _revoke(live_server, token, runtime_digest=digest, reason="broken")
    assert resp.status_code == 201, resp.text
    app = _app(tmp_path)
    proc = _krm(app, f"--trusted-catalog={url}", ca_file=ca_file, home=tmp_path / "h")
    assert proc.returncode == 1
    assert (
        f"fn.example.com/v1 SetTier from catalog {url} has a revoked runtime {digest}: broken"
        in (proc.stderr)
    )
    assert not (app / "ran-exec-function").exists()


def test_tampered_list_with_key_is_an_error(live_server, published, tmp_path):
    from catalogs.publishing import blobstore
    from catalogs.trust.models import RevocationList

    url, key, ca_file, token, _digest = published
    assert (
        _revoke(
            live_server,
            token,
            kind="SetTeam",
            group="fn.example.com",
            version="v1",
            reason="withdrawn",
        ).status_code
        == 201
    )
    listed = RevocationList.objects.get(sequence=1)
    # What a compromised store or a proxy would do: drop the entry, keep the signature.
    doc = yaml.safe_load(bytes(listed.content))
    doc["revocations"] = []
    tampered = blobstore.blob_put(content=yaml.safe_dump(doc, sort_keys=False).encode())
    RevocationList.objects.filter(pk=listed.pk).update(digest=tampered)
    app = _app(tmp_path)
    home = tmp_path / "h"
    proc = _krm(app, f"--trusted-catalog={url}", f"--catalog-key={key}", ca_file=ca_file, home=home)
    lists = url.removesuffix("catalog.yaml") + "revocations.yaml"
    assert proc.returncode == 1
    assert f"revocation list {lists} of catalog {url} has a bad signature: does not verify" in (
        proc.stderr
    )
    assert "so the build stops rather than run without its revocations" in proc.stderr
    assert proc.stdout == ""
    assert not (app / "ran-exec-function").exists()

    # A signature by another key is refused the same way.
    other = ec.generate_private_key(ec.SECP256R1())
    forged = base64.b64encode(other.sign(bytes(listed.content), ec.ECDSA(hashes.SHA256())))
    RevocationList.objects.filter(pk=listed.pk).update(
        digest=listed.digest, signature=forged.decode()
    )
    proc = _krm(app, f"--trusted-catalog={url}", f"--catalog-key={key}", ca_file=ca_file, home=home)
    assert proc.returncode == 1
    assert "has a bad signature: does not verify" in proc.stderr
    assert not (app / "ran-exec-function").exists()


def test_permission_matrix(live_server, published, other_user, staff_user):
    _url, _key, _ca, token, _digest = published
    body = {"group": "fn.example.com", "kind": "SetTier", "version": "v1", "reason": "broken"}
    assert _revoke(live_server, None, **body).status_code == 401
    other = api_token_key(other_user)
    refused = _revoke(live_server, other, **body)
    assert refused.status_code == 403
    assert refused.json()["detail"] == (
        "Only owners of publisher 'example-co' (or staff) may change it."
    )
    from catalogs.trust.models import Revocation, RevocationList

    # Nothing but the empty list every catalog has from its first version.
    assert not Revocation.objects.exists()
    assert list(RevocationList.objects.values_list("sequence", flat=True)) == [0]
    assert _revoke(live_server, token, **body).status_code == 201
    staff = api_token_key(staff_user)
    digest_body = {"runtime_digest": _digest, "reason": "withdrawn"}
    assert _revoke(live_server, staff, **digest_body).status_code == 201
    # The same target twice: 409, nothing added.
    again = _revoke(live_server, token, **body)
    assert again.status_code == 409
    assert again.json()["detail"] == "Already revoked in list sequence 1."
    assert Revocation.objects.count() == 2


def test_append_only_sequences(live_server, published):
    url, _key, _ca, token, digest = published
    first = {"group": "fn.example.com", "kind": "SetTier", "version": "v1", "reason": "broken"}
    assert _revoke(live_server, token, **first).status_code == 201
    assert (
        _revoke(live_server, token, runtime_digest=digest, reason="compromised").status_code == 201
    )
    base = url.removesuffix("catalog.yaml")
    latest = yaml.safe_load(httpx.get(base + "revocations.yaml").content)
    assert latest["kind"] == "RevocationList" and latest["sequence"] == 2
    assert [e["sequence"] for e in latest["revocations"]] == [1, 2]
    old = httpx.get(base + "revocations/1/revocations.yaml")
    assert old.status_code == 200
    assert [e["kind"] for e in yaml.safe_load(old.content)["revocations"]] == ["SetTier"]
    assert httpx.get(base + "revocations/1/revocations.yaml.sig").status_code == 200
    listed = httpx.get(f"{live_server.url}/api/v1/catalogs/example-co/functions/revocations/")
    assert [r["sequence"] for r in listed.json()["results"]] == [1, 2]


def test_rollback_and_vanished_list(live_server, published, tmp_path):
    from catalogs.trust.models import Revocation, RevocationList

    url, _key, ca_file, token, digest = published
    home = tmp_path / "h"
    app = _app(tmp_path)
    first = {"group": "fn.example.com", "kind": "SetTier", "version": "v1", "reason": "broken"}
    assert _revoke(live_server, token, **first).status_code == 201
    assert _revoke(live_server, token, runtime_digest=digest, reason="broken").status_code == 201
    proc = _krm(app, f"--trusted-catalog={url}", ca_file=ca_file, home=home)
    assert "is revoked: broken" in proc.stderr
    # A server (or a proxy) that answers with an older sequence: refused, not honoured.
    Revocation.objects.filter(sequence=2).delete()
    RevocationList.objects.filter(sequence=2).delete()
    lists = url.removesuffix("catalog.yaml") + "revocations.yaml"
    proc = _krm(app, f"--trusted-catalog={url}", ca_file=ca_file, home=home)
    assert proc.returncode == 1
    assert (
        f"revocation list {lists} of catalog {url} went back from sequence 2 to 1; "
        "revocation lists are append-only" in proc.stderr
    )
    # A list that disappears keeps applying from the cache, with a warning.
    Revocation.objects.all().delete()
    RevocationList.objects.all().delete()
    proc = _krm(app, f"--trusted-catalog={url}", ca_file=ca_file, home=home)
    assert proc.returncode == 1
    assert "is gone from the registry; honouring the cached one (sequence 2" in proc.stderr
    assert "is revoked: broken" in proc.stderr
    assert not (app / "ran-exec-function").exists()
