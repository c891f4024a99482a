"""End to end: the registry's TUF metadata, verified by the real ``krm`` command line.

The registry is pytest-django's ``live_server``; ``krm`` runs as a subprocess with an empty
cache and no key (the README's command: trust on first use). Attacks come from a rewriting
proxy on loopback (tests.orchestrator.functions.tufrepo.Proxy) in front of the live registry.
The app's exec function touches ``ran-exec-function``: after a refusal it must not exist.
"""

from __future__ import annotations

import hashlib
import json

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from securesystemslib.signer import CryptoSigner
from tuf.api.metadata import Metadata
from tuf.api.serialization.json import JSONSerializer

from catalogs.publishing import services
from tests.catalogs.factories import CatalogFactory, PublisherFactory, api_token_key
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
from tests.orchestrator.functions.tufrepo import Proxy

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world(live_server, catalog, owner, files_server, tmp_path):  # noqa: F811
    """example-co/functions published through the API; mallory/functions (the same functions,
    another runtime) published too; a proxy in front of the registry."""
    base, files, ca_file = files_server
    archive = _tgz(EXEC_FN)
    evil = _tgz(EXEC_FN.replace("web-exec", "evil"))
    files["/set-tier.tar.gz"] = archive
    files["/evil.tar.gz"] = evil
    files["/set-team.star"] = STARLARK_FN.encode()
    star = hashlib.sha256(STARLARK_FN.encode()).hexdigest()
    document = _catalog(base, hashlib.sha256(archive).hexdigest(), star)
    url = _publish(live_server, owner, document)
    theirs = _catalog(base, hashlib.sha256(evil).hexdigest(), star).replace(
        f"{base}/set-tier.tar.gz", f"{base}/evil.tar.gz"
    )
    mallory = CatalogFactory(publisher=PublisherFactory(slug="mallory"), name="functions")
    services.catalog_version_publish(catalog=mallory, content=theirs, actor=None)
    proxy = Proxy(live_server.url)
    yield {
        "url": url,
        "ca": ca_file,
        "app": _app(tmp_path),
        "home": tmp_path / "home",
        "proxy": proxy,
        "token": api_token_key(owner),
        "live": live_server.url,
        "document": document,
    }
    proxy.close()


def _build(w, url: str):
    (w["app"] / "ran-exec-function").unlink(missing_ok=True)
    return _krm(w["app"], f"--trusted-catalog={url}", ca_file=w["ca"], home=w["home"])


def _refused(w, proc, message: str) -> None:
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    app = w["app"]
    assert errors in (
        [f"Error: {message}"],
        [f"Error: {app}/kustomization.yaml: {message}"],
    ), proc.stderr
    assert not (app / "ran-exec-function").exists(), "the function ran"


def test_no_key_first_use_then_a_proxy_serving_another_publishers_catalog(world):
    live, proxy = world["live"], world["proxy"]
    root = httpx.get(f"{live}/tuf/root.json").content
    proc = _build(world, world["url"])
    assert proc.returncode == 0, proc.stderr
    assert "tier: web-exec" in proc.stdout
    assert (world["app"] / "ran-exec-function").exists()
    assert proc.stderr == (
        f"Warning: trusting registry {live} on first use: pinned its TUF root (version 1, "
        f"sha256:{hashlib.sha256(root).hexdigest()}); 'krm trust add {live} --root-sha256 "
        "<digest>' pins one you have checked\n"
    )
    # Through the proxy, honest at first: pinned on first use too, and built.
    via = world["url"].replace(live, proxy.base)
    proc = _build(world, via)
    assert proc.returncode == 0, proc.stderr
    # Now it serves mallory's catalog (signed by the same registry) at example-co's URL, as
    # soon as example-co publishes again (the signed state changed: no warm build).
    theirs = httpx.get(f"{live}/c/mallory/functions/catalog.yaml").content
    assert b"evil.tar.gz" in theirs
    proxy.rewrite["/c/example-co/functions/catalog.yaml"] = theirs
    _bump(world, 2)
    _refused(
        world,
        _build(world, via),
        f"catalog {via}: the catalog served at {via} is not the one registry {proxy.base} "
        "signed for example-co/functions/catalog.yaml (another catalog's, an older version, or "
        "altered on the way); no function from this catalog runs",
    )
    # ... or mallory's revocation list in place of example-co's, once example-co's changed
    # (an unchanged list is not fetched again: the copy verified before is used).
    del proxy.rewrite["/c/example-co/functions/catalog.yaml"]
    listed = httpx.get(f"{live}/c/mallory/functions/revocations.yaml").content
    assert b"name: functions\n  publisher: mallory" in listed
    proxy.rewrite["/c/example-co/functions/revocations.yaml"] = listed
    resp = httpx.post(
        f"{live}/api/v1/catalogs/example-co/functions/revocations/",
        json={"group": "fn.example.com", "kind": "SetTier", "version": "v1", "reason": "broken"},
        headers={"Authorization": f"Token {world['token']}"},
    )
    assert resp.status_code == 201, resp.text
    _refused(
        world,
        _build(world, via),
        f"catalog {via}: the revocation list served at "
        f"{proxy.base}/c/example-co/functions/revocations.yaml is not the one registry "
        f"{proxy.base} signed for example-co/functions/revocations.yaml (another catalog's, an "
        "older version, or altered on the way); no function from this catalog runs",
    )
    # The registry's own list, through the same proxy: the revocation applies.
    proxy.rewrite.clear()
    _refused(
        world,
        _build(world, via),
        f"fn.example.com/v1 SetTier from catalog {via} is revoked: broken (revocation list "
        f"sequence 1, {proxy.base}/c/example-co/functions/revocations.yaml); it is not run",
    )


