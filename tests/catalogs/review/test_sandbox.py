"""The trial sandbox against hostile functions: real jailed processes on this machine, no mocks."""

# The shared fixtures are imported by name (tests/catalogs has no conftest of its own): F811.
# ruff: noqa: F811

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from catalogs.review import sandbox
from catalogs.review.sandbox import SandboxLimits
from orchestrator.functions import jail
from orchestrator.functions.options import FnOptions
from tests.catalogs.review.container_fixtures import (  # noqa: F401 (fixtures)
    needs_image_tools,
    pushed_images,
)

pytestmark = pytest.mark.skipif(
    sandbox.jail_available() is None, reason="the engine's jail cannot be built here"
)

ITEMS = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "n"}},
]
FAST = SandboxLimits(cpu_seconds=3, wall_seconds=6, max_output=1024 * 1024)


def _program(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fn.sh"
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)
    return str(path)


def _descendants() -> set[int]:
    """Pids of live processes descending from this one (read from /proc): a jailed run and
    everything it forked must be gone when the run returns."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


@pytest.fixture
def unharmed():
    """After the test: this process still answers and the jail left no process behind."""
    before = _descendants()
    yield
    deadline = time.monotonic() + 5
    while _descendants() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _descendants() - before == set()
    assert sum(range(1000)) == 499500  # still computing


def test_a_well_behaved_exec_function_runs_and_its_changes_are_diffed(tmp_path, unharmed):
    fn = _program(
        tmp_path,
        "cat > /tmp/in\necho 'working' >&2\nsed 's/x: \"1\"/x: \"2\"/' /tmp/in\n",
    )
    outcome = sandbox.run_exec(fn, ITEMS, limits=FAST)
    assert outcome.status == "ok", outcome
    assert outcome.exit_code == 0
    assert outcome.stderr.strip() == "working"
    assert outcome.diff == {"added": [], "removed": [], "changed": ["ConfigMap/a"]}
    assert not (outcome.tried_network or outcome.tried_write_outside or outcome.was_denied)


def test_a_network_socket_is_refused_and_recorded(tmp_path, unharmed):
    # A real listener on this machine's loopback: the jailed function must not reach it.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.5)
    port = server.getsockname()[1]
    reached: list[bool] = []

    def accept() -> None:
        try:
            server.accept()
            reached.append(True)
        except OSError:
            pass

    thread = threading.Thread(target=accept)
    thread.start()
    fn = _program(tmp_path, f"exec 3<>/dev/tcp/127.0.0.1/{port} || exit 3\ncat\n")
    outcome = sandbox.run_exec(fn, ITEMS, limits=FAST)
    thread.join()
    server.close()
    assert reached == []
    assert outcome.status == "failed"
    assert outcome.exit_code == 3
    assert outcome.tried_network, outcome.stderr


def test_a_write_to_home_is_refused_and_recorded(tmp_path, unharmed):
    fn = _program(tmp_path, 'echo evil > "$HOME/.bashrc" || exit 4\ncat\n')
    outcome = sandbox.run_exec(fn, ITEMS, limits=FAST)
    assert outcome.status == "failed"
    assert outcome.exit_code == 4
    assert outcome.tried_write_outside, outcome.stderr
    # the worker's own home is not even visible in the jail, let alone written
    host_target = tmp_path / "outside"
    fn = _program(tmp_path, f"echo evil > {host_target} || exit 5\ncat\n")
    outcome = sandbox.run_exec(fn, ITEMS, limits=FAST)
    assert outcome.exit_code == 5
    assert not host_target.exists()


def test_reading_etc_shadow_is_denied_and_recorded(tmp_path, unharmed):
    fn = _program(tmp_path, "cat /etc/shadow >&2 || exit 6\ncat\n")
    outcome = sandbox.run_exec(fn, ITEMS, limits=FAST)
    assert outcome.status == "failed"
    assert outcome.exit_code == 6
    assert outcome.was_denied, outcome.stderr
    assert "root:" not in outcome.stderr


def test_a_fork_bomb_is_contained_and_cleaned_up(tmp_path, unharmed):
    fn = _program(tmp_path, "bomb() { bomb | bomb & }\nbomb\nwait\n")
    start = time.monotonic()
    outcome = sandbox.run_exec(fn, ITEMS, limits=SandboxLimits(cpu_seconds=3, wall_seconds=4))
    assert time.monotonic() - start < 15
    assert outcome.status in {"timeout", "failed", "invalid_output"}
    assert outcome.status != "ok"


def test_printing_a_gigabyte_is_cut_off_at_the_output_limit(tmp_path, unharmed):
    fn = _program(tmp_path, "head -c 1000000000 /dev/zero\n")
    start = time.monotonic()
    outcome = sandbox.run_exec(fn, ITEMS, limits=FAST)
    assert outcome.status == "output_limit"
    assert "1048576 bytes" in outcome.detail
    assert time.monotonic() - start < 6  # killed long before 1 GB could be written


def test_a_cpu_loop_hits_the_time_limit(tmp_path, unharmed):
    fn = _program(tmp_path, "while :; do :; done\n")
    outcome = sandbox.run_exec(fn, ITEMS, limits=SandboxLimits(cpu_seconds=1, wall_seconds=6))
    assert outcome.status == "timeout"


def test_starlark_runs_in_a_jailed_subprocess(unharmed):
    script = (
        'for r in ctx.resource_list["items"]:\n'
        '    r["metadata"]["labels"] = {"trial": "yes"}\n'
        'ctx.resource_list["items"].append({"apiVersion": "v1", "kind": "Secret",'
        ' "metadata": {"name": "s"}})\n'
        'print("done")\n'
    )
    outcome = sandbox.run_starlark(script, ITEMS, limits=FAST)
    assert outcome.status == "ok", outcome
    assert outcome.diff == {
        "added": ["Secret/s"],
        "removed": [],
        "changed": ["ConfigMap/a", "Deployment.apps/n/web"],
    }
    assert outcome.stderr.strip() == "done"
    assert "subprocess" in outcome.jail


def test_a_starlark_error_is_a_failed_run(unharmed):
    outcome = sandbox.run_starlark("fail('no')\n", ITEMS, limits=FAST)
    assert outcome.status == "failed"
    assert "no" in outcome.detail


@needs_image_tools
def test_a_container_function_runs_in_the_same_jail(pushed_images, tmp_path, unharmed):
    image = pushed_images.pushed["two"]
    options = FnOptions(cache_dir=str(tmp_path / "cache"))
    outcome = sandbox.run_container(image.ref, image.digest, ITEMS, options=options, limits=FAST)
    assert outcome.status == "ok", outcome
    assert outcome.diff == {"added": ["ConfigMap/probe"], "removed": [], "changed": []}
    [probe] = [i for i in outcome.items if i["metadata"]["name"] == "probe"]
    assert probe["data"]["uid"] == "65534"
    assert probe["data"]["rootfs"] == "read-only"
    assert probe["data"]["tmp"] == "writable"
    assert probe["data"]["removed"] == "absent"  # the second layer's whiteout is honoured
    assert probe["data"]["hostname"] == "krm-function"
    assert int(probe["data"]["pid"]) < 10  # its own PID namespace
    assert "image " + image.ref.split(":v1")[0] in outcome.jail
    # pulled into the trial cache, verified by digest: a second run needs no registry
    again = sandbox.run_container(image.ref, image.digest, ITEMS, options=options, limits=FAST)
    assert again.items == outcome.items


@needs_image_tools
def test_a_container_reaching_for_loopback_is_refused_and_recorded(
    pushed_images, tmp_path, unharmed
):
    image = pushed_images.pushed["netprobe"]
    options = FnOptions(cache_dir=str(tmp_path / "cache"))
    outcome = sandbox.run_container(image.ref, image.digest, ITEMS, options=options, limits=FAST)
    assert outcome.status == "failed"
    assert outcome.tried_network, outcome.stderr
    assert pushed_images.listener.reached == []


@needs_image_tools
@pytest.mark.parametrize(
    ("sha", "message"),
    [
        (None, "has a tag but no digest"),
        ("sha256:" + "0" * 64, "nothing was run"),
    ],
    ids=["tag-only", "wrong-digest"],
)
def test_an_unpinned_or_mismatched_image_is_not_run(pushed_images, tmp_path, sha, message):
    image = pushed_images.pushed["one"]
    options = FnOptions(cache_dir=str(tmp_path / "cache"))
    outcome = sandbox.run_container(image.ref, sha, ITEMS, options=options, limits=FAST)
    assert outcome.status == "not_run"
    assert message in outcome.detail
    assert outcome.detail.startswith(image.ref + ": ")
    assert not (tmp_path / "cache" / "images" / "rootfs").exists() or not any(
        (tmp_path / "cache" / "images" / "rootfs").iterdir()
    )


def test_memory_beyond_the_limit_is_refused(tmp_path, unharmed):
    fn = _program(
        tmp_path,
        "exec /usr/bin/python3 -c 'b = bytearray(512 * 1024 * 1024)' || exit 7\n",
    )
    limits = SandboxLimits(cpu_seconds=3, wall_seconds=6, memory_bytes=128 * 1024 * 1024)
    outcome = sandbox.run_exec(fn, ITEMS, limits=limits)
    assert outcome.status == "failed"
    assert "MemoryError" in outcome.stderr


def test_the_run_record_says_what_held_the_jail(tmp_path, unharmed):
    fn = _program(tmp_path, "cat\n")
    outcome = sandbox.run_exec(fn, ITEMS, limits=FAST)
    assert outcome.status == "ok", outcome
    assert outcome.jail == f"{sandbox.JAIL}; {jail.confinement()}"
    assert jail.confinement() in {"cgroup v2", "cgroup v1", "rlimits only"}


@pytest.mark.skipif(jail.cgroup_check() is not None, reason=f"no cgroup: {jail.cgroup_check()}")
def test_a_memory_hog_across_processes_is_stopped_and_the_limit_named(tmp_path, unharmed):
    # Three processes of 64 MiB each: each one is under the per-process limit, together they
    # pass the jail's 128 MiB.
    fn = _program(
        tmp_path,
        "for i in 1 2 3; do\n"
        "  /usr/bin/python3 -c 'import time; b = b\"x\" * (64 << 20); time.sleep(3)' &\n"
        "done\nwait\ncat\n",
    )
    limits = SandboxLimits(cpu_seconds=5, wall_seconds=15, memory_bytes=128 * 1024 * 1024)
    outcome = sandbox.run_exec(fn, ITEMS, limits=limits)
    assert outcome.status == "failed"  # even though the script itself exited 0
    assert outcome.detail == "killed at the jail's memory limit (128 MiB for all its processes)"
    assert outcome.jail.endswith(jail.confinement())
