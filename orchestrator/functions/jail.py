"""The engine's one jail: run a program inside bubblewrap, cut off from the host.

``jail_run`` is the public API (the builtin container runtime and the registry's trial runs use
it): a new user, mount, PID, IPC, UTS and network namespace (``bwrap --unshare-all``; the
network is shared only when asked); a root that is either an unpacked image's rootfs or the
host's ``/usr`` and ``/etc``, bound read-only, with a fresh ``/proc``, ``/dev`` and a
size-limited private tmpfs at ``/tmp``; the root itself read-only; the program runs as the given
uid (nobody by default) with no capabilities and only the environment given.

Who the program is *outside* its namespace: the caller's uid, since an unprivileged user
namespace can map only that one. When the caller is root, that would make the program real
root in all but capabilities (owner of every root-owned file it sees, exempt from
RLIMIT_NPROC), so bubblewrap is started as nobody (65534) instead, with ``setpriv``; the paths
it binds that nobody could not reach (under ``/root``, say) are first bound, by root, into a
private staging tmpfs in a mount namespace of their own (an outer ``bwrap`` without a user
namespace), so nothing on the host changes.

Limits. Where this process may make cgroups (cgroup v2 with the memory and pids controllers
delegated, else the v1 memory and pids hierarchies), each run gets its own: memory (no swap),
processes and optionally CPU bandwidth hold for the whole process tree, and a run killed at one
of them says which. Otherwise the limits are per process only (RLIMIT_DATA, RLIMIT_NPROC of the
uid) and :func:`cgroup_check` says why in one line. CPU time, data size and core dumps are
always limited with ``prlimit`` before ``bwrap`` starts; a wall-clock timeout and an output
limit kill the whole run, and ``--die-with-parent`` with the PID namespace takes every process
the program forked with it.

When bubblewrap is missing or cannot make the namespaces (no unprivileged user namespaces,
say), ``jail_run`` raises :class:`JailUnavailable` with one line saying so: nothing ever runs
outside the jail.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import resource
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.functions.options import FunctionError

NOBODY = (65534, 65534)
HOST_ROOT = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64")  # the host root mode's binds
PROVIDED = ("proc", "dev", "tmp")  # made fresh in every jail, never bound from a rootfs
DEFAULT_PIDS = 1024  # a cgroup's pids.max when the limits name no process count
CGROUP_ENV = "KRM_JAIL_CGROUP"  # a cgroup v2 directory delegated to krm, parent of the runs'


class JailUnavailable(FunctionError):
    """bubblewrap is missing or cannot make namespaces here: nothing may run."""


@dataclass(frozen=True)
class JailLimits:
    """What one jailed run may use."""

    wall_seconds: float = 300.0
    cpu_seconds: int | None = None  # RLIMIT_CPU; None: the wall-clock limit, rounded up
    # The whole jail's memory with a cgroup (no swap); RLIMIT_DATA of each process always.
    memory_bytes: int = 2 * 1024 * 1024 * 1024
    max_output: int = 256 * 1024 * 1024  # stdout bytes read before the run is killed
    max_stderr: int = 1024 * 1024  # stderr bytes kept (the rest is drained and dropped)
    tmp_bytes: int = 256 * 1024 * 1024  # size of the tmpfs at /tmp
    # The jail's processes (a cgroup's pids.max, DEFAULT_PIDS when None); without a cgroup,
    # RLIMIT_NPROC, which counts every process of the uid the jail runs as.
    max_processes: int | None = None
    cpu_cores: float | None = None  # CPU bandwidth of the whole jail (cgroup only); None: any


@dataclass(frozen=True)
class Mount:
    """A host path bound into the jail (read-only unless ``writable``)."""

    source: str
    target: str
    writable: bool = False

    @classmethod
    def parse(cls, text: str) -> Mount:
        """docker's ``--mount`` syntax as kustomize writes it:
        ``type=bind,src=…,dst=…`` with ``rw=true`` (or ``readonly=false``) to allow writes."""
        fields: dict[str, str] = {}
        for part in text.split(","):
            key, eq, value = part.partition("=")
            fields[key.strip().lower()] = value.strip() if eq else "true"
        kind = fields.get("type", "bind")
        if kind != "bind":
            raise FunctionError(f"--mount {text!r}: only type=bind mounts can be made here")
        source = fields.get("src") or fields.get("source")
        target = fields.get("dst") or fields.get("target") or fields.get("destination")
        if not source or not target:
            raise FunctionError(f"--mount {text!r}: needs src=… and dst=…")
        if not os.path.isabs(target) or ".." in target.split("/"):
            raise FunctionError(f"--mount {text!r}: dst must be an absolute path without '..'")
        if os.path.normpath(target) == "/" or os.path.normpath(target).split("/")[1] in PROVIDED:
            raise FunctionError(f"--mount {text!r}: dst may not be /, /proc, /dev or /tmp")
        writable = fields.get("rw") == "true" or fields.get("readonly") == "false"
        if fields.get("readonly") == "true" or fields.get("ro") == "true":
            writable = False
        return cls(os.path.abspath(source), os.path.normpath(target), writable)


@dataclass
class JailResult:
    """What a jailed run did."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    seconds: float
    timed_out: bool = False
    output_limited: bool = False
    stderr_truncated: bool = False
    memory_limited: bool = False  # killed by the cgroup at the jail's memory limit
    process_limited: bool = False  # the cgroup refused a fork at the jail's process limit
    confinement: str = ""  # "cgroup v2", "cgroup v1" or "rlimits only"


