"""Resources and their ids: the bottom layer of the engine.

A :class:`Resource` wraps the plain ``dict`` parsed from YAML (``obj``) and keeps
the bookkeeping kustomize keeps in internal annotations: where it came from, its
original id, and the names it had before prefixes, suffixes, namespaces and hashes
were applied (needed for name-reference updates and for patch targeting).
Filters that only change content work on ``res.obj`` directly.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up


class Record(tuple):  # type: ignore[type-arg]
    """The base of the engine's named tuples, made without collections.namedtuple (start-up):
    a subclass names its ``_fields``, reads them with ``_tuplegetter`` and has its own
    ``__new__``; pickling, copying and ``repr`` are namedtuple's."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self, strict=True))
        return f"{type(self).__name__}({fields})"


if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, NamedTuple

    class _GvkFields(NamedTuple):
        group: str
        version: str
        kind: str

    class _ResIdFields(NamedTuple):
        gvk: Gvk
        name: str
        namespace: str

else:
    # The classes typing.NamedTuple would make, without importing typing or collections (which
    # imports operator, keyword, reprlib and more: ~1 ms of a small build's start-up). Fields
    # are read by the descriptor namedtuple uses (_collections' C _tuplegetter).
    from _collections import _tuplegetter

    class _GvkFields(Record):
        __slots__ = ()
        _fields = __match_args__ = ("group", "version", "kind")
        group = _tuplegetter(0, "Alias for field number 0")
        version = _tuplegetter(1, "Alias for field number 1")
        kind = _tuplegetter(2, "Alias for field number 2")

        def __new__(cls, group, version, kind):
            return tuple.__new__(cls, (group, version, kind))

    class _ResIdFields(Record):
        __slots__ = ()
        _fields = __match_args__ = ("gvk", "name", "namespace")
        gvk = _tuplegetter(0, "Alias for field number 0")
        name = _tuplegetter(1, "Alias for field number 1")
        namespace = _tuplegetter(2, "Alias for field number 2")

        def __new__(cls, gvk, name, namespace):
            return tuple.__new__(cls, (gvk, name, namespace))


# tuple.__new__ called directly: a Gvk is made per resource and per lookup (hot path).
_new_tuple = tuple.__new__


