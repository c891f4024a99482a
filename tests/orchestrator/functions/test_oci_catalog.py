"""``oci://`` catalog references against a real OCI registry (Debian's docker-registry).

The registry runs on a free loopback port; the catalog is pushed with oras as one layer of the
KEP's catalog media type; the engine pulls it by tag and by digest, and from the cache offline.
"""

from __future__ import annotations

import pytest

from orchestrator.functions import CatalogSet, FunctionError, TrustConfig
from orchestrator.functions.catalogs import CATALOG_MEDIA_TYPE
from orchestrator.functions.resolve import resolve
from tests.orchestrator.functions.conftest import REGISTRY

pytestmark = pytest.mark.skipif(REGISTRY is None, reason="docker-registry is not installed")

CATALOG = (
    "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: oci\n"
    "spec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: App\n"
    "    versions:\n    - name: v1\n      runtime:\n        container:\n"
    "          image: example/app:latest\n"
)


def _push(host: str, ref: str, content: bytes, media_type: str, scratch) -> str:
    import oras.oci
    import oras.provider

    client = oras.provider.Registry(hostname=host, insecure=True)
    container = client.get_container(f"{host}/{ref}")
    cfg = scratch / "config.json"
    cfg.write_bytes(b"{}")
    config, _ = oras.oci.ManifestConfig(str(cfg), "application/vnd.oci.empty.v1+json")
    client.upload_blob(str(cfg), container, config)
    layer_path = scratch / "layer"
    layer_path.write_bytes(content)
    layer = oras.oci.NewLayer(str(layer_path), media_type)
    client.upload_blob(str(layer_path), container, layer)
    manifest = oras.oci.NewManifest()
    manifest["config"] = config
    manifest["layers"].append(layer)
    resp = client.upload_manifest(manifest, container)
    assert resp.status_code == 201, resp.text
    return resp.headers["Docker-Content-Digest"]


def _resolve(tmp_path, ref: str, opts):
    trust = TrustConfig.load([ref], config=str(tmp_path / "none"))
    cs = CatalogSet.for_kustomization(
        [], kustomization_dir=str(tmp_path), trust=trust, options=opts
    )
    cfg = {"apiVersion": "example.com/v1", "kind": "App"}
    return resolve(cfg, cs, opts)


def test_pull_by_tag_digest_and_offline(tmp_path, registry, options):
    digest = _push(registry, "krm/catalog:v1", CATALOG.encode(), CATALOG_MEDIA_TYPE, tmp_path)
    by_tag = f"oci://{registry}/krm/catalog:v1"
    assert _resolve(tmp_path, by_tag, options()).spec["image"] == "example/app:latest"
    by_digest = f"oci://{registry}/krm/catalog@{digest}"
    assert _resolve(tmp_path, by_digest, options()).origin == f"catalog {by_digest}"
    assert _resolve(tmp_path, by_tag, options(offline=True)).spec["image"] == "example/app:latest"


def test_wrong_media_type_is_an_error(tmp_path, registry, options):
    _push(registry, "krm/other:v1", CATALOG.encode(), "application/octet-stream", tmp_path)
    ref = f"oci://{registry}/krm/other:v1"
    with pytest.raises(FunctionError) as exc:
        _resolve(tmp_path, ref, options())
    assert str(exc.value) == (
        f"cannot fetch catalog {ref}: {ref}: no layer of media type {CATALOG_MEDIA_TYPE}"
    )