def limit_message(result: JailResult, limits: JailLimits) -> str | None:
    """One line naming the jail-wide limit a run hit, or None."""
    if result.memory_limited:
        mib = limits.memory_bytes / (1024 * 1024)
        return f"killed at the jail's memory limit ({mib:g} MiB for all its processes)"
    if result.process_limited:
        count = limits.max_processes or DEFAULT_PIDS
        return f"reached the jail's process limit ({count} processes)"
    return None


_CHECKED: dict[str, str | None] = {}


def _as_root() -> bool:
    """Whether this process is the host's root (uid 0 mapped to uid 0 outside any user
    namespace it is in), whose jailed programs must not stay root outside."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/self/uid_map") as f:
            return any(line.split()[:2] == ["0", "0"] for line in f)
    except OSError:
        return True


def _setpriv() -> str | None:
    # util-linux's, as prlimit; also where PATH was narrowed to hide docker and podman.
    return shutil.which("setpriv") or shutil.which("setpriv", path=os.defpath)


def _drop() -> list[str]:
    """When krm runs as root: bubblewrap starts as nobody, so that the user namespace it makes
    maps the program to nobody outside too (not to root), with no groups and no capabilities."""
    if not _as_root():
        return []
    uid, gid = NOBODY
    return [
        _setpriv() or "setpriv",
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


def jail_check() -> str | None:
    """None when this machine can build the jail; else one line saying why not (cached)."""
    if "result" in _CHECKED:
        return _CHECKED["result"]
    bwrap = shutil.which("bwrap")
    reason: str | None
    if bwrap is None:
        reason = "bubblewrap (bwrap) is not on PATH"
    elif _as_root() and _setpriv() is None:
        reason = "running as root, the jail needs setpriv (util-linux) to start bwrap as nobody"
    else:
        argv = [bwrap, "--unshare-all", "--die-with-parent", "--uid", "65534", "--gid", "65534"]
        argv += _host_root() + ["--proc", "/proc", "--dev", "/dev", "--", "true"]
        reason = _probe(argv, "")
        if reason is None and _as_root():
            reason = _probe(_drop() + argv, " as nobody")
    _CHECKED["result"] = reason
    return reason


def _probe(argv: list[str], who: str) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot be run{who}: {exc}"
    if proc.returncode == 0:
        return None
    lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    return f"bwrap cannot make namespaces here{who} ({lines[0] if lines else 'no message'})"


def _host_root() -> list[str]:
    argv: list[str] = []
    for name in HOST_ROOT:
        path = f"/{name}"
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    return argv


def _image_root(rootfs: str, view: str) -> tuple[list[str], set[str]]:
    """Binds of a rootfs's top-level entries onto the jail's own root (so that /proc, /dev,
    /tmp and mount points can be made even when the image has no such directory). ``view`` is
    where bubblewrap finds ``rootfs`` (itself, or its staged copy)."""
    argv: list[str] = []
    names: set[str] = set()
    with os.scandir(rootfs) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name in PROVIDED:
                continue
            target = f"/{entry.name}"
            if entry.is_symlink():
                argv += ["--symlink", os.readlink(entry.path), target]
            elif entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False):
                argv += ["--ro-bind", os.path.join(view, entry.name), target]
            else:
                continue
            names.add(entry.name)
    return argv, names


def bwrap_argv(
    argv: Sequence[str],
    *,
    rootfs: str | None,
    env: dict[str, str],
    cwd: str,
    user: tuple[int, int],
    network: bool,
    mounts: Sequence[Mount],
    limits: JailLimits,
    rootfs_view: str | None = None,
) -> list[str]:
    """The bubblewrap command line of one jailed run (``rootfs_view``: where bubblewrap finds
    ``rootfs`` when that is staged)."""
    bwrap = shutil.which("bwrap") or "bwrap"
    out = [bwrap, "--unshare-all", "--die-with-parent", "--new-session"]
    if network:
        out.append("--share-net")
    out += ["--uid", str(user[0]), "--gid", str(user[1]), "--hostname", "krm-function"]
    if rootfs is None:
        out += _host_root()
        present = {n for n in HOST_ROOT if os.path.lexists(f"/{n}")}
    else:
        binds, present = _image_root(rootfs, rootfs_view or rootfs)
        out += binds
    resolv = rootfs is not None and os.path.isfile(os.path.join(rootfs, "etc", "resolv.conf"))
    if network and resolv and os.path.isfile("/etc/resolv.conf"):
        out += ["--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf"]
    out += ["--proc", "/proc", "--dev", "/dev"]
    out += ["--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    made = {"/", "/proc", "/dev", "/tmp"} | {f"/{n}" for n in present}
    for mount in mounts:
        chain = []
        parent = os.path.dirname(mount.target)
        while parent not in made and parent.count("/") >= 1 and parent != "/":
            if parent.split("/")[1] in present:
                break  # inside a bound directory: it has to exist in the image
            chain.append(parent)
            made.add(parent)
            parent = os.path.dirname(parent)
        for path in reversed(chain):
            out += ["--perms", "0755", "--dir", path]
        out += ["--bind" if mount.writable else "--ro-bind", mount.source, mount.target]
    out += ["--remount-ro", "/", "--chdir", cwd, "--clearenv"]
    for key, value in env.items():
        out += ["--setenv", key, value]
    return out + ["--", *argv]


def _reachable(path: str) -> bool:
    """Whether nobody can reach ``path`` (search permission on every directory above it)."""
    parent = os.path.dirname(os.path.realpath(path))
    while True:
        try:
            mode = os.stat(parent).st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
        if parent == "/":
            return True
        parent = os.path.dirname(parent)


@dataclass
class _Stage:
    """Root's binds of what nobody cannot reach, into a tmpfs of a private mount namespace."""

    directory: str
    prefix: list[str]  # the outer bwrap, to run before the jail's own
    rootfs_view: str | None
    mounts: list[Mount]


