"""Git fetcher: fetch just the ref into a scratch repository, read one file at that commit.

References: ``git+https://host/repo.git//path/catalog.yaml?ref=REF``, ``git+file:///srv/repo//
catalog.yaml?ref=REF`` and local paths ``/srv/repo//catalog.yaml?ref=REF``. Without ``ref`` the
remote's HEAD is used. A pinned commit (the source's digest) must equal the fetched one.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from catalogs.exceptions import DestinationRefusedError, FetchError
from catalogs.mirroring.fetchers.base import (
    COSIGN_BLOB_SIGNATURE_SUFFIX,
    SIGSTORE_BUNDLE_SUFFIX,
    Fetched,
    FetchOptions,
    Limits,
    check_destination,
    credential_for,
    default_port,
    register,
)

COMMIT_RE = re.compile(r"[0-9a-f]{40}\Z")


@dataclass(frozen=True)
class GitRef:
    """A parsed git source: where the repository is, which file, which ref."""

    repo: str
    path: str
    ref: str
    local: bool


def parse_git_ref(ref: str) -> GitRef:
    """Split a git source URL into repository, file path and ref, or FetchError."""
    base, _, query = ref.partition("?")
    rev = (parse_qs(query).get("ref") or ["HEAD"])[0]
    if base.startswith("git+"):
        base = base[len("git+") :]
        scheme, sep, rest = base.partition("://")
        repo_part, sep2, path = rest.partition("//")
        repo = f"{scheme}://{repo_part}"
    else:
        scheme = "path"
        repo, sep2, path = base.partition("//")
    if not sep2 or not path:
        raise FetchError(
            f"Git source '{ref}' names no file: use REPO//path/to/catalog.yaml?ref=REF"
        )
    if path.startswith("/") or ".." in path.split("/"):
        raise FetchError(f"Git source '{ref}' has an unsafe file path '{path}'")
    if rev.startswith("-"):
        raise FetchError(f"Git source '{ref}' has an invalid ref '{rev}'")
    return GitRef(repo=repo, path=path, ref=rev, local=scheme in ("path", "file"))


def _remote_config(repo: str, *, addresses: list[str], limits: Limits) -> dict[str, str]:
    """Environment that pins git's connection to the checked ``addresses`` and adds credentials.

    Passed as GIT_CONFIG_* variables, not ``-c`` arguments or the URL, so no process listing,
    error message or record ever shows the secret.
    """
    parts = urlsplit(repo)
    host, port = parts.hostname or "", default_port(repo)
    shown = f"[{host}]" if ":" in host else host
    pinned = ",".join(f"[{a}]" if ":" in a else a for a in addresses)  # curl's IPv6 form
    config = [("http.curloptResolve", f"{shown}:{port}:{pinned}")]
    credential = credential_for(repo, limits=limits)
    if credential is not None:
        origin = f"{parts.scheme}://{parts.netloc}/"
        header = f"Authorization: {credential.authorization()}"
        config.append((f"http.{origin}.extraHeader", header))
    env = {"GIT_CONFIG_COUNT": str(len(config))}
    for index, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def _git(
    args: list[str],
    *,
    cwd: str,
    limits: Limits,
    allow_file: bool,
    extra_env: dict[str, str] | None = None,
) -> bytes:
    """Run git with a locked-down config; FetchError with git's last stderr line on failure."""
    protocols = ["-c", "protocol.allow=never", "-c", "protocol.https.allow=always"]
    if allow_file:
        protocols += ["-c", "protocol.file.allow=always"]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": cwd,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
    }
    if limits.ca_bundle:
        env["GIT_SSL_CAINFO"] = limits.ca_bundle
    env.update(extra_env or {})
    command = ["git", *protocols, "-c", "http.followRedirects=false", *args]
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, timeout=limits.timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise FetchError(f"Timed out after {limits.timeout:g} s running git {args[0]}") from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise _GitFailed(lines[-1] if lines else f"git {args[0]} failed")
    return done.stdout


class _GitFailed(Exception):
    pass


@register("git+https", "git+file", "path")
def fetch_git(ref: str, *, limits: Limits, options: FetchOptions | None = None) -> Fetched:
    """Fetch one file of a git repository at a ref; the digest is the commit id."""
    options = options or FetchOptions()
    parsed = parse_git_ref(ref)
    if parsed.local:
        if not limits.allow_local_paths:
            raise DestinationRefusedError(
                f"Local git sources are refused: '{ref}' (allow them with MIRROR_ALLOW_LOCAL_PATHS)"
            )
        repo = parsed.repo
        if repo.startswith("file://"):
            repo = urlsplit(repo).path
        if not os.path.isdir(repo):
            raise FetchError(f"Git repository '{repo}' does not exist")
        remote_env: dict[str, str] = {}
    else:
        addresses = check_destination(parsed.repo, limits=limits)
        repo = parsed.repo
        remote_env = _remote_config(repo, addresses=addresses, limits=limits)
    with tempfile.TemporaryDirectory(prefix="krm-git-") as scratch:

        def run(args: list[str]) -> bytes:
            return _git(
                args, cwd=scratch, limits=limits, allow_file=parsed.local, extra_env=remote_env
            )

        try:
            run(["init", "-q", "--bare", "."])
            run(["fetch", "-q", "--depth", "1", "--no-tags", repo, parsed.ref])
        except _GitFailed as exc:
            raise FetchError(f"Cannot fetch ref '{parsed.ref}' of {parsed.repo}: {exc}") from None
        commit = run(["rev-parse", "FETCH_HEAD^{commit}"]).decode().strip()
        try:
            blob = run(["rev-parse", f"{commit}:{parsed.path}"]).decode().strip()
            kind = run(["cat-file", "-t", blob]).decode().strip()
        except _GitFailed:
            raise FetchError(
                f"File '{parsed.path}' does not exist at ref '{parsed.ref}' ({commit})"
            ) from None
        if kind != "blob":
            raise FetchError(f"'{parsed.path}' at ref '{parsed.ref}' is a {kind}, not a file")
        size = int(run(["cat-file", "-s", blob]).decode().strip())
        if size > limits.max_bytes:
            raise FetchError(
                f"File '{parsed.path}' is {size} bytes, over the size limit of "
                f"{limits.max_bytes} bytes"
            )
        content = run(["cat-file", "blob", blob])
        bundle = blob_signature = None
        if options.signatures:
            try:
                bundle = run(
                    ["cat-file", "blob", f"{commit}:{parsed.path}{SIGSTORE_BUNDLE_SUFFIX}"]
                )
            except _GitFailed:
                bundle = None
            try:
                blob_signature = run(
                    ["cat-file", "blob", f"{commit}:{parsed.path}{COSIGN_BLOB_SIGNATURE_SUFFIX}"]
                )
            except _GitFailed:
                blob_signature = None
    provenance = {
        "repository": parsed.repo,
        "path": parsed.path,
        "ref": parsed.ref,
        "commit": commit,
        "blob": blob,
        "sha256": "sha256:" + hashlib.sha256(content).hexdigest(),
    }
    return Fetched(
        content=content,
        digest=commit,
        provenance=provenance,
        sigstore_bundle=bundle,
        blob_signature=blob_signature,
    )
