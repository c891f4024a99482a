"""Trial runs of contributed functions inside a kernel-enforced jail.

The jail is the registry's, not the engine's: ``bwrap`` (bubblewrap) builds a fresh mount,
network, PID, IPC and UTS namespace with only ``/usr`` and ``/etc`` bound read-only, an empty
read-only ``$HOME``, a size-limited tmpfs at ``/tmp`` (the scratch dir, also the working dir) and
the function program bound read-only at ``/fn``. ``prlimit`` sets CPU time, address space, file
size, core and process-count limits before ``bwrap`` starts; inside, ``setpriv`` drops to an
unprivileged uid with no capabilities and ``no_new_privs`` before the function runs. The parent
reads at most ``max_output`` bytes of stdout (and ``max_stderr`` of stderr), then kills the
process group; a wall-clock timeout does the same. Killing ``bwrap`` ends its PID namespace
(``--die-with-parent``), so nothing the function forked outlives the run.

Starlark scripts never run in the worker process: ``catalogs/review/sandbox_starlark.py`` runs them
with the engine's starlark runtime in a Python subprocess inside the same jail.

What a function *tried* is read from the errors it got (no strace, no seccomp log): with no
network interface but the jail's own loopback, a connect fails with ENETUNREACH ("Network is
unreachable") or, to loopback where nothing listens, ECONNREFUSED; a name lookup fails ("Temporary
failure in name resolution", "Name or service not known"); a write
outside the scratch dir fails with EROFS ("Read-only file system"). A function that swallows its
errors is therefore contained but not recorded; the jail, not the detection, is the guarantee.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from catalogs.exceptions import RegistryError
from orchestrator.functions import resourcelist as rl
from orchestrator.functions.options import FunctionError

SANDBOX_UID = 65534  # nobody
NOT_RUN_CONTAINER = "not run here: no container engine in the trial sandbox"

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
    memory_bytes: int = 1024 * 1024 * 1024  # RLIMIT_AS
    max_processes: int = 64  # RLIMIT_NPROC of the sandbox uid
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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def jail_available() -> str | None:
    """A short description of the jail this machine can build, or None when it cannot."""
    for tool in ("bwrap", "prlimit", "setpriv"):
        if shutil.which(tool) is None:
            return None
    try:
        proc = subprocess.run(
            _bwrap_prefix(scratch_bytes=1024 * 1024) + ["true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return "bwrap (mount/net/pid/ipc/uts namespaces) + prlimit + setpriv"


def _bwrap_prefix(*, scratch_bytes: int, binds: list[tuple[str, str]] | None = None) -> list[str]:
    argv = [
        "bwrap",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for name in ("bin", "lib", "lib64", "sbin"):
        target = os.path.join("/", name)
        if os.path.islink(target):
            argv += ["--symlink", os.readlink(target), target]
        elif os.path.isdir(target):
            argv += ["--ro-bind", target, target]
    argv += ["--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev"]
    argv += ["--perms", "1777", "--size", str(scratch_bytes), "--tmpfs", "/tmp"]
    argv += ["--dir", "/home/fn"]
    made = {"/", "/usr", "/etc", "/proc", "/dev", "/tmp", "/home", "/home/fn"}
    for src, dst in binds or []:
        # bwrap makes missing parents 0700, which the unprivileged uid could not enter.
        parent = os.path.dirname(dst)
        chain = []
        while parent not in made:
            chain.append(parent)
            made.add(parent)
            parent = os.path.dirname(parent)
        for path in reversed(chain):
            argv += ["--perms", "0755", "--dir", path]
        argv += ["--ro-bind", src, dst]
    argv += ["--remount-ro", "/", "--chdir", "/tmp"]
    if os.geteuid() == 0:
        # bwrap runs privileged (no user namespace), so the uid switch happens inside.
        tail = [
            "setpriv",
            f"--reuid={SANDBOX_UID}",
            f"--regid={SANDBOX_UID}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]
    else:
        argv += ["--unshare-user", "--cap-drop", "ALL"]
        tail = []
    return argv + ["--"] + tail


def _env_args(env: dict[str, str]) -> list[str]:
    out = ["--clearenv"]
    for key, value in env.items():
        out += ["--setenv", key, value]
    return out


def _run_jailed(
    program: list[str],
    stdin: bytes,
    *,
    limits: SandboxLimits,
    binds: list[tuple[str, str]],
    env: dict[str, str],
) -> tuple[str, int | None, bytes, bytes, bool, float]:
    """(status, exit code, stdout, stderr, stderr truncated, seconds) of one jailed process."""
    prefix = _bwrap_prefix(scratch_bytes=limits.scratch_bytes, binds=binds)
    # --clearenv and --setenv go before the "--" that ends bwrap's options.
    cut = prefix.index("--")
    bwrap = prefix[:cut] + _env_args(env) + prefix[cut:]
    argv = [
        "prlimit",
        f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}",  # SIGXCPU, then SIGKILL
        f"--as={limits.memory_bytes}",
        f"--nproc={limits.max_processes}",
        f"--fsize={limits.scratch_bytes}",
        "--core=0",
        "--",
        *bwrap,
        *program,
    ]
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    out = bytearray()
    err = bytearray()
    state = {"output_limit": False, "stderr_truncated": False}

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    def read_stdout() -> None:
        assert isinstance(proc.stdout, io.BufferedReader)  # stdout=PIPE, buffered
        while chunk := proc.stdout.read1(65536):
            if len(out) + len(chunk) > limits.max_output:
                state["output_limit"] = True
                kill()
                break
            out.extend(chunk)

    def read_stderr() -> None:
        assert isinstance(proc.stderr, io.BufferedReader)  # stderr=PIPE, buffered
        while chunk := proc.stderr.read1(65536):
            room = limits.max_stderr - len(err)
            if room > 0:
                err.extend(chunk[:room])
            if len(chunk) > room:
                state["stderr_truncated"] = True  # keep draining so the function cannot block

    def write_stdin() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(stdin)
        except (BrokenPipeError, OSError):
            pass
        finally:
            with contextlib.suppress(OSError):
                proc.stdin.close()

    threads = [threading.Thread(target=t, daemon=True) for t in (read_stdout, read_stderr)]
    threads.append(threading.Thread(target=write_stdin, daemon=True))
    for t in threads:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=limits.wall_seconds)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill()
        proc.wait()
    for t in threads:
        t.join(timeout=5)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    seconds = time.monotonic() - start
    code = proc.returncode
    if state["output_limit"]:
        status = "output_limit"
    elif timed_out or code == -signal.SIGXCPU or code == 128 + signal.SIGXCPU:
        status = "timeout"
    elif code != 0:
        status = "failed"
    else:
        status = "ok"
    return status, code, bytes(out), bytes(err), state["stderr_truncated"], seconds


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


def run_exec(
    program: str,
    items: list[dict[str, Any]],
    *,
    function_config: dict[str, Any] | None = None,
    limits: SandboxLimits | None = None,
) -> TrialOutcome:
    """Run a local exec-runtime program on a ResourceList inside the jail."""
    limits = limits or SandboxLimits()
    jail = jail_available()
    if jail is None:
        raise SandboxUnavailable("no sandbox on this machine: bwrap, prlimit or setpriv fails")
    program = os.path.realpath(program)
    if not os.path.isfile(program):
        raise SandboxUnavailable(f"exec program not found: {program}")
    with tempfile.TemporaryDirectory(prefix="krm-trial-") as staging:
        # A private read-only copy, so the function sees its own file and nothing beside it.
        copy = os.path.join(staging, "function")
        shutil.copyfile(program, copy)
        os.chmod(copy, 0o555)
        os.chmod(staging, 0o755)
        status, code, out, err, truncated, seconds = _run_jailed(
            ["/fn/function"],
            rl.encode(items, function_config),
            limits=limits,
            binds=[(staging, "/fn")],
            env={"PATH": "/usr/bin:/bin", "HOME": "/home/fn", "TMPDIR": "/tmp", "LANG": "C.UTF-8"},
        )
    outcome = TrialOutcome(
        status=status,
        exit_code=code,
        stderr=err.decode("utf-8", errors="replace"),
        stderr_truncated=truncated,
        duration=seconds,
        jail=jail,
    )
    decoded = None
    if status == "ok":
        try:
            decoded = rl.decode(out, function="trial")
        except FunctionError as exc:
            outcome.status = "invalid_output"
            outcome.detail = exc.message
    elif status == "output_limit":
        outcome.detail = f"stopped after {limits.max_output} bytes of output"
    elif status == "timeout":
        outcome.detail = "CPU or wall-clock limit reached"
    return _finish(outcome, items, decoded)


def run_starlark(
    script: str,
    items: list[dict[str, Any]],
    *,
    function_config: dict[str, Any] | None = None,
    limits: SandboxLimits | None = None,
) -> TrialOutcome:
    """Run a starlark script in a Python subprocess inside the jail (never in this process)."""
    limits = limits or SandboxLimits()
    jail = jail_available()
    if jail is None:
        raise SandboxUnavailable("no sandbox on this machine: bwrap, prlimit or setpriv fails")
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    venv = os.path.realpath(sys.prefix)
    base = os.path.realpath(sys.base_prefix)
    binds = [(venv, venv), (os.path.join(root, "orchestrator"), "/krm/orchestrator")]
    binds.append((os.path.join(here, "sandbox_starlark.py"), "/krm/runner.py"))
    if base != venv and not base.startswith("/usr"):
        binds.insert(0, (base, base))
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
    status, code, out, err, truncated, seconds = _run_jailed(
        [python, "-s", "/krm/runner.py"],
        json.dumps(doc).encode("utf-8"),
        limits=limits,
        binds=binds,
        env={"PATH": "/usr/bin:/bin", "HOME": "/home/fn", "PYTHONPATH": "/krm", "LANG": "C.UTF-8"},
    )
    outcome = TrialOutcome(
        status=status,
        exit_code=code,
        stderr=err.decode("utf-8", errors="replace"),
        stderr_truncated=truncated,
        duration=seconds,
        jail=jail + "; starlark in a subprocess",
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
    elif status == "output_limit":
        outcome.detail = f"stopped after {limits.max_output} bytes of output"
    elif status == "timeout":
        outcome.detail = "CPU or wall-clock limit reached"
    return _finish(outcome, items, decoded)


def run_container(image: str) -> TrialOutcome:
    """Container runtimes are not run by the trial sandbox; the outcome says so."""
    return TrialOutcome(status="not_run", detail=f"{image}: {NOT_RUN_CONTAINER}")
