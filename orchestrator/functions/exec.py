"""The exec runtime: a local program with the ResourceList on stdin, in the kustomization's dir."""

from __future__ import annotations

import os
import subprocess

from orchestrator.functions.options import FnOptions, FunctionError

# A minimal environment: functions see these (when set) plus the --env entries, nothing else.
PASS_THROUGH = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def environment(options: FnOptions) -> dict[str, str]:
    """The environment a function process gets."""
    env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
    env.setdefault("PATH", DEFAULT_PATH)
    env.update(options.env_pairs())
    return env


def run(
    argv: list[str],
    stdin: bytes,
    *,
    cwd: str,
    options: FnOptions,
    function: str,
    env: dict[str, str] | None = None,
) -> tuple[bytes, str]:
    """Run argv with stdin; returns (stdout, stderr) or raises FunctionError on failure."""
    try:
        proc = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            cwd=cwd,
            env=environment(options) if env is None else env,
            timeout=options.timeout,
            check=False,
        )
    except FileNotFoundError:
        raise FunctionError(f"{function}: program not found: {argv[0]}") from None
    except PermissionError:
        raise FunctionError(f"{function}: permission denied running {argv[0]}") from None
    except subprocess.TimeoutExpired:
        raise FunctionError(f"{function}: timed out after {options.timeout:g}s") from None
    except OSError as exc:
        raise FunctionError(f"{function}: cannot run {argv[0]}: {exc.strerror}") from None
    stderr = proc.stderr.decode("utf-8", errors="replace")
    if proc.returncode != 0:
        detail = stderr.strip()
        raise FunctionError(
            f"{function} failed with exit code {proc.returncode}"
            + (f":\n{detail}" if detail else "")
        )
    return proc.stdout, stderr
