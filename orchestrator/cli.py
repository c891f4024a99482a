"""The ``krm`` command line: parses arguments, calls the engine, prints the result.

Kept light: nothing heavy is imported until a command runs.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    import argparse
    from types import ModuleType, SimpleNamespace
    from typing import Any

    Args = argparse.Namespace | SimpleNamespace
else:
    SimpleNamespace = type(sys.implementation)  # types.SimpleNamespace, without importing types

USAGE_ERROR = 2
# What kubectl's embedded kustomize (the oracle) writes as its version in the managed-by label
# (orchestrator.accumulator.MANAGED_BY, which this module does not import at start-up).
MANAGED_BY = "kustomize-(devel)"


def _columns() -> int:
    """Help width as argparse computes it, without importing shutil (start-up time)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            out = sys.__stdout__
            columns = os.get_terminal_size(out.fileno()).columns if out is not None else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


def _parser() -> argparse.ArgumentParser:
    import argparse

    class _Formatter(argparse.HelpFormatter):
        def __init__(
            self,
            prog: str,
            indent_increment: int = 2,
            max_help_position: int = 24,
            width: int | None = None,
        ) -> None:
            super().__init__(prog, indent_increment, max_help_position, width or _columns())

    class _Parser(argparse.ArgumentParser):
        """An ArgumentParser (subcommands inherit it) whose help formatter skips shutil."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("formatter_class", _Formatter)
            super().__init__(*args, **kwargs)

    p = _Parser(prog="krm", description="Build KRM resources like kustomize.")
    p.add_argument(
        "--debug",
        "--stack-trace",
        action="store_true",
        help="show tracebacks on errors (--stack-trace: kustomize's name)",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    b = sub.add_parser("build", help="build a kustomization directory (like kustomize build)")
    b.add_argument("path", nargs="?", default=".", help="directory with a kustomization")
    b.add_argument("-o", "--output", help="write to FILE, or one file per resource into DIR")
    b.add_argument(
        "--load-restrictor",
        default=_BUILD_DEFAULTS["load_restrictor"],
        choices=_CHOICES["load_restrictor"],
        help="whether files outside a kustomization's directory may be read",
    )
    b.add_argument(
        "--reorder",
        choices=_CHOICES["reorder"],
        default=None,
        help="output order: legacy kind order (default; a Composition keeps pipeline order) "
        "or input order",
    )
    b.add_argument("--enable-helm", action="store_true", help="inflate helmCharts with helm")
    b.add_argument(
        "--helm-command", default=_BUILD_DEFAULTS["helm_command"], help="helm binary to use"
    )
    b.add_argument(
        "--helm-api-versions",
        action="append",
        default=[],
        metavar="API_VERSION",
        help="Kubernetes API versions helm offers charts as Capabilities.APIVersions "
        "(repeatable; for charts that set no apiVersions)",
    )
    b.add_argument(
        "--helm-kube-version",
        default=_BUILD_DEFAULTS["helm_kube_version"],
        metavar="VERSION",
        help="Kubernetes version helm offers charts as Capabilities.KubeVersion "
        "(for charts that set no kubeVersion)",
    )
    b.add_argument(
        "--helm-debug",
        action="store_true",
        help="run helm template with --debug (for charts that do not set debug)",
    )
    b.add_argument(
        "--debug", "--stack-trace", action="store_true", dest="debug_cmd", help=argparse.SUPPRESS
    )
    b.add_argument(
        "--enable-managedby-label",
        action="store_true",
        help=f"label every resource app.kubernetes.io/managed-by: {MANAGED_BY} (as "
        "buildMetadata: [managedByLabel] does)",
    )
    b.add_argument(
        "--no-cache",
        action="store_true",
        help="neither use nor fill the build cache ($XDG_CACHE_HOME/krm/builds)",
    )
    b.add_argument(
        "--batch",
        action="store_true",
        help="build every kustomization directory under PATH into -o DIR "
        "(DIR/<dir>/build.yaml or error.txt)",
    )
    fcli = _functions_cli()
    fcli.add_build_flags(b)
    fcli.add_view_command(sub)
    fcli.add_fn_command(sub)
    fcli.add_trust_command(sub)
    from orchestrator.edit import parser as edit_parser

    edit_parser.add_edit_command(sub)
    edit_parser.add_create_command(sub)
    fcli.add_catalog_command(sub)
    c = sub.add_parser(
        "consolidate", help="print a Composition's consolidated transformer list (no run)"
    )
    c.add_argument("path", nargs="?", default=".", help="directory with a composition.yaml")
    push = sub.add_parser(
        "push",
        help="package a kustomization directory as an OCI artifact (Flux's format) and push it",
    )
    push.add_argument("path", help="directory with a kustomization")
    push.add_argument("ref", help="where to push: oci://HOST/REPOSITORY:TAG")
    push.add_argument(
        "--source", default="", help="the org.opencontainers.image.source annotation (a URL)"
    )
    push.add_argument(
        "--revision", default="", help="the org.opencontainers.image.revision annotation"
    )
    push.add_argument("--ca-file", help="CA certificates for the registry's HTTPS (PEM)")
    v = sub.add_parser("version", help="print krm's version and the kustomize it builds like")
    v.add_argument("-o", "--output", choices=["yaml", "json"], help="machine-readable output")
    comp = sub.add_parser("completion", help="print a shell completion script")
    comp.add_argument("shell", choices=["bash", "zsh", "fish"], help="the shell")
    return p


# ``krm build``'s options as argparse parses them (tests/orchestrator/test_cli_quick.py holds
# these tables to the parser above): a plain build command line is parsed from them without
# importing argparse, which with its gettext and locale is a tenth of a small build's start-up.
_BUILD_DEFAULTS: dict[str, Any] = {
    "debug": False,
    "command": "build",
    "path": ".",
    "output": None,
    "load_restrictor": "LoadRestrictionsRootOnly",
    "reorder": None,
    "enable_helm": False,
    "helm_command": "helm",
    "helm_api_versions": [],
    "helm_kube_version": "",
    "helm_debug": False,
    "debug_cmd": False,
    "enable_managedby_label": False,
    "no_cache": False,
    "trusted_catalog": [],
    "catalog_key": [],
    "base_key": [],
    "enable_exec": False,
    "enable_alpha_plugins": False,
    "network": False,
    "network_name": "bridge",
    "mount": [],
    "as_current_user": False,
    "env": [],
    "results_dir": None,
    "container_runtime": None,
    "offline": False,
    "skip_schema": False,
    "strict_catalogs": False,
    "lock": False,
    "locked": False,
    "batch": False,
}
_CHOICES = {
    "load_restrictor": ["LoadRestrictionsRootOnly", "LoadRestrictionsNone"],
    "reorder": ["legacy", "none"],
    "container_runtime": ["docker", "podman", "builtin"],
}
_VALUE_OPTIONS = {
    "-o": "output",
    "--output": "output",
    "--load-restrictor": "load_restrictor",
    "--reorder": "reorder",
    "--helm-command": "helm_command",
    "--helm-kube-version": "helm_kube_version",
    "--results-dir": "results_dir",
    "--container-runtime": "container_runtime",
    "--network-name": "network_name",
}
_APPEND_OPTIONS = {
    "--trusted-catalog": "trusted_catalog",
    "--helm-api-versions": "helm_api_versions",
    "--catalog-key": "catalog_key",
    "--base-key": "base_key",
    "--mount": "mount",
    "--env": "env",
    "-e": "env",
}
_FLAGS = {
    "--debug": "debug_cmd",
    "--stack-trace": "debug_cmd",
    "--enable-managedby-label": "enable_managedby_label",
    "--as-current-user": "as_current_user",
    "--no-cache": "no_cache",
    "--enable-helm": "enable_helm",
    "--helm-debug": "helm_debug",
    "--enable-exec": "enable_exec",
    "--enable-alpha-plugins": "enable_alpha_plugins",
    "--network": "network",
    "--offline": "offline",
    "--skip-schema": "skip_schema",
    "--strict-catalogs": "strict_catalogs",
    "--lock": "lock",
    "--locked": "locked",
    "--batch": "batch",
}


def _quick_build_args(argv: list[str]) -> SimpleNamespace | None:
    """``krm build`` arguments written in their plain forms (whole option names, ``--opt=value``
    or ``--opt value``, at most one path), as argparse would parse them; None for anything else
    (help, abbreviations, bad values, other commands), which argparse then parses or explains."""
    if not argv or argv[0] != "build":
        return None
    values = {k: list(v) if isinstance(v, list) else v for k, v in _BUILD_DEFAULTS.items()}
    path_seen = False
    i = 1
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("-"):
            if path_seen:
                return None
            values["path"] = word
            path_seen = True
            continue
        name, eq, value = word.partition("=")
        if name in _FLAGS and not eq:
            values[_FLAGS[name]] = True
            continue
        dest = _VALUE_OPTIONS.get(name) or _APPEND_OPTIONS.get(name)
        if dest is None or (eq and not name.startswith("--")):
            return None
        if not eq:
            if i >= len(argv) or argv[i].startswith("-"):
                return None
            value = argv[i]
            i += 1
        if value not in _CHOICES.get(dest, (value,)):
            return None
        if name in _APPEND_OPTIONS:
            values[dest].append(value)
        else:
            values[dest] = value
    return SimpleNamespace(**values)


def _functions_cli() -> ModuleType:
    """The KRM functions CLI pieces (imports nothing; cheap)."""
    from orchestrator.functions import cli as fcli

    return fcli


def _file_name(obj: dict[str, Any]) -> str:
    """kustomize's per-resource file name: ``group_version_kind_name.yaml``, lower-cased."""
    api = str(obj.get("apiVersion") or "")
    group, _, version = api.rpartition("/")
    parts = [p for p in (group, version, str(obj.get("kind") or "")) if p]
    name = str((obj.get("metadata") or {}).get("name") or "")
    return f"{'_'.join(parts).lower()}_{name.lower()}.yaml"


