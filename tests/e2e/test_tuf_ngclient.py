"""An independent TUF client verifies the registry: python-tuf's ngclient over plain HTTP.

This module imports nothing of the project (no catalogs, orchestrator or registry): the
registry runs as its own process (tests.live_registry: gunicorn on a fresh database), the
catalog is published and a function revoked through the public API with httpx, and ngclient,
bootstrapped with the root served at /tuf/root.json, downloads a catalog version, the latest
pointer and the revocation list as TUF targets, checking every signature, length and hash.
"""

from __future__ import annotations

import hashlib

import httpx
import pytest
from tuf.api import exceptions as tuf_errors
from tuf.ngclient import Updater, UpdaterConfig

from tests.live_registry import live_registry

CATALOG = """apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: fns
spec:
  krmFunctions:
  - group: fn.example.com
    names:
      kind: SetTier
    publisher: acme
    versions:
    - name: {version}
      runtime:
        container:
          image: ghcr.io/acme/set-tier:{version}
"""


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tuf-ngclient")
    with live_registry(
        workdir, workers=1, threads=4, SIGNING_KEY_FILE=str(workdir / "signing-key.pem")
    ) as server:
        yield server


def _updater(directory, base: str) -> Updater:
    (directory / "targets").mkdir(parents=True)
    root = httpx.get(f"{base}/tuf/root.json")
    assert root.status_code == 200
    return Updater(
        str(directory),
        f"{base}/tuf/",
        str(directory / "targets"),
        f"{base}/c/",
        config=UpdaterConfig(prefix_targets_with_hash=False),
        bootstrap=root.content,
    )


def _download(updater: Updater, path: str) -> bytes:
    info = updater.get_targetinfo(path)
    assert info is not None, f"{path} is not a signed target"
    with open(updater.download_target(info), "rb") as f:
        data = f.read()
    assert hashlib.sha256(data).hexdigest() == info.hashes["sha256"]
    return data


def test_ngclient_downloads_a_catalog_and_its_revocation_list(registry, tmp_path):
    headers = {"Authorization": f"Token {registry.token}", "Content-Type": "application/yaml"}
    api = f"{registry.base}/api/v1/catalogs/acme/fns"
    for version in ("v1", "v2"):
        resp = httpx.post(
            f"{api}/versions/", content=CATALOG.format(version=version), headers=headers
        )
        assert resp.status_code == 201, resp.text
    served_v1 = httpx.get(f"{registry.base}/c/acme/fns/versions/1/catalog.yaml").content
    served_latest = httpx.get(f"{registry.base}/c/acme/fns/catalog.yaml").content

    updater = _updater(tmp_path / "first", registry.base)
    updater.refresh()
    assert _download(updater, "acme/fns/versions/1/catalog.yaml") == served_v1
    assert _download(updater, "acme/fns/catalog.yaml") == served_latest
    assert b"ghcr.io/acme/set-tier:v2" in served_latest
    listed = _download(updater, "acme/fns/revocations.yaml")
    assert b"sequence: 0" in listed and b"revocations: []" in listed
    # No role signs a path of another publisher's, or one the registry does not serve.
    assert updater.get_targetinfo("acme/fns/versions/3/catalog.yaml") is None
    assert updater.get_targetinfo("mallory/fns/catalog.yaml") is None

    resp = httpx.post(
        f"{api}/revocations/",
        json={"group": "fn.example.com", "kind": "SetTier", "version": "v1", "reason": "broken"},
        headers={"Authorization": f"Token {registry.token}"},
    )
    assert resp.status_code == 201, resp.text
    updater = _updater(tmp_path / "second", registry.base)
    updater.refresh()
    listed = _download(updater, "acme/fns/revocations.yaml")
    assert b"sequence: 1" in listed and b"kind: SetTier" in listed and b"reason: broken" in listed
    assert listed == httpx.get(f"{registry.base}/c/acme/fns/revocations.yaml").content


def test_ngclient_refuses_a_timestamp_signed_by_another_key(registry, tmp_path):
    """Through a loopback proxy that re-signs the timestamp with a key of its own."""
    import http.server
    import threading
    import urllib.error
    import urllib.request

    from securesystemslib.signer import CryptoSigner
    from tuf.api.metadata import Metadata

    served = Metadata.from_bytes(httpx.get(f"{registry.base}/tuf/timestamp.json").content)
    served.signed.version += 1
    served.sign(CryptoSigner.generate_ecdsa())
    forged = served.to_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            status, body = 200, forged
            if self.path != "/tuf/timestamp.json":
                try:
                    with urllib.request.urlopen(registry.base + self.path) as resp:
                        body = resp.read()
                except urllib.error.HTTPError as exc:
                    status, body = exc.code, b""
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        updater = _updater(tmp_path / "client", f"http://127.0.0.1:{proxy.server_address[1]}")
        with pytest.raises(tuf_errors.UnsignedMetadataError):
            updater.refresh()
    finally:
        proxy.shutdown()
        proxy.server_close()
