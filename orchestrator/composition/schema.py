"""Reading ``composition.yaml``: decode (types, unknown fields) then validate (KEP-2299 rules).

Two phases, as in the kustomize prototype (PR 4323): *decoding* reports every wrong YAML type
and every unknown field with its line (``failed to decode Composition at path DIR``), then
*validation* reports the KEP schema's value rules -- apiVersion, kind, names, empty strings,
overrides without imports (``invalid Composition at path DIR``). Each problem names its line
and its path (``transformers[1].runtime.container``). The type names in decode messages
(``types.Composition``, ``runtimeutil.ContainerSpec``) are the schema's type names as the
prototype printed them, so messages stay recognisable across both implementations.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from typing import Any

import yaml

from orchestrator import yamlio
from orchestrator.errors import ValidationError, YamlError
from orchestrator.yamllimits import check_text

API_VERSION = "kustomize.config.k8s.io/v1alpha1"
KIND = "Composition"
BUILTIN = "builtin"
FILE_NAME = "composition.yaml"


def is_composition_path(full: str) -> bool:
    """A directory holding composition.yaml (and no kustomization), or a composition.yaml."""
    from orchestrator.fs import KUSTOMIZATION_FILES

    if os.path.isdir(full):
        has_k = any(os.path.isfile(os.path.join(full, n)) for n in KUSTOMIZATION_FILES)
        return not has_k and os.path.isfile(os.path.join(full, FILE_NAME))
    return os.path.basename(full) == FILE_NAME and os.path.isfile(full)


# RFC 1123 subdomain: the KEP schema's metadata.name pattern (its published text is garbled by
# a link rewriter; this is the Kubernetes pattern it was copied from).
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# The KEP's apiVersion pattern requires ``group/version``, which would reject its own
# ``apiVersion: builtin`` and core ``v1``; the group is optional here and versions may hold
# dashes (``builtin-next``), everything else as the KEP says.
API_VERSION_RE = re.compile(r"^([a-z0-9][a-z0-9.-]*/)?[a-z0-9][a-z0-9-]*$")

ROOT_FIELDS = (
    "apiVersion",
    "kind",
    "catalogs",
    "transformersFrom",
    "transformers",
    "modules",
    "transformerOverrides",
    "transformerOrder",
)
IMPORT_FIELDS = ("path", "importMode")
# KEP: name, kind, apiVersion; the prototype's fixtures also use group, version and namespace.
ORDER_FIELDS = ("name", "kind", "apiVersion", "group", "version", "namespace")
# An empty group selects the core group; the other selectors must not be empty.
_NON_EMPTY_ORDER_FIELDS = ("kind", "apiVersion", "version", "namespace")
# KEP: metadata holds only name. namespace is what NamespaceTransformer configs set, and
# annotations/labels are how KRM function configs carry config.kubernetes.io/* settings.
META_FIELDS = ("name", "namespace", "annotations", "labels")
# runtime kind -> (schema type name, its fields; one of them must be set)
RUNTIME_FIELDS = {
    "container": ("runtimeutil.ContainerSpec", ("image",)),
    "exec": ("runtimeutil.ExecSpec", ("path",)),
    "starlark": ("runtimeutil.StarlarkSpec", ("path", "url")),
}

_SHORT_TAGS = {
    "tag:yaml.org,2002:str": "!!str",
    "tag:yaml.org,2002:int": "!!int",
    "tag:yaml.org,2002:float": "!!float",
    "tag:yaml.org,2002:bool": "!!bool",
    "tag:yaml.org,2002:null": "!!null",
    "tag:yaml.org,2002:map": "!!map",
    "tag:yaml.org,2002:seq": "!!seq",
}


class CompositionError(ValidationError):
    """A Composition could not be decoded, is invalid, or could not be consolidated."""

    def __init__(self, phase: str, directory: str, problems: list[str], *, file: str | None):
        self.phase = phase
        self.directory = directory
        self.problems = problems
        body = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{phase} Composition at path {directory}:\n{body}", file=file)


def kebab(kind: str) -> str:
    """``JavaApplication`` -> ``java-application``: the KEP's default metadata.name."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1-\2", kind)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", s)
    return s.lower()