def _write_dir(directory: str, resources: list[dict[str, Any]]) -> None:
    """One file per resource, namespace-prefixed when resources span several namespaces."""
    from orchestrator import yamlio
    from orchestrator.resource import is_cluster_scoped

    namespaced = [
        o
        for o in resources
        if not is_cluster_scoped(str(o.get("apiVersion") or ""), str(o.get("kind") or ""))
    ]
    # kustomize groups by effective namespace, where "" means "default".
    namespaces = {str((o.get("metadata") or {}).get("namespace") or "default") for o in namespaced}
    for obj in resources:
        name = _file_name(obj)
        cluster = is_cluster_scoped(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
        if not cluster and len(namespaces) > 1:
            ns = str((obj.get("metadata") or {}).get("namespace") or "default")
            name = f"{ns.lower()}_{name}"
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write(yamlio.dump(obj))


def run() -> int:
    """The ``krm`` program: :func:`main`, then a quick exit.

    The interpreter's own exit tears down every module and frees every object one by one,
    after a full collection: ~2.5 ms of a ~20 ms small build, more after a large one, and
    nothing a finished build needs. So once ``main`` returns, stdout and stderr are flushed,
    the ``atexit`` handlers run (temporary directories' finalizers among them) and the
    process ends with ``os._exit``. Where that cannot be vouched for (a flush fails, e.g.
    on a closed pipe; a thread still runs; no ``atexit`` runner; a profiler or tracer, such
    as ``python -m cProfile``, which writes its report after the program) the status is
    returned for the usual exit, which does all that as it always did.
    """
    code = main()
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() != 1:
        return code
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return code
    import atexit

    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if run_exitfuncs is None:
        return code
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return code
    run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):  # what the handlers printed
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return code
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``krm`` (in a process of its own: :func:`run`); returns the exit
    status."""
    words = sys.argv[1:] if argv is None else argv
    if words == ["version"]:  # what scripts log first: no parser needed (argparse loads re)
        args: Any = SimpleNamespace(command="version", output=None, debug=False)
    else:
        args = _quick_build_args(words) or _parser().parse_args(words)
    debug = args.debug or getattr(args, "debug_cmd", False)
    if args.command == "view" and getattr(args, "view_what", None) == "catalog":
        command = _view
    elif args.command == "consolidate":
        command = _consolidate
    elif args.command == "fn" and getattr(args, "fn_what", None) == "schema":
        command = _fn_schema
    elif args.command == "build":
        command = _build
    elif args.command == "version":
        command = _version
    elif args.command == "push":
        command = _push
    elif args.command == "completion":
        command = _completion
    elif args.command == "edit" and getattr(args, "edit_kind", None):
        command = _edit
    elif args.command in ("create", "init"):
        command = _create
    elif args.command == "trust" and getattr(args, "trust_what", None):
        command = _trust
    elif args.command == "catalog" and getattr(args, "catalog_what", None) == "sign":
        command = _catalog_sign
    else:
        _parser().print_help(sys.stderr)
        return USAGE_ERROR
    try:
        return command(args, debug)
    except Exception as exc:
        # KrmError is imported only now: a build served from the cache never loads it.
        from orchestrator.errors import KrmError

        # One line for the user; the traceback only when asked for.
        if debug or not isinstance(exc, (KrmError, OSError, RecursionError)):
            raise
        if isinstance(exc, RecursionError):  # inputs are depth-checked; derived data may not be
            exc = KrmError("data nested too deeply to process", file=getattr(args, "path", None))
        _stderr(f"Error: {exc}\n")
        return 1


def _build(args: Args, debug: bool) -> int:
    """``krm build DIR``, served from the build cache when nothing it read has changed."""
    import gc

    # A build makes a dict or list per YAML map and sequence, and keeps nearly all of them to
    # the end: the cyclic collector's default first threshold (700 allocations) runs it tens
    # of thousands of times over a large tree for nothing (~3 % of a 12 MB build). It still
    # runs, 70 times less often; the caller's thresholds are back afterwards.
    thresholds = gc.get_threshold()
    gc.set_threshold(50_000, 20, 20)
    try:
        return _build_now(args, debug)
    finally:
        gc.set_threshold(*thresholds)


def _build_now(args: Args, debug: bool) -> int:
    """``_build``'s work, under its collector thresholds."""
    if args.batch:
        return _build_batch(args, debug)
    to_dir = bool(args.output and os.path.isdir(args.output))
    if args.no_cache or to_dir or args.enable_helm or args.lock or args.locked:
        return _build_uncached(args, debug, None)
    from orchestrator import buildcache

    options = {k: v for k, v in sorted(vars(args).items()) if k not in ("output", "no_cache")}
    cache = buildcache.BuildCache(buildcache.make_key(args.path, options))
    hit = cache.lookup()
    if hit is not None:
        for w in hit.warnings:
            _stderr(w + "\n")
        _write_output(args, hit.output)
        return 0
    return _build_uncached(args, debug, cache)


