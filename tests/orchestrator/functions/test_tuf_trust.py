"""Catalogs verified through a registry's TUF metadata, through the real ``krm`` command line.

The registry is a TUF repository written with python-tuf's Metadata API (tufrepo.Repo), served
by a real local HTTP server; attacks come from a rewriting proxy on loopback (tufrepo.Proxy).
Two publishers: acme and mallory, each publishing a catalog with the same group, kind and
version. Every refusal exits non-zero with one message naming the catalog, and the function
(which touches a marker file when it runs) did not run.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.functions.resolve import host_platform
from tests.orchestrator.functions.test_cli_functions import _krm
from tests.orchestrator.functions.tufrepo import CATALOG, Proxy, Repo, revocations

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
BUILT = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    exec-fn: ran\n  name: a\n"


class World:
    """The registry, its proxy, the app to build and the user's home."""

    def __init__(self, tmp_path: Path, server, kit, write):
        self.tmp = tmp_path
        self.server = server
        self.repo = Repo(server.files)
        self.sha = kit.make_tgz(tmp_path / "fn.tgz", {"bin/fn": kit.LABEL_FN})
        os_name, arch = host_platform()
        fields = {"os": os_name, "arch": arch, "uri": f"file://{tmp_path / 'fn.tgz'}"}
        fields["sha"] = self.sha
        self.acme = CATALOG.format(name="functions", publisher="acme", **fields).encode()
        self.mallory = CATALOG.format(name="functions", publisher="mallory", **fields).encode()
        self.repo.publisher("acme")
        self.repo.publisher("mallory")
        self.repo.publish_catalog("acme", "functions", self.acme)
        self.repo.publish_catalog("mallory", "functions", self.mallory)
        self.repo.publish()
        write("app/kustomization.yaml", "resources:\n- cm.yaml\ntransformers:\n- fn.yaml\n")
        write("app/cm.yaml", CM)
        write("app/fn.yaml", "apiVersion: example.com/v1\nkind: Labeler\nmetadata:\n  name: l\n")
        self.app = tmp_path / "app"
        self.home = tmp_path / "home"
        self.marker = tmp_path / "ran"
        self.proxy = Proxy(server.base)

    def url(self, publisher: str = "acme", *, via_proxy: bool = False, path: str = "") -> str:
        base = self.proxy.base if via_proxy else self.server.base
        return f"{base}/c/{publisher}/functions/{path or 'catalog.yaml'}"

    def build(self, *refs: str, extra: tuple[str, ...] = ()):
        self.marker.unlink(missing_ok=True)
        flags = [f"--trusted-catalog={r}" for r in refs]
        return _krm(
            "build", str(self.app), *flags, "-e", f"MARKER={self.marker}", *extra, home=self.home
        )

    def error(self, proc) -> str:
        """The one error line, without the kustomization file it names first (if any)."""
        [line] = [x for x in proc.stderr.splitlines() if x.startswith("Error:")]
        return line.replace(f"Error: {self.app}/kustomization.yaml: ", "Error: ")

    def refused(self, proc, message: str) -> None:
        assert proc.returncode == 1, proc.stderr
        assert proc.stdout == ""
        errors = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
        # Errors about a kustomization's function name its file first.
        assert errors in (
            [f"Error: {message}"],
            [f"Error: {self.app}/kustomization.yaml: {message}"],
        ), proc.stderr
        assert not self.marker.exists(), "the function ran"


@pytest.fixture
def world(tmp_path, http_server, kit, write):
    w = World(tmp_path, http_server, kit, write)
    yield w
    w.proxy.close()