def _stage(rootfs: str | None, mounts: Sequence[Mount]) -> _Stage | None:
    wanted = [rootfs] if rootfs is not None and not _reachable(rootfs) else []
    wanted += [m.source for m in mounts if not _reachable(m.source)]
    if not wanted:
        return None
    directory = tempfile.mkdtemp(prefix="krm-jail-stage-")
    os.chmod(directory, 0o711)
    # No user namespace: root makes this mount namespace, and mounts there stay there.
    prefix = [shutil.which("bwrap") or "bwrap", "--dev-bind", "/", "/", "--die-with-parent"]
    prefix += ["--tmpfs", directory]
    rootfs_view = None
    if rootfs is not None and rootfs in wanted:
        rootfs_view = os.path.join(directory, "rootfs")
        prefix += ["--ro-bind", rootfs, rootfs_view]
    staged: list[Mount] = []
    for n, mount in enumerate(mounts):
        if mount.source in wanted:
            view = os.path.join(directory, f"m{n}")
            prefix += ["--bind" if mount.writable else "--ro-bind", mount.source, view]
            mount = Mount(view, mount.target, mount.writable)
        staged.append(mount)
    return _Stage(directory, [*prefix, "--"], rootfs_view, staged)


# Cgroups ---------------------------------------------------------------------------------


