"""The engine's one jail: run a program inside bubblewrap, cut off from the host.

``jail_run`` is the public API (the builtin container runtime uses it, and so may the
registry's trial runs): a new user, mount, PID, IPC, UTS and network namespace (``bwrap
--unshare-all``; the network is shared only when asked); a root that is either an unpacked
image's rootfs or the host's ``/usr`` and ``/etc``, bound read-only, with a fresh ``/proc``,
``/dev`` and a size-limited private tmpfs at ``/tmp``; the root itself read-only; the program
runs as the given uid (nobody by default) with no capabilities and only the environment given.
CPU time, data size and core dumps are limited with ``prlimit`` (or ``setrlimit`` in the child
where util-linux's ``prlimit`` is missing) before ``bwrap`` starts: everything inside inherits
them; a wall-clock timeout and an output limit kill the whole process group, and
``--die-with-parent`` with the PID namespace takes every process the program forked with it.

When bubblewrap is missing or cannot make the namespaces (no unprivileged user namespaces,
say), ``jail_run`` raises :class:`JailUnavailable` with one line saying so: nothing ever runs
outside the jail.
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.functions.options import FunctionError

NOBODY = (65534, 65534)
HOST_ROOT = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64")  # the host root mode's binds
PROVIDED = ("proc", "dev", "tmp")  # made fresh in every jail, never bound from a rootfs


class JailUnavailable(FunctionError):
    """bubblewrap is missing or cannot make namespaces here: nothing may run."""


@dataclass(frozen=True)
class JailLimits:
    """What one jailed run may use."""

    wall_seconds: float = 300.0
    cpu_seconds: int | None = None  # RLIMIT_CPU; None: the wall-clock limit, rounded up
    memory_bytes: int = 2 * 1024 * 1024 * 1024  # RLIMIT_DATA (heap and private mappings)
    max_output: int = 256 * 1024 * 1024  # stdout bytes read before the run is killed
    max_stderr: int = 1024 * 1024  # stderr bytes kept (the rest is drained and dropped)
    tmp_bytes: int = 256 * 1024 * 1024  # size of the tmpfs at /tmp
    max_processes: int | None = None  # RLIMIT_NPROC (counts the caller's uid; not for root)


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


_CHECKED: dict[str, str | None] = {}


def jail_check() -> str | None:
    """None when this machine can build the jail; else one line saying why not (cached)."""
    if "result" in _CHECKED:
        return _CHECKED["result"]
    bwrap = shutil.which("bwrap")
    reason: str | None
    if bwrap is None:
        reason = "bubblewrap (bwrap) is not on PATH"
    else:
        argv = [bwrap, "--unshare-all", "--die-with-parent", "--uid", "65534", "--gid", "65534"]
        argv += _host_root() + ["--proc", "/proc", "--dev", "/dev", "--", "true"]
        try:
            proc = subprocess.run(argv, capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            reason = f"bwrap cannot be run: {exc}"
        else:
            line = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            reason = None
            if proc.returncode != 0:
                reason = f"bwrap cannot make namespaces here ({line[0] if line else 'no message'})"
    _CHECKED["result"] = reason
    return reason


def _host_root() -> list[str]:
    argv: list[str] = []
    for name in HOST_ROOT:
        path = f"/{name}"
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    return argv


def _image_root(rootfs: str) -> tuple[list[str], set[str]]:
    """Binds of a rootfs's top-level entries onto the jail's own root (so that /proc, /dev,
    /tmp and mount points can be made even when the image has no such directory)."""
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
                argv += ["--ro-bind", entry.path, target]
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
) -> list[str]:
    """The bubblewrap command line of one jailed run."""
    bwrap = shutil.which("bwrap") or "bwrap"
    out = [bwrap, "--unshare-all", "--die-with-parent", "--new-session"]
    if network:
        out.append("--share-net")
    out += ["--uid", str(user[0]), "--gid", str(user[1]), "--hostname", "krm-function"]
    if rootfs is None:
        out += _host_root()
        present = {n for n in HOST_ROOT if os.path.lexists(f"/{n}")}
    else:
        binds, present = _image_root(rootfs)
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


def _prlimit(limits: JailLimits) -> list[str]:
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
    if limits.max_processes is not None:
        argv.append(f"--nproc={limits.max_processes}")
    return [*argv, "--"]


def _limit(limits: JailLimits) -> None:
    # Where prlimit is missing: runs in the child between fork and exec, setrlimit only.
    cpu = limits.cpu_seconds or max(1, int(limits.wall_seconds + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_DATA, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.max_processes is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes))


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
    command = bwrap_argv(
        argv,
        rootfs=rootfs,
        env=dict(env or {}),
        cwd=cwd,
        user=user,
        network=network,
        mounts=mounts,
        limits=limits,
    )
    result = _communicate(command, stdin, limits)
    if result.exit_code != 0 and result.stderr.startswith(b"bwrap: "):
        # bwrap's own failure, before the program ran: is it the namespaces, or this run?
        reason = jail_check()
        line = result.stderr.decode("utf-8", "replace").splitlines()[0]
        if reason is not None:
            raise JailUnavailable(f"cannot build the jail: {reason}; refusing to run unsandboxed")
        raise FunctionError(f"cannot start the program in the jail: {line}")
    return result


def _communicate(command: list[str], stdin: bytes, limits: JailLimits) -> JailResult:
    start = time.monotonic()
    preexec = None
    if shutil.which("prlimit"):
        command = _prlimit(limits) + command
    else:
        preexec = lambda: _limit(limits)  # noqa: E731
    proc = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        preexec_fn=preexec,  # noqa: PLW1509 - setrlimit only
    )
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
    )
