"""What configMapGenerator and secretGenerator share: reading key/value sources, options, merging.

Follows kustomize v5.5.0 (api/kv, api/internal/generators, api/resource): env files first,
then literals, then files; env lines are split on the first ``=`` with no unquoting; literals
lose one pair of matching surrounding quotes; keys must be unique. Values are kept exactly as
kustomize hashes them; its output step folds NEL (U+0085) line breaks, see :func:`fold_nel`.
"""

from __future__ import annotations

import posixpath

from orchestrator.errors import KrmError, ResourceConflictError, ValidationError
from orchestrator.lazyre import Pattern
from orchestrator.resource import Resource

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    import re
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "BEHAVIORS",
    "base64_lines",
    "check_args",
    "check_marshallable",
    "check_readable",
    "env_pairs",
    "file_pairs",
    "fold_nel",
    "literal_pairs",
    "load_pairs",
    "make_base",
    "merge_into",
    "merge_options",
    "parse_file_source",
    "parse_literal",
]

BEHAVIORS = ("create", "merge", "replace")
# bufio.Scanner's default limit: kustomize stops reading an env file at a longer line.
_MAX_LINE = 64 * 1024
# Go's unicode.IsSpace (Python's str.isspace also counts \x1c-\x1f, which Go does not).
_GO_SPACE = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)
# kustomize keeps these internal annotations from the original resource on merge/replace.
_BUILD_ANNOTATIONS = frozenset(
    {
        "internal.config.kubernetes.io/path",
        "internal.config.kubernetes.io/index",
        "internal.config.kubernetes.io/seqindent",
        "internal.config.kubernetes.io/id",
        "internal.config.k8s.io/id",
        "config.kubernetes.io/path",
        "config.kubernetes.io/index",
        "config.k8s.io/id",
    }
)
_ORIGIN = "config.kubernetes.io/origin"
_KNOWN_ARGS = frozenset(
    {"name", "namespace", "behavior", "literals", "files", "envs", "env", "options", "type"}
)
_KNOWN_OPTIONS = frozenset({"labels", "annotations", "disableNameSuffixHash", "immutable"})


# A run of NEL line breaks (and the spaces around them) that a YAML reader folds.
_NEL_RUN = Pattern("[ ]*\x85[ \x85]*")
# kustomize round-trips a generator's arguments through JSON and a YAML 1.1 reader, which
# rejects these characters (JSON leaves them unescaped); such a kustomization fails to build.
_YAML_UNREADABLE = Pattern("[\x7f-\x84\x86-\x9f\ufffe\uffff]")


def _unreadable(value: str) -> bool:
    # All of them but DEL are outside ASCII: most values need no pattern.
    if value.isascii() and "\x7f" not in value:
        return False
    return _YAML_UNREADABLE.search(value) is not None


def _go_list(items: list[str]) -> str:
    """Format a string list as Go's ``%v`` does, for kustomize-identical messages."""
    return "[" + " ".join(items) + "]"


def _string_list(args: dict[str, Any], key: str, what: str) -> list[str]:
    value = args.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"{what} {args.get('name')!r}: {key} must be a list of strings")
    return value


def _string_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValidationError(f"{where} must be a map of strings to strings")
    return value