@dataclass
class _CgroupBase:
    kind: str  # "cgroup v2" or "cgroup v1"
    parents: dict[str, str]  # controller ("" for v2) -> the directory runs are made in


_CGROUP: dict[str, _CgroupBase | str] = {}
_RUNS = itertools.count()


def _mounts() -> tuple[str | None, dict[str, str]]:
    """(the cgroup2 mount point, {v1 controller: its mount point}) from /proc/self/mountinfo."""
    v2: str | None = None
    v1: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            fstype, options = fields[sep + 1], fields[sep + 3]
            point = fields[4].replace("\\040", " ")
            if fstype == "cgroup2" and v2 is None:
                v2 = point
            elif fstype == "cgroup":
                for option in options.split(","):
                    v1.setdefault(option, point)
    return v2, v1


def _own() -> dict[str, str]:
    """This process's cgroup path per hierarchy (``""``: the v2 one)."""
    own: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup") as f:
        for line in f:
            _id, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                own[controller] = path
    return own


def _v2_base(mount: str, own: str) -> _CgroupBase | str:
    chosen = os.environ.get(CGROUP_ENV)
    parent = chosen or os.path.join(mount, own.lstrip("/"))
    try:
        with open(os.path.join(parent, "cgroup.subtree_control")) as f:
            enabled = set(f.read().split())
        with open(os.path.join(parent, "cgroup.controllers")) as f:
            available = set(f.read().split())
    except OSError as exc:
        return f"cgroup v2 at {parent}: {exc.strerror}"
    missing = {"memory", "pids"} - enabled
    if missing - available:
        return (
            f"cgroup v2 at {parent} has no {' and '.join(sorted(missing - available))} controller"
        )
    if missing and not chosen:
        return (
            f"cgroup v2 at {parent} does not delegate {' and '.join(sorted(missing))} to its "
            f"children (set {CGROUP_ENV} to a delegated cgroup with no processes in it)"
        )
    if not os.access(parent, os.W_OK):
        return f"cgroup v2 at {parent} is not writable by uid {os.geteuid()}"
    if missing:
        want = " ".join(f"+{c}" for c in sorted(missing | ({"cpu"} & available)))
        try:
            with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                f.write(want)
        except OSError as exc:
            return (
                f"cgroup v2 at {parent} does not delegate memory and pids to its children "
                f"({exc.strerror}; set {CGROUP_ENV} to a delegated cgroup with no processes)"
            )
    return _CgroupBase("cgroup v2", {"": parent})


def _v1_base(v1: dict[str, str], own: dict[str, str]) -> _CgroupBase | str:
    parents: dict[str, str] = {}
    for controller in ("memory", "pids", "cpu"):
        if controller not in v1:
            if controller == "cpu":
                continue
            return f"no cgroup v1 {controller} hierarchy is mounted"
        parent = os.path.join(v1[controller], own.get(controller, "/").lstrip("/"))
        if not os.access(parent, os.W_OK):
            if controller == "cpu":
                continue
            return f"cgroup v1 {controller} at {parent} is not writable by uid {os.geteuid()}"
        parents[controller] = parent
    return _CgroupBase("cgroup v1", parents)


def _cgroup_base() -> _CgroupBase | str:
    """Where runs' cgroups are made, or one line saying why none can be (cached)."""
    if "base" in _CGROUP:
        return _CGROUP["base"]
    v2, v1 = _mounts()
    own = _own()
    reasons: list[str] = []
    found: _CgroupBase | str | None = None
    if v2 is not None and "" in own:
        base = _v2_base(v2, own[""])
        if isinstance(base, _CgroupBase):
            found = base
        else:
            reasons.append(base)
    if found is None and "memory" in v1:
        base = _v1_base(v1, own)
        if isinstance(base, _CgroupBase):
            found = base
        else:
            reasons.append(base)
    if found is None:
        found = "; ".join(reasons) or "no cgroup hierarchy is mounted"
    _CGROUP["base"] = found
    return found