class Gvk(_GvkFields):
    """Group, version and kind of a resource type."""

    __slots__ = ()

    @classmethod
    def from_api_version(cls, api_version: str | None, kind: str | None) -> Gvk:
        """Gvk from an ``apiVersion`` string and a kind."""
        group, _, version = (api_version or "").rpartition("/")
        return _new_tuple(cls, (group, version, kind or ""))

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` string."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.group or '~G'}_{self.version or '~V'}_{self.kind or '~K'}"


class ResId(_ResIdFields):
    """Identity of a resource: group, version, kind, namespace and name."""

    __slots__ = ()

    def __str__(self) -> str:
        return f"{self.gvk}|{self.namespace or '~X'}|{self.name}"


class Resource:
    """One KRM resource plus the engine's bookkeeping about it."""

    # A plain class rather than a dataclass: importing dataclasses costs CLI start-up time.
    __slots__ = ("obj", "source", "previous", "behavior", "needs_hash", "extra")

    def __init__(
        self,
        obj: dict[str, Any],
        source: str | None = None,
        previous: list[tuple[str, str]] | None = None,
        behavior: str | None = None,
        needs_hash: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.obj = obj
        # File the resource was read from (or the generator that made it), for messages.
        self.source = source
        # (namespace, name) pairs it had before each rename, oldest first.
        self.previous: list[tuple[str, str]] = previous if previous is not None else []
        # Generated ConfigMap/Secret: behavior (create|merge|replace) and whether a hash
        # suffix is still to be appended.
        self.behavior = behavior
        self.needs_hash = needs_hash
        # Bookkeeping kept off the object (e.g. prefixes/suffixes applied).
        self.extra: dict[str, Any] = extra if extra is not None else {}

    def __repr__(self) -> str:
        return (
            f"Resource(obj={self.obj!r}, source={self.source!r}, previous={self.previous!r}, "
            f"behavior={self.behavior!r}, needs_hash={self.needs_hash!r})"
        )

    @property
    def metadata(self) -> dict[str, Any]:
        """The metadata map (created when missing)."""
        md = self.obj.get("metadata")
        if md is None:
            md = self.obj["metadata"] = {}
        return md

    @property
    def kind(self) -> str:
        """The kind, or ""."""
        return self.obj.get("kind") or ""

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` string."""
        return self.obj.get("apiVersion") or ""

    @property
    def gvk(self) -> Gvk:
        """The group/version/kind of this resource or selector."""
        obj = self.obj
        group, _, version = (obj.get("apiVersion") or "").rpartition("/")
        return _new_tuple(Gvk, (group, version, obj.get("kind") or ""))

    @property
    def name(self) -> str:
        """metadata.name, or ""."""
        md = self.obj.get("metadata") or {}
        return md.get("name") or ""

    @property
    def namespace(self) -> str:
        """metadata.namespace, or ""."""
        md = self.obj.get("metadata") or {}
        return md.get("namespace") or ""

    @property
    def id(self) -> ResId:
        """The current ResId."""
        return ResId(self.gvk, self.name, self.namespace)

    @property
    def orig_name(self) -> str:
        """The name before the first rename."""
        return self.previous[0][1] if self.previous else self.name

    @property
    def orig_namespace(self) -> str:
        """The namespace before the first rename."""
        return self.previous[0][0] if self.previous else self.namespace

    @property
    def orig_id(self) -> ResId:
        """The ResId before the first rename."""
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
            self._previous_kinds().append(self.kind)

    def describe(self) -> str:
        """Short human form for error messages: ``Deployment/ns/name``."""
        ns = self.namespace
        return f"{self.kind}/{ns + '/' if ns else ''}{self.name}"

    # --- kustomize bookkeeping used by the build (prefix/suffix history, previous ids) ---

    @property
    def prefixes(self) -> list[str]:
        """Name prefixes applied so far, oldest first."""
        out: list[str] = self.extra.setdefault("prefixes", [])
        return out

    @property
    def suffixes(self) -> list[str]:
        """Name suffixes applied so far, oldest first."""
        out: list[str] = self.extra.setdefault("suffixes", [])
        return out

    def store_previous(self) -> None:
        """Record the current id as a previous one, as kustomize's StorePreviousId."""
        self.previous.append((self.namespace, self.name))
        self._previous_kinds().append(self.kind)

    def _previous_kinds(self) -> list[str]:
        """The kind at each entry of ``previous`` (a patch may change the kind)."""
        kinds: list[str] = self.extra.setdefault("previous_kinds", [])
        if len(kinds) < len(self.previous) - 1:
            # entries recorded without a kind (restored from elsewhere): the current kind
            kinds[:0] = [self.kind] * (len(self.previous) - 1 - len(kinds))
        return kinds

    def previous_kinds(self) -> list[str]:
        """The kind of each previous id, oldest first (aligned with ``previous``)."""
        return [self._kind_at(i) for i in range(len(self.previous))]

    def _kind_at(self, i: int) -> str:
        kinds = self.extra.get("previous_kinds")
        if kinds and len(kinds) == len(self.previous):
            return str(kinds[i])
        return self.kind

    def effective_namespace(self) -> str:
        """The namespace as kustomize compares it ("" means "default")."""
        return effective_namespace(self.api_version, self.kind, self.namespace)

    def key(self) -> tuple[str, str, str, str, str]:
        """Hashable current id, with kustomize's namespace equivalence ("" == "default")."""
        return id_key(self.api_version, self.kind, self.name, self.namespace)

    def prev_keys(self) -> list[tuple[str, str, str, str, str]]:
        """Keys of the previous ids (oldest first)."""
        av = self.api_version
        return [
            id_key(av, self._kind_at(i), name, ns) for i, (ns, name) in enumerate(self.previous)
        ]

    def any_keys(self) -> list[tuple[str, str, str, str, str]]:
        """Keys of previous ids plus the current one."""
        return [*self.prev_keys(), self.key()]

    def org_key(self) -> tuple[str, str, str, str, str]:
        """Key of the original id (before any rename)."""
        if self.previous:
            ns, name = self.previous[0]
            return id_key(self.api_version, self._kind_at(0), name, ns)
        return self.key()

    def copy(self, *, obj: dict[str, Any] | None = None) -> Resource:
        """Deep copy of the object (or ``obj`` in its place, as it is) and the bookkeeping."""
        import copy as _copy

        return Resource(
            obj=_copy.deepcopy(self.obj) if obj is None else obj,
            source=self.source,
            previous=list(self.previous),
            behavior=self.behavior,
            needs_hash=self.needs_hash,
            # Value aliases point into this object's containers; a copy starts without them.
            extra=_copy.deepcopy({k: v for k, v in self.extra.items() if k != "value_aliases"}),
        )


