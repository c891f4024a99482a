"""``krm edit add|set|remove configmap|secret``: ``configMapGenerator``/``secretGenerator`` entries.

Like kustomize, an added or changed entry is generated once (with the engine's generators) to
check that its sources load, and the kustomization's ``generatorOptions`` are merged into the
entry's own ``options``, as kustomize writes them back.
"""

from __future__ import annotations

from orchestrator.edit.commands import EditError, _glob_patterns, _log
from orchestrator.edit.kustfile import KustFileError, KustomizationFile
from orchestrator.errors import KrmError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

BEHAVIORS = ("create", "merge", "replace")
# kind -> (kustomization key, word in messages, word in "unable to find" and set messages)
KINDS = {
    "configmap": ("configMapGenerator", "configmap", "ConfigMap"),
    "secret": ("secretGenerator", "secret", "Secret"),
}


def _same_namespace(a: str | None, b: str | None) -> bool:
    return (a or "default") == (b or "default")


def expand_file_sources(sources: list[str]) -> list[str]:
    """kustomize's ``ExpandFileSource``: each ``[key=]glob`` to the files it names."""
    results: list[str] = []
    for source in sources:
        parts = source.split("=")
        key, pattern = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
        found = _glob_patterns([pattern])
        if key:
            if len(found) != 1:
                raise EditError(
                    f"failed to expand file source: 'pattern '{source}' catches files "
                    f"[{' '.join(found)}], should catch only one"
                )
            results.append(f"{key}={found[0]}")
        else:
            results.extend(found)
    return results


def _merge_global_options(local: Any, global_: Any) -> Any:
    """kustomize's ``MergeGlobalOptionsIntoLocal``."""
    if not isinstance(global_, dict):
        return local
    merged = dict(local) if isinstance(local, dict) else {}
    for key in ("labels", "annotations"):
        if global_.get(key):
            merged[key] = {**(merged.get(key) or {}), **global_[key]}
    for key in ("disableNameSuffixHash", "immutable"):
        if global_.get(key):
            merged[key] = True
    return merged