def test_build_pins_root_on_first_use_then_verifies(world):
    proc = world.build(world.url())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == BUILT
    assert world.marker.exists()
    root_sha = hashlib.sha256(world.repo.root_bytes).hexdigest()
    assert proc.stderr == (
        f"Warning: trusting registry {world.server.base} on first use: pinned its TUF root "
        f"(version 1, sha256:{root_sha}); 'krm trust add {world.server.base} --root-sha256 "
        "<digest>' pins one you have checked\n"
    )
    listed = _krm("trust", "list", home=world.home)
    assert listed.returncode == 0
    assert f"{world.server.base}  v1    {root_sha[:16]}  first use" in listed.stdout
    # The second build: no warning, the same result. The signed state is unchanged (the same
    # timestamp bytes, no root 2), so what was verified is used: two requests in all.
    del world.server.requests[:]
    proc = world.build(world.url())
    assert (proc.returncode, proc.stderr, proc.stdout) == (0, "", BUILT)
    assert [p for p, _, _ in world.server.requests] == ["/tuf/2.root.json", "/tuf/timestamp.json"]
    # ... and nothing of tuf or its cryptography is loaded for that.
    root = os.environ.get("PYTHONPATH") or str(Path(__file__).resolve().parents[3])
    env = {"PATH": "/usr/bin:/bin", "HOME": str(world.home), "PYTHONPATH": root}
    env.update(XDG_CACHE_HOME=str(world.home / "cache"), XDG_CONFIG_HOME=str(world.home / "c"))
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "orchestrator", "build", str(world.app),
         f"--trusted-catalog={world.url()}", "-e", f"MARKER={world.marker}"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert (proc.returncode, proc.stdout) == (0, BUILT)
    loaded = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "orchestrator.functions.tufcache" in loaded
    assert not {"tuf", "securesystemslib", "orchestrator.functions.tufclient"} & loaded


def test_warm_build_sees_a_new_revocation_at_once(world):
    assert world.build(world.url()).returncode == 0
    world.repo.put("acme/functions/revocations.yaml", revocations(1, REVOKED))
    world.repo.publish()
    ref = world.url()
    world.refused(
        world.build(ref),
        f"example.com/v1 Labeler from catalog {ref} is revoked: backdoor (revocation list "
        f"sequence 1, {world.server.base}/c/acme/functions/revocations.yaml); it is not run",
    )


def test_warm_build_ignores_what_a_proxy_swaps_but_not_a_stale_timestamp(world):
    ref = world.url(via_proxy=True)
    assert world.build(ref).returncode == 0
    # Same signed state: the catalog and list verified before are used, whatever is served now.
    world.proxy.rewrite["/c/acme/functions/catalog.yaml"] = world.mallory
    world.proxy.rewrite["/c/acme/functions/revocations.yaml"] = None
    proc = world.build(ref)
    assert (proc.returncode, proc.stdout) == (0, BUILT), proc.stderr
    assert "/c/acme/functions/catalog.yaml" not in world.proxy.seen[-2:]
    # A frozen timestamp is refused once it expires, warm or not.
    record = next((world.home / "cache" / "krm" / "tuf").glob("*/verified.json"))
    state = json.loads(record.read_text())
    state["expires"] = 0
    record.write_text(json.dumps(state))
    world.repo.timestamp_expires = (
        datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=3)
    ).replace(microsecond=0)
    world.repo.publish()
    proc = world.build(ref)
    assert proc.returncode == 1 and not world.marker.exists()
    assert "is stale: its timestamp expired 3 hours ago" in proc.stderr


def test_oci_ref_and_url_spellings_are_verified_the_same_way(world):
    host = world.server.base.removeprefix("http://")
    for ref in (
        f"oci://{host}/acme/functions:latest",
        f"oci://{host}/acme/functions:v1",
        world.url(path="catalog%2Eyaml"),
        world.server.base + "/c/acme/%66unctions/versions/1/catalog.yaml",
    ):
        proc = world.build(ref)
        assert proc.returncode == 0, (ref, proc.stderr)
        assert proc.stdout == BUILT


@pytest.mark.parametrize("how", ["https", "oci"])
def test_mix_and_match_refused(world, how):
    """The proxy serves mallory's signed catalog (same group/kind/version) as acme's."""
    world.proxy.rewrite["/c/acme/functions/catalog.yaml"] = world.mallory
    ref = world.url(via_proxy=True)
    if how == "oci":
        ref = f"oci://{world.proxy.base.removeprefix('http://')}/acme/functions:latest"
    proc = world.build(ref)
    world.refused(
        proc,
        f"catalog {ref}: the catalog served at {world.proxy.base}/c/acme/functions/catalog.yaml "
        f"is not the one registry {world.proxy.base} signed for acme/functions/catalog.yaml "
        "(another catalog's, an older version, or altered on the way); no function from this "
        "catalog runs",
    )


