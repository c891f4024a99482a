"""Command-line pieces for functions: ``krm build`` flags and ``krm view catalog``.

Nothing is imported here (argparse only for type checking, the CLI imports it when it parses
the command line itself); the functions package loads when a command needs it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace
    from typing import Any


def add_fn_command(sub: Any) -> None:
    """``krm fn schema KIND [--catalog REF ...]``."""
    f = sub.add_parser("fn", help="inspect KRM functions of the trusted catalogs")
    fsub = f.add_subparsers(dest="fn_what", metavar="WHAT")
    s = fsub.add_parser("schema", help="print the JSON Schema of a function's config")
    s.add_argument("kind", help="Kind, or apiVersion/Kind (e.g. example.com/v1/JavaApplication)")
    s.add_argument(
        "--catalog",
        "--trusted-catalog",
        action="append",
        default=[],
        metavar="REF",
        help="catalog to search after the official one (trusted for this command); repeatable",
    )
    s.add_argument("--offline", action="store_true", help="use the cache only")


def run_fn_schema(args: argparse.Namespace) -> str:
    """The text ``krm fn schema`` prints."""
    from orchestrator.functions.options import FnOptions
    from orchestrator.functions.schema import schema_text

    return schema_text(args.kind, args.catalog, options=FnOptions(offline=args.offline))


def add_build_flags(p: argparse.ArgumentParser) -> None:
    """The function and catalog flags of ``krm build``."""
    p.add_argument(
        "--trusted-catalog",
        action="append",
        default=[],
        metavar="REF",
        help="trust this catalog (path, https, git+https, oci); repeatable",
    )
    p.add_argument(
        "--catalog-key",
        action="append",
        default=[],
        metavar="FILE",
        help="public key (PEM) that must have signed each catalog used, e.g. a registry's "
        "/signing-key.pub; repeatable (any one may sign)",
    )
    p.add_argument(
        "--base-key",
        action="append",
        default=[],
        metavar="FILE",
        help="public key (PEM) that must have signed (cosign) each oci:// base and component, "
        "e.g. a registry's /signing-key.pub; repeatable (any one may sign)",
    )
    p.add_argument("--enable-exec", action="store_true", help="allow explicit exec.path functions")
    p.add_argument(
        "--enable-alpha-plugins",
        action="store_true",
        help="allow container and starlark functions that the kustomization names itself (a "
        "runtime field or the config.kubernetes.io/function annotation); catalog ones need no "
        "flag",
    )
    p.add_argument(
        "--network", action="store_true", help="allow network to functions that require it"
    )
    p.add_argument(
        "--network-name",
        default="bridge",
        metavar="NAME",
        help="accepted for kustomize compatibility; like kustomize v5.5, unused (a function "
        "with network runs on the host network)",
    )
    p.add_argument(
        "--mount",
        action="append",
        default=[],
        metavar="MOUNT",
        help="storage mount (type=bind,src=...,dst=...), needed by functions that require one; "
        "passed to container functions; repeatable",
    )
    p.add_argument(
        "--env",
        "-e",
        action="append",
        default=[],
        metavar="KEY[=VALUE]",
        help="environment variable for functions; repeatable",
    )
    p.add_argument(
        "--as-current-user",
        action="store_true",
        help="run container functions as the caller's uid:gid instead of nobody",
    )
    p.add_argument("--results-dir", metavar="DIR", help="write function results to DIR")
    p.add_argument(
        "--container-runtime",
        choices=["docker", "podman", "builtin"],
        help="container engine for container functions: docker, podman, or builtin (pull the "
        "pinned image and run it in bubblewrap; no daemon); default: docker, else podman, "
        "whichever can run a container here, else builtin",
    )
    p.add_argument(
        "--offline",
        action="store_true",
        help="use cached catalogs, runtimes and remote bases only",
    )
    p.add_argument(
        "--skip-schema",
        action="store_true",
        help="do not check functionConfigs against their catalog schemas (emergencies only)",
    )
    p.add_argument(
        "--strict-catalogs",
        action="store_true",
        help="fail when a function is also defined, differently, in a later trusted catalog",
    )
    p.add_argument(
        "--lock",
        action="store_true",
        help="write krm.lock next to the kustomization: the catalogs, function runtimes and "
        "registry roots this build used",
    )
    p.add_argument(
        "--locked",
        action="store_true",
        help="use exactly what krm.lock pins; any difference is an error (for CI)",
    )


def fn_options(args: argparse.Namespace | SimpleNamespace) -> Any:
    """FnOptions from parsed ``krm build`` arguments."""
    import os

    from orchestrator.functions.options import FnOptions, FunctionError

    lock, locked = getattr(args, "lock", False), getattr(args, "locked", False)
    if lock and locked:
        raise FunctionError("--lock and --locked exclude each other")
    return FnOptions(
        lock_mode="write" if lock else "check" if locked else None,
        lock_file=os.path.join(args.path, "krm.lock") if lock or locked else None,
        skip_schema=args.skip_schema,
        enable_exec=args.enable_exec,
        enable_alpha_plugins=args.enable_alpha_plugins,
        network=args.network,
        mounts=list(args.mount),
        env=list(args.env),
        offline=args.offline,
        container_runtime=args.container_runtime,
        results_dir=args.results_dir,
        catalog_keys=list(args.catalog_key),
        base_keys=list(getattr(args, "base_key", [])),
        strict_catalogs=getattr(args, "strict_catalogs", False),
        as_current_user=getattr(args, "as_current_user", False),
    )


def add_view_command(sub: Any) -> None:
    """``krm view catalog REF [-o yaml|json]``."""
    v = sub.add_parser("view", help="show a catalog before trusting it")
    vsub = v.add_subparsers(dest="view_what", metavar="WHAT")
    c = vsub.add_parser("catalog", help="publisher, functions, runtimes and needs of a catalog")
    c.add_argument("ref", help="catalog reference: path, https://, git+https://, oci://")
    c.add_argument("-o", "--output", choices=["yaml", "json"], help="machine-readable output")
    c.add_argument("--offline", action="store_true", help="use the cache only")
    c.add_argument(
        "--catalog-key",
        action="append",
        default=[],
        metavar="FILE",
        help="verify the catalog's signature with this public key (PEM); repeatable",
    )


def run_view(args: argparse.Namespace) -> tuple[str, str | None]:
    """The text ``krm view catalog`` prints, and the error it then exits with (a signature
    that does not verify with the --catalog-key given), if any."""
    from orchestrator.functions import view
    from orchestrator.functions.options import FnOptions

    options = FnOptions(offline=args.offline, catalog_keys=list(args.catalog_key))
    return view.main_checked(args.ref, args.output, options=options)


def add_trust_command(sub: Any) -> None:
    """``krm trust add|list|remove``: the registries whose TUF root krm has pinned."""
    t = sub.add_parser("trust", help="pin, list and forget registries' TUF roots")
    tsub = t.add_subparsers(dest="trust_what", metavar="WHAT")
    a = tsub.add_parser("add", help="pin a registry's TUF root")
    a.add_argument("registry", help="registry URL, e.g. https://registry.example.com")
    how = a.add_mutually_exclusive_group()
    how.add_argument("--root", metavar="FILE", help="the registry's root.json, obtained safely")
    how.add_argument(
        "--root-sha256",
        metavar="HEX",
        help="sha256 of the root to pin (fetched from the registry and checked against it)",
    )
    tsub.add_parser("list", help="the pinned registries")
    r = tsub.add_parser("remove", help="forget a registry's pinned root and metadata")
    r.add_argument("registry", help="registry URL")


def add_catalog_command(sub: Any) -> None:
    """``krm catalog sign REGISTRY --publisher P --key FILE``."""
    c = sub.add_parser("catalog", help="act on a registry's catalogs as their publisher")
    csub = c.add_subparsers(dest="catalog_what", metavar="WHAT")
    s = csub.add_parser("sign", help="sign the publisher's TUF role with its own key and upload it")
    s.add_argument("registry", help="registry URL, e.g. https://registry.example.com")
    s.add_argument("--publisher", required=True, help="the publisher whose role is signed")
    s.add_argument("--key", required=True, metavar="FILE", help="the publisher's private key (PEM)")
    s.add_argument(
        "--token-env",
        default="KRM_REGISTRY_TOKEN",
        metavar="NAME",
        help="environment variable holding an owner's API token (default KRM_REGISTRY_TOKEN)",
    )


def run_catalog_sign(args: argparse.Namespace) -> str:
    """The text ``krm catalog sign`` prints."""
    from orchestrator.functions import catalogsign
    from orchestrator.functions.options import FnOptions

    return catalogsign.main(
        args.registry,
        publisher=args.publisher,
        key_file=args.key,
        token_env=args.token_env,
        options=FnOptions(),
    )


def run_trust(args: argparse.Namespace) -> str:
    """The text ``krm trust ...`` prints."""
    from orchestrator.functions import trustcmd
    from orchestrator.functions.options import FnOptions

    options = FnOptions()
    if args.trust_what == "add":
        return trustcmd.add(
            args.registry, root_file=args.root, root_sha256=args.root_sha256, options=options
        )
    if args.trust_what == "remove":
        return trustcmd.remove(args.registry, options=options)
    return trustcmd.listing(options=options)