def split_api_version(api_version: str) -> tuple[str, str]:
    """``group/version`` -> (group, version); ``builtin`` -> ("", "builtin")."""
    group, _, version = api_version.rpartition("/")
    return group, version


@dataclass
class Transformer:
    """One transformer config of a Composition, with where it was written."""

    config: dict[str, Any]
    file: str
    field: str
    index: int
    line: int
    # Directory its relative paths resolve against (the defining, or last overriding, file's).
    base_dir: str = ""
    overridden_by: list[str] = dataclasses.field(default_factory=list)
    imported_via: list[str] = dataclasses.field(default_factory=list)

    @property
    def api_version(self) -> str:
        # The prototype treats a missing apiVersion as a builtin; its fixtures rely on it.
        return str(self.config.get("apiVersion") or BUILTIN)

    @property
    def kind(self) -> str:
        return str(self.config.get("kind") or "")

    @property
    def explicit_name(self) -> str:
        md = self.config.get("metadata")
        return str(md.get("name") or "") if isinstance(md, dict) else ""

    @property
    def name(self) -> str:
        return self.explicit_name or (kebab(self.kind) if self.kind else "")

    @property
    def namespace(self) -> str:
        md = self.config.get("metadata")
        return str(md.get("namespace") or "") if isinstance(md, dict) else ""

    def key(self) -> tuple[str, str, str]:
        """What identifies a transformer in a Composition tree: apiVersion, kind, name."""
        return (self.api_version, self.kind, self.name)

    def ident(self) -> str:
        """kustomize's resource id form, as the prototype prints it."""
        group, version = split_api_version(self.api_version)
        return (
            f"{group or '~G'}_{version or '~V'}_{self.kind or '~K'}"
            f"|{self.namespace or 'default'}|{self.name or '~N'}"
        )

    def where(self) -> str:
        """``dir/composition.yaml:12 (transformers[1])``."""
        from orchestrator.fs import display

        return f"{display(self.file)}:{self.line} ({self.field}[{self.index}])"

    def resolved_config(self) -> dict[str, Any]:
        """The config as it runs: apiVersion and metadata.name filled in."""
        cfg = dict(self.config)
        cfg["apiVersion"] = self.api_version
        md = dict(cfg.get("metadata") or {})
        if self.name:
            md["name"] = self.name
        cfg["metadata"] = md
        return cfg


@dataclass
class Import:
    """One ``transformersFrom`` entry."""

    path: str
    mode: str
    index: int
    line: int


@dataclass
class OrderEntry:
    """One ``transformerOrder`` entry."""

    name: str
    index: int
    line: int
    kind: str = ""
    api_version: str = ""
    group: str | None = None
    version: str = ""
    namespace: str = ""
    # Selectors given with an empty value (the KEP schema's minLength/pattern reject them).
    empty: tuple[str, ...] = ()

    def matches(self, t: Transformer) -> bool:
        if self.name != t.name or (self.kind and self.kind != t.kind):
            return False
        if self.api_version and self.api_version != t.api_version:
            return False
        group, version = split_api_version(t.api_version)
        if self.group is not None and self.group != group:
            return False
        if self.version and self.version != version:
            return False
        return not (self.namespace and self.namespace != (t.namespace or "default"))

    def describe(self) -> str:
        parts = [f"name {self.name!r}"]
        for label, value in (
            ("kind", self.kind),
            ("apiVersion", self.api_version),
            ("group", self.group),
            ("version", self.version),
            ("namespace", self.namespace),
        ):
            if value:
                parts.append(f"{label} {value!r}")
        return ", ".join(parts)


@dataclass
class Composition:
    """A decoded and validated ``composition.yaml``."""

    file: str
    directory: str
    transformers: list[Transformer]
    transformers_field: str
    imports: list[Import]
    overrides: list[Transformer]
    order: list[OrderEntry]
    catalogs: list[str]
    order_line: int = 0


# ----------------------------------------------------------------------------- decoding


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _tag(node: yaml.Node) -> str:
    return _SHORT_TAGS.get(node.tag, node.tag)