def test_mallory_cannot_sign_acme_paths(world):
    """Mallory's role signs a target at acme's path: the delegation is terminating and names
    only mallory/* paths, so acme's target is still acme's."""
    world.repo.content["mallory"]["acme/functions/catalog.yaml"] = world.mallory
    world.repo.publish()
    world.proxy.rewrite["/c/acme/functions/catalog.yaml"] = world.mallory
    proc = world.build(world.url(via_proxy=True))
    assert proc.returncode == 1 and "is not the one registry" in proc.stderr
    assert not world.marker.exists()


def test_rollback_of_latest_refused(world):
    newer = world.acme.replace(b"name: functions", b"name: functions-v2")
    world.repo.publish_catalog("acme", "functions", newer)
    world.repo.publish()
    world.proxy.rewrite["/c/acme/functions/catalog.yaml"] = world.acme  # version 1, signed once
    ref = world.url(via_proxy=True)
    proc = world.build(ref)
    world.refused(
        proc,
        f"catalog {ref}: the catalog served at {world.proxy.base}/c/acme/functions/catalog.yaml "
        f"is not the one registry {world.proxy.base} signed for acme/functions/catalog.yaml "
        "(another catalog's, an older version, or altered on the way); no function from this "
        "catalog runs",
    )


REVOKED = [{"sequence": 1, "reason": "backdoor", "kind": "Labeler", "group": "example.com",
            "version": "v1"}]  # fmt: skip


def test_revocations_apply_to_https_oci_and_any_spelling(world):
    world.repo.put("acme/functions/revocations.yaml", revocations(1, REVOKED))
    world.repo.publish()
    host = world.server.base.removeprefix("http://")
    for ref in (
        world.url(),
        world.url(path="catalog%2Eyaml"),
        f"oci://{host}/acme/functions:latest",
        world.server.base + "/c/acme/%66unctions/versions/1/catalog.yaml",
    ):
        proc = world.build(ref)
        world.refused(
            proc,
            f"example.com/v1 Labeler from catalog {ref} is revoked: backdoor (revocation list "
            f"sequence 1, {world.server.base}/c/acme/functions/revocations.yaml); it is not run",
        )


@pytest.mark.parametrize("attack", ["removed", "swapped", "older", "unsigned"])
def test_revocation_list_attacks_refused(world, attack):
    older = world.repo.content["acme"]["acme/functions/revocations.yaml"]
    world.repo.put("acme/functions/revocations.yaml", revocations(1, REVOKED))
    world.repo.publish()
    path = "/c/acme/functions/revocations.yaml"
    ref = world.url(via_proxy=True)
    base = world.proxy.base
    tail = (
        f"is not the one registry {base} signed for acme/functions/revocations.yaml "
        "(another catalog's, an older version, or altered on the way); no function from this "
        "catalog runs"
    )
    if attack == "removed":
        world.proxy.rewrite[path] = None
        message = (
            f"catalog {ref}: the signed revocation list acme/functions/revocations.yaml cannot be "
            f"fetched from {base}{path} (HTTP 404); a missing revocation list is an error, not "
            "an empty one"
        )
    elif attack == "swapped":
        world.proxy.rewrite[path] = world.repo.content["mallory"][
            "mallory/functions/revocations.yaml"
        ]
        message = f"catalog {ref}: the revocation list served at {base}{path} {tail}"
    elif attack == "older":
        world.proxy.rewrite[path] = older
        message = f"catalog {ref}: the revocation list served at {base}{path} {tail}"
    else:
        # The registry (or an attacker who can publish metadata) drops the list from the
        # signed targets: a TUF catalog without a signed list is refused.
        del world.repo.content["acme"]["acme/functions/revocations.yaml"]
        world.repo.publish()
        message = (
            f"catalog {ref}: registry {base} signs no revocation list for it "
            "(acme/functions/revocations.yaml); a catalog verified through TUF must have one, "
            "so the build stops rather than run without its revocations"
        )
    world.refused(world.build(ref), message)