def _bump(world, n: int) -> None:
    """Publish another version of example-co/functions (the signed state changes)."""
    document = world["document"].replace(
        "    publisher: example-co", f"    description: release {n}\n    publisher: example-co", 1
    )
    resp = httpx.post(
        f"{world['live']}/api/v1/catalogs/example-co/functions/versions/",
        content=document.encode(),
        headers={"Authorization": f"Token {world['token']}", "Content-Type": "application/yaml"},
    )
    assert resp.status_code == 201, resp.text
    assert resp.json()["version"] == n


def test_a_revocation_through_the_api_stops_the_next_build(world):
    assert _build(world, world["url"]).returncode == 0
    resp = httpx.post(
        f"{world['live']}/api/v1/catalogs/example-co/functions/revocations/",
        json={"group": "fn.example.com", "kind": "SetTier", "version": "v1", "reason": "broken"},
        headers={"Authorization": f"Token {world['token']}"},
    )
    assert resp.status_code == 201, resp.text
    url = world["url"]
    _refused(
        world,
        _build(world, url),
        f"fn.example.com/v1 SetTier from catalog {url} is revoked: broken (revocation list "
        f"sequence 1, {world['live']}/c/example-co/functions/revocations.yaml); it is not run",
    )


def _role_targets(live: str, role: str) -> dict:
    """The targets of ``role`` as served now (timestamp, then snapshot, then the role)."""
    timestamp = httpx.get(f"{live}/tuf/timestamp.json").json()["signed"]
    snapshot_version = timestamp["meta"]["snapshot.json"]["version"]
    snapshot = httpx.get(f"{live}/tuf/{snapshot_version}.snapshot.json").json()["signed"]
    version = snapshot["meta"][f"{role}.json"]["version"]
    return httpx.get(f"{live}/tuf/{version}.{role}.json").json()["signed"]["targets"]


def test_a_deprecation_is_signed_and_warned_about_pinned_latest_and_warm(world):
    """A deprecated version still builds, with one warning naming it: the message travels in the
    version's signed TUF target, so krm sees it fresh for a pinned URL and on a warm build."""
    live, url = world["live"], world["url"]
    pinned = url.replace("/catalog.yaml", "/versions/1/catalog.yaml")
    for each in (url, pinned):
        proc = _build(world, each)
        assert proc.returncode == 0, proc.stderr
        assert "deprecated" not in proc.stderr
    message = "Use v2: v1 leaks labels."
    resp = httpx.patch(
        f"{live}/api/v1/catalogs/example-co/functions/versions/1/",
        json={"deprecation": message},
        headers={"Authorization": f"Token {world['token']}"},
    )
    assert resp.status_code == 200, resp.text
    role = _role_targets(live, "example-co")
    signed = {"deprecation": message}
    assert role["example-co/functions/versions/1/catalog.yaml"]["custom"] == signed
    assert role["example-co/functions/catalog.yaml"]["custom"] == signed
    for each in (url, pinned, url):  # the second build of latest is a warm one
        proc = _build(world, each)
        assert proc.returncode == 0, proc.stderr
        assert (world["app"] / "ran-exec-function").exists()
        assert proc.stderr == (
            f"Warning: catalog {each}: version 1 is deprecated by its publisher: "
            "Use v2: v1 leaks labels.\n"
        )
    # Withdrawn: the next build says nothing again.
    resp = httpx.patch(
        f"{live}/api/v1/catalogs/example-co/functions/versions/1/",
        json={"deprecation": ""},
        headers={"Authorization": f"Token {world['token']}"},
    )
    assert resp.status_code == 200, resp.text
    assert "custom" not in _role_targets(live, "example-co")["example-co/functions/catalog.yaml"]
    proc = _build(world, pinned)
    assert (proc.returncode, proc.stderr) == (0, "")