# Kinds kustomize knows to be cluster-scoped (its precomputed table, by apiVersion + kind).
CLUSTER_SCOPED: frozenset[tuple[str, str]] = frozenset(
    tuple(item.split(" "))  # type: ignore[misc]
    for item in (
        "admissionregistration.k8s.io/v1 MutatingWebhookConfiguration",
        "admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration",
        "admissionregistration.k8s.io/v1beta1 MutatingWebhookConfiguration",
        "admissionregistration.k8s.io/v1beta1 ValidatingWebhookConfiguration",
        "apiextensions.k8s.io/v1 CustomResourceDefinition",
        "apiextensions.k8s.io/v1beta1 CustomResourceDefinition",
        "apiregistration.k8s.io/v1 APIService",
        "apiregistration.k8s.io/v1beta1 APIService",
        "certificates.k8s.io/v1 CertificateSigningRequest",
        "certificates.k8s.io/v1beta1 CertificateSigningRequest",
        "flowcontrol.apiserver.k8s.io/v1beta1 FlowSchema",
        "flowcontrol.apiserver.k8s.io/v1beta1 PriorityLevelConfiguration",
        "networking.k8s.io/v1 IngressClass",
        "networking.k8s.io/v1beta1 IngressClass",
        "node.k8s.io/v1 RuntimeClass",
        "node.k8s.io/v1beta1 RuntimeClass",
        "policy/v1beta1 PodSecurityPolicy",
        "rbac.authorization.k8s.io/v1 ClusterRole",
        "rbac.authorization.k8s.io/v1 ClusterRoleBinding",
        "rbac.authorization.k8s.io/v1beta1 ClusterRole",
        "rbac.authorization.k8s.io/v1beta1 ClusterRoleBinding",
        "scheduling.k8s.io/v1 PriorityClass",
        "scheduling.k8s.io/v1beta1 PriorityClass",
        "storage.k8s.io/v1 CSIDriver",
        "storage.k8s.io/v1 CSINode",
        "storage.k8s.io/v1 StorageClass",
        "storage.k8s.io/v1 VolumeAttachment",
        "storage.k8s.io/v1beta1 CSIDriver",
        "storage.k8s.io/v1beta1 CSINode",
        "storage.k8s.io/v1beta1 StorageClass",
        "storage.k8s.io/v1beta1 VolumeAttachment",
        "v1 ComponentStatus",
        "v1 Namespace",
        "v1 Node",
        "v1 NodeProxyOptions",
        "v1 PersistentVolume",
    )
)
NOT_A_NAMESPACE = "_non_namespaceable_"


def is_cluster_scoped(api_version: str, kind: str) -> bool:
    """True for kinds kustomize treats as certainly cluster-scoped."""
    return (api_version, kind) in CLUSTER_SCOPED


def effective_namespace(api_version: str, kind: str, namespace: str) -> str:
    """kustomize's EffectiveNamespace: "" and "default" are equal; cluster kinds have none."""
    if (api_version, kind) in CLUSTER_SCOPED:
        return NOT_A_NAMESPACE
    return namespace or "default"


def id_key(
    api_version: str, kind: str, name: str, namespace: str
) -> tuple[str, str, str, str, str]:
    """Hashable resource id with kustomize's id equality."""
    group, _, version = api_version.rpartition("/")
    return (group, version, kind, name, effective_namespace(api_version, kind, namespace))


def key_str(key: tuple[str, str, str, str, str]) -> str:
    """Readable form of an id key: ``Kind.version.group/name.namespace`` as kustomize prints."""
    group, version, kind, name, ns = key
    ns = "" if ns == NOT_A_NAMESPACE else ns
    gvk = ".".join([kind or "[noKind]", version or "[noVer]", group or "[noGrp]"])
    return f"{gvk}/{name}.{ns or '[noNs]'}"


