"""The fault matrix: each broken upstream fails the run with its own reason, and the catalog that
was served before is still served byte for byte, with no new versions and no orphaned blobs."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import pytest

from catalogs.mirroring import services as mirrors
from tests.catalogs.mirroring.conftest import (
    BEACON,
    CATALOG_MEDIA_TYPE,
    GHA,
    SIGSTORE_DATA,
    catalog_doc,
    exec_catalog_doc,
    public_pem,
    sha256,
)

pytestmark = pytest.mark.django_db

DOC_V1 = catalog_doc("matrix", kinds=("A",))
DOC_V2 = catalog_doc("matrix", kinds=("A", "B"))
A_TXT = (SIGSTORE_DATA / "bundles" / "production" / "a.txt").read_bytes()


@dataclass
class Env:
    https: Any
    git: Any
    oci: Any
    settings: Any
    sync: Any
    keys: tuple[Any, Any]
    repo: str  # one OCI repository per case: the registry outlives each test


def create(name: str, url: str, **kwargs):
    return mirrors.mirror_source_create(name=name, url=url, actor=None, **kwargs)


def synced(env: Env, source):
    run = env.sync(source)
    assert (run.status, run.reason) == ("succeeded", "")
    return source


def https_source(env: Env, **kwargs):
    """A source at /matrix.yaml, synced once from DOC_V1; returns (source, url)."""
    url = env.https.serve("/matrix.yaml", DOC_V1)
    return synced(env, create("matrix", url, **kwargs)), url


def oci_source(env: Env, **kwargs):
    digest = env.oci.push_catalog(f"{env.repo}:v1", DOC_V1)
    if "cosign_public_key" in kwargs:
        env.oci.sign(f"{env.repo}", digest, env.keys[0])
    url = env.oci.url(f"{env.repo}:v1")
    return synced(env, create("matrix", url, **kwargs)), url


# --- the cases: arrange a served version, break the upstream, return the expected reason ---


def pin_mismatch(env: Env):
    source, _ = https_source(env, digest=sha256(DOC_V1))
    env.https.serve("/matrix.yaml", DOC_V2)
    return source, f"Digest pin mismatch: pinned {sha256(DOC_V1)}, upstream has {sha256(DOC_V2)}."


def oci_pin_mismatch(env: Env):
    digest = env.oci.push_catalog(f"{env.repo}:v1", DOC_V1)
    source = synced(env, create("matrix", env.oci.url(f"{env.repo}:v1"), digest=digest))
    moved = env.oci.push_catalog(f"{env.repo}:v1", DOC_V2)
    return source, f"Digest pin mismatch: pinned {digest}, upstream has {moved}."


def truncated_body(env: Env):
    source, url = https_source(env)
    env.https.serve("/matrix.yaml", DOC_V2, truncate_to=100)
    return source, f"Truncated body from {url}: got 100 of {len(DOC_V2)} bytes"


def http_500(env: Env):
    source, url = https_source(env)
    env.https.serve("/matrix.yaml", b"internal error", status=500)
    return source, f"GET {url} answered HTTP 500"


def too_slow(env: Env):
    source, url = https_source(env)
    env.settings.MIRROR_TIMEOUT = 0.5
    env.https.serve("/matrix.yaml", DOC_V2, delay=2.0)
    return source, f"Timed out after 0.5 s waiting for {url}"


def wrong_media_type(env: Env):
    source, url = oci_source(env)
    env.oci.push_catalog(f"{env.repo}:v1", DOC_V2, media_type="text/plain")
    return source, (
        f"{url} must have exactly one layer of media type {CATALOG_MEDIA_TYPE}; found: text/plain"
    )


def invalid_yaml(env: Env):
    source, _ = https_source(env)
    env.https.serve("/matrix.yaml", b"apiVersion: [unclosed\n")
    return source, (
        "The catalog document is invalid (1 problem). (document): did not find expected ',' "
        "or ']' (while parsing a flow sequence at line 1, column 13) (line 2)"
    )


def schema_invalid(env: Env):
    source, _ = https_source(env)
    env.https.serve(
        "/matrix.yaml",
        b"apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: x\n"
        b"spec:\n  krmFunctions:\n  - group: example.co\n",
    )
    return source, (
        "The catalog document is invalid (2 problems). spec.krmFunctions[0].names.kind: "
        "required field is missing (line 7); spec.krmFunctions[0].versions: required field is "
        "missing (line 7)"
    )


def bad_cosign_signature(env: Env):
    source, _ = oci_source(env, cosign_public_key=public_pem(env.keys[0]))
    digest = env.oci.push_catalog(f"{env.repo}:v1", DOC_V2)
    env.oci.sign(f"{env.repo}", digest, env.keys[0], tamper=True)
    tag = digest.replace(":", "-") + ".sig"
    return (
        source,
        f"No cosign signature in {tag} verifies with the source's public key (1 checked).",
    )


def cosign_other_key(env: Env):
    source, _ = oci_source(env, cosign_public_key=public_pem(env.keys[0]))
    digest = env.oci.push_catalog(f"{env.repo}:v1", DOC_V2)
    env.oci.sign(f"{env.repo}", digest, env.keys[1])
    tag = digest.replace(":", "-") + ".sig"
    return (
        source,
        f"No cosign signature in {tag} verifies with the source's public key (1 checked).",
    )


def cosign_missing(env: Env):
    source, _ = oci_source(env, cosign_public_key=public_pem(env.keys[0]))
    digest = env.oci.push_catalog(f"{env.repo}:v1", DOC_V2)
    tag = digest.replace(":", "-") + ".sig"
    return source, f"No cosign signature found for {digest} (tag {tag})."


def sigstore_other_identity(env: Env):
    """Real third-party bundle: a valid signature, but by another identity than the policy's."""
    source, _ = https_source(env)
    url = env.https.serve("/a.txt", A_TXT)
    bundle = (SIGSTORE_DATA / "bundles" / "production" / "a.txt.v0.3.sigstore.json").read_bytes()
    env.https.serve("/a.txt.sigstore.json", bundle)
    source = mirrors.mirror_source_update(
        source=source,
        actor=None,
        url=url,
        sigstore_identity="someone@example.co",
        sigstore_issuer=GHA,
    )
    return source, (
        f"Sigstore bundle at {url}.sigstore.json does not verify for identity someone@example.co "
        f"(issuer {GHA}): Certificate's SANs do not match someone@example.co; "
        f"actual SANs: {{'{BEACON}'}}"
    )