def cgroup_check() -> str | None:
    """None when each run gets a cgroup of its own here; else one line saying why not."""
    base = _cgroup_base()
    return base if isinstance(base, str) else None


def confinement() -> str:
    """What holds the whole jail's memory and processes here: "cgroup v2", "cgroup v1" or
    "rlimits only"."""
    base = _cgroup_base()
    return base.kind if isinstance(base, _CgroupBase) else "rlimits only"


class _Cgroup:
    """One run's cgroup (a directory per v1 hierarchy, or one v2 directory)."""

    def __init__(self, base: _CgroupBase, limits: JailLimits) -> None:
        self.kind = base.kind
        name = f"krm-jail-{os.getpid()}-{next(_RUNS)}"
        self.dirs = {
            c: os.path.join(p, name)
            for c, p in base.parents.items()
            if c != "cpu" or limits.cpu_cores is not None  # v1's cpu only when it limits
        }
        pids = str(limits.max_processes or DEFAULT_PIDS)
        memory = str(limits.memory_bytes)
        try:
            for directory in self.dirs.values():
                os.mkdir(directory)
            if self.kind == "cgroup v2":
                d = self.dirs[""]
                self._write(d, "memory.max", memory)
                self._write(d, "memory.swap.max", "0", optional=True)
                self._write(d, "pids.max", pids)
                if limits.cpu_cores is not None:
                    quota = max(1000, int(limits.cpu_cores * 100000))
                    self._write(d, "cpu.max", f"{quota} 100000", optional=True)
            else:
                self._write(self.dirs["memory"], "memory.limit_in_bytes", memory)
                self._write(self.dirs["memory"], "memory.memsw.limit_in_bytes", memory, True)
                self._write(self.dirs["pids"], "pids.max", pids)
                if limits.cpu_cores is not None and "cpu" in self.dirs:
                    quota = max(1000, int(limits.cpu_cores * 100000))
                    self._write(self.dirs["cpu"], "cpu.cfs_period_us", "100000")
                    self._write(self.dirs["cpu"], "cpu.cfs_quota_us", str(quota))
        except OSError:
            self.remove()
            raise

    @staticmethod
    def _write(directory: str, name: str, value: str, optional: bool = False) -> None:
        try:
            with open(os.path.join(directory, name), "w") as f:
                f.write(value)
        except OSError:
            if not optional:
                raise

    def procs_files(self) -> list[str]:
        return [os.path.join(d, "cgroup.procs") for d in self.dirs.values()]

    def _counter(self, controller: str, name: str, key: str) -> int:
        directory = self.dirs["" if self.kind == "cgroup v2" else controller]
        with contextlib.suppress(OSError, ValueError), open(os.path.join(directory, name)) as f:
            for line in f:
                k, _, v = line.partition(" ")
                if k == key:
                    return int(v)
        return 0

    def memory_limited(self) -> bool:
        name = "memory.events" if self.kind == "cgroup v2" else "memory.oom_control"
        return self._counter("memory", name, "oom_kill") > 0

    def process_limited(self) -> bool:
        return self._counter("pids", "pids.events", "max") > 0

    def kill(self) -> None:
        """SIGKILL everything still in the cgroup."""
        for directory in self.dirs.values():
            if os.path.exists(os.path.join(directory, "cgroup.kill")):
                with (
                    contextlib.suppress(OSError),
                    open(os.path.join(directory, "cgroup.kill"), "w") as f,
                ):
                    f.write("1")
                continue
            with contextlib.suppress(OSError), open(os.path.join(directory, "cgroup.procs")) as f:
                for pid in f.read().split():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(pid), signal.SIGKILL)

    def remove(self) -> None:
        """Kill what is left and remove the directories (a dying process may take a moment)."""
        deadline = time.monotonic() + 5
        for directory in self.dirs.values():
            while os.path.isdir(directory):
                try:
                    os.rmdir(directory)
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    self.kill()
                    time.sleep(0.01)


# Rlimits -----------------------------------------------------------------------------------