class _Decoder:
    """Walks the composed YAML nodes, collecting decode problems and building plain data."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.key_lines: dict[int, int] = {}

    def wrong(self, node: yaml.Node, target: str, path: str, want: str) -> None:
        shown = f" `{node.value}`" if isinstance(node, yaml.ScalarNode) else ""
        self.problems.append(
            f"line {_line(node)}: cannot unmarshal {_tag(node)}{shown} into {target} "
            f"(at {path}: expected {want})"
        )

    def mapping(self, node: yaml.Node, target: str, path: str) -> list[tuple[str, yaml.Node]]:
        if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
            return []
        if not isinstance(node, yaml.MappingNode):
            self.wrong(node, target, path, "a map")
            return []
        out = []
        seen: dict[str, int] = {}
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                self.problems.append(f"line {_line(k)}: map keys must be strings (at {path})")
                continue
            if k.value in seen:
                self.problems.append(
                    f'line {_line(k)}: mapping key "{k.value}" already defined at line '
                    f"{seen[k.value]} (at {_join(path, k.value)})"
                )
                continue
            seen[k.value] = _line(k)
            out.append((k.value, v))
            self.key_lines[id(v)] = _line(k)
        return out

    def fields(
        self, node: yaml.Node, target: str, path: str, allowed: tuple[str, ...] | None
    ) -> dict[str, yaml.Node]:
        out: dict[str, yaml.Node] = {}
        for key, value in self.mapping(node, target, path):
            if allowed is not None and key not in allowed:
                self.problems.append(
                    f"line {self.key_lines[id(value)]}: field {key} not found in type {target} "
                    f"(at {_join(path, key)}; known fields: {', '.join(allowed)})"
                )
                continue
            out[key] = value
        return out

    def sequence(self, node: yaml.Node, path: str) -> list[yaml.Node]:
        if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
            return []
        if not isinstance(node, yaml.SequenceNode):
            self.wrong(node, "[]" + path.rsplit(".", 1)[-1], path, "a list")
            return []
        return list(node.value)

    def string(self, node: yaml.Node, path: str) -> str | None:
        if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
            return None
        if not isinstance(node, yaml.ScalarNode) or node.tag.endswith((":map", ":seq")):
            self.wrong(node, "string", path, "a string")
            return None
        # go-yaml decodes any scalar into a string field (``version: 1`` -> "1").
        text: str = node.value
        return text

    def string_map(self, node: yaml.Node, path: str) -> None:
        for key, value in self.mapping(node, "map[string]string", path):
            self.string(value, _join(path, key))

    def transformer(self, node: yaml.Node, path: str) -> dict[str, Any] | None:
        known = len(self.problems)
        fields = self.fields(node, "types.TransformerConfig", path, None)
        if not isinstance(node, yaml.MappingNode):
            return None
        for key in ("apiVersion", "kind"):
            if key in fields:
                self.string(fields[key], _join(path, key))
        if "metadata" in fields:
            md = self.fields(
                fields["metadata"], "types.ObjectMeta", path + ".metadata", META_FIELDS
            )
            for key in ("name", "namespace"):
                if key in md:
                    self.string(md[key], f"{path}.metadata.{key}")
            for key in ("annotations", "labels"):
                if key in md:
                    self.string_map(md[key], f"{path}.metadata.{key}")
        if "runtime" in fields:
            rt = self.fields(
                fields["runtime"],
                "runtimeutil.FunctionSpec",
                path + ".runtime",
                tuple(RUNTIME_FIELDS),
            )
            for key, value in rt.items():
                target, allowed = RUNTIME_FIELDS[key]
                spec = self.fields(value, target, f"{path}.runtime.{key}", allowed)
                for name, sub in spec.items():
                    self.string(sub, f"{path}.runtime.{key}.{name}")
        try:
            constructed: dict[str, Any] | None = yamlio._construct(node)
            return constructed
        except yaml.YAMLError as exc:  # e.g. a key given twice
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else _line(node)
            if len(self.problems) == known:  # else the decoder has said it already
                self.problems.append(f"line {line}: {getattr(exc, 'problem', None) or exc}")
            return None


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _compose(text: bytes, source: str) -> yaml.Node | None:
    decoded = yamlio.decode(text, source=source)
    check_text(decoded, source=source)
    loader = yamlio.Loader(decoded)
    try:
        return loader.get_single_node()
    except yaml.composer.ComposerError as exc:
        mark = exc.problem_mark
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise YamlError(
            f"a Composition file holds one YAML document, found another{line}", file=source
        ) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {yamlio._mark(exc)}", file=source) from None
    finally:
        loader.dispose()


def parse(data: bytes, *, file: str) -> Composition:
    """Decode and validate the text of ``file`` (an absolute path) as a Composition."""
    from orchestrator.fs import display

    directory = os.path.dirname(file)
    shown = display(file)
    root = _compose(data, shown)
    dec = _Decoder()
    if root is None:
        raise CompositionError("invalid", directory, ["the file is empty"], file=shown)
    fields = dec.fields(root, "types.Composition", "", ROOT_FIELDS)
    values: dict[str, Any] = {}
    for key in ("apiVersion", "kind"):
        if key in fields:
            values[key] = dec.string(fields[key], key)
    # Lines of the root keys (a list value starts on the next line).
    lines = {k.value: _line(k) for k, _ in root.value} if isinstance(root, yaml.MappingNode) else {}

    catalogs: list[str] = []
    for i, item in enumerate(dec.sequence(fields.get("catalogs", _NULL), "catalogs")):
        ref = dec.string(item, f"catalogs[{i}]")
        if ref is not None:
            catalogs.append(ref)

    imports: list[tuple[dict[str, Any], int, int]] = []
    items = dec.sequence(fields.get("transformersFrom", _NULL), "transformersFrom")
    for i, item in enumerate(items):
        entry = dec.fields(item, "types.TransformerSource", f"transformersFrom[{i}]", IMPORT_FIELDS)
        got = {k: dec.string(v, f"transformersFrom[{i}].{k}") for k, v in entry.items()}
        imports.append((got, i, _line(item)))

    lists: dict[str, list[Transformer]] = {}
    for key in ("transformers", "modules", "transformerOverrides"):
        out: list[Transformer] = []
        for i, item in enumerate(dec.sequence(fields.get(key, _NULL), key)):
            cfg = dec.transformer(item, f"{key}[{i}]")
            if cfg is not None:
                out.append(Transformer(cfg, file, key, i, _line(item), base_dir=directory))
        lists[key] = out

    order: list[OrderEntry] = []
    for i, item in enumerate(
        dec.sequence(fields.get("transformerOrder", _NULL), "transformerOrder")
    ):
        entry = dec.fields(
            item, "types.TransformerOrderEntry", f"transformerOrder[{i}]", ORDER_FIELDS
        )
        got = {k: dec.string(v, f"transformerOrder[{i}].{k}") for k, v in entry.items()}
        order.append(
            OrderEntry(
                name=got.get("name") or "",
                index=i,
                line=_line(item),
                kind=got.get("kind") or "",
                api_version=got.get("apiVersion") or "",
                group=got.get("group"),
                version=got.get("version") or "",
                namespace=got.get("namespace") or "",
                empty=tuple(k for k in _NON_EMPTY_ORDER_FIELDS if k in got and not got[k]),
            )
        )
    if dec.problems:
        raise CompositionError("failed to decode", directory, dec.problems, file=shown)

    problems = _validate(values, lines, imports, lists, order)
    if problems:
        raise CompositionError("invalid", directory, problems, file=shown)
    field_name = "modules" if lists["modules"] else "transformers"
    return Composition(
        file=file,
        directory=directory,
        transformers=lists[field_name],
        transformers_field=field_name,
        imports=[
            Import(
                path=str(got.get("path")),
                mode=got.get("importMode") or "prepend",
                index=i,
                line=line,
            )
            for got, i, line in imports
        ],
        overrides=lists["transformerOverrides"],
        order=order,
        catalogs=catalogs,
        order_line=lines.get("transformerOrder", 0),
    )


_NULL = yaml.ScalarNode("tag:yaml.org,2002:null", "")


def _validate(
    values: dict[str, Any],
    lines: dict[str, int],
    imports: list[tuple[dict[str, Any], int, int]],
    lists: dict[str, list[Transformer]],
    order: list[OrderEntry],
) -> list[str]:
    problems: list[str] = []
    api_version, kind = values.get("apiVersion"), values.get("kind")
    if not api_version:
        problems.append(f"line 1: apiVersion: required field is missing (use {API_VERSION})")
    elif api_version != API_VERSION:
        problems.append(
            f"line {lines['apiVersion']}: apiVersion: must be {API_VERSION!r}, got {api_version!r}"
        )
    if not kind:
        problems.append(f"line 1: kind: required field is missing (use {KIND})")
    elif kind != KIND:
        problems.append(f"line {lines['kind']}: kind: must be {KIND!r}, got {kind!r}")
    if lists["transformers"] and lists["modules"]:
        problems.append(
            f"line {lines['modules']}: modules: is an alias of transformers; use one of them, "
            "not both"
        )
    for got, i, line in imports:
        if not got.get("path"):
            problems.append(
                f"line {line}: transformersFrom[{i}]: transformersFrom entry is missing the "
                "path field"
            )
    if lists["transformerOverrides"] and not imports:
        problems.append(
            f"line {lines['transformerOverrides']}: Composition contained overrides but did not "
            "import any transformers (transformerOverrides only apply to transformersFrom imports)"
        )
    for key in ("transformers", "modules", "transformerOverrides"):
        for t in lists[key]:
            problems.extend(_check_transformer(t))
    for entry in order:
        where = f"line {entry.line}: transformerOrder[{entry.index}]"
        if not entry.name:
            problems.append(f"{where}.name: required field is missing")
        else:
            problems.extend(_check_name(entry.name, where + ".name"))
        problems.extend(f"{where}.{key}: must not be empty" for key in entry.empty)
        if entry.api_version and not API_VERSION_RE.match(entry.api_version):
            problems.append(f"{where}.apiVersion: invalid apiVersion {entry.api_version!r}")
        if entry.api_version and (entry.group is not None or entry.version):
            problems.append(f"{where}: give apiVersion or group/version, not both")
    return problems


def _check_name(name: str, where: str) -> list[str]:
    if len(name) > 253:
        return [f"{where}: name is longer than 253 characters"]
    if not NAME_RE.match(name):
        return [
            f"{where}: invalid name {name!r}: use lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit"
        ]
    return []


def _check_transformer(t: Transformer) -> list[str]:
    problems: list[str] = []
    where = f"line {t.line}: {t.field}[{t.index}]"
    cfg = t.config
    if "apiVersion" in cfg:
        av = cfg["apiVersion"]
        if not av:
            problems.append(f"{where}.apiVersion: must not be empty")
        elif not API_VERSION_RE.match(str(av)):
            problems.append(
                f"{where}.apiVersion: invalid apiVersion {av!r} (expected 'builtin' or "
                "'group/version')"
            )
    if "kind" in cfg and not cfg["kind"]:
        problems.append(f"{where}.kind: must not be empty")
    md = cfg.get("metadata")
    if isinstance(md, dict) and "name" in md:
        if not md["name"]:
            problems.append(f"{where}.metadata.name: must not be empty")
        else:
            problems.extend(_check_name(str(md["name"]), f"{where}.metadata.name"))
    runtime = cfg.get("runtime")
    if isinstance(runtime, dict):
        set_keys = [k for k in RUNTIME_FIELDS if runtime.get(k) is not None]
        if len(set_keys) > 1:
            problems.append(f"{where}.runtime: set only one of {', '.join(set_keys)}")
        for key, (_, allowed) in RUNTIME_FIELDS.items():
            spec = runtime.get(key)
            if isinstance(spec, dict):
                given = [f for f in allowed if spec.get(f)]
                if len(given) != 1:
                    problems.append(
                        f"{where}.runtime.{key}: set exactly one non-empty {' or '.join(allowed)}"
                    )
    return problems


def load(path: str) -> Composition:
    """Read and check the Composition file at ``path``."""
    from orchestrator.errors import LoadError
    from orchestrator.fs import KUSTOMIZATION_FILES, display

    file = os.path.abspath(path)
    if os.path.basename(file) == FILE_NAME:
        # KEP-2299: both files in one directory is an error, however the directory is reached
        # (build target, transformersFrom, ResourceGenerator paths, a Kustomization's fields).
        directory = os.path.dirname(file)
        found = [n for n in KUSTOMIZATION_FILES if os.path.isfile(os.path.join(directory, n))]
        if found:
            raise LoadError(
                f"both '{found[0]}' and '{FILE_NAME}' found in '{directory}'; keep only one",
                file=display(directory),
            )
    try:
        with open(file, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise LoadError("file does not exist", file=display(file)) from None
    return parse(data, file=file)
