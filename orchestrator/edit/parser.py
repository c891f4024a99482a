"""The argparse subcommands of ``krm edit`` and ``krm create`` (no other imports: start-up)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    import argparse
    from typing import Any

# (verb, kind) -> (help, extra flags). Each flag: (names, keyword for the command, help).
_FLAG = tuple[tuple[str, ...], str, str]
EDIT_COMMANDS: dict[tuple[str, str], tuple[str, tuple[_FLAG, ...]]] = {
    ("set", "image"): (
        "Sets images and their new names, new tags or digests in the kustomization file",
        (),
    ),
    ("set", "namespace"): ("Sets the value of the namespace field in the kustomization file", ()),
    ("set", "nameprefix"): (
        "Sets the value of the namePrefix field in the kustomization file",
        (),
    ),
    ("set", "namesuffix"): (
        "Sets the value of the nameSuffix field in the kustomization file",
        (),
    ),
    ("set", "replicas"): ("Sets replicas count for resources in the kustomization file", ()),
    ("set", "label"): ("Sets one or more commonLabels in kustomization.yaml", ()),
    ("set", "annotation"): ("Sets one or more commonAnnotations in kustomization.yaml", ()),
    ("set", "buildmetadata"): (
        "Sets one or more buildMetadata options to the kustomization.yaml in the current directory",
        (),
    ),
    ("add", "resource"): (
        "Add the name of a file containing a resource to the kustomization file",
        ((("--no-verify",), "no_verify", "skip validation for resources"),),
    ),
    ("add", "component"): (
        "Add the name of a file containing a component to the kustomization file",
        (),
    ),
    ("add", "base"): ("Adds one or more bases to the kustomization.yaml in current directory", ()),
    ("add", "generator"): (
        "Add the name of a file containing a generator configuration to the kustomization file",
        (),
    ),
    ("add", "transformer"): (
        "Add the name of a file containing a transformer configuration to the kustomization file",
        (),
    ),
    ("add", "buildmetadata"): (
        "Adds one or more buildMetadata options to the kustomization.yaml in the current directory",
        (),
    ),
    ("add", "label"): (
        "Adds one or more commonLabels to kustomization.yaml",
        (
            (("-f", "--force"), "force", "overwrite commonLabel if it already exists"),
            (
                ("--without-selector",),
                "without_selector",
                "using add labels without selector option",
            ),
            (
                ("--include-templates",),
                "include_templates",
                "include labels in templates (requires --without-selector)",
            ),
        ),
    ),
    ("add", "annotation"): (
        "Adds one or more commonAnnotations to kustomization.yaml",
        ((("-f", "--force"), "force", "overwrite commonAnnotation if it already exists"),),
    ),
    ("remove", "resource"): ("Removes one or more resource file paths from kustomization.yaml", ()),
    ("remove", "transformer"): (
        "Removes one or more transformers from kustomization.yaml",
        (),
    ),
    ("remove", "buildmetadata"): (
        "Removes one or more buildMetadata options to the kustomization.yaml in the current "
        "directory",
        (),
    ),
    ("remove", "label"): (
        "Removes one or more commonLabels from kustomization.yaml",
        (
            (
                ("-i", "--ignore-non-existence"),
                "ignore",
                "ignore error if the given label doesn't exist",
            ),
        ),
    ),
    ("remove", "annotation"): (
        "Removes one or more commonAnnotations from kustomization.yaml",
        (
            (
                ("-i", "--ignore-non-existence"),
                "ignore",
                "ignore error if the given label doesn't exist",
            ),
        ),
    ),
}


_PATCH_FLAGS = (
    ("--path", "path", "Path to the patch file. Cannot be used with --patch at the same time."),
    (
        "--patch",
        "patch_text",
        "Literal string of patch content. Cannot be used with --path at the same time.",
    ),
    ("--group", "group", "API group in patch target"),
    ("--version", "version", "API version in patch target"),
    ("--kind", "kind", "Resource kind in patch target"),
    ("--name", "name", "Resource name in patch target"),
    ("--namespace", "namespace", "Resource namespace in patch target"),
    ("--annotation-selector", "annotation_selector", "annotationSelector in patch target"),
    ("--label-selector", "label_selector", "labelSelector in patch target"),
)
# Commands whose flags take values: (verb, kind) -> (help, ((flag, dest, help), ...)).
VALUE_COMMANDS: dict[tuple[str, str], tuple[str, tuple[tuple[str, str, str], ...]]] = {
    ("add", "patch"): ("Add an item to patches field", _PATCH_FLAGS),
    ("remove", "patch"): ("Removes a patch from kustomization.yaml", _PATCH_FLAGS),
}
GENERATOR_HELP = {
    ("add", "configmap"): "Adds a configmap to the kustomization file",
    ("add", "secret"): "Adds a secret to the kustomization file.",
    ("set", "configmap"): "Edits the value for an existing key for a ConfigMap in the "
    "kustomization file",
    ("set", "secret"): "Edits the value for an existing key for a Secret in the kustomization file",
    ("remove", "configmap"): "Removes the specified configmap(s) from kustomization.yaml",
    ("remove", "secret"): "Removes the specified secret(s) from kustomization.yaml",
}
FIX_HELP = "Fix the missing fields in kustomization file"
VARS_HELP = (
    "If specified, kustomize will attempt to convert vars to replacements. "
    "We recommend doing this in a clean git repository where the change is easy to undo."
)


def command_options(args: Any) -> dict[str, Any]:
    """The keyword options of the ``edit`` command ``args`` names, read from ``args``."""
    key = (args.edit_verb, args.edit_kind)
    if key in EDIT_COMMANDS:
        return {dest: getattr(args, dest) for _, dest, _ in EDIT_COMMANDS[key][1]}
    if key in VALUE_COMMANDS:
        return {dest: getattr(args, dest) for _, dest, _ in VALUE_COMMANDS[key][1]}
    if key in GENERATOR_HELP:
        return {dest: getattr(args, "gen_" + dest) for dest in args.generator_dests}
    if args.edit_verb == "fix":
        return {"vars": args.vars}
    return {}


def add_edit_command(sub: Any) -> None:
    """``krm edit {set,add,remove} KIND ARGS...`` (kustomize's ``edit``, in the cwd)."""
    edit: argparse.ArgumentParser = sub.add_parser(
        "edit", help="edit the kustomization file of the current directory (like kustomize edit)"
    )
    verbs = edit.add_subparsers(dest="edit_verb", metavar="VERB")
    helps = {
        "add": "Adds an item to the kustomization file.",
        "set": "Sets the value of different fields in kustomization file.",
        "remove": "Removes items from the kustomization file.",
    }
    parsers = {verb: verbs.add_parser(verb, help=text) for verb, text in helps.items()}
    kinds = {
        verb: p.add_subparsers(dest="edit_kind", metavar="KIND") for verb, p in parsers.items()
    }
    for (verb, kind), (text, flags) in EDIT_COMMANDS.items():
        k = kinds[verb].add_parser(kind, help=text, description=text)
        for names, dest, flag_help in flags:
            k.add_argument(*names, dest=dest, action="store_true", help=flag_help)
        k.add_argument("edit_args", nargs="*", metavar="ARG", help="the command's arguments")
    for (verb, kind), (text, value_flags) in VALUE_COMMANDS.items():
        k = kinds[verb].add_parser(kind, help=text, description=text)
        for flag, dest, flag_help in value_flags:
            k.add_argument(flag, dest=dest, default="", help=flag_help)
        k.set_defaults(edit_args=[])
    for (verb, kind), text in GENERATOR_HELP.items():
        k = kinds[verb].add_parser(kind, help=text, description=text)
        _generator_flags(k, verb, kind)
        k.add_argument("edit_args", nargs="*", metavar="NAME", help="the generator's name")
    f = verbs.add_parser("fix", help=FIX_HELP, description=FIX_HELP)
    f.add_argument("--vars", action="store_true", help=VARS_HELP)
    f.set_defaults(edit_kind="fix", edit_args=[])
    name = "alpha-list-builtin-plugin"
    text = "[Alpha] List the builtin plugins"
    verbs.add_parser(name, help=text, description=text).set_defaults(edit_kind=name, edit_args=[])


class _Options:
    """Collects a generator command's flags into ``args.generator_options`` (a dict)."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser
        self.defaults: dict[str, Any] = {}

    def add(self, flag: str, dest: str, default: Any, **kwargs: Any) -> None:
        self.defaults[dest] = default
        self.parser.add_argument(flag, dest="gen_" + dest, default=default, **kwargs)


def _split_commas(text: str) -> list[str]:
    return [part for part in text.split(",")] if text else []


def _generator_flags(p: argparse.ArgumentParser, verb: str, kind: str) -> None:
    import argparse

    class _Extend(argparse.Action):
        """pflag's StringSlice: repeatable, each value split at commas."""

        def __call__(self, parser: Any, ns: Any, values: Any, option: Any = None) -> None:
            setattr(ns, self.dest, [*getattr(ns, self.dest), *_split_commas(str(values))])

    opts = _Options(p)
    if verb == "add":
        opts.add(
            "--from-file",
            "from_file",
            [],
            action=_Extend,
            metavar="[KEY=]SOURCE",
            help="Key file can be specified using its file path, in which case file basename "
            "will be used as the key, or optionally with a key and file path",
        )
    if verb in ("add", "set"):
        opts.add(
            "--from-literal",
            "from_literal",
            [],
            action="append",
            metavar="KEY=VALUE",
            help="Specify a key and literal value (i.e. mykey=somevalue)",
        )
    if verb == "add":
        opts.add(
            "--from-env-file",
            "from_env_file",
            "",
            metavar="PATH",
            help="Specify the path to a file to read lines of key=val pairs",
        )
        opts.add(
            "--disableNameSuffixHash",
            "disable_name_suffix_hash",
            False,
            action="store_true",
            help="Disable the name suffix",
        )
        opts.add(
            "--behavior",
            "behavior",
            "",
            metavar="create|merge|replace",
            help="Specify the behavior for generation (create, the default; merge; replace)",
        )
    opts.add("--namespace", "namespace", "", metavar="NAMESPACE", help="Specify the namespace")
    if verb == "set":
        opts.add(
            "--new-namespace",
            "new_namespace",
            "",
            metavar="NAMESPACE",
            help="New namespace value for the target",
        )
    if verb == "add" and kind == "secret":
        opts.add(
            "--type",
            "secret_type",
            "Opaque",
            metavar="TYPE",
            help="Specify the secret type this can be 'Opaque' (default), or 'kubernetes.io/tls'",
        )
    p.set_defaults(generator_dests=tuple(opts.defaults))


CREATE_FLAGS = (
    ("--resources", "Name of a file containing a file to add to the kustomization file."),
    ("--namespace", "Set the value of the namespace field in the kustomization file."),
    ("--annotations", "Add one or more common annotations."),
    ("--labels", "Add one or more common labels."),
    ("--nameprefix", "Sets the value of the namePrefix field in the kustomization file."),
    ("--namesuffix", "Sets the value of the nameSuffix field in the kustomization file."),
)
CREATE_SWITCHES = (
    (
        "--autodetect",
        "Search for kubernetes resources in the current directory to be added to the "
        "kustomization file.",
    ),
    ("--recursive", "Enable recursive directory searching for resource auto-detection."),
)


def add_create_command(sub: Any) -> None:
    """``krm create`` (alias ``init``): a new kustomization file in the current directory."""
    text = "Create a new kustomization in the current directory"
    c: argparse.ArgumentParser = sub.add_parser(
        "create", aliases=["init"], help=text, description=text
    )
    for flag, flag_help in CREATE_FLAGS:
        c.add_argument(
            flag, dest="create_" + flag[2:], default="", metavar="STRING", help=flag_help
        )
    for flag, flag_help in CREATE_SWITCHES:
        c.add_argument(flag, dest="create_" + flag[2:], action="store_true", help=flag_help)


def create_options(args: Any) -> dict[str, Any]:
    """The keyword arguments of ``orchestrator.edit.create.create`` from parsed ``args``."""
    names = [flag[2:] for flag, _ in CREATE_FLAGS + CREATE_SWITCHES]
    return {name: getattr(args, "create_" + name) for name in names}
