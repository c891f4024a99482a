"""--catalog-key and the config's per-catalog keys: a keyed catalog is used only once it verifies.

Signatures here are made with ``cryptography`` directly (what ``cosign sign-blob`` produces:
base64 of a DER ECDSA-SHA256 signature); the catalogs are served by a real local HTTPS server,
read from files, or from a local git repository.
"""

from __future__ import annotations

import base64
import subprocess

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from orchestrator.functions import CatalogSet, FunctionError, TrustConfig
from orchestrator.functions.catalogs import parse_ref, store_for
from orchestrator.functions.resolve import resolve
from orchestrator.functions.signatures import CatalogSignatureError, key_id_of
from orchestrator.functions.view import load, render, summary

CATALOG = b"""apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: signed
spec:
  krmFunctions:
  - group: example.com
    names:
      kind: App
    versions:
    - name: v1
      runtime:
        container:
          image: img:1
"""
CFG = {"apiVersion": "example.com/v1", "kind": "App", "metadata": {"name": "x"}}


class Key:
    """A P-256 key pair with its public PEM written to a file."""

    def __init__(self, path):
        self.private = ec.generate_private_key(ec.SECP256R1())
        self.path = path
        path.write_bytes(
            self.private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        self.key_id = key_id_of(self.private.public_key())

    def sign(self, data: bytes) -> bytes:
        return base64.b64encode(self.private.sign(data, ec.ECDSA(hashes.SHA256())))


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    """krm view reads $XDG_CONFIG_HOME/krm/config.yaml: never the real user's one here."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def keys(tmp_path):
    (tmp_path / "keys").mkdir()
    return Key(tmp_path / "keys" / "good.pub"), Key(tmp_path / "keys" / "other.pub")


def _set(tmp_path, trusted, opts, *, keys=(), config=None):
    trust = TrustConfig.load(
        trusted,
        keys=[str(k) for k in keys],
        config=str(config or tmp_path / "none.yaml"),
        cwd=str(tmp_path),
    )
    return CatalogSet.for_kustomization(
        [], kustomization_dir=str(tmp_path), trust=trust, options=opts
    )


def test_https_catalog_verified_with_catalog_key(tmp_path, https_server, options, keys):
    good, other = keys
    https_server.files["/c.yaml"] = CATALOG
    https_server.files["/c.yaml.sig"] = good.sign(CATALOG)
    url = https_server.url("c.yaml")
    opts = options(ca_file=https_server.ca_file)
    cs = _set(tmp_path, [url], opts, keys=[good.path])
    assert resolve(CFG, cs, opts).spec["image"] == "img:1"
    status = store_for(opts).get(parse_ref(url, "/")).signature
    assert (status.status, status.key_id) == ("verified", good.key_id)

    # Any one of several keys may sign.
    opts = options(ca_file=https_server.ca_file)
    cs = _set(tmp_path, [url], opts, keys=[other.path, good.path])
    assert resolve(CFG, cs, opts).spec["image"] == "img:1"


@pytest.mark.parametrize("case", ["other key", "tampered bytes", "missing", "garbage"])
def test_https_catalog_refused(tmp_path, https_server, options, keys, case):
    good, other = keys
    url = https_server.url("c.yaml")
    https_server.files["/c.yaml"] = CATALOG
    if case == "other key":
        https_server.files["/c.yaml.sig"] = other.sign(CATALOG)
    elif case == "tampered bytes":
        https_server.files["/c.yaml.sig"] = good.sign(CATALOG)
        https_server.files["/c.yaml"] = CATALOG.replace(b"img:1", b"evil:1")
    elif case == "garbage":
        https_server.files["/c.yaml.sig"] = b"not base64 at all!"
    opts = options(ca_file=https_server.ca_file)
    cs = _set(tmp_path, [url], opts, keys=[good.path])
    with pytest.raises(CatalogSignatureError) as exc:
        resolve(CFG, cs, opts)
    tail = "; a signing key applies to it, so it is not used and no function from it runs"
    if case == "missing":
        assert str(exc.value) == f"catalog {url} has no signature ({url}.sig not found){tail}"
    else:
        assert str(exc.value) == (
            f"catalog {url} has a bad signature: does not verify with {good.key_id} "
            f"({good.path}) ({url}.sig){tail}"
        )


def test_cached_signature_is_reverified(tmp_path, https_server, options, keys):
    good, _other = keys
    url = https_server.url("c.yaml")
    https_server.files["/c.yaml"] = CATALOG
    https_server.files["/c.yaml.sig"] = good.sign(CATALOG)
    opts = options(ca_file=https_server.ca_file)
    assert resolve(CFG, _set(tmp_path, [url], opts, keys=[good.path]), opts)
    # Offline, from the cache: the kept signature is checked again, and passes.
    off = options(ca_file=https_server.ca_file, offline=True)
    assert resolve(CFG, _set(tmp_path, [url], off, keys=[good.path]), off)
    # Someone edits the cached catalog: the re-verification refuses it.
    cached = next((tmp_path / "cache" / "catalogs").glob("*/catalog.yaml"))
    cached.write_bytes(CATALOG.replace(b"img:1", b"evil:1"))
    off = options(ca_file=https_server.ca_file, offline=True)
    with pytest.raises(CatalogSignatureError, match="has a bad signature"):
        resolve(CFG, _set(tmp_path, [url], off, keys=[good.path]), off)
    # Revalidation (304) keeps the cached bytes: still refused.
    cached.write_bytes(CATALOG.replace(b"img:1", b"evil:1"))
    opts = options(ca_file=https_server.ca_file)
    with pytest.raises(CatalogSignatureError, match="has a bad signature"):
        resolve(CFG, _set(tmp_path, [url], opts, keys=[good.path]), opts)


def test_no_key_means_no_signature_requests(tmp_path, https_server, options):
    url = https_server.url("c.yaml")
    https_server.files["/c.yaml"] = CATALOG
    opts = options(ca_file=https_server.ca_file)
    assert resolve(CFG, _set(tmp_path, [url], opts), opts).spec["image"] == "img:1"
    assert [p for p, _inm, _st in https_server.requests] == ["/c.yaml"]


def test_config_trust_section_key_per_catalog(tmp_path, https_server, options, keys, write):
    good, other = keys
    signed, unsigned = https_server.url("signed.yaml"), https_server.url("unsigned.yaml")
    https_server.files["/signed.yaml"] = CATALOG
    https_server.files["/signed.yaml.sig"] = good.sign(CATALOG)
    https_server.files["/unsigned.yaml"] = CATALOG
    config = write(
        "config/krm/config.yaml",
        f"trust:\n- catalog: {signed}\n  key: ../../keys/good.pub\n",
    )
    opts = options(ca_file=https_server.ca_file)
    assert resolve(CFG, _set(tmp_path, [signed], opts, config=config), opts)
    # The config's key applies to that catalog only; --catalog-key does not override it.
    opts = options(ca_file=https_server.ca_file)
    assert resolve(CFG, _set(tmp_path, [unsigned], opts, config=config), opts)
    opts = options(ca_file=https_server.ca_file)
    cs = _set(tmp_path, [signed], opts, config=config, keys=[other.path])
    assert resolve(CFG, cs, opts)
    config.write_text(f"trust:\n- catalog: {signed}\n  key: ../../keys/other.pub\n")
    opts = options(ca_file=https_server.ca_file)
    with pytest.raises(CatalogSignatureError, match=f"catalog {signed} has a bad signature"):
        resolve(CFG, _set(tmp_path, [signed], opts, config=config, keys=[good.path]), opts)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("trust: x\n", "trust must be a list of {catalog: REF, key: FILE}"),
        ("trust:\n- key: k.pub\n", "trust[0]: expected a mapping with catalog: REF and key: FILE"),
        ("trust:\n- catalog: c.yaml\n", "trust[0]: key must be a public key file"),
        ("trust:\n- catalog: c.yaml\n  key: k.pub\n  keys: x\n", "unknown field(s) keys"),
        ("trust:\n- catalog: c.yaml\n  key: nope.pub\n", "trust[0].key "),
    ],
)
def test_bad_trust_section(tmp_path, write, text, message):
    config = write("cfg/config.yaml", text)
    with pytest.raises(FunctionError) as exc:
        TrustConfig.load(config=str(config), cwd=str(tmp_path))
    assert str(exc.value).startswith(f"{config}: ")
    assert message in str(exc.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "No such file or directory"),
        (b"hello", "not a PEM public key (e.g. the registry's /signing-key.pub)"),
        (
            ec.generate_private_key(ec.SECP384R1())
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
            "must be an ECDSA P-256 public key",
        ),
    ],
)
def test_bad_catalog_key_file(tmp_path, content, message):
    path = tmp_path / "k.pub"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(FunctionError) as exc:
        TrustConfig.load(keys=["k.pub"], cwd=str(tmp_path))
    assert str(exc.value) == f"--catalog-key {path}: {message}"


def test_file_and_git_catalogs_use_sig_beside_them(tmp_path, options, keys, write):
    good, _other = keys
    path = write("cat/catalog.yaml", CATALOG)
    opts = options()
    with pytest.raises(CatalogSignatureError, match="has no signature"):
        resolve(CFG, _set(tmp_path, [str(path)], opts, keys=[good.path]), opts)
    write("cat/catalog.yaml.sig", good.sign(CATALOG))
    opts = options()
    assert resolve(CFG, _set(tmp_path, [str(path)], opts, keys=[good.path]), opts)

    repo = tmp_path / "repo"
    repo.mkdir()
    run = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True)  # noqa: E731
    run("init", "-q", "-b", "main")
    (repo / "catalog.yaml").write_bytes(CATALOG)
    (repo / "catalog.yaml.sig").write_bytes(good.sign(CATALOG))
    run("add", ".")
    run("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one")
    ref = f"git+file://{repo}//catalog.yaml?ref=main"
    opts = options()
    assert resolve(CFG, _set(tmp_path, [ref], opts, keys=[good.path]), opts)
    (repo / "catalog.yaml").write_bytes(CATALOG.replace(b"img:1", b"evil:1"))
    run("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qam", "two")
    opts = options()
    with pytest.raises(CatalogSignatureError, match="has a bad signature"):
        resolve(CFG, _set(tmp_path, [ref], opts, keys=[good.path]), opts)


def test_view_reports_signature_status(tmp_path, https_server, options, keys):
    good, other = keys
    url = https_server.url("c.yaml")
    https_server.files["/c.yaml"] = CATALOG
    https_server.files["/c.yaml.sig"] = good.sign(CATALOG)
    loaded = load(url, options=options(ca_file=https_server.ca_file))
    assert f"Signature: present, not verified (pass --catalog-key) [{url}.sig]" in render(loaded)
    loaded = load(url, options=options(ca_file=https_server.ca_file, catalog_keys=[str(good.path)]))
    assert summary(loaded)["signature"] == {
        "status": "verified",
        "keyId": good.key_id,
        "where": f"{url}.sig",
        "key": str(good.path),
    }
    assert f"Signature: verified with key {good.key_id} ({good.path})" in render(loaded)
    # A bad signature is reported, not raised: viewing is how one decides.
    loaded = load(
        url, options=options(ca_file=https_server.ca_file, catalog_keys=[str(other.path)])
    )
    assert render(loaded).splitlines()[4] == (
        f"Signature: INVALID: does not verify with {other.key_id} ({other.path}) [{url}.sig]"
    )