def _write_output(args: Args, raw: bytes) -> None:
    """Write a build's output, UTF-8 ``raw``, to ``-o FILE`` or stdout as bytes: through the
    text layer a 12 MB output took ~35 ms more to write."""
    if args.output:
        with open(args.output, "wb") as f:
            f.write(raw)
    elif (sys.stdout.encoding or "").lower().replace("-", "") == "utf8":
        sys.stdout.flush()
        sys.stdout.buffer.write(raw)  # the bytes the text layer would write
    else:
        sys.stdout.write(raw.decode("utf-8"))


def _build_uncached(args: Args, debug: bool, cache: Any) -> int:
    """Build (recording what the build reads when ``cache`` is given, then storing it)."""
    from orchestrator.build import build
    from orchestrator.errors import KrmError

    options = _build_options(args, debug)
    fn_options = options.functions
    try:
        if cache is None:
            result = build(args.path, options)
        else:
            from orchestrator.buildcache import Recorder

            with Recorder().active() as recorder:
                result = build(args.path, options)
    except KrmError:
        # The functions that ran before the failure keep their summaries; the build's results
        # log is the list the functions context hung on these options.
        _print_summaries(fn_options.results_log)
        raise
    _print_summaries(result.results)
    if fn_options.lock_mode:
        from orchestrator.functions import lockfile

        lockfile.finish(fn_options)
    warnings = _dedupe(result.warnings)
    for w in warnings:
        _stderr(w + "\n")
    if args.output and (os.path.isdir(args.output) or args.output.endswith(("/", os.sep))):
        # "-o out/" names a directory: create it, as a user who typed the slash expects.
        os.makedirs(args.output, exist_ok=True)
        _write_dir(args.output, result.resources)
    else:
        raw = result.to_yaml_bytes()
        if cache is not None and not result.results:
            cache.store(recorder, raw, warnings)
        _write_output(args, raw)
    return 0


