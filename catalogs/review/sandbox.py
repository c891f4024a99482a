"""Trial runs of contributed functions inside the engine's jail.

There is one jail, the engine's (``orchestrator.functions.jail``, used through its public API):
new user, mount, network, PID, IPC and UTS namespaces made by ``bwrap``; a read-only root (the
host's ``/usr`` and ``/etc`` for exec programs and starlark, the image's unpacked rootfs for
container functions); a size-limited private tmpfs at ``/tmp``; the function as nobody with no
capabilities and only the environment given (nobody outside the namespace too when the worker
runs as root); memory, process and CPU limits on the whole jail with a cgroup where the worker
may make one (else per process, with ``prlimit``: the run record says which); an output limit
and a wall-clock timeout that kill the whole run. This module chooses what each runtime sees in
it: an exec program is a private read-only copy at ``/fn/function``, ``$HOME`` an empty
read-only ``/home/fn``; a starlark script runs in a Python subprocess in the jail
(``catalogs/review/sandbox_starlark.py``, the engine's starlark runtime, never in the worker);
a container image is pulled, verified and
unpacked by the engine's ``image_prepare`` and runs as its config says, with no network.

What a function *tried* is read from the errors it got (no strace, no seccomp log): with no
network interface but the jail's own loopback, a connect fails with ENETUNREACH ("Network is
unreachable") or, to loopback where nothing listens, ECONNREFUSED; a name lookup fails ("Temporary
failure in name resolution", "Name or service not known"); a write
outside the scratch dir fails with EROFS ("Read-only file system"). A function that swallows its
errors is therefore contained but not recorded; the jail, not the detection, is the guarantee.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any

from catalogs.exceptions import RegistryError
from orchestrator import yamlio
from orchestrator.errors import KrmError
from orchestrator.functions import jail
from orchestrator.functions import resourcelist as rl
from orchestrator.functions.container import DEFAULT_PATH
from orchestrator.functions.image import image_prepare
from orchestrator.functions.options import FnOptions, FunctionError

JAIL = "the engine's jail: bwrap (user/mount/net/pid/ipc/uts namespaces) + prlimit"


def _jail_text() -> str:
    """The jail's description with what holds its memory and processes here."""
    return f"{JAIL}; {jail.confinement()}"


_NETWORK_PATTERNS = re.compile(
    r"Network is unreachable|ENETUNREACH|Errno 101\b|Temporary failure in name resolution|"
    r"Name or service not known|EAI_AGAIN|Address family not supported|Connection refused|"
    r"ECONNREFUSED|Errno 111\b",
    re.IGNORECASE,
)
_WRITE_PATTERNS = re.compile(r"Read-only file system|EROFS|Errno 30\b", re.IGNORECASE)
_DENIED_PATTERNS = re.compile(r"Permission denied|EACCES|Errno 13\b", re.IGNORECASE)


class SandboxUnavailable(RegistryError):
    """No jail can be built on this machine; trial runs refuse to run rather than run unjailed."""


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 10
    memory_bytes: int = 1024 * 1024 * 1024  # the whole jail (cgroup), and each process's data
    max_processes: int = 64  # the whole jail (cgroup), else RLIMIT_NPROC of the sandbox uid
    cpu_cores: float = 1.0  # CPU bandwidth of the whole jail (cgroup only)
    max_output: int = 8 * 1024 * 1024  # stdout bytes read before the run is killed
    max_stderr: int = 64 * 1024  # stderr bytes kept
    scratch_bytes: int = 16 * 1024 * 1024  # tmpfs size of /tmp, and RLIMIT_FSIZE
    wall_seconds: float = 20.0


@dataclass
class TrialOutcome:
    """What one run of one function on one ResourceList did."""

    status: str  # ok | failed | timeout | output_limit | invalid_output | not_run
    exit_code: int | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""
    stderr_truncated: bool = False
    duration: float = 0.0
    diff: dict[str, list[str]] = field(default_factory=dict)
    tried_network: bool = False
    tried_write_outside: bool = False
    was_denied: bool = False
    detail: str = ""
    jail: str = ""
    # What ran, for the reviewer: the starlark script, or the exec download's file listing.
    artifact: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def jail_available() -> str | None:
    """A short description of the jail this machine can build, or None when it cannot."""
    if jail.jail_check() is not None:
        return None
    return JAIL


def _unavailable() -> SandboxUnavailable:
    reason = jail.jail_check() or "the jail cannot be built"
    return SandboxUnavailable(f"no sandbox on this machine: {reason}")


def _jail_limits(limits: SandboxLimits) -> jail.JailLimits:
    return jail.JailLimits(
        wall_seconds=limits.wall_seconds,
        cpu_seconds=limits.cpu_seconds,
        memory_bytes=limits.memory_bytes,
        max_output=limits.max_output,
        max_stderr=limits.max_stderr,
        tmp_bytes=limits.scratch_bytes,
        max_processes=limits.max_processes,
        cpu_cores=limits.cpu_cores,
    )