def _prlimit(limits: JailLimits, nproc: bool) -> list[str]:
    """``prlimit`` (util-linux) setting the limits, then exec'ing bwrap: everything inside
    inherits them. A program rather than ``preexec_fn``: with one, Python forks instead of
    vfork-ing, and the run waits for Python code in the child (several ms per run)."""
    cpu = limits.cpu_seconds or max(1, int(limits.wall_seconds + 0.999))
    argv = [
        shutil.which("prlimit") or "prlimit",
        f"--cpu={cpu}:{cpu + 1}",  # SIGXCPU at the soft limit, SIGKILL at the hard one
        f"--data={limits.memory_bytes}",
        "--core=0",
    ]
    if nproc and limits.max_processes is not None:
        argv.append(f"--nproc={limits.max_processes}")
    return [*argv, "--"]


def _limit(limits: JailLimits, nproc: bool) -> None:
    # Where prlimit is missing: runs in the child between fork and exec, setrlimit only.
    cpu = limits.cpu_seconds or max(1, int(limits.wall_seconds + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_DATA, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if nproc and limits.max_processes is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes))


# Running -----------------------------------------------------------------------------------


def jail_run(
    argv: Sequence[str],
    stdin: bytes,
    *,
    rootfs: str | None = None,
    env: dict[str, str] | None = None,
    cwd: str = "/",
    user: tuple[int, int] = NOBODY,
    network: bool = False,
    mounts: Sequence[Mount] = (),
    limits: JailLimits | None = None,
) -> JailResult:
    """Run ``argv`` jailed, ``stdin`` on its standard input; returns what it did.

    ``rootfs``: an unpacked image to use as the root (``None``: the host's ``/usr`` and
    ``/etc``, read-only). ``mounts`` are the only host paths the program sees besides the root.
    Raises :class:`JailUnavailable` when the jail cannot be built here; a program that fails
    is a result with a non-zero ``exit_code``, not an exception.
    """
    limits = limits or JailLimits()
    if shutil.which("bwrap") is None:
        raise JailUnavailable(
            "cannot build the jail: bubblewrap (bwrap) is not on PATH; refusing to run unsandboxed"
        )
    if _as_root() and _setpriv() is None:
        raise JailUnavailable(f"cannot build the jail: {jail_check()}; refusing to run unsandboxed")
    try:
        stage = _stage(rootfs, mounts) if _as_root() else None
    except OSError as exc:
        if (reason := jail_check()) is not None:
            raise JailUnavailable(
                f"cannot build the jail: {reason}; refusing to run unsandboxed"
            ) from None
        raise FunctionError(f"cannot make the jail's staging directory: {exc}") from None
    try:
        command = bwrap_argv(
            argv,
            rootfs=rootfs,
            env=dict(env or {}),
            cwd=cwd,
            user=user,
            network=network,
            mounts=stage.mounts if stage else mounts,
            limits=limits,
            rootfs_view=stage.rootfs_view if stage else None,
        )
        cgroup = _new_cgroup(limits)
        handshake = None
        if cgroup is not None:
            # bwrap tells the sandbox's first process's pid, then waits for a byte before it
            # runs the program: time to put that process in the cgroup (what it forks follows).
            handshake = (*os.pipe(), *os.pipe())  # info read/write, block read/write
            command[1:1] = ["--info-fd", str(handshake[1]), "--block-fd", str(handshake[2])]
        command = _drop() + command
        if stage is not None:
            command = stage.prefix + command
        result = _communicate(command, stdin, limits, cgroup, handshake)
    finally:
        if stage is not None:
            with contextlib.suppress(OSError):
                os.rmdir(stage.directory)
    if result.exit_code != 0 and result.stderr.startswith((b"bwrap: ", b"setpriv: ")):
        # bwrap's own failure, before the program ran: is it the namespaces, or this run?
        reason = jail_check()
        line = result.stderr.decode("utf-8", "replace").splitlines()[0]
        if reason is not None:
            raise JailUnavailable(f"cannot build the jail: {reason}; refusing to run unsandboxed")
        raise FunctionError(f"cannot start the program in the jail: {line}")
    return result


def _new_cgroup(limits: JailLimits) -> _Cgroup | None:
    base = _cgroup_base()
    if not isinstance(base, _CgroupBase):
        return None
    try:
        return _Cgroup(base, limits)
    except OSError as exc:
        raise FunctionError(f"cannot make the jail's cgroup: {exc}") from None


