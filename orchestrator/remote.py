"""Remote bases and files, as kustomize v5.5 reads them, with a cache of fetched commits.

A reference in ``resources:``, ``components:`` or the build target is a git repository when it
parses as one of the URL forms kustomize accepts (:func:`parse_repo_spec`): ``https://``,
``http://``, ``ssh://``, ``file://``, scp-like ``user@host:org/repo`` and ``github.com/org/repo``;
the repository ends at ``_git/<name>``, at ``//``, after ``.git``, or after two path segments
(all of the path for ``file://``); the query gives ``ref`` (or ``version``), ``timeout`` and
``submodules``. A plain ``http(s)://`` URL is first downloaded as a file, as kustomize does.

Repositories are fetched as kustomize fetches them (``git init``, ``git fetch --depth=1 URL REF``,
``git checkout FETCH_HEAD``, ``git submodule update --init --recursive``), and each checkout is
kept under ``$XDG_CACHE_HOME/krm/git/trees/<commit>``: a ``ref`` that is a full commit id is
served from there with no request at all; a branch or tag is resolved with one ``git ls-remote``
per build (once per ``krm build --batch`` run) and fetched only when it names a commit not seen
before; ``--offline`` uses the commit the ref named last time. A ``ref`` starting with ``-`` is
refused (git would read it as an option).
"""

from __future__ import annotations

import os
import sys

from orchestrator.errors import LoadError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

DEFAULT_TIMEOUT = 27.0  # seconds, kustomize's default for each git command
_SCHEMES = ("ssh://", "https://", "http://", "file://")
_GO_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}
_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,
    "\u03bcs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_HEX = frozenset("0123456789abcdef")
FORCED_GIT_WARNING = (
    "Warning: Forcing the git protocol using the 'git::' URL prefix is not supported. "
    "Kustomize currently strips this invalid prefix, but will stop doing so in a future "
    "release. Please remove the 'git::' prefix from your configuration."
)


class RemoteError(LoadError):
    """A remote base or file could not be fetched; the message names the URL and why."""


class RepoSpec:
    """A git repository, a ref in it and a directory below its root (kustomize's RepoSpec)."""

    __slots__ = ("raw", "host", "repo_path", "kust_root", "ref", "timeout", "submodules", "forced")

    def __init__(
        self,
        raw: str,
        host: str,
        repo_path: str,
        kust_root: str,
        ref: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        submodules: bool = True,
        forced: bool = False,
    ) -> None:
        self.raw = raw
        self.host = host
        self.repo_path = repo_path
        self.kust_root = kust_root
        self.ref = ref
        self.timeout = timeout
        self.submodules = submodules
        # The reference began with go-getter's "git::", which kustomize strips with a warning.
        self.forced = forced

    @property
    def clone_spec(self) -> str:
        """What ``git fetch`` is given."""
        return self.host + self.repo_path

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"RepoSpec({fields})"


def is_remote_file(path: str) -> bool:
    """Whether kustomize downloads ``path`` as a file (an http or https URL)."""
    head = path[:8].lower()
    return head.startswith(("http://", "https://"))


def _go_duration(text: str) -> float | None:
    """Seconds of a Go duration (``90s``, ``1m30s``, ``1.5h``), None if it is not one."""
    rest = text
    sign = 1.0
    if rest[:1] in "+-" and rest:
        sign = -1.0 if rest[0] == "-" else 1.0
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        return None
    total = 0.0
    while rest:
        i = 0
        while i < len(rest) and (rest[i].isdigit() or rest[i] == "."):
            i += 1
        number = rest[:i]
        if not number or number == "." or number.count(".") > 1:
            return None
        rest = rest[i:]
        j = 0
        while j < len(rest) and not (rest[j].isdigit() or rest[j] == "."):
            j += 1
        unit = rest[:j]
        if unit not in _DURATION_UNITS:
            return None
        total += float(number) * _DURATION_UNITS[unit]
        rest = rest[j:]
    return sign * total


def _go_atoi(text: str) -> int | None:
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    return int(text)