def _run_jailed(
    argv: list[str],
    stdin: bytes,
    *,
    limits: SandboxLimits,
    mounts: list[jail.Mount],
    env: dict[str, str],
    rootfs: str | None = None,
    cwd: str = "/tmp",
    user: tuple[int, int] = jail.NOBODY,
) -> tuple[str, int | None, bytes, bytes, bool, float, str]:
    """(status, exit code, stdout, stderr, stderr truncated, seconds, the jail-wide limit hit
    or "") of one jailed process.

    The host's root (``rootfs=None``) gets an empty read-only ``$HOME`` at ``/home/fn``; an
    image's root is used as is. Root-only host files stay closed to the function when the
    worker runs as root: the jail runs it as nobody outside its namespace too.
    """
    with tempfile.TemporaryDirectory(prefix="krm-trial-jail-") as staging:
        os.chmod(staging, 0o755)
        extra: list[jail.Mount] = []
        if rootfs is None:
            home = os.path.join(staging, "home")
            os.mkdir(home, 0o555)
            extra = [jail.Mount(home, "/home/fn")]
        try:
            result = jail.jail_run(
                argv,
                stdin,
                rootfs=rootfs,
                env=env,
                cwd=cwd,
                user=user,
                network=False,
                mounts=[*mounts, *extra],
                limits=_jail_limits(limits),
            )
        except jail.JailUnavailable as exc:
            raise SandboxUnavailable(f"no sandbox on this machine: {exc.message}") from None
        except FunctionError as exc:
            raise SandboxUnavailable(exc.message) from None
    code = result.exit_code
    hit = jail.limit_message(result, _jail_limits(limits)) or ""
    if result.output_limited:
        status = "output_limit"
    elif result.timed_out or code == -signal.SIGXCPU or code == 128 + signal.SIGXCPU:
        status = "timeout"
    elif code != 0 or result.memory_limited:  # a process of it was killed: not a good run
        status = "failed"
    else:
        status = "ok"
    return status, code, result.stdout, result.stderr, result.stderr_truncated, result.seconds, hit


def _resource_id(obj: dict[str, Any]) -> str:
    md = obj.get("metadata")
    if not isinstance(md, dict):
        md = {}
    api = str(obj.get("apiVersion", ""))
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    kind = f"{obj.get('kind', '')}.{group}" if group else str(obj.get("kind", ""))
    ns = f"{md['namespace']}/" if md.get("namespace") else ""
    return f"{kind}/{ns}{md.get('name', '')}"