def _read_file(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _generate(kind: str, entry: dict[str, Any]) -> None:
    """Generate the object once, as kustomize's resource factory does, to check its sources."""
    if kind == "configmap":
        from orchestrator.filters import configmapgenerator as gen
    else:
        from orchestrator.filters import secretgenerator as gen  # type: ignore[no-redef]
    gen.generate(entry, options=None, read_file=_read_file)


def _entry_out(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry as Go's omitempty writes it (empty strings, lists and options dropped)."""
    return {k: v for k, v in entry.items() if v not in ("", None, [], {}, False)}


def add(
    kind: str,
    args: list[str],
    *,
    from_file: list[str],
    from_literal: list[str],
    from_env_file: str,
    disable_name_suffix_hash: bool,
    behavior: str,
    namespace: str,
    secret_type: str = "Opaque",
) -> None:
    """``edit add configmap|secret NAME`` with kustomize's flags."""
    key, word, _ = KINDS[kind]
    files = expand_file_sources(from_file)
    if len(args) != 1:
        raise EditError("failed to validate flags: name must be specified once")
    name = args[0]
    if not from_env_file and not files and not from_literal:
        raise EditError(
            "failed to validate flags: at least from-env-file, or from-file or from-literal "
            "must be set"
        )
    if from_env_file and (files or from_literal):
        raise EditError(
            "failed to validate flags: from-env-file cannot be combined with from-file or "
            "from-literal"
        )
    if behavior and behavior not in BEHAVIORS:
        raise EditError(
            'failed to validate flags: invalid behavior: must be one of "create", "merge", '
            'or "replace"'
        )
    kf, data = _read_kustomization()
    entries = list(data.get(key) or [])
    entry = next(
        (
            e
            for e in entries
            if isinstance(e, dict)
            and e.get("name", "") == name
            and _same_namespace(e.get("namespace"), namespace)
        ),
        None,
    )
    if entry is None:
        entry = {"name": name, "namespace": namespace}
        if kind == "secret":
            entry["type"] = secret_type
        entries.append(entry)
    if from_literal:
        entry["literals"] = list(entry.get("literals") or []) + from_literal
    if files:
        entry["files"] = list(entry.get("files") or []) + files
    if from_env_file:
        entry["envs"] = list(entry.get("envs") or []) + [from_env_file]
    if disable_name_suffix_hash:
        entry["options"] = {"disableNameSuffixHash": True}
    if behavior:
        entry["behavior"] = behavior
    entry["options"] = _merge_global_options(entry.get("options"), data.get("generatorOptions"))
    cleaned = _entry_out(entry)
    try:
        _generate(kind, cleaned)
    except KrmError as exc:
        raise EditError(f"failed to create {word}: {exc.message}") from None
    data[key] = [cleaned if e is entry else e for e in entries]
    kf.write(data)


def remove(kind: str, args: list[str], *, namespace: str) -> None:
    """``edit remove configmap|secret NAME[,NAME]``."""
    key, word, _ = KINDS[kind]
    if not args:
        raise EditError(f"at least one {word} name must be specified")
    if len(args) > 1:
        raise EditError(
            f"too many arguments: [{' '.join(args)}]; to provide multiple {word}s to remove, "
            f"please separate {word} names by commas"
        )
    names = args[0].split(",")
    try:
        kf = KustomizationFile()
    except KustFileError as exc:
        raise EditError(f"could not read kustomization file: {exc}") from None
    try:
        data = kf.read()
    except KustFileError as exc:
        raise EditError(f"could not read kustomization file contents: {exc}") from None
    found: set[str] = set()
    remaining = []
    for entry in data.get(key) or []:
        entry_name = entry.get("name", "") if isinstance(entry, dict) else ""
        if entry_name in names and _same_namespace(entry.get("namespace"), namespace):
            found.add(entry_name)
            continue
        remaining.append(entry)
    if not found:
        raise EditError(f"no specified {word}(s) were found in the kustomization.yaml file")
    for name in names:
        if name not in found:
            _log(f"{word} {name} doesn't exist in kustomization file")
    data[key] = remaining
    kf.write(data)


def _literal(text: str) -> tuple[str, str]:
    if text.count("=") != 1:
        raise EditError("invalid format: literal values must be specified in the key=value format")
    k, _, v = text.partition("=")
    return k, v


def set_(
    kind: str, args: list[str], *, from_literal: list[str], namespace: str, new_namespace: str
) -> None:
    """``edit set configmap|secret NAME --from-literal K=V --new-namespace NS``."""
    key, word, title = KINDS[kind]
    if len(args) != 1:
        raise EditError("failed to validate flags: name must be specified once")
    name = args[0]
    if not from_literal and not new_namespace:
        raise EditError(
            "failed to validate flags: at least one of [--from-literal, --new-namespace] "
            "must be specified"
        )
    kf, data = _read_kustomization()
    entries = list(data.get(key) or [])
    index = next(
        (
            i
            for i, e in enumerate(entries)
            if isinstance(e, dict)
            and e.get("name", "") == name
            and _same_namespace(namespace, e.get("namespace"))
        ),
        -1,
    )
    prefix = f"failed to create {word}: "
    if index < 0:
        raise EditError(
            f'{prefix}could not set new {title} value: unable to find {title} with name "{name}"'
        )
    entry = dict(entries[index])
    if from_literal:
        sources: dict[str, str] = {}
        try:
            for text in entry.get("literals") or []:
                k, v = _literal(text)
                sources[k] = v
            for text in from_literal:
                k, v = _literal(text)
                if k not in sources:
                    raise EditError(f"key '{k}' not found in resource")
                sources[k] = v
        except EditError as exc:
            raise EditError(
                f"{prefix}failed to update literal sources: failed to update resource: {exc}"
                if "literal values" in str(exc)
                else f"{prefix}failed to update literal sources: {exc}"
            ) from None
        # kustomize rebuilds the list from a Go map (in random order); krm keeps the file's.
        entry["literals"] = [f"{k}={v}" for k, v in sources.items()]
    if new_namespace:
        entry["namespace"] = new_namespace
    entry["options"] = _merge_global_options(entry.get("options"), data.get("generatorOptions"))
    cleaned = _entry_out(entry)
    try:
        _generate(kind, cleaned)
    except KrmError as exc:
        raise EditError(f"{prefix}failed to validate {title} structure: {exc.message}") from None
    entries[index] = cleaned
    data[key] = entries
    kf.write(data)


def run(verb: str, kind: str, args: list[str], flags: dict[str, Any]) -> None:
    """Run ``edit VERB configmap|secret ARGS`` in the current directory with its flags."""
    if verb == "add":
        add(kind, args, **flags)
    elif verb == "set":
        set_(kind, args, **flags)
    else:
        remove(kind, args, **flags)


def _read_kustomization() -> tuple[KustomizationFile, dict[str, Any]]:
    """The kustomization file and its fields, with kustomize's wording for a file that cannot
    be loaded or read."""
    try:
        kf = KustomizationFile()
    except KustFileError as exc:
        raise EditError(f"failed to load kustomization file: {exc}") from None
    try:
        return kf, kf.read()
    except KustFileError as exc:
        raise EditError(f"failed to read kustomization file: {exc}") from None
