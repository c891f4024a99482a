"""The ``krm edit`` subcommands: each validates its arguments, edits the fields, rewrites the file.

Validation happens before the file is read, and the file is written only when every step
succeeded, so a refused command leaves the kustomization file as it was. Messages and
ordering follow kustomize v5.5's ``edit`` commands.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import sys
import time

from orchestrator.edit.kustfile import KustFileError, KustomizationFile
from orchestrator.errors import KrmError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

BUILD_METADATA_OPTIONS = ("originAnnotations", "transformerAnnotations", "managedByLabel")

IMAGE_INVALID = """invalid format of image, use one of the following options:
- <image>=<newimage>:<newtag>
- <image>=<newimage>@<digest>
- <image>=<newimage>:<newtag>@<digest>
- <image>=<newimage>
- <image>:<newtag>
- <image>:<newtag>@<digest>
- <image>@<digest>"""
REPLICAS_INVALID = "invalid format of replica, use the following format: <name>=<count>"
_PRESERVE = "*"


class EditError(KustFileError):
    """A ``krm edit`` command was given arguments kustomize refuses."""


def _log(message: str) -> None:
    """Go's ``log.Printf`` as kustomize uses it: a timestamped line on stderr."""
    sys.stderr.write(time.strftime("%Y/%m/%d %H:%M:%S ") + message + "\n")


def _edit(change: Callable[[dict[str, Any]], bool | None]) -> None:
    """Read the file, apply ``change``, write it back unless ``change`` returned False."""
    kf = KustomizationFile()
    data = kf.read()
    if change(data) is not False:
        kf.write(data)


# ----------------------------------------------------------------------------- set


def _split_image(image: str) -> tuple[str, str, str]:
    from orchestrator.filters.images import split_image

    return split_image(image)


def _parse_image(arg: str) -> dict[str, str]:
    key, sep, value = arg.partition("=")
    if not sep:
        key, value = "", arg
    name, tag, digest = _split_image(value)
    if name == arg:
        raise EditError(IMAGE_INVALID)
    image = {"newTag": tag, "digest": digest}
    if key == "":
        image["name"] = name
    else:
        image["name"] = key
        image["newName"] = name
    return image


def _image_out(image: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in image.items() if v not in ("", None)}


def set_image(args: list[str]) -> None:
    """``edit set image``: add or replace ``images:`` entries; ``*`` keeps the file's value."""
    if not args:
        raise EditError("no image specified")
    wanted: dict[str, dict[str, Any]] = {}
    for arg in args:
        image = _parse_image(arg)
        wanted[image["name"]] = image

    def change(data: dict[str, Any]) -> None:
        for old in data.get("images") or []:
            name = old.get("name", "")
            new = wanted.get(name)
            if new is None:
                wanted[name] = dict(old)
                continue
            # Like kustomize, an entry rebuilt to keep a value loses its tagSuffix.
            for field in ("newName", "newTag", "digest"):
                if new.get(field) == _PRESERVE:
                    new = {
                        "name": new.get("name", ""),
                        "newName": new.get("newName", ""),
                        "newTag": new.get("newTag", ""),
                        "digest": new.get("digest", ""),
                    }
                    new[field] = old.get(field, "")
            wanted[name] = new
        images = []
        for image in wanted.values():
            for field in ("newName", "newTag", "digest"):
                if image.get(field) == _PRESERVE:
                    image = {
                        "name": image.get("name", ""),
                        "newName": image.get("newName", ""),
                        "newTag": image.get("newTag", ""),
                        "digest": image.get("digest", ""),
                    }
                    image[field] = ""
            images.append(_image_out(image))
        images.sort(key=lambda i: str(i.get("name", "")).encode("utf-8"))
        data["images"] = images

    _edit(change)


def set_namespace(args: list[str]) -> None:
    """``edit set namespace NS``.

    The kustomize binary checks the name with its field validator, which accepts every value
    (api/internal/validate), so krm does not check it either.
    """
    if len(args) != 1:
        raise EditError("must specify exactly one namespace value")
    ns = args[0]
    _edit(lambda data: data.__setitem__("namespace", ns))


def set_name_prefix(args: list[str]) -> None:
    """``edit set nameprefix PREFIX``."""
    if len(args) != 1:
        raise EditError("must specify exactly one prefix value")
    _edit(lambda data: data.__setitem__("namePrefix", args[0]))


