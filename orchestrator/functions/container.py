"""The container runtime: ``docker``/``podman run`` with kustomize's locked-down arguments."""

from __future__ import annotations

import os
import shutil

from orchestrator.functions.options import FnOptions, FunctionError

ENGINES = ("docker", "podman")


def detect_engine(options: FnOptions) -> str:
    """The container CLI: --container-runtime if given, else docker, else podman, on PATH."""
    if options.container_runtime:
        if options.container_runtime not in ENGINES:
            raise FunctionError(
                f"--container-runtime must be docker or podman, got {options.container_runtime!r}"
            )
        if shutil.which(options.container_runtime) is None:
            raise FunctionError(f"container runtime {options.container_runtime!r} is not on PATH")
        return options.container_runtime
    for engine in ENGINES:
        if shutil.which(engine):
            return engine
    raise FunctionError("a container function needs docker or podman on PATH; found neither")


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