def _build_options(args: Args, debug: bool) -> Any:
    """The BuildOptions of a ``krm build`` command line."""
    from orchestrator.build import BuildOptions

    return BuildOptions(
        load_restrictor=args.load_restrictor,
        reorder=args.reorder,
        enable_helm=args.enable_helm,
        helm_command=args.helm_command,
        helm_api_versions=args.helm_api_versions,
        helm_kube_version=args.helm_kube_version,
        helm_debug=args.helm_debug,
        debug=debug,
        functions=_functions_cli().fn_options(args),
        trusted_catalogs=args.trusted_catalog,
        managed_by_label=args.enable_managedby_label,
    )


def _build_batch(args: Args, debug: bool) -> int:
    """``krm build --batch ROOT -o OUTDIR``: every kustomization under ROOT (no build cache)."""
    from orchestrator import batch

    if not args.output:
        print("Error: --batch needs -o OUTDIR", file=sys.stderr)
        return USAGE_ERROR
    return batch.run(args.path, args.output, _build_options(args, debug))


def _consolidate(args: Args, debug: bool) -> int:
    """``krm consolidate DIR`` (KEP-2299)."""
    from orchestrator.composition import consolidate_text

    sys.stdout.write(consolidate_text(args.path))
    return 0


def _version(args: Args, debug: bool) -> int:
    """``krm version [-o yaml|json]``."""
    from orchestrator import version

    sys.stdout.write(version.text(args.output))
    return 0