def set_name_suffix(args: list[str]) -> None:
    """``edit set namesuffix SUFFIX``."""
    if len(args) != 1:
        raise EditError("must specify exactly one suffix value")
    _edit(lambda data: data.__setitem__("nameSuffix", args[0]))


_GO_INT = re.compile(r"[+-]?[0-9]+\Z")


def _parse_replica(arg: str) -> dict[str, Any]:
    parts = arg.split("=")
    if len(parts) == 2 and _GO_INT.match(parts[1]):
        count = int(parts[1])
        if -(2**63) <= count < 2**63:
            return {"name": parts[0], "count": count}
    raise EditError(REPLICAS_INVALID)


def set_replicas(args: list[str]) -> None:
    """``edit set replicas NAME=COUNT...``: add or replace ``replicas:`` entries."""
    if not args:
        raise EditError("no replicas specified")
    wanted: dict[str, dict[str, Any]] = {}
    for arg in args:
        replica = _parse_replica(arg)
        wanted[replica["name"]] = replica

    def change(data: dict[str, Any]) -> None:
        for old in data.get("replicas") or []:
            wanted.setdefault(old.get("name", ""), old)
        replicas = []
        for r in wanted.values():
            out = {"count": r.get("count", 0)}  # count has no omitempty in kustomize's type
            if r.get("name"):
                out["name"] = r["name"]
            replicas.append(out)
        replicas.sort(key=lambda r: str(r.get("name", "")).encode("utf-8"))
        data["replicas"] = replicas

    _edit(change)