def _has_unreadable(value: Any) -> bool:
    if isinstance(value, str):
        return _unreadable(value)
    if isinstance(value, dict):
        return any(_has_unreadable(k) or _has_unreadable(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_unreadable(v) for v in value)
    return False


def check_marshallable(args: dict[str, Any], options: dict[str, Any], what: str) -> None:
    """Fail like kustomize on arguments its YAML round trip cannot carry."""
    if _has_unreadable(args) or _has_unreadable(options):
        plugin = "ConfigMapGenerator" if what == "configMapGenerator" else "SecretGenerator"
        raise ValidationError(f"builtin {plugin} marshal: yaml: control characters are not allowed")


def _fold_run(match: re.Match[str]) -> str:
    breaks = match.group().count("\x85")
    return " " if breaks == 1 else "\n" * (breaks - 1)


def fold_nel(value: Any) -> Any:
    """Fold NEL line breaks as kustomize's JSON-to-YAML round trips do.

    Go's JSON leaves U+0085 raw, and the YAML reader then folds it like a line break inside a
    quoted scalar: spaces around it vanish, one break becomes a space, n breaks n-1 newlines.
    """
    if isinstance(value, str):
        return _NEL_RUN.sub(_fold_run, value) if "\x85" in value else value
    if isinstance(value, dict):
        return {fold_nel(k): fold_nel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [fold_nel(v) for v in value]
    return value


def check_readable(value: str, where: str) -> None:
    """Fail like kustomize on a ConfigMap value its later YAML round trips cannot carry."""
    if _unreadable(value):
        raise ValidationError(f"{where}: yaml: control characters are not allowed")


def check_args(args: Any, what: str, *, strict: bool = True) -> tuple[str, str]:
    """Validate a generator entry's shape; return its (name, behavior).

    ``strict`` rejects unknown fields, as kustomize does in a kustomization file (it ignores
    them in a ``generators:`` plugin config).
    """
    if not isinstance(args, dict):
        raise ValidationError(f"{what} entry must be a map, got {type(args).__name__}")
    known = _KNOWN_ARGS if what == "secretGenerator" else _KNOWN_ARGS - {"type"}
    unknown = sorted(str(k) for k in set(args) - known) if strict else []
    if unknown:
        raise ValidationError(f"{what} {args.get('name')!r}: unknown field(s) {', '.join(unknown)}")
    name = args.get("name")
    if not name:
        # kustomize's message, also for secrets.
        raise ValidationError("a configmap must have a name")
    if not isinstance(name, str):
        raise ValidationError(f"{what} name must be a string, got {name!r}")
    namespace = args.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise ValidationError(f"{what} {name!r}: namespace must be a string, got {namespace!r}")
    behavior = args.get("behavior") or "create"
    if not isinstance(behavior, str):
        raise ValidationError(f"{what} {name!r}: behavior must be a string, got {behavior!r}")
    # kustomize treats any other value as "unspecified", which acts exactly like create.
    return name, behavior if behavior in BEHAVIORS else "create"


def merge_options(
    local: dict[str, Any] | None, global_: dict[str, Any] | None, where: str
) -> dict[str, Any]:
    """Merge generatorOptions into an entry's options as kustomize does.

    Local labels/annotations win over global ones; a global ``true`` wins for the booleans.
    """
    for opts, label in ((local, f"{where}: options"), (global_, "generatorOptions")):
        if opts is None:
            continue
        if not isinstance(opts, dict):
            raise ValidationError(f"{label} must be a map")
        unknown = sorted(set(opts) - _KNOWN_OPTIONS)
        if unknown:
            raise ValidationError(f"{label}: unknown field(s) {', '.join(unknown)}")
    local = local or {}
    global_ = global_ or {}
    labels = {
        **_string_map(global_.get("labels"), "generatorOptions.labels"),
        **_string_map(local.get("labels"), f"{where}: options.labels"),
    }
    annotations = {
        **_string_map(global_.get("annotations"), "generatorOptions.annotations"),
        **_string_map(local.get("annotations"), f"{where}: options.annotations"),
    }
    flags = {}
    for flag in ("disableNameSuffixHash", "immutable"):
        values = (global_.get(flag), local.get(flag))
        for value, label in zip(values, ("generatorOptions", f"{where}: options"), strict=True):
            if value is not None and not isinstance(value, bool):
                raise ValidationError(f"{label}.{flag} must be true or false, got {value!r}")
        flags[flag] = any(values)
    return {"labels": labels, "annotations": annotations, **flags}


def parse_literal(source: str) -> tuple[str, str]:
    """Split ``key=value``; strip one pair of matching surrounding quotes from the value."""
    key, sep, value = source.partition("=")
    if not sep or not key:
        raise ValidationError(f"invalid literal source {source}, expected key=value")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return key, value


def parse_file_source(source: str) -> tuple[str, str]:
    """Split ``[key=]path`` into (key, path); the key defaults to the path's basename."""
    count = source.count("=")
    if count == 0:
        return posixpath.basename(source.rstrip("/")) or source, source
    if count > 1:
        raise ValidationError(f"source {_go_quote(source)} key name or file path contains '='")
    key, _, path = source.partition("=")
    if not key:
        raise ValidationError(
            f"missing key name for file path {_go_quote(path)} in source {_go_quote(source)}"
        )
    if not path:
        raise ValidationError(
            f"missing file path for key name {_go_quote(key)} in source {_go_quote(source)}"
        )
    return key, path


def _go_quote(text: str) -> str:
    """Go's %q for ordinary strings (close enough for messages)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _scan_lines(content: bytes) -> list[bytes]:
    """Lines as Go's bufio.Scanner(ScanLines) yields them: split on \\n, drop one trailing \\r."""
    lines = content.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out = []
    for line in lines:
        if len(line) >= _MAX_LINE:
            # Scanner gives up with ErrTooLong, which kustomize does not check: the rest is lost.
            break
        out.append(line[:-1] if line.endswith(b"\r") else line)
    return out


def env_pairs(content: bytes) -> list[tuple[str, str]]:
    """Parse an env file: ``KEY=VALUE`` lines, ``#`` comments, blank lines, ``KEY`` alone."""
    pairs = []
    for number, raw in enumerate(_scan_lines(content)):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            # kustomize formats the line's bytes with %d: "[66 65 68]".
            as_go = "[" + " ".join(str(b) for b in raw) + "]"
            raise ValidationError(
                f"line {as_go} has invalid utf8 bytes : {raw.decode('utf-8', 'replace')}"
            ) from None
        if number == 0 and line.startswith("\ufeff"):
            line = line[1:]
        start = 0
        while start < len(line) and line[start] in _GO_SPACE:
            start += 1
        line = line[start:]
        if not line or line[0] == "#":
            continue
        key, _, value = line.partition("=")
        if key:
            pairs.append((key, value))
    return pairs


def _prefixed(err: KrmError, prefix: str) -> KrmError:
    """Say which generator and source an error is about (kustomize's wording), keeping its type."""
    err.message = f"{prefix}: {err.message}"
    err.args = (err.message,)
    return err


def literal_pairs(literals: list[str]) -> list[tuple[str, str]]:
    """Parse ``literals:`` entries."""
    try:
        return [parse_literal(s) for s in literals]
    except ValidationError as err:
        raise ValidationError(f"literal sources {_go_list(literals)}: {err.message}") from None


def file_pairs(
    sources: list[str], read_file: Callable[[str], bytes]
) -> list[tuple[str, str | bytes]]:
    """Read ``files:`` entries; values are str when UTF-8, else the raw bytes."""
    pairs: list[tuple[str, str | bytes]] = []
    for source in sources:
        try:
            key, path = parse_file_source(source)
        except ValidationError as err:
            raise ValidationError(f"file sources: {_go_list(sources)}: {err.message}") from None
        try:
            content = read_file(path)
        except KrmError as err:
            raise _prefixed(err, f"file sources: {_go_list(sources)}") from None
        try:
            pairs.append((key, content.decode("utf-8")))
        except UnicodeDecodeError:
            pairs.append((key, content))
    return pairs


def load_pairs(
    args: dict[str, Any], read_file: Callable[[str], bytes], what: str
) -> dict[str, str | bytes]:
    """All key/value pairs of a generator entry in kustomize's order, keys checked unique."""
    name = args.get("name")
    envs = list(_string_list(args, "envs", what))
    env = args.get("env")
    if env:
        if not isinstance(env, str):
            raise ValidationError(f"{what} {name!r}: env must be a string")
        envs.append(env)
    pairs: list[tuple[str, str | bytes]] = []
    for path in envs:
        try:
            pairs.extend(env_pairs(read_file(path)))
        except KrmError as err:
            raise _prefixed(err, f"{what} {name!r}: env source files: {_go_list(envs)}") from None
    try:
        pairs.extend(literal_pairs(_string_list(args, "literals", what)))
        pairs.extend(file_pairs(_string_list(args, "files", what), read_file))
    except KrmError as err:
        raise _prefixed(err, f"{what} {name!r}") from None
    data: dict[str, str | bytes] = {}
    for key, value in pairs:
        if key in data:
            # kustomize says "configmap" for secrets too.
            raise ValidationError(f"configmap {name} illegally repeats the key `{key}`")
        data[key] = value
    return data


def base64_lines(raw: bytes) -> str:
    """Base64 as kyaml writes it: 70-column lines, each ending in \\n once there are 70+ chars."""
    import binascii  # what base64.b64encode calls (base64 itself imports re and struct)

    text = binascii.b2a_base64(raw, newline=False).decode("ascii")
    if len(text) < 70:
        return text
    return "".join(text[i : i + 70] + "\n" for i in range(0, len(text), 70))


def make_base(
    kind: str, name: str, namespace: str | None, options: dict[str, Any]
) -> dict[str, Any]:
    """The generated object's skeleton with name, namespace, labels and annotations."""
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if options["labels"]:
        metadata["labels"] = dict(sorted(options["labels"].items()))
    if options["annotations"]:
        metadata["annotations"] = dict(sorted(options["annotations"].items()))
    return {"apiVersion": "v1", "kind": kind, "metadata": metadata}


def _as_text(value: Any) -> str:
    """A data value as kyaml's GetValue sees it (the scalar's text)."""
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None or isinstance(value, dict | list):
        return ""
    return str(value)


def _text_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): _as_text(v) for k, v in value.items()}