def _edit(args: Args, debug: bool) -> int:
    """``krm edit {set,add,remove} KIND ARGS...`` on the current directory's kustomization."""
    from orchestrator.edit.parser import command_options

    options = command_options(args)
    if args.edit_kind in ("configmap", "secret"):
        from orchestrator.edit import generators

        generators.run(args.edit_verb, args.edit_kind, args.edit_args, options)
    else:
        from orchestrator.edit import commands

        commands.run(args.edit_verb, args.edit_kind, args.edit_args, options)
    return 0


def _create(args: Args, debug: bool) -> int:
    """``krm create [--resources ...] [--autodetect [--recursive]] ...``."""
    from orchestrator.edit.create import create
    from orchestrator.edit.parser import create_options

    create(**create_options(args))
    return 0


def _completion(args: Args, debug: bool) -> int:
    """``krm completion bash|zsh|fish``."""
    from orchestrator import completion

    sys.stdout.write(completion.script(_parser(), args.shell))
    return 0


def _view(args: Args, debug: bool) -> int:
    """``krm view catalog REF``: exit 1 when a signature does not verify with --catalog-key."""
    text, problem = _functions_cli().run_view(args)
    sys.stdout.write(text)
    if problem:
        print(f"Error: {problem}", file=sys.stderr)
        return 1
    return 0


def _trust(args: Args, debug: bool) -> int:
    """``krm trust add|list|remove``."""
    sys.stdout.write(_functions_cli().run_trust(args))
    return 0


def _push(args: Args, debug: bool) -> int:
    """``krm push DIR oci://HOST/REPO:TAG``: prints the pushed manifest's digest (stdout) and
    the reference pinned to it (stderr)."""
    from orchestrator.functions.options import FnOptions
    from orchestrator.ocipush import tree_push

    options = FnOptions(ca_file=args.ca_file)
    digest = tree_push(args.path, args.ref, options, source=args.source, revision=args.revision)
    sys.stdout.write(digest + "\n")
    _stderr(f"pushed {args.ref}@{digest}\n")
    return 0


def _catalog_sign(args: Args, debug: bool) -> int:
    """``krm catalog sign REGISTRY --publisher P --key FILE``."""
    sys.stdout.write(_functions_cli().run_catalog_sign(args))
    return 0


def _fn_schema(args: Args, debug: bool) -> int:
    """``krm fn schema KIND``."""
    sys.stdout.write(_functions_cli().run_fn_schema(args))
    return 0


def _print_summaries(entries: list[dict[str, Any]]) -> None:
    """The readable results of each function run that succeeded, to stderr."""
    for entry in entries:
        # A failed run's summary is part of its error message already.
        if entry.get("exitCode") or not entry.get("results"):
            continue
        from orchestrator.functions.resourcelist import format_summary

        _stderr(format_summary(str(entry.get("function")), entry["results"]))


def _stderr(text: str) -> None:
    """Write to stderr with control characters other than newline and tab escaped: messages,
    warnings and function results quote documents and functions' output, and a terminal must
    not act on an escape sequence in them."""
    from orchestrator.terminal import lines

    sys.stderr.write(lines(text))


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


if __name__ == "__main__":
    raise SystemExit(main())