def _slice_to_map(inputs: list[str], kind: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in inputs:
        c = item.find(":")
        if c == 0:
            raise EditError(f"invalid {kind}: '{item}' (need k:v pair where v may be quoted)")
        if c < 0:
            result[item] = ""
        else:
            value = item[c + 1 :]
            if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
                value = value[1:-1]
            result[item[:c]] = value
    return result


def _string_map(data: dict[str, Any], key: str) -> dict[str, Any]:
    current = data.get(key)
    if current is None:
        current = {}
        data[key] = current
    return current


def set_label(args: list[str]) -> None:
    """``edit set label K:V...``: set ``commonLabels`` entries, replacing existing ones."""
    if not args:
        raise EditError("must specify label")
    pairs = _slice_to_map(args, "label")
    _edit(lambda data: _string_map(data, "commonLabels").update(pairs))


# kustomize's ``set annotation`` key check (its own pattern, not Kubernetes' validation).
_ANNOTATION_KEY = re.compile(
    r"([a-zA-Z](([-a-zA-Z0-9.]{0,251})[a-zA-Z0-9])?/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?\Z"
)


def _valid_annotation_key(key: str) -> bool:
    return _ANNOTATION_KEY.match(key) is not None


def set_annotation(args: list[str]) -> None:
    """``edit set annotation K:V...``: set ``commonAnnotations`` entries."""
    if not args:
        raise EditError("must specify annotation")
    pairs = _slice_to_map(args, "annotation")
    for key in pairs:
        if not _valid_annotation_key(key):
            raise EditError(
                "invalid annotation key: see the syntax and character set rules at "
                "https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations/"
            )
    _edit(lambda data: _string_map(data, "commonAnnotations").update(pairs))


def _build_metadata_options(args: list[str]) -> list[str]:
    if not args:
        raise EditError("must specify a buildMetadata option")
    if len(args) > 1:
        raise EditError(
            f"too many arguments: [{' '.join(args)}]; to provide multiple buildMetadata "
            "options, please separate options by comma"
        )
    opts = args[0].split(",")
    for opt in opts:
        if opt not in BUILD_METADATA_OPTIONS:
            raise EditError(f"invalid buildMetadata option: {opt}")
    return opts


def set_build_metadata(args: list[str]) -> None:
    """``edit set buildmetadata OPT[,OPT]``: replace ``buildMetadata``."""
    opts = _build_metadata_options(args)
    _edit(lambda data: data.__setitem__("buildMetadata", opts))


# ----------------------------------------------------------------------------- add


def _go_glob(pattern: str) -> list[str]:
    """Go's ``filepath.Glob`` as kustomize calls it: sorted matches, none for a bad pattern."""
    if not glob.has_magic(pattern):
        return [pattern] if os.path.lexists(pattern) else []
    return sorted(glob.glob(pattern))


def _missing(path: str) -> str:
    """Go's EvalSymlinks error text for a path that does not exist: its first missing part."""
    absolute = os.path.abspath(path)
    probe = "/"
    for part in absolute.strip("/").split("/"):
        probe = os.path.join(probe, part)
        if not os.path.lexists(probe):
            return f"lstat {probe}: no such file or directory"
    return f"lstat {absolute}: no such file or directory"


def _glob_with_loader(patterns: list[str], skip: bool) -> list[str]:
    from orchestrator import remote

    result: list[str] = []
    for pattern in patterns:
        if skip:
            result.append(pattern)
            continue
        files = _go_glob(pattern)
        if files:
            result.extend(files)
            continue
        spec = remote.parse_repo_spec(pattern)
        if spec is not None:
            # Like kustomize, the repository is fetched (into krm's cache) to check the URL.
            try:
                tree = remote.GitCache().checkout(spec)
            except KrmError as exc:
                raise EditError(f"{pattern} has no match: {exc}") from None
            if not os.path.isdir(os.path.join(tree, spec.kust_root)):
                raise EditError(
                    f"{pattern} has no match: '{spec.kust_root}' is not a directory in {spec.raw}"
                )
            result.append(pattern)
            continue
        if os.path.isabs(pattern):
            raise EditError(f"{pattern} has no match: new root '{pattern}' cannot be absolute")
        absolute = os.path.join(os.path.abspath("."), pattern)
        raise EditError(
            f"{pattern} has no match: must build at directory: evalsymlink failure on "
            f"'{absolute}' : {_missing(absolute)}"
        )
    return result


def _glob_patterns(patterns: list[str]) -> list[str]:
    result: list[str] = []
    for pattern in patterns:
        files = _go_glob(pattern)
        if not files:
            _log(f"{pattern} has no match")
            continue
        result.extend(files)
    return result


def _append_unique(key: str, what: str, items: list[str], skip: str | None = None) -> None:
    def change(data: dict[str, Any]) -> None:
        current = list(data.get(key) or [])
        for item in items:
            if item == skip:
                continue
            if item in current:
                _log(f"{what} {item} already in kustomization file")
                continue
            current.append(item)
        data[key] = current

    _edit(change)


def add_resource(args: list[str], *, no_verify: bool = False) -> None:
    """``edit add resource PATH...`` (globs; a URL is taken as it is)."""
    if not args:
        raise EditError("must specify a resource file")
    items = _glob_with_loader(args, no_verify)
    if items:
        kf_name = KustomizationFile().name
        _append_unique("resources", "resource", items, kf_name)


def add_component(args: list[str]) -> None:
    """``edit add component PATH...``."""
    if not args:
        raise EditError("must specify a component file")
    items = _glob_with_loader(args, False)
    if items:
        kf_name = KustomizationFile().name
        _append_unique("components", "component", items, kf_name)


def add_base(args: list[str]) -> None:
    """``edit add base DIR[,DIR]`` (added to ``resources``)."""
    if len(args) != 1:
        raise EditError("must specify a base directory")

    def change(data: dict[str, Any]) -> None:
        current = list(data.get("resources") or [])
        for path in args[0].split(","):
            if not os.path.exists(path):
                raise EditError(path + " does not exist")
            if path in current:
                raise EditError(f"base {path} already in kustomization file")
            current.append(path)
        data["resources"] = current

    _edit(change)


def add_generator(args: list[str]) -> None:
    """``edit add generator FILE...``."""
    if not args:
        raise EditError("must specify a yaml file which contains a generator plugin resource")
    items = _glob_patterns(args)
    if items:
        _append_unique("generators", "generator", items)


def add_transformer(args: list[str]) -> None:
    """``edit add transformer FILE...``."""
    if not args:
        raise EditError("must specify a yaml file which contains a transformer plugin resource")
    items = _glob_patterns(args)
    if items:
        _append_unique("transformers", "transformer", items)


def add_build_metadata(args: list[str]) -> None:
    """``edit add buildmetadata OPT[,OPT]``."""
    opts = _build_metadata_options(args)

    def change(data: dict[str, Any]) -> None:
        current = list(data.get("buildMetadata") or [])
        for opt in opts:
            if opt in current:
                raise EditError(f"buildMetadata option {opt} already in kustomization file")
            current.append(opt)
        data["buildMetadata"] = current

    _edit(change)


def _write_pairs(target: dict[str, Any], pairs: dict[str, str], kind: str, force: bool) -> None:
    for k, v in pairs.items():
        if k in target and not force:
            raise EditError(f"{kind} {k} already in kustomization file")
        target[k] = v


def add_annotation(args: list[str], *, force: bool = False) -> None:
    """``edit add annotation K:V...`` into ``commonAnnotations``."""
    if not args:
        raise EditError("must specify annotation")
    pairs = _slice_to_map(args, "annotation")
    _edit(
        lambda data: _write_pairs(
            _string_map(data, "commonAnnotations"), pairs, "annotation", force
        )
    )


def add_label(
    args: list[str],
    *,
    force: bool = False,
    without_selector: bool = False,
    include_templates: bool = False,
) -> None:
    """``edit add label K:V...`` into ``commonLabels`` (or a new ``labels`` entry)."""
    if not args:
        raise EditError("must specify label")
    if not without_selector and include_templates:
        raise EditError("--without-selector flag must be specified for --include-templates to work")
    pairs = _slice_to_map(args, "label")

    def change(data: dict[str, Any]) -> None:
        if without_selector:
            entry: dict[str, Any] = {"pairs": {}}
            if include_templates:
                entry["includeTemplates"] = True
            data["labels"] = list(data.get("labels") or []) + [entry]
            _write_pairs(entry["pairs"], pairs, "label", force)
        else:
            _write_pairs(_string_map(data, "commonLabels"), pairs, "label", force)

    _edit(change)


# ----------------------------------------------------------------------------- remove


def _match(patterns: list[str], items: list[str]) -> list[str]:
    """Go's ``filepath.Match`` of each pattern against each item (``*`` stops at ``/``)."""
    result: list[str] = []
    for pattern in patterns:
        rx = _go_match_re(pattern)
        result.extend(item for item in items if rx.match(item))
    return result


def _go_match_re(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                raise EditError("syntax error in pattern")
            body = pattern[i + 1 : end]
            if body.startswith("^"):
                body = "!" + body[1:]
            out.append(fnmatch.translate("[" + body + "]")[4:-3])
            i = end
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _remove_matching(key: str, patterns: list[str]) -> None:
    def change(data: dict[str, Any]) -> bool:
        current = list(data.get(key) or [])
        gone = _match(patterns, current)
        if not gone:
            return False  # kustomize leaves the file untouched when nothing matched
        data[key] = [item for item in current if item not in gone]
        return True

    _edit(change)


def remove_resource(args: list[str]) -> None:
    """``edit remove resource PATTERN...``."""
    if not args:
        raise EditError("must specify a resource file")
    _remove_matching("resources", args)


def remove_transformer(args: list[str]) -> None:
    """``edit remove transformer PATTERN...``."""
    if not args:
        raise EditError("must specify a transformer file")
    _remove_matching("transformers", args)


def remove_build_metadata(args: list[str]) -> None:
    """``edit remove buildmetadata OPT[,OPT]``."""
    opts = _build_metadata_options(args)

    def change(data: dict[str, Any]) -> None:
        data["buildMetadata"] = [o for o in data.get("buildMetadata") or [] if o not in opts]

    _edit(change)


def _remove_keys(args: list[str], key: str, kind: str, ignore: bool) -> None:
    # kustomize's remove annotation reports its argument errors as "label" (its own quirk).
    if not args:
        raise EditError("must specify label")
    if len(args) > 1:
        raise EditError("labels must be comma-separated, with no spaces")
    names = args[0].split(",")
    for name in names:
        if not name:
            raise EditError(f"invalid label: '{name}' (name is empty)")

    def change(data: dict[str, Any]) -> None:
        current = data.get(key)
        if current is None and not ignore:
            raise EditError(f"{key} is not defined in kustomization file")
        current = current or {}
        for name in names:
            if name not in current and not ignore:
                raise EditError(f"{kind} {name} is not defined in kustomization file")
            current.pop(name, None)

    _edit(change)


def remove_label(args: list[str], *, ignore: bool = False) -> None:
    """``edit remove label K[,K]`` from ``commonLabels``."""
    _remove_keys(args, "commonLabels", "label", ignore)


def remove_annotation(args: list[str], *, ignore: bool = False) -> None:
    """``edit remove annotation K[,K]`` from ``commonAnnotations``."""
    _remove_keys(args, "commonAnnotations", "annotation", ignore)


# ----------------------------------------------------------------------------- patches

_SELECTOR_FLAGS = (
    ("group", "group"),
    ("version", "version"),
    ("kind", "kind"),
    ("name", "name"),
    ("namespace", "namespace"),
    ("annotation_selector", "annotationSelector"),
    ("label_selector", "labelSelector"),
)


def _patch_from_flags(flags: dict[str, Any]) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    if flags.get("patch_text"):
        patch["patch"] = flags["patch_text"]
    if flags.get("path"):
        patch["path"] = flags["path"]
    target = {key: flags[dest] for dest, key in _SELECTOR_FLAGS if flags.get(dest)}
    if target:
        patch["target"] = target
    return patch


def _same_patch(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """kustomize's ``Patch.Equals``: path, patch text, target and options all equal."""

    def norm(p: dict[str, Any]) -> tuple[Any, ...]:
        target = p.get("target") or None
        if isinstance(target, dict):
            target = {k: v for k, v in target.items() if v not in ("", None)} or {}
        return (p.get("path") or "", p.get("patch") or "", target, p.get("options") or {})

    return norm(a) == norm(b)


def add_patch(args: list[str], **flags: Any) -> None:
    """``edit add patch --path FILE | --patch TEXT [target flags]``."""
    if flags.get("patch_text") and flags.get("path"):
        raise EditError("patch and path can't be set at the same time")
    if not flags.get("patch_text") and not flags.get("path"):
        raise EditError("must provide either patch or path")
    new = _patch_from_flags(flags)

    def change(data: dict[str, Any]) -> bool:
        patches = list(data.get("patches") or [])
        for p in patches:
            if isinstance(p, dict) and _same_patch(p, new):
                _log(f"patch {_go_patch_repr(p)} already in kustomization file")
                return False
        data["patches"] = [*patches, new]
        return True

    _edit(change)


def _go_patch_repr(p: dict[str, Any]) -> str:
    """An approximation of Go's ``%#v`` of a patch (the target's address cannot be matched)."""
    target = "(*types.Selector)(nil)" if not p.get("target") else "(*types.Selector)(...)"
    options = "map[string]bool(nil)" if not p.get("options") else "map[string]bool{...}"
    return (
        f'types.Patch{{Path:"{p.get("path", "")}", Patch:"{p.get("patch", "")}", '
        f"Target:{target}, Options:{options}}}"
    )


def remove_patch(args: list[str], **flags: Any) -> None:
    """``edit remove patch``: drop the patches equal to the one the flags describe."""
    if flags.get("patch_text") and flags.get("path"):
        raise EditError("patch and path can't be set at the same time")
    gone = _patch_from_flags(flags)

    def change(data: dict[str, Any]) -> bool:
        patches = list(data.get("patches") or [])
        kept = [p for p in patches if not (isinstance(p, dict) and _same_patch(p, gone))]
        if len(kept) == len(patches):
            _log(f"patch {flags.get('patch_text') or ''} doesn't exist in kustomization file")
            return False
        data["patches"] = kept
        return True

    _edit(change)


# ----------------------------------------------------------------------------- fix

# kustomize's text, trailing spaces included.
FIX_MESSAGE = (
    "\nFixed fields:\n"
    "  patchesJson6902 -> patches\n"
    "  patchesStrategicMerge -> patches\n"
    "  commonLabels -> labels\n"
    "\n"
    "To convert vars -> replacements, run the command `kustomize edit fix --vars`\n"
    "\n"
    "WARNING: Converting vars to replacements will potentially overwrite many resource files \n"
    "and the resulting files may not produce the same output when `kustomize build` is run. \n"
    "We recommend doing this in a clean git repository where the change is easy to undo.\n"
)
FIX_VARS_MESSAGE = (
    "\nFixed fields:\n"
    "  patchesJson6902 -> patches\n"
    "  patchesStrategicMerge -> patches\n"
    "  commonLabels -> labels\n"
    "  vars -> replacements\n"
)


def fix_premarshalling(data: dict[str, Any]) -> None:
    """kustomize's ``FixKustomizationPreMarshalling``: legacy patch and label fields moved."""
    patches = list(data.get("patches") or [])
    patches.extend(data.pop("patchesJson6902", None) or [])
    smp = data.pop("patchesStrategicMerge", None)
    for entry in smp or []:
        # A patch that names a readable file becomes a path; anything else inline text.
        if os.path.isfile(entry):
            patches.append({"path": entry})
        else:
            patches.append({"patch": entry})
    if patches:
        data["patches"] = patches
    common = data.pop("commonLabels", None)
    if common:
        labels = list(data.get("labels") or [])
        for label in labels:
            for key in (label.get("pairs") or {}) if isinstance(label, dict) else {}:
                if key in common:
                    raise EditError(f"label name '{key}' exists in both commonLabels and labels")
        labels.append({"includeSelectors": True, "pairs": common})
        data["labels"] = labels


def _build_text() -> tuple[str, str | None]:
    """``kustomize build .``: its output, or the error it stopped with."""
    from orchestrator import yamlio
    from orchestrator.build import build
    from orchestrator.errors import KrmError

    try:
        return yamlio.dump_all(build(".").resources), None
    except (KrmError, OSError, RecursionError) as exc:
        return "", str(exc)


def fix(args: list[str], *, vars: bool = False) -> None:
    """``edit fix``: move deprecated fields to their replacements, warn if the build changes;
    with ``--vars``, turn vars into replacements (rewriting the files that use them)."""
    before, _ = _build_text()
    kf = KustomizationFile()
    data = kf.read()
    fix_premarshalling(data)
    if vars:
        from orchestrator.edit.fixvars import vars_to_replacements

        vars_to_replacements(data)
        sys.stdout.write(FIX_VARS_MESSAGE)
    else:
        sys.stdout.write(FIX_MESSAGE)
    kf.write(data)
    after, error = _build_text()
    if error is not None:
        sys.stdout.write(
            "Warning: 'Fixed' kustomization now produces the error when running "
            f"`kustomize build`: {error}\n"
        )
    elif after != before:
        sys.stdout.write(
            "Warning: 'Fixed' kustomization now produces different output when running "
            f"`kustomize build`:\n...{after}...\n"
        )


# kustomize's builtin generators, then its builtin transformers.
BUILTIN_PLUGINS = (
    "ConfigMapGenerator",
    "IAMPolicyGenerator",
    "SecretGenerator",
    "HelmChartInflationGenerator",
    "AnnotationsTransformer",
    "HashTransformer",
    "ImageTagTransformer",
    "LabelTransformer",
    "NamespaceTransformer",
    "PatchJson6902Transformer",
    "PatchStrategicMergeTransformer",
    "PatchTransformer",
    "PrefixSuffixTransformer",
    "PrefixTransformer",
    "SuffixTransformer",
    "ReplacementTransformer",
    "ReplicaCountTransformer",
    "ValueAddTransformer",
)


def list_builtin(args: list[str]) -> None:
    """``edit alpha-list-builtin-plugin`` (kustomize prints them in Go's random map order)."""
    sys.stdout.write("Builtin plugins:\n\n" + "".join(f" * {p}\n" for p in BUILTIN_PLUGINS))


COMMANDS: dict[tuple[str, str], Callable[..., None]] = {
    ("set", "image"): set_image,
    ("set", "namespace"): set_namespace,
    ("set", "nameprefix"): set_name_prefix,
    ("set", "namesuffix"): set_name_suffix,
    ("set", "replicas"): set_replicas,
    ("set", "label"): set_label,
    ("set", "annotation"): set_annotation,
    ("set", "buildmetadata"): set_build_metadata,
    ("add", "resource"): add_resource,
    ("add", "component"): add_component,
    ("add", "base"): add_base,
    ("add", "generator"): add_generator,
    ("add", "transformer"): add_transformer,
    ("add", "buildmetadata"): add_build_metadata,
    ("add", "label"): add_label,
    ("add", "annotation"): add_annotation,
    ("remove", "resource"): remove_resource,
    ("remove", "transformer"): remove_transformer,
    ("remove", "buildmetadata"): remove_build_metadata,
    ("remove", "label"): remove_label,
    ("remove", "annotation"): remove_annotation,
    ("add", "patch"): add_patch,
    ("remove", "patch"): remove_patch,
    ("fix", "fix"): fix,
    ("alpha-list-builtin-plugin", "alpha-list-builtin-plugin"): list_builtin,
}


def run(verb: str, kind: str, args: list[str], flags: dict[str, Any]) -> None:
    """Run ``edit VERB KIND ARGS`` in the current directory with the command's flags."""
    COMMANDS[(verb, kind)](args, **flags)
