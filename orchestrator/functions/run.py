"""``run_function_config``: resolve, fetch, run one function config over a resource list."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from orchestrator.errors import KrmError
from orchestrator.functions import resourcelist as rl
from orchestrator.functions.catalogs import CatalogSet
from orchestrator.functions.options import FnOptions, FnOutcome, FunctionError
from orchestrator.functions.resolve import Resolved, describe, resolve
from orchestrator.resource import Resource

ROLES = ("generator", "transformer", "validator")
VALIDATED_BY = "validated-by"  # the one label kustomize lets a validator add


def _label(resolved: Resolved) -> str:
    spec = resolved.spec
    if resolved.kind == "container":
        return f"image {spec.get('image')}"
    if resolved.kind == "exec":
        return f"exec {spec.get('path') or spec.get('uri')}"
    return f"starlark {spec.get('path') or spec.get('url') or spec.get('uri')}"


def _local(path: str, base: str) -> str:
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(base, path))


def _against_catalog(uri: str | None, resolved: Resolved) -> str | None:
    """A relative URI in a catalog fetched over http(s) is relative to the catalog's URL."""
    catalog = resolved.catalog
    if not uri or catalog is None or catalog.ref.kind != "url" or "://" in uri:
        return uri
    from urllib.parse import urljoin

    return urljoin(catalog.source, uri)


def _starlark_script(
    resolved: Resolved,
    kdir: str,
    options: FnOptions,
    read_file: Callable[[str], bytes],
    name: str,
) -> tuple[str, str]:
    """(script text, filename) for a starlark runtime; verified when a sha256 is given.

    A script the function config names itself (a ``path:``, or a ``url:`` that is a local
    path or ``file://``) is read through ``read_file``, the kustomization's loader, so it is
    refused out of the root like any other file a kustomization names (and never reaches the
    interpreter, whose parse errors quote the script). Catalog scripts are read as the trusted
    catalog names them.
    """
    from orchestrator.functions import fetch

    spec = resolved.spec
    sha = spec.get("sha256")
    if resolved.catalog is None:
        return _explicit_script(spec, kdir, options, read_file, name)
    base = resolved.catalog.base_dir
    uri = _against_catalog(spec.get("url") or spec.get("uri"), resolved)
    path = spec.get("path")
    if path and not uri:
        if base is None:
            raise FunctionError(
                f"starlark path {path!r} in {resolved.origin} is relative to a remote catalog; "
                "catalogs must give a uri"
            )
        uri = _local(path, base)
    assert uri is not None
    if sha:
        blob = fetch.fetch_blob(uri, sha, options=options, base_dir=base)
        data = fetch.read_limited(blob, options.max_download)
    elif fetch.local_path(uri, base) is None:
        raise FunctionError(
            f"starlark {uri} in {resolved.origin} has no sha256; refusing an unverified script"
        )
    else:
        data = fetch.read_limited(str(fetch.local_path(uri, base)), options.max_download)
    return _decoded(data, uri)


def _explicit_script(
    spec: dict[str, Any],
    kdir: str,
    options: FnOptions,
    read_file: Callable[[str], bytes],
    name: str,
) -> tuple[str, str]:
    """(script text, filename) for a starlark ``path:`` or ``url:`` of the config itself."""
    import hashlib

    from orchestrator.errors import LoadError
    from orchestrator.functions import fetch

    sha = spec.get("sha256")
    uri = str(spec.get("url") or spec.get("uri") or "")
    local = str(spec["path"]) if spec.get("path") else fetch.local_path(uri, kdir)
    if local is None:
        if sha:
            blob = fetch.fetch_blob(uri, sha, options=options, base_dir=None)
            return _decoded(fetch.read_limited(blob, options.max_download), uri)
        resp = fetch.http_get(uri, options=options, max_bytes=options.max_download)
        return _decoded(resp.body or b"", uri)
    try:
        data = read_file(local)
    except LoadError as exc:
        raise FunctionError(f"{name}: {exc.message}") from None
    if sha:
        expected = fetch.normalise_sha256(str(sha))
        if expected is None:
            raise FunctionError(f"{local}: sha256 {sha!r} is not 64 hexadecimal digits")
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected:
            raise FunctionError(
                f"sha256 mismatch for {local}: expected {expected}, got {actual}; nothing was run"
            )
    return _decoded(data, local)


