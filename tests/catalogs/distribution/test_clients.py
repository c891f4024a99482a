"""Real OCI clients against the registry: Debian's ``skopeo``, the ``oras`` Python package and
``krm build --trusted-catalog=oci://…``, each talking to pytest-django's ``live_server`` (a real
HTTP server on a free loopback port). What they pull must be byte-identical to the HTTPS URL.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import httpx
import oras.provider
import pytest

from catalogs.distribution import manifests as m
from catalogs.publishing.models import CatalogVersion
from tests.catalogs.factories import catalog_yaml
from tests.e2e.test_trusted_catalog import (  # noqa: F401 - files_server is a fixture
    STARLARK_FN,
    _app,
    _krm,
    files_server,
)

pytestmark = pytest.mark.django_db(transaction=True)
needs_skopeo = pytest.mark.skipif(shutil.which("skopeo") is None, reason="skopeo not installed")


def _host(live_server) -> str:
    return live_server.url.removeprefix("http://")


def _skopeo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["skopeo", *args], capture_output=True, text=True, timeout=120, check=False
    )


@needs_skopeo
def test_skopeo_inspect_and_copy_pull_the_served_catalog(live_server, published, tmp_path):
    ref = f"docker://{_host(live_server)}/example-co/functions:latest"
    served = httpx.get(f"{live_server.url}/c/example-co/functions/catalog.yaml").content

    raw = _skopeo("inspect", "--raw", "--tls-verify=false", ref)
    assert raw.returncode == 0, raw.stderr
    manifest = json.loads(raw.stdout)
    assert raw.stdout.encode() == bytes(published.oci_manifest.content)
    assert manifest["layers"][0]["digest"] == "sha256:" + hashlib.sha256(served).hexdigest()
    # skopeo 1.9's image inspection refuses non-image artifacts by design: name the reason.
    plain = _skopeo("inspect", "--tls-verify=false", ref)
    assert "unsupported image-specific operation on artifact" in plain.stderr

    layout = tmp_path / "layout"
    copied = _skopeo("copy", "--src-tls-verify=false", ref, f"oci:{layout}:latest")
    assert copied.returncode == 0, copied.stderr
    index = json.loads((layout / "index.json").read_text())
    digest = index["manifests"][0]["digest"]
    assert digest == published.oci_manifest.digest  # the manifest is copied unchanged
    blobs = layout / "blobs" / "sha256"
    pulled = json.loads((blobs / digest.removeprefix("sha256:")).read_bytes())
    layer = (blobs / pulled["layers"][0]["digest"].removeprefix("sha256:")).read_bytes()
    assert layer == served


@needs_skopeo
def test_skopeo_copy_pushes_with_the_token_flow(live_server, published, owner_token, tmp_path):
    from tests.catalogs.factories import CatalogFactory

    CatalogFactory(publisher=published.catalog.publisher, name="copy")
    host = _host(live_server)
    layout = tmp_path / "layout"
    src = f"docker://{host}/example-co/functions:latest"
    assert _skopeo("copy", "--src-tls-verify=false", src, f"oci:{layout}:x").returncode == 0

    dest = f"docker://{host}/example-co/copy:latest"
    anonymous = _skopeo("copy", "--dest-tls-verify=false", f"oci:{layout}:x", dest)
    assert anonymous.returncode != 0
    assert "authentication required" in anonymous.stderr
    pushed = _skopeo(
        "copy",
        "--dest-tls-verify=false",
        f"--dest-creds=owner:{owner_token}",
        f"oci:{layout}:x",
        dest,
    )
    assert pushed.returncode == 0, pushed.stderr
    copy = CatalogVersion.objects.get(catalog__name="copy")
    assert (copy.number, copy.digest) == (1, published.digest)
    got = httpx.get(f"{live_server.url}/c/example-co/copy/catalog.yaml").content
    assert got == bytes(published.content)


def _oras(live_server, *, token: str = "") -> oras.provider.Registry:
    registry = oras.provider.Registry(hostname=_host(live_server), insecure=True)
    if token:
        registry.auth.set_basic_auth("owner", token)
    return registry


def test_oras_pull_gets_the_served_catalog(live_server, published, tmp_path):
    files = _oras(live_server).pull(
        target=f"{_host(live_server)}/example-co/functions:v1", outdir=str(tmp_path)
    )
    assert [Path(f).name for f in files] == ["catalog.yaml"]
    served = httpx.get(f"{live_server.url}/c/example-co/functions/versions/1/catalog.yaml")
    assert Path(files[0]).read_bytes() == served.content


def test_oras_push_publishes_a_version(live_server, published, owner_token, tmp_path, owner):
    document = catalog_yaml(("example.co", "FromOras", "v1")).encode()
    path = tmp_path / "catalog.yaml"
    path.write_bytes(document)
    target = f"{_host(live_server)}/example-co/functions:latest"
    files = [f"{path}:{m.CATALOG_LAYER}"]

    # Without credentials oras gets an anonymous (pull-only) token, then gives up.
    with pytest.raises(ValueError, match="authentication required to push"):
        _oras(live_server).push(target=target, files=files, disable_path_validation=True)
    assert CatalogVersion.objects.filter(catalog=published.catalog).count() == 1

    response = _oras(live_server, token=owner_token).push(
        target=target, files=files, disable_path_validation=True
    )
    assert response.status_code == 201, response.text
    version = CatalogVersion.objects.get(catalog=published.catalog, number=2)
    assert version.created_by == owner
    served = httpx.get(f"{live_server.url}/c/example-co/functions/catalog.yaml").content
    assert served == document
    # And it pulls back as pushed.
    pulled = _oras(live_server).pull(target=target, outdir=str(tmp_path / "out"))
    assert Path(pulled[0]).read_bytes() == document


def test_oras_push_of_an_invalid_catalog_is_manifest_invalid(
    live_server, published, owner_token, tmp_path, caplog
):
    path = tmp_path / "catalog.yaml"
    path.write_bytes(b"kind: Catalog\n")
    with pytest.raises(ValueError, match="manifests/latest: Bad Request"):
        _oras(live_server, token=owner_token).push(
            target=f"{_host(live_server)}/example-co/functions:latest",
            files=[f"{path}:{m.CATALOG_LAYER}"],
            disable_path_validation=True,
        )
    # oras shows the user the registry's MANIFEST_INVALID message, the API's words.
    assert "The catalog document is invalid (1 problem)." in caplog.messages
    assert CatalogVersion.objects.filter(catalog=published.catalog).count() == 1


def test_krm_build_with_a_trusted_oci_catalog(
    live_server,
    catalog,
    owner,
    files_server,  # noqa: F811 - the fixture imported above
    tmp_path,
):
    from catalogs.publishing.services import catalog_version_publish

    base, files, ca_file = files_server
    files["/set-team.star"] = STARLARK_FN.encode()
    star_sha = hashlib.sha256(STARLARK_FN.encode()).hexdigest()
    document = f"""apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: functions
spec:
  krmFunctions:
  - group: fn.example.com
    names:
      kind: SetTeam
    versions:
    - name: v1
      runtime:
        starlark:
          uri: {base}/set-team.star
          sha256: "{star_sha}"
"""
    catalog_version_publish(catalog=catalog, content=document, actor=owner)
    app = _app(tmp_path)
    (app / "kustomization.yaml").write_text(
        "resources:\n- deploy.yaml\ntransformers:\n- team.yaml\n"
    )
    ref = f"oci://{_host(live_server)}/example-co/functions:latest"
    proc = _krm(app, f"--trusted-catalog={ref}", ca_file=ca_file, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert "starlark.example.com/team: payments" in proc.stdout