def test_frozen_metadata_refused_with_how_stale(world):
    world.repo.timestamp_expires = (
        datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=5)
    ).replace(microsecond=0)
    world.repo.publish()
    ref = world.url()
    proc = world.build(ref)
    expires = world.repo.timestamp_expires.isoformat()
    world.refused(
        proc,
        f"catalog {ref}: the TUF metadata of registry {world.server.base} is stale: its "
        f"timestamp expired 5 hours ago ({expires}); the registry (or something between it and "
        "you) serves frozen metadata, so no function from this catalog runs (--offline builds "
        "from the metadata cached earlier)",
    )


def test_offline_uses_cached_metadata_and_says_its_age(world):
    assert world.build(world.url()).returncode == 0
    world.server.files.clear()  # the registry is gone
    proc = world.build(world.url(), extra=("--offline",))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == BUILT
    assert proc.stderr.startswith(
        f"Warning: --offline: using the TUF metadata of registry {world.server.base} refreshed "
    )
    assert proc.stderr.endswith(" seconds ago\n")


def test_publisher_key_refuses_registry_signed_role(world):
    world.repo.publisher("acme", own_key=True)
    world.repo.publish()
    proc = world.build(world.url())  # signed by acme's own key: accepted
    assert proc.returncode == 0, proc.stderr
    # A stolen registry key signs acme's role: refused.
    world.repo.sign_role_with["acme"] = [world.repo.key]
    world.repo.put("acme/functions/catalog.yaml", world.mallory)
    world.repo.publish()
    ref = world.url()
    world.refused(
        world.build(ref),
        f"catalog {ref}: the TUF metadata of publisher acme (role 'acme') on registry "
        f"{world.server.base} is not signed by the key(s) that role requires (acme was signed "
        "by 0/1 keys); when a publisher holds its own key, the registry's key alone cannot "
        "sign for it, so no function from this catalog runs",
    )


def test_root_pinned_on_first_use_refuses_another_registrys_root(world, tmp_path):
    ref = world.url(via_proxy=True)
    assert world.build(ref).returncode == 0  # pinned through the proxy
    impostor: dict[str, bytes] = {}
    other = Repo(impostor)
    other.publisher("acme")
    other.publish_catalog("acme", "functions", world.mallory)
    other.publish()
    world.proxy.impostor = impostor
    proc = world.build(ref)
    assert proc.returncode == 1 and not world.marker.exists()
    line = world.error(proc)
    assert line.startswith(
        f"Error: catalog {ref}: the TUF metadata served for registry {world.proxy.base} is not "
        "signed by the keys of the root pinned ("
    )
    assert line.endswith(
        "root pinned by first use); a root that changed without a rotation signed by the "
        "pinned one is refused, and no function from this catalog runs"
    )
    # Even its own "rotation" (a root 2 not signed by the pinned root) is refused.
    other.rotate_root(other.key, signed_by_old=False)
    other.publish()
    proc = world.build(ref)
    assert proc.returncode == 1 and not world.marker.exists()
    assert "is not signed by the keys of the root pinned" in proc.stderr


def test_signed_root_rotation_is_followed(world):
    assert world.build(world.url()).returncode == 0
    from securesystemslib.signer import CryptoSigner

    world.repo.rotate_root(CryptoSigner.generate_ecdsa())
    world.repo.publish()
    proc = world.build(world.url())
    assert (proc.returncode, proc.stdout) == (0, BUILT), proc.stderr


def test_catalog_key_anchors_the_root(world, tmp_path):
    key = tmp_path / "registry.pub"
    key.write_bytes(world.server.files["/signing-key.pub"])
    proc = world.build(world.url(), extra=("--catalog-key", str(key)))
    assert (proc.returncode, proc.stderr, proc.stdout) == (0, "", BUILT)
    state = json.loads(
        next((world.home / "cache" / "krm" / "tuf").glob("*/trust.json")).read_text()
    )
    assert state["how"].startswith("--catalog-key ")