def _parse_query(query: str) -> tuple[str, float, bool]:
    """(ref, timeout, submodules) of the query, with kustomize's defaults for what is absent,
    and for everything when Go's url.ParseQuery would fail (a ';' or a bad %-escape)."""
    ref, timeout, submodules = "", DEFAULT_TIMEOUT, True
    if not query:
        return ref, timeout, submodules  # every local path (urllib.parse imports re)
    from urllib.parse import unquote_plus

    values: dict[str, str] = {}
    for part in query.split("&") if query else []:
        if ";" in part:
            return ref, timeout, submodules
        key, _, value = part.partition("=")
        for piece in (key, value):
            i = piece.find("%")
            while i >= 0:
                if len(piece) < i + 3 or any(
                    c not in "0123456789abcdefABCDEF" for c in piece[i + 1 : i + 3]
                ):
                    return ref, timeout, submodules
                i = piece.find("%", i + 3)
        key = unquote_plus(key)
        if key and key not in values:
            values[key] = unquote_plus(value)
    ref = values.get("ref") or values.get("version") or ""
    raw_timeout = values.get("timeout") or ""
    if raw_timeout:
        seconds = _go_atoi(raw_timeout)
        if seconds is not None and seconds > 0:
            timeout = float(seconds)
        else:
            duration = _go_duration(raw_timeout)
            if duration is not None and duration > 0:
                timeout = duration
    raw_submodules = values.get("submodules") or ""
    if raw_submodules in _GO_BOOLS:
        submodules = _GO_BOOLS[raw_submodules]
    return ref, timeout, submodules


def _extract_host(text: str) -> tuple[str, str] | None:
    """(host with scheme and user, the rest) like kustomize's extractHost; None if not a URL."""
    scheme = ""
    lower = text.lower()
    for prefix in _SCHEMES:
        if lower.startswith(prefix):
            scheme, text = prefix, text[len(prefix) :]
            break
    username = ""
    at = text.find("@")
    if at > 0 and text[0].isascii() and text[0].isalpha():
        name = text[:at]
        if all(c.isascii() and (c.isalnum() or c == "-") for c in name):
            username, text = name + "@", text[at + 1 :]
    lower = text.lower()
    github = lower.startswith(("github.com/", "github.com:"))
    scp = scheme == "" and (username != "" or github)
    if scheme == "" and not scp:
        return None
    if scheme == "file://":
        return scheme, username + text
    sep = text.find("/")
    if scp:
        colon = text.find(":")
        if sep == -1 or 0 < colon < sep:
            sep = colon
    host, rest = (text[: sep + 1], text[sep + 1 :]) if sep >= 0 else (text, "")
    if github:
        if scheme.startswith("ssh://") or username:
            scheme, host = "", "github.com:"
        else:
            scheme, username, host = "https://", "", "github.com/"
    if not host:
        return None
    return scheme + username + host, rest


def _split_path(text: str, all_segments: bool) -> tuple[str, str] | None:
    """(repository path, kustomization root in it), like kustomize's parsePathParts."""
    marker = text.find("_git/")
    if marker >= 0:
        root = text[: marker + 5]
        segments = text[marker + 5 :].split("/")
        repo, kust = root + segments[0], "/".join(segments[1:])
    elif "//" in text:
        cut = text.index("//")
        repo, kust = text[:cut], text[cut + 2 :]
    elif ".git" in text:
        cut = text.index(".git") + 4
        repo, kust = text[:cut], text[cut:]
    elif all_segments:
        repo, kust = text, ""
    else:
        segments = text.split("/")
        if len(segments) < 2:
            return None
        repo, kust = "/".join(segments[:2]), "/".join(segments[2:])
    if not repo:
        return None
    cleaned = os.path.normpath(kust.lstrip("/")) if kust.lstrip("/") else "."
    if cleaned.split("/")[0] == "..":
        return None
    return repo, kust.removeprefix("/")


def parse_repo_spec(raw: str) -> RepoSpec | None:
    """The git repository ``raw`` names, or None when kustomize would read it as a local path."""
    if not raw or os.path.isabs(raw):
        return None
    text = raw
    forced = text[:5].lower() == "git::"
    if forced:
        text = text[5:]
    text, _, query = text.partition("?")
    ref, timeout, submodules = _parse_query(query)
    hosted = _extract_host(text)
    if hosted is None:
        return None
    host, rest = hosted
    parts = _split_path(rest, host.startswith("file://"))
    if parts is None:
        return None
    return RepoSpec(raw, host, parts[0], parts[1], ref, timeout, submodules, forced)