def _normalised(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        copy = json.loads(json.dumps(item))
        rl.strip_internal(copy)
        out[_resource_id(copy)] = copy
    return out


def resource_diff(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, list]:
    """Resource ids added, removed and changed between a function's input and its output."""
    a, b = _normalised(before), _normalised(after)
    return {
        "added": sorted(set(b) - set(a)),
        "removed": sorted(set(a) - set(b)),
        "changed": sorted(k for k in set(a) & set(b) if a[k] != b[k]),
    }


def output_yaml(items: list[dict[str, Any]]) -> str:
    """A function's output as YAML documents, by resource id, internal annotations removed:
    the same output always reads the same, so two runs' outputs compare line by line."""
    normalised = _normalised(items)
    return yamlio.dump_all(normalised[key] for key in sorted(normalised))


def _attempts(outcome: TrialOutcome) -> None:
    text = outcome.stderr + "\n" + outcome.detail
    outcome.tried_network = bool(_NETWORK_PATTERNS.search(text))
    outcome.tried_write_outside = bool(_WRITE_PATTERNS.search(text))
    outcome.was_denied = bool(_DENIED_PATTERNS.search(text))


def _finish(
    outcome: TrialOutcome, items_in: list[dict[str, Any]], decoded: dict[str, Any] | None
) -> TrialOutcome:
    if decoded is not None:
        outcome.items = decoded["items"]
        outcome.results = decoded["results"]
        outcome.diff = resource_diff(items_in, outcome.items)
        if rl.has_errors(outcome.results) and outcome.status == "ok":
            outcome.status = "failed"
            outcome.detail = "the function reported error results"
    _attempts(outcome)
    return outcome


def _decoded(
    outcome: TrialOutcome, status: str, out: bytes, limits: SandboxLimits
) -> dict[str, Any] | None:
    """The ResourceList a run wrote, or None (with the outcome saying why)."""
    if status == "ok":
        try:
            return rl.decode(out, function="trial")
        except FunctionError as exc:
            outcome.status = "invalid_output"
            outcome.detail = exc.message
    elif status == "output_limit":
        outcome.detail = f"stopped after {limits.max_output} bytes of output"
    elif status == "timeout":
        outcome.detail = "CPU or wall-clock limit reached"
    return None


def run_exec(
    program: str,
    items: list[dict[str, Any]],
    *,
    function_config: dict[str, Any] | None = None,
    limits: SandboxLimits | None = None,
) -> TrialOutcome:
    """Run a local exec-runtime program on a ResourceList inside the jail."""
    limits = limits or SandboxLimits()
    if jail_available() is None:
        raise _unavailable()
    program = os.path.realpath(program)
    if not os.path.isfile(program):
        raise SandboxUnavailable(f"exec program not found: {program}")
    with tempfile.TemporaryDirectory(prefix="krm-trial-") as staging:
        # A private read-only copy, so the function sees its own file and nothing beside it.
        copy = os.path.join(staging, "function")
        shutil.copyfile(program, copy)
        os.chmod(copy, 0o555)
        os.chmod(staging, 0o755)
        status, code, out, err, truncated, seconds, hit = _run_jailed(
            ["/fn/function"],
            rl.encode(items, function_config),
            limits=limits,
            mounts=[jail.Mount(staging, "/fn")],
            env={"PATH": "/usr/bin:/bin", "HOME": "/home/fn", "TMPDIR": "/tmp", "LANG": "C.UTF-8"},
        )
    outcome = TrialOutcome(
        status=status,
        exit_code=code,
        stderr=err.decode("utf-8", errors="replace"),
        stderr_truncated=truncated,
        duration=seconds,
        detail=hit,
        jail=_jail_text(),
    )
    return _finish(outcome, items, _decoded(outcome, status, out, limits))


def run_starlark(
    script: str,
    items: list[dict[str, Any]],
    *,
    function_config: dict[str, Any] | None = None,
    limits: SandboxLimits | None = None,
) -> TrialOutcome:
    """Run a starlark script in a Python subprocess inside the jail (never in this process)."""
    limits = limits or SandboxLimits()
    if jail_available() is None:
        raise _unavailable()
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    venv = os.path.realpath(sys.prefix)
    base = os.path.realpath(sys.base_prefix)
    mounts = [
        jail.Mount(venv, venv),
        jail.Mount(os.path.join(root, "orchestrator"), "/krm/orchestrator"),
        jail.Mount(os.path.join(here, "sandbox_starlark.py"), "/krm/runner.py"),
    ]
    if base != venv and not base.startswith("/usr"):
        mounts.insert(0, jail.Mount(base, base))
    python = os.path.join(venv, "bin", "python")
    doc = {
        "script": script,
        "resource_list": {
            "apiVersion": rl.API_VERSION,
            "kind": "ResourceList",
            "items": items,
            "functionConfig": function_config or {},
        },
        "timeout": limits.wall_seconds,
    }
    status, code, out, err, truncated, seconds, hit = _run_jailed(
        [python, "-s", "/krm/runner.py"],
        json.dumps(doc).encode("utf-8"),
        limits=limits,
        mounts=mounts,
        env={"PATH": "/usr/bin:/bin", "HOME": "/home/fn", "PYTHONPATH": "/krm", "LANG": "C.UTF-8"},
    )
    outcome = TrialOutcome(
        status=status,
        exit_code=code,
        stderr=err.decode("utf-8", errors="replace"),
        stderr_truncated=truncated,
        duration=seconds,
        detail=hit,
        jail=_jail_text() + "; starlark in a subprocess",
    )
    decoded = None
    if status == "ok":
        try:
            reply = json.loads(out)
            if reply.get("error"):
                outcome.status = "failed"
                outcome.detail = str(reply["error"])
            else:
                decoded = {
                    "items": reply["resource_list"].get("items") or [],
                    "results": reply["resource_list"].get("results") or [],
                }
                printed = str(reply.get("printed") or "")
                outcome.stderr = (printed + "\n" if printed else "") + outcome.stderr
        except (ValueError, KeyError, AttributeError):
            outcome.status = "invalid_output"
            outcome.detail = "the starlark runner wrote no valid reply"
    else:
        _decoded(outcome, status, out, limits)
    return _finish(outcome, items, decoded)


def run_container(
    image: str,
    sha256: str | None,
    items: list[dict[str, Any]],
    *,
    options: FnOptions,
    function_config: dict[str, Any] | None = None,
    limits: SandboxLimits | None = None,
) -> TrialOutcome:
    """Pull, verify and unpack a pinned image with the engine, then run it in the same jail.

    An image the engine will not run (a tag without digest, a digest that does not match, a
    hostile layer, no variant for this machine) is an outcome ``not_run`` saying why; nothing
    of it runs.
    """
    limits = limits or SandboxLimits()
    if jail_available() is None:
        raise _unavailable()
    try:
        img = image_prepare(image, sha256, options=options)
    except KrmError as exc:
        return TrialOutcome(status="not_run", detail=f"{image}: {exc.message}; nothing was run")
    env = dict(img.env)
    env.setdefault("PATH", DEFAULT_PATH)
    env.setdefault("HOME", "/")
    status, code, out, err, truncated, seconds, hit = _run_jailed(
        img.argv,
        rl.encode(items, function_config),
        limits=limits,
        mounts=[],
        env=env,
        rootfs=img.rootfs,
        cwd=img.workdir,
        user=img.user,
    )
    outcome = TrialOutcome(
        status=status,
        exit_code=code,
        stderr=err.decode("utf-8", errors="replace"),
        stderr_truncated=truncated,
        duration=seconds,
        detail=hit,
        jail=f"{_jail_text()}; image {img.ref} as uid {img.user[0]}",
    )
    return _finish(outcome, items, _decoded(outcome, status, out, limits))
