"""The file loader: finds kustomization files and reads files under a load restrictor.

With ``LoadRestrictionsRootOnly`` (the default) a kustomization may only read files
at or below its own directory; directories of other kustomizations (bases,
components) may be anywhere, but never an ancestor of the current one (a cycle).
"""

from __future__ import annotations

import os

from orchestrator.errors import LoadError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from orchestrator.remote import RepoSpec

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
ROOT_ONLY = "LoadRestrictionsRootOnly"
NONE = "LoadRestrictionsNone"
RESTRICTORS = (ROOT_ONLY, NONE)


def display(path: str) -> str:
    """A path for messages: relative to the working directory when below it."""
    if path.startswith("/") and not path.startswith("//"):
        # os.path.relpath's answer for the usual absolute path, without its list work (a
        # build shows every file it reads).
        full = os.path.normpath(path)
        cwd = os.getcwd()
        if not cwd.startswith("//"):
            if full == cwd:
                return "."
            prefix = cwd if cwd == "/" else cwd + "/"
            if not full.startswith(prefix):
                return path
            rel = full[len(prefix) :]
            return path if rel.startswith("..") else rel
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _realpath(real_base: str, full: str) -> str:
    """``os.path.realpath(full)`` for a normalised absolute ``full``, given a real path
    ``real_base`` (its ancestors are real too): only the components of ``full`` below their
    common ancestor are looked at, and resolved with realpath only if one is a symlink."""
    if full.startswith("//"):
        return os.path.realpath(full)
    base = real_base
    while not _within(base, full):
        base = os.path.dirname(base)
    if len(full) == len(base):
        return full
    cur = base.rstrip("/")
    for name in full[len(cur) + 1 :].split("/"):
        cur = f"{cur}/{name}"
        # os.path.islink, not os.lstat: the build cache records islink answers (a symlink that
        # appears later must end a cached build), and a missing part is no link either, which
        # realpath keeps as it is with what follows.
        if os.path.islink(cur):
            return os.path.realpath(full)
    return full