def test_catalog_key_of_another_registry_refused(world, tmp_path):
    other = tmp_path / "other.pub"
    other.write_bytes(Repo({}).files["/signing-key.pub"])
    ref = world.url()
    proc = world.build(ref, extra=("--catalog-key", str(other)))
    assert proc.returncode == 1 and not world.marker.exists()
    line = world.error(proc)
    assert line.startswith(
        f"Error: catalog {ref}: the TUF root {world.server.base}/tuf/root.json is not signed by "
    )
    assert line.endswith("; no function from this catalog runs")
    assert not (world.home / "cache" / "krm" / "tuf").exists() or not list(
        (world.home / "cache" / "krm" / "tuf").glob("*/trust.json")
    )


def test_trust_add_with_root_file_and_sha256_and_remove(world, tmp_path):
    base = world.server.base
    root_file = tmp_path / "root.json"
    root_file.write_bytes(world.repo.root_bytes)
    digest = hashlib.sha256(world.repo.root_bytes).hexdigest()
    proc = _krm("trust", "add", base, "--root", str(root_file), home=world.home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        f"pinned registry {base}: TUF root version 1, sha256:{digest} (by root file {root_file})\n"
    )
    again = _krm("trust", "add", base, home=world.home)
    assert again.returncode == 1
    assert again.stderr == (
        f"Error: registry {base} is already pinned (root version 1, sha256:{digest}, by root "
        f"file {root_file}); 'krm trust remove {base}' first to pin another root\n"
    )
    proc = _krm("trust", "remove", base + "/", home=world.home)
    assert (proc.returncode, proc.stdout) == (0, f"removed registry {base} from the trust store\n")
    wrong = "0" * 64
    proc = _krm("trust", "add", base, "--root-sha256", wrong, home=world.home)
    assert proc.returncode == 1
    assert proc.stderr == (
        f"Error: registry {base} serves no root with sha256:{wrong} (its root.json, version 1, "
        f"is sha256:{digest}); nothing was pinned\n"
    )
    proc = _krm("trust", "add", base, "--root-sha256", digest, home=world.home)
    assert proc.returncode == 0, proc.stderr
    assert _krm("trust", "list", home=world.home).stdout.count(base) == 1
    # A root file of another registry does not verify this one's metadata: nothing is pinned.
    _krm("trust", "remove", base, home=world.home)
    root_file.write_bytes(Repo({}).root_bytes)
    proc = _krm("trust", "add", base, "--root", str(root_file), home=world.home)
    assert proc.returncode == 1
    assert "is not signed by the keys of the root pinned" in proc.stderr
    assert _krm("trust", "list", home=world.home).stdout == "(no registries pinned)\n"


def test_registry_pinned_then_serving_no_metadata_is_an_error(world):
    ref = world.url()
    assert world.build(ref).returncode == 0
    for path in [p for p in world.server.files if p.startswith("/tuf/")]:
        del world.server.files[path]
    proc = world.build(ref)
    assert proc.returncode == 1 and not world.marker.exists()
    assert world.error(proc).startswith(
        f"Error: catalog {ref}: registry {world.server.base} serves no TUF metadata"
    )


def test_lockfile_written_then_used_exactly(world):
    ref = world.url()
    proc = world.build(ref, extra=("--lock",))
    assert proc.returncode == 0, proc.stderr
    lock = (world.app / "krm.lock").read_text()
    digest = hashlib.sha256(world.acme).hexdigest()
    root = hashlib.sha256(world.repo.root_bytes).hexdigest()
    assert f"digest: sha256:{digest}" in lock
    assert "target: acme/functions/versions/1/catalog.yaml" in lock
    assert f"sha256: {root}" in lock
    assert f"digest: sha256:{world.sha}" in lock
    # A new version is published: --locked keeps building version 1, exactly.
    newer = world.acme.replace(b"name: functions", b"name: functions-v2")
    world.repo.publish_catalog("acme", "functions", newer)
    world.repo.publish()
    proc = world.build(ref, extra=("--locked",))
    assert (proc.returncode, proc.stdout) == (0, BUILT), proc.stderr
    # In CI (an empty cache) the lock pins the registry's root too.
    world.home = world.tmp / "ci-home"
    proc = world.build(ref, extra=("--locked",))
    assert (proc.returncode, proc.stderr, proc.stdout) == (0, "", BUILT)
    # Any difference is an error, before the function runs.
    (world.app / "krm.lock").write_text(lock.replace(f"digest: sha256:{world.sha}", "digest: x"))
    proc = world.build(ref, extra=("--locked",))
    lock_path = f"{world.app}/krm.lock"
    world.refused(
        proc,
        f"the runtime of example.com/v1 Labeler (catalog {ref}) differs from {lock_path}: "
        f"digest is 'sha256:{world.sha}', locked 'x'; krm build --locked refuses any "
        "difference (run krm build --lock to update it)",
    )
    (world.app / "krm.lock").write_text(lock.replace(root, "1" * 64))
    world.home = world.tmp / "ci-home-2"
    world.refused(
        world.build(ref, extra=("--locked",)),
        f"catalog {ref}: the TUF root of registry {world.server.base} (version 1) is not the "
        f"one krm.lock pins (sha256:{'1' * 64}); no function from this catalog runs",
    )
    (world.app / "krm.lock").unlink()
    world.refused(
        world.build(ref, extra=("--locked",)),
        f"krm build --locked: there is no {lock_path} (krm build --lock writes it)",
    )