class ResMap:
    """An ordered list of resources with id lookups (kustomize's ResMap).

    Indexes are rebuilt lazily: any transformer may rename resources, so callers
    that changed ids call :meth:`invalidate`.
    """

    def __init__(self, resources: list[Resource] | None = None):
        self._list: list[Resource] = []
        self._cur: dict[tuple[str, str, str, str, str], list[Resource]] | None = {}
        self._any: dict[tuple[str, str, str, str, str], list[Resource]] | None = None
        for r in resources or []:
            self.append(r)

    def __iter__(self) -> Iterator[Resource]:
        return iter(list(self._list))

    def __len__(self) -> int:
        return len(self._list)

    def resources(self) -> list[Resource]:
        """The resources, in order."""
        return list(self._list)

    def invalidate(self) -> None:
        """Forget the id indexes (call after renaming resources)."""
        self._cur = None
        self._any = None

    def _cur_index(self) -> dict[tuple[str, str, str, str, str], list[Resource]]:
        if self._cur is None:
            idx: dict[tuple[str, str, str, str, str], list[Resource]] = {}
            for r in self._list:
                idx.setdefault(r.key(), []).append(r)
            self._cur = idx
        return self._cur

    def _any_index(self) -> dict[tuple[str, str, str, str, str], list[Resource]]:
        if self._any is None:
            idx: dict[tuple[str, str, str, str, str], list[Resource]] = {}
            for r in self._list:
                for k in dict.fromkeys(r.any_keys()):
                    idx.setdefault(k, []).append(r)
            self._any = idx
        return self._any

    def by_current_key(self, key: tuple[str, str, str, str, str]) -> list[Resource]:
        """Resources whose current id has this key."""
        return list(self._cur_index().get(key, ()))

    def by_any_key(self, key: tuple[str, str, str, str, str]) -> list[Resource]:
        """Resources whose current or a previous id has this key."""
        return list(self._any_index().get(key, ()))

    def append(self, res: Resource) -> None:
        """Add a resource; an id already present is an error."""
        from orchestrator.errors import ResourceConflictError

        idx = self._cur_index()
        key = res.key()
        if idx.get(key):
            raise ResourceConflictError(
                # As kustomize prints it: the namespace as written ([noNs] when none).
                "may not add resource with an already registered id: "
                + key_str((*key[:4], res.namespace)),
                file=res.source,
                resource=res.describe(),
            )
        self._list.append(res)
        idx.setdefault(key, []).append(res)
        self._any = None

    def append_unchecked(self, res: Resource) -> None:
        """Add a resource without the duplicate-id check."""
        self._list.append(res)
        self.invalidate()

    def replace(self, old: Resource, new: Resource) -> None:
        """Put ``new`` in the place of ``old``."""
        i = next(i for i, r in enumerate(self._list) if r is old)
        self._list[i] = new
        self.invalidate()

    def remove(self, res: Resource) -> None:
        """Drop a resource."""
        self._list = [r for r in self._list if r is not res]
        self.invalidate()

    def set_list(self, resources: list[Resource]) -> None:
        """Replace the whole list."""
        self._list = list(resources)
        self.invalidate()


class ImplicitNullMap(dict[str, "Any"]):  # a string: typing is not imported at run time
    """A map with keys written with no value at all (``key:``), named in ``implicit_nulls``.

    go-yaml keeps such a value as an empty null scalar, and kyaml's strategic merge drops it
    where it walks, while an explicit ``null`` or ``~`` stays; PyYAML reads both as None.
    The value is what kustomize decodes: None in a block mapping, ``""`` in a flow mapping
    (``{key: }``). Only maps that hold such a key get this type (rare).
    """

    __slots__ = ("implicit_nulls",)

    def __init__(self, items: Any = (), implicit_nulls: frozenset[str] = frozenset()) -> None:
        dict.__init__(self, items)
        self.implicit_nulls = implicit_nulls

    def __reduce__(self) -> Any:
        return (ImplicitNullMap, (dict(self), self.implicit_nulls))