def sigstore_bad_signature(env: Env):
    """Real third-party negative bundle (conformance signature-mismatch) with the right identity."""
    source, _ = https_source(env)
    url = env.https.serve("/a.txt", A_TXT)
    bundle = SIGSTORE_DATA / "bundles" / "negative" / "signature-mismatch.sigstore.json"
    env.https.serve("/a.txt.sigstore.json", bundle.read_bytes())
    source = mirrors.mirror_source_update(
        source=source, actor=None, url=url, sigstore_identity=BEACON, sigstore_issuer=GHA
    )
    return source, (
        f"Sigstore bundle at {url}.sigstore.json does not verify for identity {BEACON} "
        f"(issuer {GHA}): Signature is invalid for input"
    )


def over_size_limit(env: Env):
    source, url = https_source(env)
    env.settings.MIRROR_MAX_BYTES = len(DOC_V1)
    env.https.serve("/matrix.yaml", DOC_V2)
    return source, (
        f"Body of {url} is {len(DOC_V2)} bytes, over the size limit of {len(DOC_V1)} bytes"
    )


def redirect_disallowed(env: Env):
    source, url = https_source(env)
    env.https.serve("/matrix.yaml", location="https://blocked.example/catalog.yaml")
    return source, (
        f"Redirect from {url} refused: Host 'blocked.example' is not allowed "
        "(MIRROR_ALLOWED_HOSTS): refusing https://blocked.example/catalog.yaml"
    )


def git_ref_moved(env: Env):
    first = env.git.commit({"catalog.yaml": DOC_V1})
    url = f"{env.git.path}//catalog.yaml?ref=main"
    source = synced(env, create("matrix", url, digest=first))
    moved = env.git.commit({"catalog.yaml": DOC_V2})
    return source, f"Git ref 'main' is at commit {moved}, not the pinned commit {first}."


def artifact_mismatch(env: Env):
    good, other = b"\x7fELF good binary" * 1000, b"\x7fELF other binary" * 1000
    good_url = env.https.serve("/bin/good", good)
    other_url = env.https.serve("/bin/other", other)
    hex_good = hashlib.sha256(good).hexdigest()
    v1 = exec_catalog_doc([("Good", good_url, hex_good)])
    url = env.https.serve("/matrix.yaml", v1)
    source = synced(env, create("matrix", url, mirror_runtimes=True))
    wrong = hashlib.sha256(b"what the catalog claims").hexdigest()
    env.https.serve(
        "/matrix.yaml",
        exec_catalog_doc([("Good", good_url, hex_good), ("Other", other_url, wrong)]),
    )
    return source, (
        f"Runtime artifact {other_url} has {sha256(other)}, the catalog declares sha256:{wrong}."
    )


CASES = [
    pin_mismatch,
    oci_pin_mismatch,
    truncated_body,
    http_500,
    too_slow,
    wrong_media_type,
    invalid_yaml,
    schema_invalid,
    bad_cosign_signature,
    cosign_other_key,
    cosign_missing,
    sigstore_other_identity,
    sigstore_bad_signature,
    over_size_limit,
    redirect_disallowed,
    git_ref_moved,
    artifact_mismatch,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_fault_fails_with_its_reason_and_loses_nothing(
    case,
    oci_settings,
    https_upstream,
    git_upstream,
    oci_upstream,
    sync,
    snapshot,
    cosign_key,
    other_cosign_key,
):
    env = Env(
        https_upstream,
        git_upstream,
        oci_upstream,
        oci_settings,
        sync,
        (cosign_key, other_cosign_key),
        f"matrix/{case.__name__}",
    )
    source, reason = case(env)
    before = snapshot(source)
    assert before["status"] == 200 and before["versions"] == 1

    run = sync(source)

    assert run.status == "failed"
    assert run.reason == reason
    assert run.catalog_version is None
    assert snapshot(source) == before
