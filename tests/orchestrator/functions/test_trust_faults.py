"""Trust faults outside TUF: ``krm view --catalog-key`` exit status, PEM files with several keys,
and revocation lists found whatever the URL's spelling and for ``oci://`` references."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from orchestrator.functions import tufpaths
from orchestrator.functions.revocations import list_location
from tests.orchestrator.functions.test_catalog_signatures import CATALOG, Key
from tests.orchestrator.functions.test_cli_functions import _krm
from tests.orchestrator.functions.tufrepo import revocations


def _app(app):
    """A kustomization with one catalog function (example.com/v1 Labeler)."""
    from tests.orchestrator.functions.test_tuf_trust import CM

    app.mkdir()
    (app / "kustomization.yaml").write_text("resources:\n- cm.yaml\ntransformers:\n- fn.yaml\n")
    (app / "cm.yaml").write_text(CM)
    (app / "fn.yaml").write_text(
        "apiVersion: example.com/v1\nkind: Labeler\nmetadata:\n  name: x\n"
    )
    return app


def _pem(key) -> bytes:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def test_view_with_catalog_key_exits_non_zero_on_an_invalid_signature(tmp_path, http_server):
    good, other = Key(tmp_path / "good.pub"), Key(tmp_path / "other.pub")
    http_server.files["/c.yaml"] = CATALOG
    http_server.files["/c.yaml.sig"] = other.sign(CATALOG)
    url = http_server.url("c.yaml")
    proc = _krm("view", "catalog", url, "--catalog-key", str(good.path), home=tmp_path / "h")
    assert proc.returncode == 1
    assert "Signature: INVALID: does not verify with" in proc.stdout  # the table is still shown
    assert proc.stderr == (
        f"Error: catalog {url}: its catalog signature is INVALID: does not verify with "
        f"{good.key_id} ({good.path}) ({url}.sig)\n"
    )
    # Signed by the key: exit 0.
    http_server.files["/c.yaml.sig"] = good.sign(CATALOG)
    proc = _krm("view", "catalog", url, "--catalog-key", str(good.path), home=tmp_path / "h2")
    assert (proc.returncode, proc.stderr) == (0, "")
    # Without a key nothing is enforced (viewing is how one decides to trust).
    http_server.files["/c.yaml.sig"] = other.sign(CATALOG)
    proc = _krm("view", "catalog", url, home=tmp_path / "h3")
    assert (proc.returncode, proc.stderr) == (0, "")


def test_pem_file_with_two_keys_is_an_error(tmp_path, http_server):
    first, second = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    both = tmp_path / "both.pem"
    both.write_bytes(_pem(first.public_key()) + _pem(second.public_key()))
    http_server.files["/c.yaml"] = CATALOG
    url = http_server.url("c.yaml")
    _app(tmp_path / "app")
    build = ["build", str(tmp_path / "app"), "--trusted-catalog", url]
    for command in (["view", "catalog", url], build):
        proc = _krm(*command, "--catalog-key", str(both), home=tmp_path / "h")
        assert proc.returncode == 1
        assert proc.stderr == (
            f"Error: --catalog-key {both}: holds 2 PEM blocks; give one public key per file "
            "(repeat --catalog-key for several keys)\n"
        )


@pytest.mark.parametrize(
    "url",
    [
        "https://r.example/c/acme/functions/catalog.yaml",
        "https://r.example/c/acme/functions/catalog%2Eyaml",
        "https://r.example/c/acme/%66unctions/catalog.yaml",
        "https://r.example/c/acme/functions/versions/3/catalog%252Eyaml",
        "https://r.example/c/acme/functions/sha256/" + "a" * 64 + "/catalog.yaml",
    ],
)
def test_revocation_list_location_does_not_depend_on_spelling(url):
    assert list_location("url", url) == "https://r.example/c/acme/functions/revocations.yaml"


def test_revocation_list_location_of_oci_refs():
    assert list_location("oci", "r.example/acme/functions:latest") == (
        "https://r.example/c/acme/functions/revocations.yaml"
    )
    assert list_location("oci", "127.0.0.1:5000/acme/functions@sha256:" + "b" * 64) == (
        "http://127.0.0.1:5000/c/acme/functions/revocations.yaml"
    )
    assert list_location("oci", "r.example/library/deep/name:1") is None


def test_target_paths():
    t = tufpaths.for_url("https://r.example/reg/c/acme/functions/versions/7/catalog%2Eyaml")
    assert t == tufpaths.RegistryTarget(
        "https://r.example/reg", "acme", "functions", "acme/functions/versions/7/catalog.yaml"
    )
    assert tufpaths.for_oci("r.example/acme/functions:v2").path == (
        "acme/functions/versions/2/catalog.yaml"
    )
    assert tufpaths.for_oci("r.example/acme/functions:stable").path == ""
    assert tufpaths.for_url("https://r.example/catalog.yaml") is None
    assert tufpaths.for_url("https://r.example/c/acme/functions/catalog.yaml?x=1") is None


def test_runtime_artifact_target_paths():
    hexdigest = "ab" * 32
    reg = "https://r.example/reg"
    assert tufpaths.runtime_target(reg, "mirrors", "up", f"{reg}/c/blobs/sha256/{hexdigest}") == (
        f"mirrors/up/blobs/sha256/{hexdigest}"
    )
    # However spelled, and on the host case-insensitively.
    spelled = f"https://R.example/reg/c/%62lobs/sha256/{hexdigest}"
    assert tufpaths.runtime_target(reg, "mirrors", "up", spelled) == (
        f"mirrors/up/blobs/sha256/{hexdigest}"
    )
    assert tufpaths.runtime_target(reg, "acme", "fns", f"{reg}/c/acme/fns/tool.tgz") == (
        "acme/fns/tool.tgz"
    )
    # Elsewhere: pinned by the catalog's sha256 only.
    for other in (
        f"https://other.example/reg/c/blobs/sha256/{hexdigest}",
        f"http://r.example/reg/c/blobs/sha256/{hexdigest}",
        "https://r.example/static/tool.tgz",
        f"{reg}/c/blobs/sha256/{hexdigest}?x=1",
    ):
        assert tufpaths.runtime_target(reg, "mirrors", "up", other) is None, other


def test_legacy_registry_revocations_apply_to_percent_encoded_urls(tmp_path, http_server, kit):
    """A registry without TUF metadata: its list applies however the catalog URL is spelled."""
    from orchestrator.functions.resolve import host_platform
    from tests.orchestrator.functions.tufrepo import CATALOG as TEMPLATE

    sha = kit.make_tgz(tmp_path / "fn.tgz", {"bin/fn": kit.LABEL_FN})
    os_name, arch = host_platform()
    catalog = TEMPLATE.format(
        name="functions", publisher="acme", os=os_name, arch=arch,
        uri=f"file://{tmp_path / 'fn.tgz'}", sha=sha,
    ).encode()  # fmt: skip
    for raw in ("catalog.yaml", "catalog%2Eyaml"):
        http_server.files[f"/c/acme/functions/{raw}"] = catalog
    http_server.files["/c/acme/functions/revocations.yaml"] = revocations(
        1, [{"sequence": 1, "reason": "bad", "kind": "Labeler", "group": "example.com",
             "version": "v1"}]
    )  # fmt: skip
    app = _app(tmp_path / "app")
    marker = tmp_path / "ran"
    url = http_server.url("c/acme/functions/catalog%2Eyaml")
    proc = _krm(
        "build", str(app), f"--trusted-catalog={url}", "-e", f"MARKER={marker}",
        home=tmp_path / "h",
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr == (
        f"Error: {app}/kustomization.yaml: example.com/v1 Labeler from catalog {url} is revoked: "
        f"bad (revocation list sequence 1, {http_server.base}/c/acme/functions/revocations.yaml);"
        " it is not run\n"
    )
    assert not marker.exists()
    assert ("/tuf/root.json", "", 404) in http_server.requests  # it looked for TUF metadata
    # ... without loading tuf: a registry without TUF metadata costs one request, no import.
    import os
    import subprocess
    import sys

    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "h2"), XDG_CONFIG_HOME=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "orchestrator", "build", str(app),
         f"--trusted-catalog={url}"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert proc.returncode == 1 and "is revoked" in proc.stderr
    loaded = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "orchestrator.functions.revocations" in loaded  # importtime's report is there
    assert not {"tuf", "securesystemslib", "orchestrator.functions.tufclient"} & loaded


def test_lockfile_with_a_local_catalog(tmp_path, kit):
    from orchestrator.functions.resolve import host_platform
    from tests.orchestrator.functions.tufrepo import CATALOG as TEMPLATE

    sha = kit.make_tgz(tmp_path / "fn.tgz", {"bin/fn": kit.LABEL_FN})
    os_name, arch = host_platform()
    catalog = tmp_path / "catalog.yaml"
    text = TEMPLATE.format(
        name="local", publisher="acme", os=os_name, arch=arch,
        uri=f"file://{tmp_path / 'fn.tgz'}", sha=sha,
    )  # fmt: skip
    catalog.write_text(text)
    app = _app(tmp_path / "app")
    home = tmp_path / "h"
    flags = [f"--trusted-catalog={catalog}"]
    proc = _krm("build", str(app), *flags, "--lock", home=home)
    assert proc.returncode == 0, proc.stderr
    lock = (app / "krm.lock").read_text()
    digest = kit.sha256_of(catalog)
    assert lock == (
        "# Written by krm build --lock; krm build --locked uses exactly this.\n"
        "apiVersion: config.kubernetes.io/v1alpha1\n"
        "catalogs:\n"
        f"- digest: sha256:{digest}\n"
        "  ref: ../catalog.yaml\n"
        "functions:\n"
        "- apiVersion: example.com/v1\n"
        "  catalog: ../catalog.yaml\n"
        f"  digest: sha256:{sha}\n"
        "  kind: Labeler\n"
        "  runtime: exec\n"
        "kind: KrmLock\n"
        "registries: []\n"
    )
    assert _krm("build", str(app), *flags, "--locked", home=home).returncode == 0
    catalog.write_text(text.replace("name: local", "name: changed"))
    marker = tmp_path / "ran"
    proc = _krm("build", str(app), *flags, "--locked", "-e", f"MARKER={marker}", home=home)
    assert proc.returncode == 1 and not marker.exists()
    changed = kit.sha256_of(catalog)
    assert proc.stderr == (
        f"Error: {app}/kustomization.yaml: catalog {catalog} differs from {app}/krm.lock: "
        f"digest is 'sha256:{changed}', locked 'sha256:{digest}'; krm build --locked refuses "
        "any difference (run krm build --lock to update it)\n"
    )
    proc = _krm("build", str(app), *flags, "--lock", "--locked", home=home)
    assert (proc.returncode, proc.stderr) == (1, "Error: --lock and --locked exclude each other\n")