# ---------------------------------------------------------------------------- fetching


def cache_root() -> str:
    """``$XDG_CACHE_HOME/krm/git`` (or ``~/.cache/krm/git``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "krm", "git")


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def is_commit(ref: str) -> bool:
    """Whether ``ref`` is a full commit id (SHA-1 or SHA-256), which never moves."""
    return len(ref) in (40, 64) and set(ref.lower()) <= _HEX


def _seconds(timeout: float) -> str:
    return f"{timeout:g}s"


class _Git:
    """Runs git for one repository reference, each command under its timeout."""

    def __init__(self, spec: RepoSpec) -> None:
        import shutil

        self.spec = spec
        git = shutil.which("git")
        if git is None:
            raise RemoteError(f"remote '{spec.raw}' needs git, which is not on PATH")
        self.git = git

    def run(self, args: list[str], cwd: str | None = None) -> str:
        import signal
        import subprocess

        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
        # A session of its own, so that a timeout ends git's helpers (ssh, remote-https) too:
        # they hold the output pipes, and waiting for them would outlast the timeout.
        proc = subprocess.Popen(
            [self.git, *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=self.spec.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise RemoteError(
                f"remote '{self.spec.raw}': 'git {' '.join(args)}' timed out after "
                f"{_seconds(self.spec.timeout)} (a ?timeout= in the URL waits longer)"
            ) from None
        if proc.returncode != 0:
            reason = (err or out).strip().replace("\n", "; ")
            raise RemoteError(f"remote '{self.spec.raw}': 'git {' '.join(args)}' failed: {reason}")
        return out


class GitCache:
    """Checkouts of fetched commits, content-addressed by commit id, and the commit each
    branch or tag named last (for ``--offline``)."""

    def __init__(self, root: str | None = None, *, offline: bool = False) -> None:
        self.root = root or cache_root()
        self.offline = offline

    def _tree(self, commit: str, spec: RepoSpec) -> str:
        name = commit.lower() + ("" if spec.submodules else "-nosubmodules")
        return os.path.join(self.root, "trees", name)

    def _ref_file(self, spec: RepoSpec) -> str:
        return os.path.join(self.root, "refs", _digest(f"{spec.clone_spec}\0{spec.ref}"))

    def _known_file(self, url: str) -> str:
        return os.path.join(self.root, "repositories", _digest(url))

    def known_repository(self, url: str) -> bool:
        """Whether ``url`` answered a download as a git repository once (so it is not tried
        as a file again: a cached commit then needs no request)."""
        return os.path.isfile(self._known_file(url))

    def remember_repository(self, url: str) -> None:
        _write(self._known_file(url), "")

    def checkout(self, spec: RepoSpec) -> str:
        """The directory of the repository's checkout at ``spec.ref``, fetched if needed (once
        per run of ``krm build --batch``, failures included)."""
        share = _share()
        if share is not None:
            key = ("checkout", self.root, "offline" if self.offline else "", spec.raw)
            return share.fetched(key, lambda: self._checkout(spec))  # type: ignore[no-any-return]
        return self._checkout(spec)

    def _checkout(self, spec: RepoSpec) -> str:
        if spec.ref.startswith("-"):
            raise RemoteError(
                f"remote '{spec.raw}': ref {spec.ref!r} starts with '-' (git would read it as "
                "an option)"
            )
        if is_commit(spec.ref):
            tree = self._tree(spec.ref, spec)
            if os.path.isdir(tree):
                return tree
            if self.offline:
                raise RemoteError(
                    f"remote '{spec.raw}': commit {spec.ref} is not in the cache "
                    f"({self.root}) and --offline forbids fetching it"
                )
            return self._fetch(spec, expect=spec.ref.lower())
        ref_file = self._ref_file(spec)
        if self.offline:
            commit = _read(ref_file)
            tree = self._tree(commit, spec) if commit else ""
            if not commit or not os.path.isdir(tree):
                what = f"ref {spec.ref!r}" if spec.ref else "HEAD"
                raise RemoteError(
                    f"remote '{spec.raw}': {what} is not in the cache ({self.root}) and "
                    "--offline forbids resolving it"
                )
            return tree
        git = _Git(spec)
        resolved = self._resolve(git, spec)
        if resolved is not None and os.path.isdir(self._tree(resolved, spec)):
            _write(ref_file, resolved)
            return self._tree(resolved, spec)
        tree = self._fetch(spec, git=git)
        _write(ref_file, os.path.basename(tree).split("-")[0])
        return tree

    def _resolve(self, git: _Git, spec: RepoSpec) -> str | None:
        """The commit a branch, tag or HEAD names now, by git's own order of rules (one
        ``git ls-remote``); None when no advertised ref matches (then a fetch decides)."""
        ref = spec.ref or "HEAD"
        out = git.run(["ls-remote", "--", spec.clone_spec, ref])
        refs: dict[str, str] = {}
        for line in out.splitlines():
            oid, _, name = line.partition("\t")
            refs[name] = oid
        for candidate in (
            ref,
            f"refs/{ref}",
            f"refs/tags/{ref}",
            f"refs/heads/{ref}",
            f"refs/remotes/{ref}",
            f"refs/remotes/{ref}/HEAD",
        ):
            if candidate in refs:
                return (refs.get(candidate + "^{}") or refs[candidate]).lower()
        return None

    def _fetch(self, spec: RepoSpec, *, expect: str | None = None, git: _Git | None = None) -> str:
        """Fetch like kustomize into a new directory, then file it under its commit id."""
        import shutil
        import tempfile

        git = git or _Git(spec)
        os.makedirs(os.path.join(self.root, "trees"), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="fetch-", dir=os.path.join(self.root, "trees"))
        try:
            git.run(["init", "--quiet"], cwd=tmp)
            git.run(["remote", "add", "origin", spec.clone_spec], cwd=tmp)
            git.run(["fetch", "--depth=1", spec.clone_spec, spec.ref or "HEAD"], cwd=tmp)
            git.run(["checkout", "--quiet", "FETCH_HEAD"], cwd=tmp)
            if spec.submodules:
                git.run(["submodule", "update", "--init", "--recursive"], cwd=tmp)
            commit = git.run(["rev-parse", "HEAD"], cwd=tmp).strip().lower()
            if expect is not None and commit != expect:
                raise RemoteError(
                    f"remote '{spec.raw}': fetching {expect} checked out {commit} instead"
                )
            tree = self._tree(commit, spec)
            try:
                os.rename(tmp, tree)
            except OSError:
                if not os.path.isdir(tree):  # not a concurrent build that filed it first
                    raise
                shutil.rmtree(tmp, ignore_errors=True)
            return tree
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def _write(path: str, text: str) -> None:
    """Write atomically (a temporary file, then a rename)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _share() -> Any:
    """The active ``orchestrator.share.Share`` of a batch run, or None."""
    module = sys.modules.get("orchestrator.share")
    return module.current() if module is not None else None


def download(url: str) -> bytes:
    """The body of an http(s) URL, like kustomize's loader: a non-2xx status is an error, and
    :class:`IsRepository` when the URL also parses as a git repository (then it is cloned).
    A batch run downloads each URL once (failures included)."""
    share = _share()
    if share is not None:
        return share.fetched(("download", url), lambda: _download(url))  # type: ignore[no-any-return]
    return _download(url)


def _download(url: str) -> bytes:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 - http(s) only
            return bytes(resp.read())
    except urllib.error.HTTPError as exc:
        if parse_repo_spec(url) is not None:
            raise IsRepository(url) from None
        raise HTTPStatusError(
            f"cannot download '{url}': status code {exc.code} ({exc.reason})"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise RemoteError(f"cannot download '{url}': {reason}") from None


class IsRepository(RemoteError):
    """A download answered with an error status for a URL that is also a git repository."""

    def __init__(self, url: str) -> None:
        super().__init__("URL is a git repository", file=url)


class HTTPStatusError(RemoteError):
    """A download answered with a non-2xx status (kustomize stops there)."""
