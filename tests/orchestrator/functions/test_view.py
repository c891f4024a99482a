"""``krm view catalog REF``: table and -o yaml|json."""

from __future__ import annotations

import hashlib
import json

import pytest

from orchestrator import yamlio
from orchestrator.functions import view

CATALOG = f"""apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: example-co
  annotations:
    publisher: Example Co
spec:
  krmFunctions:
  - group: example.com
    names:
      kind: JavaApplication
    description: A Java app
    versions:
    - name: v1
      runtime:
        container:
          image: example/java:v1.0.0
          sha256: {"b" * 64}
          requireNetwork: true
        exec:
          platforms:
          - bin: fn
            os: linux
            arch: amd64
            uri: https://example.com/fn.tgz
            sha256: {"c" * 64}
          - bin: fn
            os: darwin
            arch: arm64
            uri: https://example.com/fn-mac.tgz
            sha256: {"d" * 64}
  - group: example.com
    names:
      kind: Logger
    versions:
    - name: v1beta1
      runtime:
        starlark:
          uri: https://example.com/logger.star
"""


def test_table(tmp_path, options):
    (tmp_path / "c.yaml").write_text(CATALOG)
    loaded = view.load(str(tmp_path / "c.yaml"), options=options())
    text = view.render(loaded)
    assert text == (
        "Catalog:   example-co\n"
        "Publisher: Example Co\n"
        # The sha256 of the file's bytes (not of the canonical form the parser writes).
        f"Digest:    sha256:{hashlib.sha256(CATALOG.encode()).hexdigest()}\n"
        f"Source:    {tmp_path / 'c.yaml'}\n"
        f"Signature: none found [{tmp_path / 'c.yaml.sig'}]\n"
        "\n"
        "APIVERSION           KIND             RUNTIMES        PLATFORMS                 NEEDS\n"
        "example.com/v1       JavaApplication  container,exec  linux/amd64,darwin/arm64  "
        "exec binary,network\n"
        "example.com/v1beta1  Logger           starlark        -                         -\n"
    )


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_machine_readable(tmp_path, https_server, options, fmt):
    https_server.files["/c.yaml"] = CATALOG.encode()
    url = https_server.url("c.yaml")
    loaded = view.load(url, options=options(ca_file=https_server.ca_file))
    text = view.render(loaded, fmt)
    data = json.loads(text) if fmt == "json" else yamlio.load(text)
    assert data["name"] == "example-co"
    assert data["publisher"] == "Example Co"
    assert data["source"] == url
    assert data["digest"].startswith("sha256:")
    assert data["revision"]  # the ETag
    java, logger = data["functions"]
    assert java == {
        "apiVersion": "example.com/v1",
        "kind": "JavaApplication",
        "runtimes": ["container", "exec"],
        "needs": ["exec binary", "network"],
        "platforms": ["linux/amd64", "darwin/arm64"],
        "image": "example/java:v1.0.0",
        "imageDigest": "sha256:" + "b" * 64,
        "description": "A Java app",
    }
    assert logger["runtimes"] == ["starlark"] and logger["needs"] == []


def test_unknown_format(tmp_path, options):
    (tmp_path / "c.yaml").write_text(CATALOG)
    with pytest.raises(ValueError) as exc:
        view.render(view.load(str(tmp_path / "c.yaml"), options=options()), "xml")
    assert str(exc.value) == "unknown output format 'xml': use yaml or json"