def _communicate(
    command: list[str],
    stdin: bytes,
    limits: JailLimits,
    cgroup: _Cgroup | None,
    handshake: tuple[int, int, int, int] | None,
) -> JailResult:
    start = time.monotonic()
    preexec = None
    if shutil.which("prlimit"):
        command = _prlimit(limits, nproc=cgroup is None) + command
    else:
        preexec = lambda: _limit(limits, nproc=cgroup is None)  # noqa: E731
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            pass_fds=(handshake[1], handshake[2]) if handshake else (),
            preexec_fn=preexec,  # noqa: PLW1509 - setrlimit only
        )
    except BaseException:
        if handshake is not None:
            for fd in handshake:
                os.close(fd)
        if cgroup is not None:
            cgroup.remove()
        raise
    try:
        if cgroup is not None and handshake is not None:
            _join(proc, cgroup, handshake, start + limits.wall_seconds)
        result = _exchange(proc, stdin, limits, start, cgroup)
    finally:
        if cgroup is not None:
            cgroup.remove()
    return result


def _join(
    proc: subprocess.Popen[bytes],
    cgroup: _Cgroup,
    handshake: tuple[int, int, int, int],
    deadline: float,
) -> None:
    """Put the sandbox's first process in the run's cgroup before it runs anything, then let
    it go on. When bwrap failed before telling its pid, there is nothing to put: it exits."""
    info, info_w, block_r, block = handshake
    os.close(info_w)
    os.close(block_r)
    told = b""
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(info, selectors.EVENT_READ)
            while b"}" not in told and sel.select(timeout=max(0.0, deadline - time.monotonic())):
                chunk = os.read(info, 4096)
                if not chunk:
                    break
                told += chunk
        match = re.search(rb'"child-pid":\s*(\d+)', told)
        if match is not None:
            try:
                for path in cgroup.procs_files():
                    with open(path, "w") as f:
                        f.write(match.group(1).decode())
            except OSError as exc:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                raise FunctionError(f"cannot put the jail in its cgroup: {exc}") from None
            os.write(block, b"1")
    finally:
        os.close(info)
        os.close(block)


def _exchange(
    proc: subprocess.Popen[bytes],
    stdin: bytes,
    limits: JailLimits,
    start: float,
    cgroup: _Cgroup | None,
) -> JailResult:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out = bytearray()
    err = bytearray()
    timed_out = output_limited = stderr_truncated = False
    pending = memoryview(stdin)
    sel = selectors.DefaultSelector()
    os.set_blocking(proc.stdin.fileno(), False)
    if pending:
        sel.register(proc.stdin, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    sel.register(proc.stdout, selectors.EVENT_READ)
    sel.register(proc.stderr, selectors.EVENT_READ)
    deadline = start + limits.wall_seconds
    try:
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in sel.select(timeout=remaining):
                if key.fileobj is proc.stdin:
                    try:
                        written = os.write(proc.stdin.fileno(), pending[:65536])
                    except (BrokenPipeError, OSError):
                        written = len(pending)  # it stopped reading: that is its business
                    pending = pending[written:]
                    if not pending:
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                if key.fileobj is proc.stdout:
                    if len(out) + len(chunk) > limits.max_output:
                        output_limited = True
                        break
                    out.extend(chunk)
                else:
                    room = limits.max_stderr - len(err)
                    err.extend(chunk[: max(room, 0)])
                    stderr_truncated = stderr_truncated or len(chunk) > room
            if output_limited:
                break
    finally:
        sel.close()
        if timed_out or output_limited:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            if cgroup is not None:
                cgroup.kill()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if not pipe.closed:
                pipe.close()
        proc.wait()
    return JailResult(
        exit_code=proc.returncode,
        stdout=bytes(out),
        stderr=bytes(err),
        seconds=time.monotonic() - start,
        timed_out=timed_out,
        output_limited=output_limited,
        stderr_truncated=stderr_truncated,
        memory_limited=cgroup is not None and cgroup.memory_limited(),
        process_limited=cgroup is not None and cgroup.process_limited(),
        confinement=cgroup.kind if cgroup is not None else "rlimits only",
    )