def _set_map(container: dict[str, Any], key: str, value: dict[str, Any]) -> None:
    """Set a map field, removing it when empty (kyaml clears, then sets only non-empty maps)."""
    if value:
        container[key] = dict(sorted(value.items()))
    else:
        container.pop(key, None)


def merge_into(existing: Resource, new: Resource) -> None:
    """Apply ``new`` (behavior merge or replace) onto ``existing``, in place, as kustomize does.

    The result is ``new``'s object carrying ``existing``'s name and namespace, both sets of
    labels and annotations (``new`` wins), and for merge both data maps (``new`` wins). It
    keeps ``existing``'s history, behavior and source; it needs a hash suffix only if both did.
    """
    behavior = new.behavior or "create"
    if behavior not in ("merge", "replace"):
        raise ResourceConflictError(
            f"id {existing.id} exists; behavior must be merge or replace",
            resource=existing.describe(),
        )
    if existing.kind != new.kind:
        raise ResourceConflictError(
            f"cannot {behavior} {new.describe()} into {existing.describe()}: kinds differ",
            resource=existing.describe(),
        )
    old_obj = existing.obj
    old_md = old_obj.get("metadata") or {}
    import copy

    obj = copy.deepcopy(new.obj)
    md = obj.get("metadata")
    if not isinstance(md, dict):
        md = obj["metadata"] = {}
    labels = {**_text_map(old_md.get("labels")), **_text_map(md.get("labels"))}
    old_annotations = _text_map(old_md.get("annotations"))
    annotations = {**old_annotations, **_text_map(md.get("annotations"))}
    for key in _BUILD_ANNOTATIONS:
        if key in old_annotations:
            annotations[key] = old_annotations[key]
        else:
            annotations.pop(key, None)
    if behavior == "merge" and _ORIGIN in old_annotations:
        # kustomize keeps where the merged resource was first configured.
        annotations[_ORIGIN] = old_annotations[_ORIGIN]
    _set_map(md, "labels", labels)
    _set_map(md, "annotations", annotations)
    md["name"] = old_md.get("name")
    if old_md.get("namespace"):
        md["namespace"] = old_md["namespace"]
    else:
        md.pop("namespace", None)
    if behavior == "merge":
        _set_map(obj, "data", {**_text_map(old_obj.get("data")), **_text_map(obj.get("data"))})
        _set_map(
            obj,
            "binaryData",
            {**_text_map(old_obj.get("binaryData")), **_text_map(obj.get("binaryData"))},
        )
    existing.obj = obj
    existing.needs_hash = existing.needs_hash and new.needs_hash
