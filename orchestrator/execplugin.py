"""Legacy exec plugins: kustomize's generators and transformers as local executables.

With ``--enable-alpha-plugins``, kustomize v5.5 runs a config that names no function runtime
with the executable ``<plugin home>/<group>/<version>/<lowercased kind>/<Kind>``; the plugin
home is the first existing directory of ``$KUSTOMIZE_PLUGIN_HOME``,
``$XDG_CONFIG_HOME/kustomize/plugin``, ``$HOME/.config/kustomize/plugin`` and
``$HOME/kustomize/plugin``. The executable gets the config
(as YAML, in a temporary file) as its first argument, then the words of the config's
``argsOneLiner`` and the lines of its ``argsFromFile``; the environment plus
``KUSTOMIZE_PLUGIN_CONFIG_STRING`` (the config) and ``KUSTOMIZE_PLUGIN_CONFIG_ROOT`` (the
kustomization's directory, which is also its working directory). A generator reads nothing and
prints resources; a transformer reads the resources (each annotated with its id and kustomize's
build annotations) and prints the new set, matched to the old by id.
"""

from __future__ import annotations

import os

from orchestrator import yamlio
from orchestrator.errors import KrmError, LoadError, ResourceConflictError, ValidationError
from orchestrator.resource import ResMap, Resource

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

ID_ANNOTATION = "kustomize.config.k8s.io/id"
HASH_ANNOTATION = "kustomize.config.k8s.io/needs-hash"
BEHAVIOR_ANNOTATION = "kustomize.config.k8s.io/behavior"
_INTERNAL = "internal.config.kubernetes.io/"
BEHAVIORS = ("create", "merge", "replace")
# Longer environment entries are left out, as kustomize leaves them out (with a log line).
MAX_ENV_ENTRY = 131071
_GO_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


class PluginError(KrmError):
    """A legacy exec plugin could not run, failed, or printed something unusable."""


def plugin_home() -> tuple[str | None, str]:
    """(the plugin home, or None), and kustomize's message listing what was tried."""
    home = os.environ.get("HOME") or "~"
    xdg = os.environ.get("XDG_CONFIG_HOME") or ""
    candidates = [
        (os.environ.get("KUSTOMIZE_PLUGIN_HOME") or "", "homed in $KUSTOMIZE_PLUGIN_HOME"),
        (os.path.join(xdg, "kustomize", "plugin") if xdg else "", "homed in $XDG_CONFIG_HOME"),
        (
            os.path.join(home, ".config", "kustomize", "plugin"),
            "homed in default value of $XDG_CONFIG_HOME",
        ),
        (os.path.join(home, "kustomize", "plugin"), "homed in home directory"),
    ]
    tried = []
    for path, note in candidates:
        if path and os.path.exists(path):
            return path, ""
        tried.append(f"('{path or '<no value>'}'; {note})")
    return None, "unable to find plugin root - tried: " + ", ".join(tried)


def plugin_path(home: str, api_version: str, kind: str) -> str:
    """``<home>/<group>/<version>/<lowercased kind>/<Kind>``."""
    group, _, version = api_version.rpartition("/")
    return os.path.join(home, group, version, kind.lower(), kind)


def find(config: dict[str, Any]) -> tuple[str | None, str]:
    """(the plugin executable for ``config``, or None), and why none when None."""
    home, tried = plugin_home()
    if home is None:
        return None, tried
    path = plugin_path(home, str(config.get("apiVersion") or ""), str(config.get("kind") or ""))
    if os.path.exists(path):
        return path, ""
    return None, f"no exec plugin at {path} (Go plugins, {path}.so, are not supported)"


def _shell_words(text: str) -> list[str]:
    """google/shlex's split: shell words, '#' comments; words before a syntax error kept."""
    import shlex

    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words: list[str] = []
    try:
        for word in lexer:
            words.append(word)
    except ValueError:
        pass
    return words


def id_text(res: Resource) -> str:
    """The resource's current id as kustomize marshals it (keys sorted, empty ones left out)."""
    group, _, version = res.api_version.rpartition("/")
    fields = {
        "group": group,
        "kind": res.kind,
        "name": res.name,
        "namespace": res.namespace,
        "version": version,
    }
    return "".join(f"{k}: {v}\n" for k, v in fields.items() if v)