def _decoded(data: bytes, uri: str) -> tuple[str, str]:
    try:
        return data.decode("utf-8"), os.path.basename(uri)
    except UnicodeDecodeError:
        raise FunctionError(f"starlark script {uri} is not UTF-8") from None


def _argv(resolved: Resolved, kdir: str, options: FnOptions, name: str) -> tuple[list[str], bool]:
    """(argv, whether to pass the caller's full environment) for exec and container."""
    spec = resolved.spec
    if resolved.kind == "exec":
        if resolved.catalog is None:
            args = spec.get("args") or []
            path = str(spec["path"])
            # A bare name is looked up on PATH, as kpt does; anything with a slash is a file.
            program = path if "/" not in path else _local(path, kdir)
            return [program, *[str(a) for a in args]], False
        from orchestrator.functions.fetch import exec_binary

        platform = dict(spec, uri=_against_catalog(spec["uri"], resolved))
        return [exec_binary(platform, options=options, base_dir=resolved.catalog.base_dir)], False
    from orchestrator.functions import container

    engine = container.detect_engine(options)
    image = container.pinned_image(spec["image"], spec.get("sha256"))
    argv = container.command(
        engine,
        image,
        options=options,
        require_network=resolved.require_network,
    )
    return argv, True  # the docker/podman CLI needs DOCKER_HOST etc.; the function does not


def _runtime_verify(resolved: Resolved, catalogs: CatalogSet | None) -> None:
    """An exec or starlark artifact of a catalog verified through TUF, served by that registry:
    a signed target of the catalog's publisher, checked before anything is unpacked or run."""
    if resolved.catalog is None or catalogs is None or resolved.kind not in ("exec", "starlark"):
        return
    spec = resolved.spec
    uri = spec.get("uri") if resolved.kind == "exec" else spec.get("url") or spec.get("uri")
    uri = _against_catalog(uri, resolved)
    if uri:
        catalogs.store.runtime_verify(resolved.catalog, str(uri), spec.get("sha256"))


def _engine(options: FnOptions) -> str:
    from orchestrator.functions import container

    return container.detect_engine(options)