def test_view_shows_tuf_verification_and_refuses_what_does_not_verify(world):
    world.repo.put("acme/functions/revocations.yaml", revocations(1, REVOKED))
    world.repo.publish()
    ref = world.url()
    proc = _krm("view", "catalog", ref, home=world.home)
    assert proc.returncode == 0, proc.stderr
    base = world.server.base
    assert (
        f"Signature: verified through TUF target acme/functions/catalog.yaml of {base} "
        "(role acme, root pinned by first use)\n"
    ) in proc.stdout
    assert (
        f"Revocations: sequence 1 [{base}/c/acme/functions/revocations.yaml]\n"
        "  signature: verified through TUF target acme/functions/revocations.yaml"
    ) in proc.stdout
    assert "  #1 example.com/v1 Labeler: backdoor\n" in proc.stdout
    world.proxy.rewrite["/c/acme/functions/catalog.yaml"] = world.mallory
    proc = _krm("view", "catalog", world.url(via_proxy=True), home=world.home)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "is not the one registry" in proc.stderr


def test_digest_url_must_be_a_signed_version_of_that_catalog(world):
    """``sha256/<hex>/catalog.yaml`` URLs (like oci:// digests and pushed tags) name bytes that
    must be one of the catalog's signed versions: mallory's bytes there are refused."""
    hexdigest = hashlib.sha256(world.acme).hexdigest()
    path = f"/c/acme/functions/sha256/{hexdigest}/catalog.yaml"
    world.server.files[path] = world.acme
    proc = world.build(world.server.base + path)
    assert (proc.returncode, proc.stdout) == (0, BUILT), proc.stderr
    world.proxy.rewrite[path] = world.mallory
    ref = world.proxy.base + path
    mallory = hashlib.sha256(world.mallory).hexdigest()
    world.refused(
        world.build(ref),
        f"catalog {ref}: its bytes (sha256:{mallory}) are not any version registry "
        f"{world.proxy.base} signed for acme/functions; no function from this catalog runs",
    )


TRUST_ERRORS = [
    (["remove", "https://nowhere.example"], "registry https://nowhere.example is not in the "
     "trust store"),
    (["add", "ftp://x.example"], "'ftp://x.example' is not a registry URL "
     "(https://host[:port][/path])"),
    (["add", "https://x.example", "--root-sha256", "12ab"], "--root-sha256 '12ab' is not 64 "
     "hexadecimal digits"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "error"), TRUST_ERRORS)
def test_trust_command_errors(tmp_path, argv, error):
    proc = _krm("trust", *argv, home=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {error}\n")
    assert not (tmp_path / "cache" / "krm" / "tuf").exists()


def test_trust_add_of_a_registry_without_tuf_metadata(world):
    base = world.server.base
    for path in [p for p in world.server.files if p.startswith("/tuf/")]:
        del world.server.files[path]
    proc = _krm("trust", "add", base, home=world.home)
    assert (proc.returncode, proc.stderr) == (
        1,
        f"Error: registry {base} serves no TUF metadata ({base}/tuf/root.json)\n",
    )
