"""Trial runs of contributed functions: services and selectors.

Each run fetches the contributed runtime the way ``krm`` does (https, or http to loopback, sha256
verified) and runs it in ``catalogs.review.sandbox`` on each example of the version. KEP-2906 lists
``examples`` as strings; one that is an https (or loopback http) URL of a ``.yaml``/``.yml`` file is
read as one or two YAML documents: a ResourceList to run the function on, and optionally the
ResourceList it must produce (a run whose output differs is flagged). Other examples are
documentation links; with no runnable example the function runs on a built-in ConfigMap,
Deployment and Service. Runtimes and examples given as local paths or ``file:`` URIs are never
read by the worker: a runtime of that kind is recorded as not run.
"""

from __future__ import annotations

import contextlib
import os
import platform as _platform
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction

from catalogs.exceptions import InvalidInputError, RegistryError
from catalogs.ratelimits import Deferral, upstream_hosts_admit
from catalogs.review import sandbox, services, trial_fetch
from catalogs.review.models import Contribution, TrialRun, TrialRunStatus
from catalogs.review.services import contribution_definition_parse
from orchestrator import yamlio
from orchestrator.catalog import FunctionVersion as ParsedVersion
from orchestrator.errors import KrmError
from orchestrator.functions import fetch
from orchestrator.functions.fetch import is_loopback
from orchestrator.functions.oci import parse_image
from orchestrator.functions.options import FnOptions

BUILTIN_EXAMPLE = "built-in: a ConfigMap, a Deployment and a Service"
BUILTIN_ITEMS: list[dict[str, Any]] = [
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "demo"},
        "data": {"mode": "trial"},
    },
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    },
]
MAX_EXAMPLE_BYTES = 1024 * 1024
# A run's output and the script it ran are kept up to this many characters for the review page.
OUTPUT_MAX_CHARS = 256 * 1024
LISTING_MAX_FILES = 500
MAX_EXAMPLES = 10  # runnable examples per trial; each may take the sandbox's full wall clock
_BAD_EXAMPLE = "an example must be one or two ResourceList documents"
_FAILURES: dict[str, str] = {
    TrialRunStatus.FAILED: "crashed or reported errors",
    TrialRunStatus.TIMEOUT: "timed out",
    TrialRunStatus.OUTPUT_LIMIT: "printed more than the output limit",
    TrialRunStatus.INVALID_OUTPUT: "wrote no valid ResourceList",
}


def _downloadable(uri: str | None) -> bool:
    if not uri:
        return False
    try:
        fetch.check_url(uri)
    except fetch.FetchError:
        return False
    return urlsplit(uri).scheme in ("http", "https")


def _options() -> FnOptions:
    # Every download connects through the trial fetch policy (TRIAL_ALLOWED_NETWORKS).
    return FnOptions(
        cache_dir=str(settings.TRIAL_CACHE_DIR),
        timeout=30.0,
        http_transport=trial_fetch.trial_http_transport(),
    )