def _canonical(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


def _validated_view(obj: dict[str, Any]) -> dict[str, Any]:
    """A validator's output item without internal annotations and the validated-by label."""
    rl.strip_internal(obj)  # the output is discarded: changing it in place is fine
    md = obj.get("metadata")
    labels = md.get("labels") if isinstance(md, dict) else None
    if isinstance(labels, dict) and VALIDATED_BY in labels:
        del labels[VALIDATED_BY]
        if not labels and isinstance(md, dict):
            del md["labels"]
    return obj


def _check_needs(resolved: Resolved, options: FnOptions, name: str) -> None:
    """requireNetwork / requireStorageMount need --network / --mount, whatever the runtime."""
    if resolved.require_network and not options.network:
        raise FunctionError(f"{name} requires network access: pass --network to allow it")
    if resolved.require_mount and not options.mounts:
        raise FunctionError(f"{name} requires a storage mount: pass --mount to provide one")


def _record(
    options: FnOptions,
    resolved: Resolved,
    name: str,
    results: list[dict[str, Any]],
    code: int,
    err: str,
) -> None:
    # "function" is the readable name the CLI's summary uses; results.yaml leaves it out.
    entry: dict[str, Any] = {"function": name}
    if resolved.kind == "container":
        entry["image"] = resolved.spec.get("image")
    elif resolved.kind == "exec":
        entry["exec"] = resolved.spec.get("path") or resolved.spec.get("uri")
    else:
        entry["starlark"] = (
            resolved.spec.get("path") or resolved.spec.get("url") or (resolved.spec.get("uri"))
        )
    entry["exitCode"] = code
    if results:
        entry["results"] = results
    if err:
        entry["stderr"] = err
    log = options.results_log
    log.append(entry)
    if options.results_dir:
        rl.write_results(options.results_dir, log)


def run_function_config(
    config: dict[str, Any],
    resources: list[Resource],
    *,
    role: str,
    kustomization_dir: str,
    catalogs: CatalogSet | None,
    options: FnOptions,
    openapi: dict[str, Any] | None = None,
    source: str | None = None,
    read_file: Callable[[str], bytes] | None = None,
) -> FnOutcome:
    """Run one function config; generators get no input and return only what they generate.

    Nothing is printed: each run's entry (with its results) is appended to the build's results
    log, and written to ``options.results_dir`` when set. ``source`` is the kustomization file
    named in resolution errors. ``read_file`` reads the files the config names (the
    kustomization's loader; by default one of ``kustomization_dir`` that reads only below it).
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    name = describe(config)
    try:
        resolved = resolve(config, catalogs, options)
    except KrmError as exc:
        if exc.file is None:  # the config is wrong or unmatched: point at where it is listed
            exc.file = source
        raise
    if resolved.catalog is not None:
        from orchestrator.functions import schema

        schema.check_before_run(config, catalogs, options)
    name = f"{name} ({_label(resolved)}, from {resolved.origin})"
    # Before anything is fetched or run: the user's consent comes first.
    _check_needs(resolved, options, name)
    inputs = [] if role == "generator" else list(resources)
    # Starlark gets the items as objects and changes them in place; the others read bytes.
    items = rl.to_items(inputs, kustomization_dir, deep=resolved.kind == "starlark")
    stderr = ""
    try:
        _runtime_verify(resolved, catalogs)
        if resolved.kind == "starlark":
            from orchestrator.functions import starlark

            if read_file is None:
                from orchestrator.fs import Loader

                read_file = Loader(kustomization_dir).read
            script, filename = _starlark_script(
                resolved, kustomization_dir, options, read_file, name
            )
            doc = {
                "apiVersion": rl.API_VERSION,
                "kind": "ResourceList",
                "items": items,
                "functionConfig": config,
            }
            out, stderr = starlark.run(
                script,
                filename=filename,
                resource_list=doc,
                options=options,
                function=name,
                openapi=openapi,
            )
            out_items = out.get("items") or []
            results = out.get("results") or []
            if not isinstance(out_items, list) or not all(isinstance(i, dict) for i in out_items):
                raise FunctionError(f"{name}: ctx.resource_list['items'] must be a list of dicts")
            if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
                raise FunctionError(f"{name}: results must be a list of dicts")
        else:
            if resolved.kind == "container" and _engine(options) == "builtin":
                from orchestrator.functions import container

                stdout, stderr = container.run_builtin(
                    resolved.spec["image"],
                    resolved.spec.get("sha256"),
                    rl.encode(items, config),
                    options=options,
                    require_network=resolved.require_network,
                    function=name,
                )
            else:
                from orchestrator.functions import exec as exec_runtime

                argv, full_env = _argv(resolved, kustomization_dir, options, name)
                stdout, stderr = exec_runtime.run(
                    argv,
                    rl.encode(items, config),
                    cwd=kustomization_dir,
                    options=options,
                    function=name,
                    env=dict(os.environ) if full_env else None,
                )
            decoded = rl.decode(stdout, function=name)
            out_items, results = decoded["items"], decoded["results"]
    except FunctionError as exc:
        _record(options, resolved, name, [], 1, exc.message)
        raise
    failed = rl.has_errors(results)
    _record(options, resolved, name, results, 1 if failed else 0, stderr)
    if failed:
        detail = rl.format_summary(name, results) + (
            f"stderr:\n{stderr.strip()}\n" if stderr.strip() else ""
        )
        raise FunctionError(f"{name} reported errors:\n{detail.rstrip()}")
    if role == "validator":
        # As kustomize compares: the same set of resources (order free), a validated-by label
        # allowed; the output is discarded either way.
        before = sorted(_canonical(r.obj) for r in inputs)
        after = sorted(_canonical(_validated_view(o)) for o in out_items)
        if after != before:
            raise FunctionError(f"{name} is a validator but modified the resources")
        return FnOutcome(list(resources), results, stderr)
    return FnOutcome(rl.from_items(out_items, inputs, function=name), results, stderr)
