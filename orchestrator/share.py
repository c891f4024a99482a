"""What the builds of one process share (``krm build --batch``): parsed kustomization files,
the resources parsed from each file, and each base's accumulated resources.

A :class:`Share` is made active for a run of builds (:meth:`Share.active`); the loaders and
the accumulator ask :func:`current` and, when a share is active, take a private copy of what an
earlier build of the run parsed or accumulated instead of doing that work again. Remote bases are
fetched once per run: each URL's download and each git base's checkout, and their failures (an
unreachable host is asked once, not once per directory that names it). Entries hold
copies that no build mutates; every answer is a fresh copy, since builds mutate what they read.
Nothing is shared when no share is active (a single ``krm build``, which never imports this
module: its callers look for it in ``sys.modules`` first).

A base's result is shared only when its accumulation had no effect beyond its resources,
transformer config, vars and warnings: KRM functions, helm charts and Compositions (which run
programs or read catalogs) and an ``openapi:`` schema (which changes the build's state) keep the
base from being stored, and the entry is used only where the same kustomization, restrictor,
origin path and schema would be accumulated and where the cycle check of every directory it
visited passes on the current chain of kustomizations.
"""

from __future__ import annotations

from orchestrator.errors import KrmError
from orchestrator.resource import ImplicitNullMap, Resource

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from orchestrator.fieldspec import TransformerConfig

_ATOMS = frozenset((str, int, float, bool, type(None)))

_ACTIVE: Share | None = None


def current() -> Share | None:
    """The active share, or None (a single build)."""
    return _ACTIVE


def copy_tree(value: Any) -> Any:
    """A deep copy of a parsed YAML tree (maps, lists, scalars), faster than ``copy.deepcopy``."""
    t = type(value)
    if t is dict:
        return {k: v if type(v) in _ATOMS else copy_tree(v) for k, v in value.items()}
    if t is list:
        return [v if type(v) in _ATOMS else copy_tree(v) for v in value]
    if t in _ATOMS:
        return value
    if t is ImplicitNullMap:
        return ImplicitNullMap(
            {k: copy_tree(v) for k, v in value.items()}, implicit_nulls=value.implicit_nulls
        )
    import copy

    return copy.deepcopy(value)


def copy_resource(res: Resource) -> Resource:
    """A copy of ``res`` that shares nothing mutable with it (like :meth:`Resource.copy`)."""
    return Resource(
        obj=copy_tree(res.obj),
        source=res.source,
        previous=list(res.previous),
        behavior=res.behavior,
        needs_hash=res.needs_hash,
        # Value aliases point into the original's containers; a copy starts without them.
        extra={k: copy_tree(v) for k, v in res.extra.items() if k != "value_aliases"},
    )


class BaseEntry:
    """One accumulated kustomization: what an accumulator gets from it."""

    __slots__ = ("resources", "tconfig", "var_field_specs", "vars", "warnings", "roots")

    def __init__(
        self,
        resources: list[Resource],
        tconfig: TransformerConfig | None,
        var_field_specs: list[dict[str, Any]],
        vars: list[dict[str, Any]],
        warnings: list[str],
        roots: tuple[str, ...],
    ) -> None:
        self.resources = resources
        self.tconfig = tconfig
        self.var_field_specs = var_field_specs
        self.vars = vars
        self.warnings = warnings
        # Every kustomization directory the accumulation visited (for the cycle check).
        self.roots = roots

    def fits(self, chain: tuple[str, ...]) -> bool:
        """Whether no visited directory contains one of ``chain`` (the kustomizations that
        lead here), i.e. the accumulation would not have stopped at a cycle on this chain."""
        for root in self.roots:
            prefix = root.rstrip("/") + "/"
            for visited in chain:
                if visited == root or visited.startswith(prefix):
                    return False
        return True