def _arch() -> str:
    machine = _platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def _run_runtime(
    runtime: dict[str, Any], items: list[dict[str, Any]], config: dict[str, Any] | None = None
) -> tuple[str, Any]:
    """(runtime kind, sandbox outcome) for the first runtime the sandbox can run."""
    star = runtime.get("starlark")
    if star is not None:
        spec = {"uri": star} if isinstance(star, str) else star
        uri = spec.get("uri")
        if not _downloadable(uri):
            return "starlark", sandbox.TrialOutcome(
                status="not_run", detail="starlark runtime is not an https (or loopback) URI"
            )
        try:
            assert uri is not None  # _downloadable refuses None
            blob = fetch.fetch_blob(uri, spec.get("sha256"), options=_options())
            script = fetch.read_limited(blob, 1024 * 1024).decode("utf-8")
        except (KrmError, UnicodeDecodeError) as exc:
            return "starlark", sandbox.TrialOutcome(status="not_run", detail=str(exc))
        try:
            outcome = sandbox.run_starlark(script, items, function_config=config)
        except sandbox.SandboxUnavailable as exc:
            # The script was fetched and verified: the reviewer reads it even if it cannot run.
            outcome = sandbox.TrialOutcome(status="not_run", detail=exc.message)
        outcome.artifact = script[:OUTPUT_MAX_CHARS]
        return "starlark", outcome
    exe = runtime.get("exec")
    if exe is not None:
        platforms = [
            p
            for p in exe.get("platforms", [])
            if p.get("os") == "linux" and p.get("arch") == _arch()
        ]
        if not platforms or not _downloadable(platforms[0].get("uri")):
            return "exec", sandbox.TrialOutcome(
                status="not_run", detail=f"no downloadable linux/{_arch()} platform"
            )
        try:
            program = fetch.exec_binary(platforms[0], options=_options(), base_dir=None)
        except KrmError as exc:
            return "exec", sandbox.TrialOutcome(status="not_run", detail=str(exc))
        try:
            outcome = sandbox.run_exec(program, items, function_config=config)
        except sandbox.SandboxUnavailable as exc:
            outcome = sandbox.TrialOutcome(status="not_run", detail=exc.message)
        outcome.artifact = exec_listing(program, str(platforms[0].get("bin") or ""))
        return "exec", outcome
    container = runtime.get("container") or {}
    image = str(container.get("image") or "")
    if not image:
        return "container", sandbox.TrialOutcome(status="not_run", detail="no runtime to run")
    return "container", sandbox.run_container(
        image, container.get("sha256"), items, options=_options(), function_config=config
    )


def exec_listing(program: str, bin_name: str) -> str:
    """The files of an unpacked exec download, ``<size>  <path>`` (``*`` marks executables),
    sorted, at most LISTING_MAX_FILES lines: what a reviewer approves along with the binary."""
    root = program
    for _part in PurePosixPath(bin_name).parts or ("",):
        root = os.path.dirname(root)
    lines: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            mark = "*" if os.access(path, os.X_OK) else " "
            lines.append(f"{os.path.getsize(path):>10} {mark} {os.path.relpath(path, root)}")
    if len(lines) > LISTING_MAX_FILES:
        more = len(lines) - LISTING_MAX_FILES
        lines[LISTING_MAX_FILES:] = [f"… and {more} more files"]
    return "\n".join(lines)


@dataclass
class Example:
    name: str
    items: list[dict[str, Any]]
    function_config: dict[str, Any] | None = None
    expected: list[dict[str, Any]] | None = None
    error: str | None = None  # why the example could not be read


def _resource_list(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and doc.get("kind") == "ResourceList"
        and isinstance(doc.get("items") or [], list)
        and all(isinstance(i, dict) for i in doc.get("items") or [])
    )


def _examples(strings: list[str]) -> list[Example]:
    """The runnable examples among a version's ``examples`` (see the module's docstring)."""
    found: list[Example] = []
    for ref in strings:
        if len(found) >= MAX_EXAMPLES:
            break
        if not _downloadable(ref) or not urlsplit(ref).path.endswith((".yaml", ".yml")):
            continue
        name = f"example {ref}"
        try:
            resp = fetch.http_get(ref, options=_options(), max_bytes=MAX_EXAMPLE_BYTES)
            docs = yamlio.load_all(resp.body or b"", source=ref)
        except KrmError as exc:
            found.append(Example(name=name, items=[], error=exc.message))
            continue
        docs = [d for d in docs if d is not None]
        if not docs or len(docs) > 2 or not all(_resource_list(d) for d in docs):
            found.append(
                Example(
                    name=name,
                    items=[],
                    error=_BAD_EXAMPLE,
                )
            )
            continue
        found.append(
            Example(
                name=name,
                items=docs[0].get("items") or [],
                function_config=docs[0].get("functionConfig"),
                expected=(docs[1].get("items") or []) if len(docs) == 2 else None,
            )
        )
    return found or [Example(name=BUILTIN_EXAMPLE, items=BUILTIN_ITEMS)]


