"""The container runtime: ``docker``/``podman run`` with kustomize's locked-down arguments, or
the builtin runtime (no daemon, no root) where neither is there or ``--container-runtime
builtin`` asks for it: the image is pulled and unpacked by ``orchestrator.functions.image`` and
run in the engine's jail (``orchestrator.functions.jail``)."""

from __future__ import annotations

import os
import shutil
import signal
import sys

from orchestrator.functions.options import FnOptions, FunctionError

ENGINES = ("docker", "podman")
BUILTIN = "builtin"
RUNTIMES = (*ENGINES, BUILTIN)
# What docker gives a container whose image sets no PATH.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# Asked once per process and engine: whether it can run a container here.
PROBES = {
    "docker": ["version", "--format", "{{.Server.Version}}"],  # fails when no daemon answers
    "podman": ["info", "--format", "{{.Host.Arch}}"],  # fails when it cannot set up storage
}
PROBE_SECONDS = 5.0
_PROBED: dict[str, str | None] = {}
_NOTICES: set[str] = set()


def engine_problem(engine: str) -> str | None:
    """None when ``engine`` (on PATH) can run containers here, else its first error line.

    Cached per process and executable: ``docker version`` asks the daemon (tens of ms)."""
    path = shutil.which(engine)
    if path is None:
        return "not on PATH"
    if path in _PROBED:
        return _PROBED[path]
    import subprocess

    problem: str | None
    try:
        proc = subprocess.run(
            [path, *PROBES[engine]],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        problem = f"no answer within {PROBE_SECONDS:g}s"
    except OSError as exc:
        problem = exc.strerror or str(exc)
    else:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        problem = None
        if proc.returncode != 0:
            problem = lines[-1] if lines else f"exit code {proc.returncode}"
    _PROBED[path] = problem
    return problem


def notice(text: str) -> None:
    """One line on stderr, once per process (the engine has no notice channel below the
    build facade)."""
    if text in _NOTICES:
        return
    _NOTICES.add(text)
    from orchestrator.terminal import lines

    sys.stderr.write(lines(f"Notice: {text}\n"))


def detect_engine(options: FnOptions) -> str:
    """--container-runtime if given, else docker, else podman if it can run a container here,
    else the builtin one (saying so when docker or podman is there but cannot)."""
    if options.container_runtime:
        engine = options.container_runtime
        if engine not in RUNTIMES:
            raise FunctionError(
                f"--container-runtime must be docker, podman or builtin, got {engine!r}"
            )
        if engine != BUILTIN and shutil.which(engine) is None:
            raise FunctionError(f"container runtime {engine!r} is not on PATH")
        if engine != BUILTIN and (problem := engine_problem(engine)) is not None:
            raise FunctionError(
                f"container runtime {engine!r} cannot run containers here: {problem} "
                "(--container-runtime builtin runs them without a daemon)"
            )
        return engine
    unusable: list[str] = []
    for engine in ENGINES:
        if shutil.which(engine) is None:
            continue
        problem = engine_problem(engine)
        if problem is None:
            return engine
        unusable.append(f"{engine} ({problem})")
    if unusable:
        notice(
            f"{' and '.join(unusable)} cannot run containers here; "
            "using the builtin container runtime"
        )
    return BUILTIN


def run_builtin(
    image: str,
    sha256: str | None,
    stdin: bytes,
    *,
    options: FnOptions,
    require_network: bool,
    function: str,
) -> tuple[bytes, str]:
    """Pull, verify and unpack the pinned image, run it jailed; (stdout, stderr) or an error.

    The caller has checked that --network / --mount were given where the function needs them.
    """
    from orchestrator.functions.fetch import FetchError
    from orchestrator.functions.image import image_prepare
    from orchestrator.functions.jail import (
        JailLimits,
        Mount,
        cgroup_check,
        jail_run,
        limit_message,
    )

    if shutil.which("bwrap") is None:  # before any download: it could not run anyway
        engines = "" if options.container_runtime == BUILTIN else "no docker or podman, and "
        raise FunctionError(
            f"{function}: {engines}the builtin container runtime needs bubblewrap (bwrap) on "
            "PATH; refusing to run it unsandboxed"
        )
    mounts = [Mount.parse(m) for m in options.mounts]
    try:
        img = image_prepare(image, sha256, options=options)
    except FetchError as exc:
        raise FunctionError(f"{function}: {exc.message}; nothing was run") from None
    env = dict(img.env)
    env.setdefault("PATH", DEFAULT_PATH)
    env.setdefault("HOME", "/")
    env.update(options.env_pairs())
    limits = JailLimits(wall_seconds=options.timeout)
    try:
        result = jail_run(
            img.argv,
            stdin,
            rootfs=img.rootfs,
            env=env,
            cwd=img.workdir,
            user=img.user,
            network=require_network and options.network,
            mounts=mounts,
            limits=limits,
        )
    except FunctionError as exc:
        raise FunctionError(f"{function}: {exc.message}") from None
    if result.confinement == "rlimits only":
        notice(f"the jail's limits hold per process, not for its whole tree: {cgroup_check()}")
    stderr = result.stderr.decode("utf-8", errors="replace")
    if result.timed_out:
        raise FunctionError(f"{function}: timed out after {options.timeout:g}s")
    if result.output_limited:
        raise FunctionError(f"{function}: wrote more than the limit to its standard output")
    if result.exit_code != 0 and (hit := limit_message(result, limits)) is not None:
        raise FunctionError(f"{function}: {hit}")
    if result.exit_code in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
        raise FunctionError(f"{function}: stopped at its CPU time limit ({options.timeout:g}s)")
    if result.exit_code != 0:
        detail = stderr.strip()
        code = result.exit_code
        what = f"exit code {code}" if code is not None and code >= 0 else f"signal {-(code or 0)}"
        raise FunctionError(f"{function} failed with {what}" + (f":\n{detail}" if detail else ""))
    return result.stdout, stderr


def pinned_image(image: str, sha256: str | None) -> str:
    """image@sha256:<digest> when the catalog gives a digest (tag dropped: the digest rules)."""
    if "@" in image or not sha256:
        return image
    hexdigits = sha256.lower().removeprefix("sha256:")
    name = image
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        name = image[: len(image) - len(last)] + last.split(":", 1)[0]
    return f"{name}@sha256:{hexdigits}"


def command(
    engine: str,
    image: str,
    *,
    options: FnOptions,
    require_network: bool = False,
) -> list[str]:
    """The exact argv kustomize would run for a container function.

    The caller has checked that --network / --mount were given where the function needs them.
    """
    argv = [engine, "run", "--rm", "-i"]
    argv += ["--network", "host" if (require_network and options.network) else "none"]
    user = f"{os.getuid()}:{os.getgid()}" if options.as_current_user else "65534"
    argv += ["--user", user, "--security-opt=no-new-privileges"]
    for mount in options.mounts:
        argv += ["--mount", mount]
    for key, value in options.env_pairs().items():
        argv += ["-e", f"{key}={value}"]
    argv.append(image)
    return argv