class Share:
    """The caches of one run of builds, with hit counts."""

    def __init__(self) -> None:
        # (file, bytes) -> (parsed kustomization, its warnings)
        self.kustomizations: dict[tuple[str, bytes], tuple[dict[str, Any], list[str]]] = {}
        # (display path, origin annotation, bytes) -> resources
        self.files: dict[tuple[str, str | None, bytes], list[Resource]] = {}
        # (display path, origin annotation, bytes) of files read once: stored when read again
        self.seen_files: set[tuple[str, str | None, bytes]] = set()
        # (root, restrictor, origin) -> accumulated base
        self.bases: dict[tuple[Any, ...], BaseEntry] = {}
        # The directories whose accumulation may be asked for again (named by some
        # kustomization), or None for all: the others are not stored.
        self.wanted: set[str] | None = None
        # (what, key...) -> (True, value) or (False, the error) of a remote fetch
        self.remote: dict[tuple[str, ...], tuple[bool, Any]] = {}
        self.hits = {"kustomizations": 0, "files": 0, "bases": 0, "remote": 0}

    def active(self) -> _Activation:
        """A context manager making this share the active one."""
        return _Activation(self)

    def kustomization(
        self, path: str, data: bytes, parse: Callable[[list[str]], dict[str, Any]]
    ) -> tuple[dict[str, Any], list[str]]:
        """The kustomization parsed from ``data`` (``parse(warnings)`` on a miss) and its
        warnings, as a private copy."""
        key = (path, data)
        hit = self.kustomizations.get(key)
        if hit is None:
            warnings: list[str] = []
            k = parse(warnings)
            self.kustomizations[key] = (copy_tree(k), list(warnings))
            return k, warnings
        self.hits["kustomizations"] += 1
        return copy_tree(hit[0]), list(hit[1])

    def file_resources(
        self,
        source: str,
        origin: str | None,
        data: bytes,
        parse: Callable[..., list[Resource]],
    ) -> list[Resource]:
        """The resources of one file (``parse(data, source=, origin=)`` on a miss), as private
        copies."""
        key = (source, origin, data)
        hit = self.files.get(key)
        if hit is None:
            out = parse(data, source=source, origin=origin)
            if key in self.seen_files:  # read a second time: worth a copy
                self.files[key] = [copy_resource(r) for r in out]
            else:
                self.seen_files.add(key)
            return out
        self.hits["files"] += 1
        return [copy_resource(r) for r in hit]

    def fetched(self, key: tuple[str, ...], fetch: Callable[[], Any]) -> Any:
        """What ``fetch()`` gave the first time ``key`` was fetched in this run: its value, or
        a copy of the engine error it raised (raised again, so callers may amend it)."""
        hit = self.remote.get(key)
        if hit is None:
            try:
                value = fetch()
            except KrmError as exc:
                self.remote[key] = (False, _copy_error(exc))
                raise
            self.remote[key] = (True, value)
            return value
        self.hits["remote"] += 1
        ok, value = hit
        if ok:
            return value
        raise _copy_error(value)

    def wants(self, root: str) -> bool:
        """Whether the accumulation of kustomization directory ``root`` is worth storing."""
        return self.wanted is None or root in self.wanted

    def base(self, key: tuple[Any, ...], chain: tuple[str, ...]) -> BaseEntry | None:
        """The stored accumulation for ``key`` if it holds on ``chain``, else None."""
        entry = self.bases.get(key)
        if entry is None or not entry.fits(chain):
            return None
        self.hits["bases"] += 1
        return entry


def _copy_error(exc: KrmError) -> KrmError:
    import copy

    return copy.copy(exc)


class _Activation:
    def __init__(self, share: Share) -> None:
        self.share = share
        self.previous: Share | None = None

    def __enter__(self) -> Share:
        global _ACTIVE
        self.previous, _ACTIVE = _ACTIVE, self.share
        return self.share

    def __exit__(self, *exc: object) -> None:
        global _ACTIVE
        _ACTIVE = self.previous


def entries(entry: BaseEntry) -> Iterator[Resource]:
    """Private copies of a stored base's resources."""
    for res in entry.resources:
        yield copy_resource(res)