def build_annotations(res: Resource) -> dict[str, str]:
    """kustomize's build annotations for what krm keeps beside the object."""
    out: dict[str, str] = {}
    behavior = res.extra.get("generator_behavior") or res.behavior
    if behavior:
        out[_INTERNAL + "generatorBehavior"] = str(behavior)
    if res.needs_hash:
        out[_INTERNAL + "needsHashSuffix"] = "enabled"
    if res.prefixes:
        out[_INTERNAL + "prefixes"] = ",".join(res.prefixes)
    if res.previous:
        out[_INTERNAL + "previousKinds"] = ",".join(res.previous_kinds())
        out[_INTERNAL + "previousNames"] = ",".join(n for _, n in res.previous)
        out[_INTERNAL + "previousNamespaces"] = ",".join(ns or "default" for ns, _ in res.previous)
    if res.suffixes:
        out[_INTERNAL + "suffixes"] = ",".join(res.suffixes)
    return dict(sorted(out.items()))


def _take_annotations(res: Resource, keys: tuple[str, ...]) -> dict[str, str]:
    """Remove and return the annotations among ``keys`` (and every internal build one)."""
    md = res.obj.get("metadata")
    ann = md.get("annotations") if isinstance(md, dict) else None
    if not isinstance(ann, dict):
        return {}
    taken = {k: str(ann.pop(k)) for k in list(ann) if k in keys or k.startswith(_INTERNAL)}
    if not ann and isinstance(md, dict):
        del md["annotations"]
    return taken


def _restore(res: Resource, taken: dict[str, str]) -> None:
    """Bookkeeping back from build annotations a transformer handed back."""

    def csv(key: str) -> list[str]:
        value = taken.get(_INTERNAL + key) or ""
        return value.split(",") if value else []

    res.extra["prefixes"] = csv("prefixes")
    res.extra["suffixes"] = csv("suffixes")
    names, namespaces = csv("previousNames"), csv("previousNamespaces")
    res.previous = [
        ("" if i >= len(namespaces) or namespaces[i] == "default" else namespaces[i], n)
        for i, n in enumerate(names)
    ]
    kinds = csv("previousKinds")
    res.extra["previous_kinds"] = kinds if len(kinds) == len(names) else [res.kind] * len(names)
    res.needs_hash = taken.get(_INTERNAL + "needsHashSuffix") == "enabled"
    behavior = taken.get(_INTERNAL + "generatorBehavior")
    if behavior:
        res.extra["generator_behavior"] = behavior
        res.behavior = behavior if behavior in BEHAVIORS else res.behavior


