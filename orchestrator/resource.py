"""Resources and their ids: the bottom layer of the engine.

A :class:`Resource` wraps the plain ``dict`` parsed from YAML (``obj``) and keeps
the bookkeeping kustomize keeps in internal annotations: where it came from, its
original id, and the names it had before prefixes, suffixes, namespaces and hashes
were applied (needed for name-reference updates and for patch targeting).
Filters that only change content work on ``res.obj`` directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Gvk(NamedTuple):
    group: str
    version: str
    kind: str

    @classmethod
    def from_api_version(cls, api_version: str | None, kind: str | None) -> Gvk:
        api_version = api_version or ""
        group, _, version = api_version.rpartition("/")
        return cls(group, version, kind or "")

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.group or '~G'}_{self.version or '~V'}_{self.kind or '~K'}"


class ResId(NamedTuple):
    """Identity of a resource: group, version, kind, namespace and name."""

    gvk: Gvk
    name: str
    namespace: str

    def __str__(self) -> str:
        return f"{self.gvk}|{self.namespace or '~X'}|{self.name}"


@dataclass(slots=True, eq=False)
class Resource:
    """One KRM resource plus the engine's bookkeeping about it."""

    obj: dict[str, Any]
    # File the resource was read from (or the generator that made it), for error messages.
    source: str | None = None
    # (namespace, name) pairs it had before each rename, oldest first.
    previous: list[tuple[str, str]] = field(default_factory=list)
    # Generated ConfigMap/Secret: behavior (create|merge|replace) and whether a hash suffix
    # is still to be appended.
    behavior: str | None = None
    needs_hash: bool = False
    # Free-form annotations the engine keeps off the object (e.g. prefixes/suffixes applied).
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def metadata(self) -> dict[str, Any]:
        md = self.obj.get("metadata")
        if md is None:
            md = self.obj["metadata"] = {}
        return md

    @property
    def kind(self) -> str:
        return self.obj.get("kind") or ""

    @property
    def api_version(self) -> str:
        return self.obj.get("apiVersion") or ""

    @property
    def gvk(self) -> Gvk:
        return Gvk.from_api_version(self.obj.get("apiVersion"), self.obj.get("kind"))

    @property
    def name(self) -> str:
        md = self.obj.get("metadata") or {}
        return md.get("name") or ""

    @property
    def namespace(self) -> str:
        md = self.obj.get("metadata") or {}
        return md.get("namespace") or ""

    @property
    def id(self) -> ResId:
        return ResId(self.gvk, self.name, self.namespace)

    @property
    def orig_name(self) -> str:
        return self.previous[0][1] if self.previous else self.name

    @property
    def orig_namespace(self) -> str:
        return self.previous[0][0] if self.previous else self.namespace

    @property
    def orig_id(self) -> ResId:
        return ResId(self.gvk, self.orig_name, self.orig_namespace)

    def rename(self, *, name: str | None = None, namespace: str | None = None) -> None:
        """Change name and/or namespace, remembering the old pair for name references."""
        old = (self.namespace, self.name)
        md = self.metadata
        if name is not None:
            md["name"] = name
        if namespace is not None:
            md["namespace"] = namespace
        if (self.namespace, self.name) != old:
            self.previous.append(old)

    def describe(self) -> str:
        """Short human form for error messages: ``Deployment/ns/name``."""
        ns = self.namespace
        return f"{self.kind}/{ns + '/' if ns else ''}{self.name}"
