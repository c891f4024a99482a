"""The engine's jail on this machine, no mocks: who a jailed program is outside its namespace
when krm runs as root, and the limits that hold for its whole process tree (cgroups)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from orchestrator.functions import jail
from orchestrator.functions.jail import JailLimits, Mount, jail_check, jail_run, limit_message

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or jail_check() is not None,
    reason=f"the jail cannot be built here: {jail_check()}",
)
AS_ROOT = os.geteuid() == 0
as_root = pytest.mark.skipif(not AS_ROOT, reason="checks the jail of a krm that runs as root")
with_cgroup = pytest.mark.skipif(
    jail.cgroup_check() is not None, reason=f"no cgroup for the jail here: {jail.cgroup_check()}"
)


def _python(code: str) -> list[str]:
    return ["python3", "-c", textwrap.dedent(code)]


@as_root
def test_as_root_the_program_is_nobody_outside_and_owns_no_root_file(tmp_path, monkeypatch):
    # A root-owned directory under pytest's root-only temporary directory (nobody could not
    # even reach it: the jail stages it), open to all, holding a root-owned file.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    owned = shared / "owned"
    owned.write_text("root's\n")
    owned.chmod(0o644)
    script = textwrap.dedent(
        """
        id -u
        echo pwned > /m/owned 2>/dev/null && echo wrote-owned
        chmod 666 /m/owned 2>/dev/null && echo chmod-owned
        cat /etc/shadow >/dev/null 2>&1 && echo read-shadow
        echo made > /m/new
        """
    )
    staged: list[str] = []
    mkdtemp = tempfile.mkdtemp

    def recorded(*args: str, **kwargs: str) -> str:
        staged.append(mkdtemp(*args, **kwargs))
        return staged[-1]

    monkeypatch.setattr(jail.tempfile, "mkdtemp", recorded)
    out = jail_run(["sh", "-c", script], b"", mounts=[Mount(str(shared), "/m", writable=True)])
    assert out.exit_code == 0, out.stderr
    assert out.stdout.decode().split() == ["65534"]  # nothing above succeeded but the id
    assert owned.read_text() == "root's\n"
    assert owned.stat().st_mode & 0o777 == 0o644
    # what it made is owned, on the host, by nobody: not by root
    made = shared / "new"
    assert made.read_text() == "made\n"
    assert (made.stat().st_uid, made.stat().st_gid) == jail.NOBODY
    assert len(staged) == 1 and not os.path.exists(staged[0])  # staged, then cleaned up


@as_root
def test_as_root_the_program_runs_with_no_capability_and_no_root_group():
    out = jail_run(["sh", "-c", "grep -E '^(CapEff|CapPrm|Groups)' /proc/self/status"], b"")
    assert out.exit_code == 0, out.stderr
    fields = dict(line.split(":\t") for line in out.stdout.decode().splitlines())
    assert fields["CapEff"] == fields["CapPrm"] == "0000000000000000"
    assert fields["Groups"].split() in ([], ["65534"])


def test_a_fork_bomb_is_bounded_by_the_process_limit():
    code = """
        import os, time
        made = 0
        for _ in range(200):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                time.sleep(20)
                os._exit(0)
            made += 1
        print(made, flush=True)
        os._exit(0)
    """
    limits = JailLimits(wall_seconds=30, max_processes=16)
    out = jail_run(_python(code), b"", limits=limits)
    assert out.exit_code == 0, out.stderr
    assert 0 <= int(out.stdout) < 16
    assert out.seconds < 20  # the sleeping children died with the jail, nobody waited for them
    if out.confinement != "rlimits only":
        assert out.process_limited
        assert limit_message(out, limits) == "reached the jail's process limit (16 processes)"


@with_cgroup
def test_a_memory_hog_across_processes_is_killed_at_the_jails_limit():
    # Four processes of 96 MiB each: every one is under the per-process limit (RLIMIT_DATA),
    # together they pass the jail's 256 MiB.
    code = """
        import os, sys, time
        children = []
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                block = b"x" * (96 << 20)
                time.sleep(3)
                os._exit(0)
            children.append(pid)
        codes = [os.waitpid(pid, 0)[1] for pid in children]
        print(codes, flush=True)
        sys.exit(1 if any(codes) else 0)
    """
    limits = JailLimits(wall_seconds=60, memory_bytes=256 << 20)
    out = jail_run(_python(code), b"", limits=limits)
    assert out.memory_limited, out
    assert out.exit_code != 0
    assert limit_message(out, limits) == (
        "killed at the jail's memory limit (256 MiB for all its processes)"
    )
    # the same processes, each one smaller, fit together
    small = jail_run(_python(code.replace("96 << 20", "32 << 20")), b"", limits=limits)
    assert small.exit_code == 0 and not small.memory_limited, small
    assert limit_message(small, limits) is None


@with_cgroup
def test_each_run_has_its_own_cgroup_and_leaves_none_behind():
    out = jail_run(["sh", "-c", "cat /proc/self/cgroup"], b"")
    assert out.exit_code == 0 and out.confinement in {"cgroup v1", "cgroup v2"}
    base = jail._cgroup_base()
    assert isinstance(base, jail._CgroupBase)
    for parent in base.parents.values():
        assert not [n for n in os.listdir(parent) if n.startswith(f"krm-jail-{os.getpid()}-")]


@as_root
def test_without_a_cgroup_the_reason_is_one_line():
    """A krm that may make no cgroup (nobody, here) says why in one line, never silently."""
    code = "from orchestrator.functions import jail as j; print(j.cgroup_check(), j.confinement())"
    repo = Path(__file__).resolve().parents[3]
    proc = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(repo), "PATH": os.environ["PATH"]},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    reason, _, kind = proc.stdout.strip().rpartition(" rlimits ")
    assert kind == "only", proc.stdout
    assert "\n" not in reason
    assert reason.startswith("cgroup v"), reason
    assert "not writable by uid 65534" in reason or "does not delegate" in reason


@pytest.mark.skipif(os.geteuid() != 0, reason="root's default image cache (krm runs as root here)")
def test_roots_image_cache_is_one_nobody_can_enter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Root's functions run as nobody: its images live where nobody can enter, so they are
    bound as they are, not staged before every run; a configured cache stays where it is."""
    from orchestrator.functions.options import FnOptions

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert FnOptions().image_cache_root() == "/var/cache/krm/images"
    assert jail._reachable("/var/cache/krm/images/rootfs")
    assert FnOptions(cache_dir="/x").image_cache_root() == "/x/images"
    monkeypatch.setenv("XDG_CACHE_HOME", "/y")
    assert FnOptions().image_cache_root() == "/y/krm/images"