def _cosign_sign(
    host: str, repo: str, digest: str, private_key, scratch, identity: str | None = None
) -> None:
    """Store a cosign simple-signing signature of ``digest`` at ``sha256-<hex>.sig`` (as
    ``cosign sign --key`` lays it out), written here with cryptography and oras only."""
    import base64
    import json

    import oras.oci
    import oras.provider
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    payload = json.dumps(
        {
            "critical": {
                "identity": {"docker-reference": identity or f"{host}/{repo}"},
                "image": {"docker-manifest-digest": digest},
                "type": "cosign container image signature",
            },
            "optional": None,
        }
    ).encode()
    signature = base64.b64encode(private_key.sign(payload, ec.ECDSA(hashes.SHA256()))).decode()
    client = oras.provider.Registry(hostname=host, insecure=True)
    container = client.get_container(f"{host}/{repo}:{digest.replace(':', '-')}.sig")
    cfg = scratch / "sig-config.json"
    cfg.write_bytes(b"{}")
    config, _ = oras.oci.ManifestConfig(str(cfg), "application/vnd.oci.empty.v1+json")
    client.upload_blob(str(cfg), container, config)
    layer_path = scratch / "payload.json"
    layer_path.write_bytes(payload)
    layer = oras.oci.NewLayer(str(layer_path), "application/vnd.dev.cosign.simplesigning.v1+json")
    layer["annotations"] = {"dev.cosignproject.cosign/signature": signature}
    client.upload_blob(str(layer_path), container, layer)
    manifest = oras.oci.NewManifest()
    manifest["config"] = config
    manifest["layers"].append(layer)
    assert client.upload_manifest(manifest, container).status_code == 201


def test_cosign_signed_catalog_from_any_registry(tmp_path, registry, options):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from orchestrator.functions.signatures import CatalogSignatureError

    key = ec.generate_private_key(ec.SECP256R1())
    pub = tmp_path / "cosign.pub"
    pub.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    digest = _push(registry, "krm/signed:v1", CATALOG.encode(), CATALOG_MEDIA_TYPE, tmp_path)
    ref = f"oci://{registry}/krm/signed@{digest}"

    def resolve_keyed(opts):
        trust = TrustConfig.load(
            [ref], keys=[str(pub)], config=str(tmp_path / "none"), cwd=str(tmp_path)
        )
        cs = CatalogSet.for_kustomization(
            [], kustomization_dir=str(tmp_path), trust=trust, options=opts
        )
        return resolve({"apiVersion": "example.com/v1", "kind": "App"}, cs, opts)

    with pytest.raises(CatalogSignatureError, match="has no signature"):
        resolve_keyed(options())
    _cosign_sign(registry, "krm/signed", digest, key, tmp_path)
    assert resolve_keyed(options()).spec["image"] == "example/app:latest"
    # Pinned by digest and cached with its signature: re-verified from the cache, offline too.
    assert resolve_keyed(options(offline=True)).spec["image"] == "example/app:latest"
    cached = next((tmp_path / "cache" / "oci").glob("*/catalog.yaml"))
    cached.write_bytes(CATALOG.replace("example/app", "evil/app").encode())
    with pytest.raises(CatalogSignatureError, match="is not the one the manifest names"):
        resolve_keyed(options(offline=True))


def test_cosign_signature_for_another_repository_is_refused(tmp_path, registry, options):
    """The same signed bytes pushed to another repository (mallory's catalog copied as acme's):
    the payload's docker-reference names the repository it was signed for."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from orchestrator.functions.signatures import CatalogSignatureError

    key = ec.generate_private_key(ec.SECP256R1())
    pub = tmp_path / "cosign.pub"
    pub.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    digest = _push(registry, "acme/functions:v1", CATALOG.encode(), CATALOG_MEDIA_TYPE, tmp_path)
    _cosign_sign(registry, "acme/functions", digest, key, tmp_path, f"{registry}/mallory/functions")
    ref = f"oci://{registry}/acme/functions:v1"
    trust = TrustConfig.load([ref], keys=[str(pub)], config=str(tmp_path / "no"), cwd=str(tmp_path))
    opts = options()
    cs = CatalogSet.for_kustomization(
        [], kustomization_dir=str(tmp_path), trust=trust, options=opts
    )
    with pytest.raises(CatalogSignatureError) as exc:
        resolve({"apiVersion": "example.com/v1", "kind": "App"}, cs, opts)
    assert str(exc.value) == (
        f"catalog {ref} has a bad signature: the signature is for {registry}/mallory/functions, "
        f"not {registry}/acme/functions (another repository's signed catalog) "
        f"(oci://{registry}/acme/functions:{digest.replace(':', '-')}.sig); a signing key "
        "applies to it, so it is not used and no function from it runs"
    )