def _flags(outcome: sandbox.TrialOutcome, expected: list[dict[str, Any]] | None) -> list[str]:
    flags = []
    if outcome.status in _FAILURES:
        flags.append(_FAILURES[outcome.status])
    if outcome.tried_network:
        flags.append("tried to use the network")
    if outcome.tried_write_outside:
        flags.append("tried to write outside its scratch dir")
    if outcome.diff.get("removed") and expected is None:
        flags.append("removed input resources: " + ", ".join(outcome.diff["removed"]))
    if expected is not None and outcome.status == TrialRunStatus.OK:
        off = sandbox.resource_diff(expected, outcome.items)
        ids = off["added"] + off["removed"] + off["changed"]
        if ids:
            flags.append("output differs from the example's expected output: " + ", ".join(ids))
    return flags


def _upstream_urls(runtime: dict[str, Any], examples: list[str]) -> list[str]:
    """The URLs a trial reads: the runtime it would run and its runnable examples."""
    urls: list[str] = []
    star = runtime.get("starlark")
    if star is not None:
        urls.append(star if isinstance(star, str) else str(star.get("uri") or ""))
    elif runtime.get("exec") is not None:
        for p in runtime["exec"].get("platforms", []):
            if p.get("os") == "linux" and p.get("arch") == _arch():
                urls.append(str(p.get("uri") or ""))
                break
    elif runtime.get("container") is not None:
        image = str(runtime["container"].get("image") or "")
        with contextlib.suppress(ValueError, KrmError):
            ref = parse_image(image)
            scheme = "http" if is_loopback(ref.registry.rsplit(":", 1)[0]) else "https"
            urls.append(f"{scheme}://{ref.registry}/v2/")
    urls += [e for e in examples[:MAX_EXAMPLES] if urlsplit(e).path.endswith((".yaml", ".yml"))]
    return [u for u in urls if _downloadable(u)]


def trial_versions(*, contribution: Contribution) -> list[ParsedVersion]:
    """The versions of the contribution a trial runs: every version that is new, or differs
    from the same-named version of the function in the catalog's latest published version.
    Unchanged versions were run (or published) before; their order in the document is irrelevant.
    """
    definition = contribution_definition_parse(content=contribution.content)
    fn = definition.function
    try:
        current = services.catalog_parsed_latest(catalog=contribution.catalog)
    except (RegistryError, KrmError):
        current = None
    published: dict[str, dict[str, Any]] = {}
    for existing in current.functions if current else []:
        if (existing.group, existing.kind) == (fn.group, fn.kind):
            published = {v.name: v.to_dict() for v in existing.versions}
    return [v for v in fn.versions if published.get(v.name) != v.to_dict()]


def contribution_trials_admit(*, contribution: Contribution) -> Deferral | None:
    """Take a rate-limit slot on each upstream host the trial reads, or say how long to wait."""
    try:
        versions = trial_versions(contribution=contribution)
    except RegistryError:
        return None  # the run itself meets the same error and reports it
    urls: list[str] = []
    for version in versions:
        urls += [u for u in _upstream_urls(version.runtime, version.examples) if u not in urls]
    return upstream_hosts_admit(urls=urls)


def _run_version(
    contribution: Contribution, version: ParsedVersion, deferrals: int
) -> list[TrialRun]:
    runs = []
    for example in _examples(version.examples):
        error = example.error
        if error:
            runtime = ",".join(version.runtime_kinds)
            outcome = sandbox.TrialOutcome(status="not_run", detail=f"example: {error}")
        else:
            try:
                runtime, outcome = _run_runtime(
                    version.runtime, example.items, example.function_config
                )
            except sandbox.SandboxUnavailable as exc:
                runtime = ",".join(version.runtime_kinds)
                outcome = sandbox.TrialOutcome(status="not_run", detail=exc.message)
        flags = _flags(outcome, example.expected)
        if error:
            flags.append("its example could not be read")
        runs.append(
            TrialRun.objects.create(
                contribution=contribution,
                revision=contribution.revision,
                version=version.name[:100],
                example=example.name[:200],
                runtime=runtime,
                status=outcome.status,
                flagged=bool(flags),
                flags=flags,
                exit_code=outcome.exit_code,
                duration=outcome.duration,
                stderr=outcome.stderr[:16384],
                results=outcome.results,
                diff=outcome.diff,
                tried_network=outcome.tried_network,
                tried_write_outside=outcome.tried_write_outside,
                detail=outcome.detail[:4096],
                jail=outcome.jail[:200],
                output=_output(outcome),
                artifact=outcome.artifact,
                deferrals=deferrals,
            )
        )
    return runs