class ExecPlugin:
    """One legacy exec plugin with its config, with the builtin plugins' interface."""

    def __init__(
        self,
        path: str,
        config: dict[str, Any],
        *,
        root: str,
        read_file: Callable[[str], bytes],
        parse: Callable[..., list[Resource]],
        source: str | None = None,
    ) -> None:
        self.path = path
        # The accumulator's resources_from_bytes (given, so this module does not import it).
        self.parse = parse
        self.config = config
        self.root = root
        self.source = source
        mode = os.stat(path).st_mode
        if not mode & 0o111:
            raise PluginError(f"unexecutable plugin at: {path}", file=source)
        self.text = yamlio.dump(config)
        self.args: list[str] = []
        one_liner = config.get("argsOneLiner")
        if one_liner:
            self.args = _shell_words(str(one_liner))
        from_file = config.get("argsFromFile")
        if from_file:
            content = read_file(str(from_file)).decode("utf-8", "replace")
            self.args += [w.lstrip(" ") for w in content.split("\n") if w.lstrip(" ")]

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        for key, value in (
            ("KUSTOMIZE_PLUGIN_CONFIG_STRING", self.text),
            ("KUSTOMIZE_PLUGIN_CONFIG_ROOT", self.root),
        ):
            if len(key) + 1 + len(value) <= MAX_ENV_ENTRY:
                env[key] = value
        return env

    def _invoke(self, stdin: bytes) -> bytes:
        import subprocess
        import tempfile

        fd, config_file = tempfile.mkstemp(prefix="kust-plugin-config-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(self.text)
            try:
                proc = subprocess.run(
                    [self.path, config_file, *self.args],
                    input=stdin,
                    capture_output=True,
                    env=self._env(),
                    cwd=self.root if os.path.isdir(self.root) else None,
                    check=False,
                )
            except OSError as exc:
                raise PluginError(
                    f"plugin {self.path} could not start: {exc.strerror}", file=self.source
                ) from None
        finally:
            os.unlink(config_file)
        if proc.returncode != 0:
            status = (
                f"signal {-proc.returncode}"
                if proc.returncode < 0
                else f"exit status {proc.returncode}"
            )
            stderr = proc.stderr.decode("utf-8", "replace").strip()
            raise PluginError(
                f"plugin {self.path} failed ({status})" + (f": {stderr}" if stderr else ""),
                file=self.source,
            )
        return bytes(proc.stdout)

    def _output(self, data: bytes) -> list[Resource]:
        try:
            return self.parse(data, source=f"output of plugin {self.path}")
        except KrmError as exc:
            exc.file = exc.file or self.source
            raise

    def generate(self) -> list[Resource]:
        """Run as a generator: the resources it printed, with kustomize's generator options
        taken from their annotations."""
        out = self._output(self._invoke(b""))
        for res in out:
            taken = _take_annotations(res, (HASH_ANNOTATION, BEHAVIOR_ANNOTATION))
            value = taken.get(HASH_ANNOTATION)
            if value is not None:
                if value not in _GO_BOOLS:
                    raise ValidationError(
                        f'the annotation "{HASH_ANNOTATION}" contains an invalid value ("{value}")',
                        file=self.source,
                    )
                res.needs_hash = _GO_BOOLS[value]
            behavior = taken.get(BEHAVIOR_ANNOTATION) or ""
            res.extra["generator_behavior"] = behavior if behavior in BEHAVIORS else "unspecified"
            res.behavior = behavior if behavior in BEHAVIORS else None
            res.source = f"plugin {self.path}"
        return out

    def transform(self, resmap: ResMap) -> None:
        """Run as a transformer: what it printed replaces the resources with the same id,
        new ones are appended and the ones it left out are removed (kustomize's rule)."""
        docs = []
        for res in resmap:
            obj = res.copy().obj
            md = obj.setdefault("metadata", {})
            ann = md.get("annotations")
            ann = dict(ann) if isinstance(ann, dict) else {}
            ann.update(build_annotations(res))
            ann[ID_ANNOTATION] = id_text(res)
            md["annotations"] = ann
            docs.append(obj)
        out = self._output(self._invoke(yamlio.dump_all(docs).encode()))
        seen: set[tuple[str, str, str, str, str]] = set()
        index: dict[tuple[str, str, str, str, str], Resource] = {}
        for res in resmap:
            index.setdefault(res.key(), res)
        for new in out:
            taken = _take_annotations(new, (ID_ANNOTATION,))
            key = new.key()
            if key in seen:
                group, version, kind, name, ns = key
                shown = {"group": group, "version": version, "kind": kind, "name": name}
                shown["namespace"] = ns if ns not in ("", "default") else ""
                text = ",".join(f'"{k}":"{v}"' for k, v in shown.items() if v)
                raise ResourceConflictError(
                    f"plugin {self.path} generated duplicate resource: {{{text}}}",
                    file=self.source,
                )
            seen.add(key)
            _restore(new, taken)
            old = index.get(key)
            if old is not None:
                old.obj = new.obj
                old.previous = new.previous
                old.extra.update(new.extra)
                old.needs_hash = new.needs_hash
                if "generator_behavior" in new.extra:
                    old.behavior = new.behavior
            else:
                new.source = f"plugin {self.path}"
                resmap.append_unchecked(new)
                index[key] = new
        resmap.set_list([r for r in resmap if r.key() in seen])


def load(
    config: dict[str, Any],
    *,
    root: str,
    read_file: Callable[[str], bytes],
    parse: Callable[..., list[Resource]],
    source: str | None,
) -> ExecPlugin | None:
    """The legacy exec plugin for ``config``, or None when no executable exists for it."""
    path, _ = find(config)
    if path is None:
        return None
    if os.path.isdir(path):
        raise LoadError(f"plugin path {path} is a directory, not an executable", file=source)
    return ExecPlugin(path, config, root=root, read_file=read_file, parse=parse, source=source)