def _register_key(world, signer: CryptoSigner) -> None:
    pem = signer._private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    resp = httpx.post(
        f"{world['live']}/api/v1/publishers/example-co/keys/",
        json={"public_key": pem.decode()},
        headers={"Authorization": f"Token {world['token']}"},
    )
    assert resp.status_code == 201, resp.text
    assert resp.json()["keyid"] == signer.public_key.keyid


def _sign_role(world, signer) -> httpx.Response:
    role_url = f"{world['live']}/api/v1/publishers/example-co/tuf/example-co.json"
    template = httpx.get(role_url)
    assert template.status_code == 200, template.text
    md = Metadata.from_dict(template.json())
    md.sign(signer)
    return httpx.put(
        role_url,
        content=md.to_bytes(JSONSerializer()),
        headers={"Authorization": f"Token {world['token']}", "Content-Type": "application/json"},
    )


def test_a_publisher_key_makes_the_registry_key_alone_insufficient(world):
    live, proxy = world["live"], world["proxy"]
    via = world["url"].replace(live, proxy.base)
    assert _build(world, via).returncode == 0  # pinned on first use, through the proxy
    publisher_key = CryptoSigner.generate_ed25519()
    _register_key(world, publisher_key)
    # The registry does not sign example-co's role any more: the one it signed before no
    # longer verifies under the delegation to the publisher's key.
    proc = _build(world, via)
    assert proc.returncode == 1 and not (world["app"] / "ran-exec-function").exists()
    assert "is not signed by the key(s) that role requires" in proc.stderr, proc.stderr
    # A role the registry's key signs (a stolen registry key, on the path) is refused too.
    snapshot = json.loads(httpx.get(f"{live}/tuf/timestamp.json").content)
    snap_version = snapshot["signed"]["meta"]["snapshot.json"]["version"]
    meta = json.loads(httpx.get(f"{live}/tuf/{snap_version}.snapshot.json").content)
    role_version = meta["signed"]["meta"]["example-co.json"]["version"]
    template = httpx.get(f"{live}/api/v1/publishers/example-co/tuf/example-co.json").json()
    forged = Metadata.from_dict(template)
    forged.signed.version = role_version
    from catalogs.trust import tuf

    forged.sign(tuf.online_signer())
    proxy.rewrite[f"/tuf/{role_version}.example-co.json"] = forged.to_bytes(JSONSerializer())
    _refused(
        world,
        _build(world, via),
        f"catalog {via}: the TUF metadata of publisher example-co (role 'example-co') on "
        f"registry {proxy.base} is not signed by the key(s) that role requires (example-co was "
        "signed by 0/1 keys); when a publisher holds its own key, the registry's key alone "
        "cannot sign for it, so no function from this catalog runs",
    )
    proxy.rewrite.clear()
    # The API refuses a role signed by anyone but the publisher.
    resp = _sign_role(world, tuf.online_signer())
    assert resp.status_code == 400
    assert "is not signed by a key publisher 'example-co' registered" in resp.text
    # Signed by the publisher with `krm catalog sign` (from CI, with its local key): accepted.
    key_file = world["app"].parent / "acme-key.pem"
    key_file.write_bytes(
        publisher_key._private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    sign = ["catalog", "sign", live, "--publisher", "example-co", "--key", str(key_file)]
    proc = _krm_cmd(*sign, ca_file=world["ca"], home=world["home"])
    assert (proc.returncode, proc.stderr) == (
        1,
        "Error: no API token: set KRM_REGISTRY_TOKEN (a token of an owner of the publisher)\n",
    )
    proc = _krm_cmd(*sign, ca_file=world["ca"], home=world["home"], token=world["token"])
    assert proc.returncode == 0, proc.stderr
    version = tuf.current("example-co").version
    assert proc.stdout == (
        f"Signed role example-co version {version} (3 targets) and uploaded it to {live}\n"
    )
    # Another key than the registered one: refused by the registry, with its reason.
    other = world["app"].parent / "other-key.pem"
    other.write_bytes(
        CryptoSigner.generate_ecdsa()._private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    proc = _krm_cmd(*sign[:-1], str(other), ca_file=world["ca"], home=world["home"],
                    token=world["token"])  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"Error: registry {live} refused the role signed with key ")
    assert proc.stderr.endswith(
        "(HTTP 400): The role is not signed by a key publisher 'example-co' registered "
        "(example-co was signed by 0/1 keys).\n"
    )
    proc = _build(world, via)
    assert proc.returncode == 0, proc.stderr
    assert (world["app"] / "ran-exec-function").exists()


def test_catalog_key_anchors_the_root(world, tmp_path):
    """``--catalog-key`` given the registry's /signing-key.pub pins the root it signed."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    live, url = world["live"], world["url"]
    key = tmp_path / "registry.pub"
    pub = httpx.get(f"{live}/signing-key.pub")
    key.write_bytes(pub.content)
    other = tmp_path / "other.pub"
    other.write_bytes(
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    from orchestrator.functions.signatures import load_key

    other_key = load_key(str(other))
    app, ca = world["app"], world["ca"]
    proc = _krm(app, f"--trusted-catalog={url}", f"--catalog-key={other}", ca_file=ca,
                home=world["home"])  # fmt: skip
    _refused(
        world,
        proc,
        f"catalog {url}: the TUF root {live}/tuf/root.json is not signed by {other_key}; no "
        "function from this catalog runs",
    )
    proc = _krm(app, f"--trusted-catalog={url}", f"--catalog-key={key}", ca_file=ca,
                home=world["home"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # pinned by the key: no first-use warning
    assert (app / "ran-exec-function").exists()


def test_an_older_version_at_latest_or_a_missing_list_is_refused(world):
    url, live, proxy = world["url"], world["live"], world["proxy"]
    via = url.replace(live, proxy.base)
    first = httpx.get(f"{live}/c/example-co/functions/versions/1/catalog.yaml").content
    _bump(world, 2)
    # The proxy serves version 1 (signed by the registry, once the latest) as the latest.
    proxy.rewrite["/c/example-co/functions/catalog.yaml"] = first
    _refused(
        world,
        _build(world, via),
        f"catalog {via}: the catalog served at {via} is not the one registry {proxy.base} "
        "signed for example-co/functions/catalog.yaml (another catalog's, an older version, or "
        "altered on the way); no function from this catalog runs",
    )
    # A proxy that answers 404 for the revocation list: an error, never "no revocations".
    proxy.rewrite = {"/c/example-co/functions/revocations.yaml": None}
    _refused(
        world,
        _build(world, via),
        f"catalog {via}: the signed revocation list example-co/functions/revocations.yaml cannot "
        f"be fetched from {proxy.base}/c/example-co/functions/revocations.yaml (HTTP 404); a "
        "missing revocation list is an error, not an empty one",
    )
    proxy.rewrite = {}
    assert _build(world, via).returncode == 0


@pytest.fixture
def binned(settings):
    """Hashed bins from the first target on (before ``world`` publishes)."""
    settings.TRUST_HASHED_BINS_THRESHOLD = 1
    settings.TRUST_HASHED_BINS = 16


def test_a_publisher_in_hashed_bins_builds_by_url_and_by_digest(binned, world):
    live = world["live"]
    targets = httpx.get(f"{live}/tuf/timestamp.json").json()  # the repository exists
    assert targets["signed"]["_type"] == "timestamp"
    snapshot = httpx.get(
        f"{live}/tuf/{targets['signed']['meta']['snapshot.json']['version']}.snapshot.json"
    ).json()["signed"]["meta"]
    assert "example-co.bin-0.json" in snapshot and "example-co.bin-f.json" in snapshot
    proc = _build(world, world["url"])
    assert proc.returncode == 0, proc.stderr
    assert "tier: web-exec" in proc.stdout
    # A digest URL: krm finds which signed version those bytes are, through every bin.
    digest = hashlib.sha256(httpx.get(world["url"]).content).hexdigest()
    by_digest = world["url"].replace("/catalog.yaml", f"/sha256/{digest}/catalog.yaml")
    proc = _build(world, by_digest)
    assert proc.returncode == 0, proc.stderr
    assert (world["app"] / "ran-exec-function").exists()