def _output(outcome: sandbox.TrialOutcome) -> str:
    if not outcome.items:
        return ""
    text = sandbox.output_yaml(outcome.items)
    if len(text) > OUTPUT_MAX_CHARS:
        return text[:OUTPUT_MAX_CHARS] + f"\n# … cut at {OUTPUT_MAX_CHARS} characters\n"
    return text


@transaction.atomic
def contribution_trials_run(*, contribution: Contribution, deferrals: int = 0) -> list[TrialRun]:
    """Run each new or changed version of the contribution's function (``trial_versions``) on
    each of that version's examples; record each run, labelled with its version.

    ``deferrals``: how often an upstream host's rate limit held the trial back (recorded).
    """
    runs = []
    for version in trial_versions(contribution=contribution):
        runs += _run_version(contribution, version, deferrals)
    return runs


def contribution_trials_rerun(*, contribution: Contribution) -> None:
    """A reviewer's re-run: queue the trial runs again, or InvalidInputError when they are off."""
    if not settings.TRIAL_RUNS_ENABLED:
        raise InvalidInputError("Trial runs are turned off on this registry (TRIAL_RUNS_ENABLED).")
    services.contribution_trials_enqueue(contribution=contribution)


def trial_run_list(*, contribution: Contribution, limit: int = 20) -> list[TrialRun]:
    """Trial runs of the contribution's current revision, newest first."""
    return list(contribution.trial_runs.filter(revision=contribution.revision)[:limit])


def _newest_by_key(runs: list[TrialRun]) -> dict[tuple[str, str], TrialRun]:
    """The newest run of each (version, example) among ``runs`` (given newest first)."""
    newest: dict[tuple[str, str], TrialRun] = {}
    for run in runs:
        newest.setdefault((run.version, run.example), run)
    return newest


@dataclass(frozen=True)
class OutputDiff:
    """How one example's output changed between the previous revision's run and this one's."""

    version: str
    example: str
    previous_revision: int
    lines: list[str]  # unified diff of the two outputs; empty when they are the same


def trial_output_diffs(*, contribution: Contribution) -> list[OutputDiff]:
    """For each version and example that ran in the current revision and in an earlier one,
    both with an output: the diff of the earlier run's output (the newest earlier revision's)
    against the current one's."""
    if contribution.revision <= 1:
        return []
    runs = list(
        contribution.trial_runs.filter(revision__lte=contribution.revision)
        .exclude(output="")
        .order_by("-revision", "-created_at", "-pk")
    )
    current = _newest_by_key([r for r in runs if r.revision == contribution.revision])
    earlier = _newest_by_key([r for r in runs if r.revision < contribution.revision])
    diffs = []
    for key, run in sorted(current.items()):
        before = earlier.get(key)
        if before is None:
            continue
        lines = services.unified_diff(
            before.output,
            run.output,
            old_name=f"revision {before.revision} output",
            new_name=f"revision {run.revision} output",
        )
        diffs.append(OutputDiff(run.version, run.example, before.revision, lines))
    return diffs


@dataclass(frozen=True)
class TrialArtifact:
    """What a version of the current revision ran: its starlark script or exec file listing."""

    version: str
    runtime: str
    text: str


def trial_artifacts(*, contribution: Contribution) -> list[TrialArtifact]:
    """The script (starlark) or the download's file listing (exec) each version of the current
    revision ran, from its newest trial run that fetched it (sha256-verified: what is approved)."""
    runs = contribution.trial_runs.filter(revision=contribution.revision).exclude(artifact="")
    seen: dict[str, TrialArtifact] = {}
    for run in runs.order_by("-created_at", "-pk"):
        seen.setdefault(run.version, TrialArtifact(run.version, run.runtime, run.artifact))
    return [seen[v] for v in sorted(seen)]