class Loader:
    """Reads files for one kustomization directory (``root``), applying the restrictor."""

    def __init__(
        self,
        root: str,
        *,
        restrictor: str = ROOT_ONLY,
        parents: tuple[str, ...] = (),
        real: bool = False,
        offline: bool = False,
        repo: str | None = None,
        urls: tuple[str, ...] = (),
        fn_options: Any = None,
    ):
        # real: the caller resolved ``root`` already.
        self.root = root if real else os.path.realpath(root)
        self.restrictor = restrictor
        # Roots of the kustomizations that led here, for cycle detection.
        self.parents = parents
        # --offline: remote bases come from the cache only.
        self.offline = offline
        # The checkout of the git repository this kustomization is in (None: a local one),
        # and the remote references that led here (kustomize's repository cycle check).
        self.repo = repo
        self.urls = urls
        # The build's FnOptions (cache folder, CA file, download limits) for oci:// bases.
        self.fn_options = fn_options

    def abspath(self, path: str) -> str:
        """Absolute, normalised form of a path relative to the root."""
        return os.path.normpath(os.path.join(self.root, path))

    def _check(self, path: str, real: str) -> None:
        if self.restrictor == NONE:
            return
        if not _within(self.root, real):
            raise LoadError(f"security; file '{real}' is not in or below '{self.root}'", file=path)

    def read(self, path: str) -> bytes:
        """Bytes of ``path`` (relative to the root), honouring the load restrictor; an http(s)
        URL is downloaded, as kustomize does."""
        if path[:8].lower().startswith(("http://", "https://")):
            from orchestrator import remote

            if self.offline:
                raise remote.RemoteError(f"cannot download '{path}': --offline")
            return remote.download(path)
        full = self.abspath(path)
        real = _realpath(self.root, full)
        self._check(path, real)
        if os.path.isdir(real):
            raise LoadError("is a directory, not a file", file=display(full))
        try:
            with open(real, "rb") as f:
                return f.read()
        except FileNotFoundError:
            raise LoadError("file does not exist", file=display(full)) from None
        except OSError as exc:
            raise LoadError(f"cannot read file: {exc.strerror}", file=display(full)) from None

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` (relative to the root) is a directory."""
        return os.path.isdir(self.abspath(path))

    def exists(self, path: str) -> bool:
        """Whether ``path`` (relative to the root) exists."""
        return os.path.exists(self.abspath(path))

    def child(self, path: str) -> Loader:
        """A loader for the kustomization directory ``path`` (or git repository URL); cycles
        are errors."""
        if path[:6].lower() == "oci://":
            return self.oci_child(path)
        spec = repo_spec(path)
        if spec is not None:
            return self.remote_child(spec)
        full = _realpath(self.root, self.abspath(path))
        if not os.path.isdir(full):
            raise LoadError("must be a directory", file=display(self.abspath(path)))
        if self.repo is not None and not _within(self.repo, full):
            raise LoadError(
                "security; bases in kustomizations found in cloned git repos must be within "
                f"the repo, but base '{full}' is outside '{self.repo}'",
                file=path,
            )
        chain = (*self.parents, self.root)
        for visited in chain:
            if visited == full or visited.startswith(full.rstrip(os.sep) + os.sep):
                raise LoadError(
                    f"cycle detected: candidate root '{full}' contains visited root '{visited}'",
                    file=path,
                )
        return Loader(
            full,
            restrictor=self.restrictor,
            parents=chain,
            real=True,
            offline=self.offline,
            repo=self.repo,
            urls=self.urls,
            fn_options=self.fn_options,
        )

    def _check_url_cycle(self, raw: str) -> None:
        for url in self.urls:
            if url.startswith(raw):
                raise LoadError(
                    f"cycle detected: URI '{raw}' referenced by previous URI '{url}'", file=raw
                )

    def oci_child(self, raw: str) -> Loader:
        """A loader at the tree of an ``oci://`` artifact (pulled, or from the cache); files
        there are restricted to that directory, like a git base's."""
        self._check_url_cycle(raw)
        return oci_loader(
            raw,
            offline=self.offline,
            fn_options=self.fn_options,
            parents=(*self.parents, self.root),
            urls=self.urls,
        )

    def remote_child(self, spec: RepoSpec) -> Loader:
        """A loader at the directory a git URL names, in a cached checkout of its commit;
        like kustomize, files there are always restricted to that directory."""
        self._check_url_cycle(spec.raw)
        return remote_loader(
            spec,
            offline=self.offline,
            parents=(*self.parents, self.root),
            urls=self.urls,
            fn_options=self.fn_options,
        )


def remote_loader(
    spec: RepoSpec,
    *,
    offline: bool = False,
    parents: tuple[str, ...] = (),
    urls: tuple[str, ...] = (),
    fn_options: Any = None,
) -> Loader:
    """A loader at the directory the git URL ``spec`` names (fetched or from the cache)."""
    from orchestrator import remote

    tree = os.path.realpath(remote.GitCache(offline=offline).checkout(spec))
    full = os.path.normpath(os.path.join(tree, spec.kust_root))
    real = os.path.realpath(full)
    if not _within(tree, real):
        raise remote.RemoteError(
            f"remote '{spec.raw}': '{spec.kust_root}' refers to a directory outside of the "
            "repository"
        )
    if not os.path.isdir(real):
        what = "is a file" if os.path.exists(real) else "does not exist"
        raise remote.RemoteError(
            f"remote '{spec.raw}': '{spec.kust_root or '.'}' {what} in the repository; "
            "expecting a directory"
        )
    return Loader(
        real,
        restrictor=ROOT_ONLY,
        parents=parents,
        real=True,
        offline=offline,
        repo=tree,
        urls=(*urls, spec.raw),
        fn_options=fn_options,
    )


def oci_loader(
    raw: str,
    *,
    offline: bool = False,
    fn_options: Any = None,
    parents: tuple[str, ...] = (),
    urls: tuple[str, ...] = (),
) -> Loader:
    """A loader at the directory the ``oci://`` reference ``raw`` names in its unpacked tree."""
    from orchestrator import ocibase

    spec = ocibase.parse_oci(raw)
    if fn_options is None:
        from orchestrator.functions.options import FnOptions

        fn_options = FnOptions(offline=offline)
    tree = os.path.realpath(ocibase.oci_tree(spec, fn_options)[0])
    real = os.path.realpath(os.path.join(tree, spec.subdir))
    if not _within(tree, real):
        raise LoadError(
            f"remote '{raw}': '{spec.subdir}' refers to a directory outside of the artifact",
            file=raw,
        )
    if not os.path.isdir(real):
        what = "is a file" if os.path.exists(real) else "does not exist"
        raise LoadError(
            f"remote '{raw}': '{spec.subdir or '.'}' {what} in the artifact; expecting a directory",
            file=raw,
        )
    return Loader(
        real,
        restrictor=ROOT_ONLY,
        parents=parents,
        real=True,
        offline=offline,
        repo=tree,
        urls=(*urls, raw),
        fn_options=fn_options,
    )


def _within(root: str, real: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def find_kustomization(
    root: str, restrictor: str = ROOT_ONLY, *, real_root: str | None = None
) -> str:
    """Path of the one kustomization file in ``root`` (error if none or several).

    Like kustomize, a candidate the load restrictor forbids (a symlink to a file outside
    ``root``) counts as absent. ``real_root``: ``os.path.realpath(root)``, when the caller
    has it (a Loader's root).
    """
    if real_root is None:
        real_root = os.path.realpath(root)
    found = [
        n
        for n in KUSTOMIZATION_FILES
        if os.path.isfile(os.path.join(root, n))
        and (
            restrictor == NONE
            or _within(real_root, _realpath(real_root, os.path.join(real_root, n)))
        )
    ]
    if not found:
        # A Composition directory never gets here: callers route it to orchestrator.composition.
        raise LoadError(
            "unable to find one of 'kustomization.yaml', 'kustomization.yml' or "
            f"'Kustomization' in directory '{root}'",
            file=display(root),
        )
    if len(found) > 1:
        raise LoadError(f"Found multiple kustomization files under: {root}", file=display(root))
    path = os.path.join(root, found[0])
    if os.path.isfile(os.path.join(root, "composition.yaml")):
        raise LoadError(
            f"both '{found[0]}' and 'composition.yaml' found in '{root}'; keep only one",
            file=display(root),
        )
    return path


def repo_spec(path: str) -> Any:
    """The git repository ``path`` names (an ``orchestrator.remote.RepoSpec``), or None.

    Only a path with '@' or ':' (a user or a scheme) or starting with 'github.com' can name
    one (kustomize's extractHost), and none starting with '/' or '.': any other path is
    answered without importing orchestrator.remote (a small build's paths are all local)."""
    if (
        not path
        or path.startswith(("/", "."))
        or not ("@" in path or ":" in path or path.lower().startswith("github.com"))
    ):
        return None
    from orchestrator import remote

    return remote.parse_repo_spec(path)
