"""The ``krm build`` cache ($XDG_CACHE_HOME/krm/builds), run as a user runs the CLI.

A warm build must print exactly what a cold one does, see any change to what the build read,
shrug off corrupt entries, and never serve a build that ran a function or spawned a process.
"""

from __future__ import annotations

import glob
import hashlib
import os
import subprocess
import sys
import zlib
from pathlib import Path

from orchestrator import buildcache

BASE_CM = """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  level: info
"""


def _krm(
    *args: str, home: Path, cwd: Path, module: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m orchestrator ARGS`` (or ``python ARGS`` when not ``module``)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run(
        [sys.executable, *(("-m", "orchestrator") if module else ()), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def _tree(root: Path) -> Path:
    files = {
        "base/deep/cm.yaml": BASE_CM,
        "base/deep/kustomization.yaml": "resources:\n- cm.yaml\n",
        "base/kustomization.yaml": "resources:\n- deep\ncommonLabels:\n  app: web\n",
        "overlay/kustomization.yaml": (
            "resources:\n- ../base\nnamePrefix: prod-\n"
            "configMapGenerator:\n- name: extra\n  literals:\n  - a=b\n"
        ),
    }
    for rel, text in files.items():
        path = root / "src" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "src"


def _entries(home: Path) -> list[str]:
    return sorted(glob.glob(str(home / "cache" / "krm" / "builds" / "*" / "*.entry")))


def _plant(entry: str, text: str) -> None:
    """Test-only: swap the stored output for ``text`` (with a matching digest), so that
    seeing ``text`` printed proves the build was served from the cache."""
    raw = text.encode()
    data, _ = buildcache.unpack(Path(entry).read_bytes())
    data["output_length"] = len(raw)
    data["output_crc32"] = zlib.crc32(raw)
    Path(entry).write_bytes(buildcache.pack(data, raw))


def test_warm_build_prints_the_same_bytes_and_is_served_from_the_cache(tmp_path: Path) -> None:
    src = _tree(tmp_path)
    home = tmp_path / "home"
    uncached = _krm("build", "overlay", "--no-cache", home=home, cwd=src)
    assert uncached.returncode == 0, uncached.stderr
    assert "name: prod-settings" in uncached.stdout
    assert _entries(home) == []  # --no-cache neither reads nor fills the cache
    cold = _krm("build", "overlay", home=home, cwd=src)
    warm = _krm("build", "overlay", home=home, cwd=src)
    assert cold.stdout == warm.stdout == uncached.stdout
    # warnings are stored with the output and printed again
    assert cold.stderr == warm.stderr == uncached.stderr
    assert "'commonLabels' is deprecated" in warm.stderr
    (entry,) = _entries(home)
    assert buildcache.unpack(Path(entry).read_bytes())[1] == uncached.stdout.encode()
    _plant(entry, "planted: true\n")
    assert _krm("build", "overlay", home=home, cwd=src).stdout == "planted: true\n"
    # the cache is keyed by the options too: another flag is another entry
    other = _krm("build", "overlay", "--reorder", "none", home=home, cwd=src)
    assert other.returncode == 0 and other.stdout.startswith("apiVersion")
    assert len(_entries(home)) == 2
    # -o FILE is served from the cache like stdout
    out = tmp_path / "out.yaml"
    assert _krm("build", "overlay", "-o", str(out), home=home, cwd=src).returncode == 0
    assert out.read_text() == "planted: true\n"


def test_a_change_deep_in_a_base_is_seen(tmp_path: Path) -> None:
    src = _tree(tmp_path)
    home = tmp_path / "home"
    first = _krm("build", "overlay", home=home, cwd=src)
    assert "level: info" in first.stdout
    assert _krm("build", "overlay", home=home, cwd=src).stdout == first.stdout
    (src / "base" / "deep" / "cm.yaml").write_text(BASE_CM.replace("info", "debug"))
    second = _krm("build", "overlay", home=home, cwd=src)
    assert "level: debug" in second.stdout and "level: info" not in second.stdout
    assert second.stdout == _krm("build", "overlay", "--no-cache", home=home, cwd=src).stdout
    # a second kustomization file appearing next to the first is an error, cached or not
    (src / "base" / "deep" / "kustomization.yml").write_text("resources: []\n")
    third = _krm("build", "overlay", home=home, cwd=src)
    assert third.returncode == 1
    assert "Found multiple kustomization files" in third.stderr
    (src / "base" / "deep" / "kustomization.yml").unlink()
    assert _krm("build", "overlay", home=home, cwd=src).stdout == second.stdout


def test_corrupt_entries_are_ignored_and_rewritten(tmp_path: Path) -> None:
    src = _tree(tmp_path)
    home = tmp_path / "home"
    good = _krm("build", "overlay", home=home, cwd=src).stdout
    (entry,) = _entries(home)
    whole = Path(entry).read_bytes()
    data, _ = buildcache.unpack(whole)
    # the output no longer matches its digest; not marshal data; truncated; another type;
    # a huge claimed size; a manifest of another key: all ignored and rewritten
    tampered = buildcache.pack(data, b"apiVersion: v1\nkind: Tampered\n")
    other = buildcache.pack({"format": buildcache.FORMAT, "key": "x"}, good.encode())
    junk = [tampered, b"{not json", whole[: len(whole) // 2], whole[:20], b""]
    junk += [buildcache.pack([1, 2], b""), b"\xff" * 8 + b"[\xff\xff\xff\x7f", other]  # type: ignore[arg-type]
    for bad in junk:
        Path(entry).write_bytes(bad)
        assert _krm("build", "overlay", home=home, cwd=src).stdout == good
        assert buildcache.unpack(Path(entry).read_bytes()) == buildcache.unpack(whole)
    Path(entry).unlink()
    assert _krm("build", "overlay", home=home, cwd=src).stdout == good
    assert Path(entry).read_bytes() == whole
    assert not [p for p in os.listdir(Path(entry).parent) if ".tmp-" in p]


def test_builds_with_functions_or_processes_are_never_cached(tmp_path: Path) -> None:
    src = _tree(tmp_path)
    home = tmp_path / "home"
    (src / "fn").mkdir()
    (src / "fn" / "add.star").write_text(
        "for r in ctx.resource_list['items']:\n"
        "    r['metadata'].setdefault('annotations', {})['seen'] = 'yes'\n"
    )
    (src / "fn" / "fn.yaml").write_text(
        "apiVersion: fn.example.com/v1\nkind: Mark\nmetadata:\n  name: mark\n"
        "runtime:\n  starlark:\n    path: add.star\n"
    )
    (src / "fn" / "kustomization.yaml").write_text(
        "resources:\n- ../base\ntransformers:\n- fn.yaml\n"
    )
    first = _krm("build", "fn", "--enable-alpha-plugins", home=home, cwd=src)
    assert first.returncode == 0, first.stderr
    assert 'seen: "yes"' in first.stdout or "seen: 'yes'" in first.stdout
    assert _entries(home) == []
    assert _krm("build", "fn", "--enable-alpha-plugins", home=home, cwd=src).stdout == first.stdout
    assert _entries(home) == []
    # helm runs a process: a build with --enable-helm skips the cache altogether
    assert _krm("build", "overlay", "--enable-helm", home=home, cwd=src).returncode == 0
    assert _entries(home) == []


def test_recorder_notes_reads_and_probes_and_restores_the_originals(tmp_path: Path) -> None:
    import builtins

    real_open, real_isdir = builtins.open, os.path.isdir
    target = tmp_path / "x.txt"
    target.write_text("one")
    rec = buildcache.Recorder()
    with rec.active():
        with open(target, "rb") as f:
            assert f.read() == b"one"
        with open(os.path.join(buildcache._ENGINE, "data", "fieldspecs.json"), "rb") as f:
            assert f.read(1) == b"{"
        assert os.path.isdir(tmp_path)
        with open(tmp_path / "y.txt", "w") as f:
            f.write("two")
    assert builtins.open is real_open and os.path.isdir is real_isdir
    # written just now: stamped with its sha256 as well (it may change within the same tick)
    st = target.stat()
    stamp = (st.st_dev, st.st_ino, 3, st.st_mtime_ns, st.st_ctime_ns)
    assert rec.observations[("read", str(target))] == (*stamp, hashlib.sha256(b"one").hexdigest())
    assert rec.observations[("isdir", str(tmp_path))] is True
    # the engine's own tables are part of its fingerprint, not observations
    assert not any(p.startswith(buildcache._ENGINE) for _, p in rec.observations)
    # this test process already has subprocess loaded: nothing it builds may be cached
    assert (rec.uncacheable or "").endswith(" was loaded before the build")
    assert not buildcache.BuildCache("ab" * 32, str(tmp_path / "c")).store(rec, b"x", [])


def test_a_warm_build_imports_next_to_nothing(tmp_path: Path) -> None:
    """A cache hit is start-up time: it must not load argparse, json (and so re), hashlib
    (OpenSSL), typing or the engine."""
    src = _tree(tmp_path)
    home = tmp_path / "home"
    cold = _krm("build", "overlay", home=home, cwd=src)
    assert cold.returncode == 0, cold.stderr
    heavy = ("argparse", "re", "json", "hashlib", "typing", "yaml", "orchestrator.build")
    probe = (
        "import sys\n"
        "from orchestrator.cli import main\n"
        "status = main(['build', 'overlay'])\n"
        f"print('loaded:', [m for m in {heavy!r} if m in sys.modules], file=sys.stderr)\n"
        "raise SystemExit(status)\n"
    )
    warm = _krm("-c", probe, home=home, cwd=src, module=False)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout == cold.stdout
    assert "loaded: []" in warm.stderr


def _stamps(home: Path) -> dict[str, tuple[object, ...]]:
    (entry,) = _entries(home)
    manifest, _ = buildcache.unpack(Path(entry).read_bytes())
    return {path: r for op, path, r in manifest["observations"] if op == "read"}


def test_settled_files_are_checked_by_stamp_and_every_change_is_seen(tmp_path: Path) -> None:
    """Files older than SETTLED_NS are stamped without a digest; a change that keeps the size
    and puts the modification time back (cp -p, rsync -t, tar) still moves the status-change
    time, and a touch alone is a miss that rebuilds the same output."""
    src = _tree(tmp_path)
    home = tmp_path / "home"
    cm = src / "base" / "deep" / "cm.yaml"
    fresh = _krm("build", "overlay", home=home, cwd=src)
    assert fresh.returncode == 0, fresh.stderr
    assert _stamps(home)[str(cm)][5] == hashlib.sha256(cm.read_bytes()).hexdigest()
    import time

    time.sleep(buildcache.SETTLED_NS / 1e9 + 0.2)
    (entry,) = _entries(home)
    Path(entry).unlink()
    first = _krm("build", "overlay", home=home, cwd=src)
    assert first.stdout == fresh.stdout
    stamps = _stamps(home)
    assert stamps[str(cm)][5] is None  # settled: the stamp alone
    st = cm.stat()
    assert stamps[str(cm)][:5] == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    _plant(entry, "planted: true\n")
    assert _krm("build", "overlay", home=home, cwd=src).stdout == "planted: true\n"
    # the same size, the modification time put back: the status-change time moved
    cm.write_text(BASE_CM.replace("info", "warn"))
    os.utime(cm, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert cm.stat().st_size == st.st_size and cm.stat().st_mtime_ns == st.st_mtime_ns
    changed = _krm("build", "overlay", home=home, cwd=src)
    assert "level: warn" in changed.stdout and "level: info" not in changed.stdout
    assert changed.stdout == _krm("build", "overlay", "--no-cache", home=home, cwd=src).stdout
    # changed just now: hashed again, and served while it holds
    assert _stamps(home)[str(cm)][5] == hashlib.sha256(cm.read_bytes()).hexdigest()
    _plant(entry, "planted: again\n")
    assert _krm("build", "overlay", home=home, cwd=src).stdout == "planted: again\n"
    # a file replaced by another one (a new inode) with the same bytes: a miss, same output
    copy = cm.with_suffix(".new")
    copy.write_bytes(cm.read_bytes())
    os.replace(copy, cm)
    assert _krm("build", "overlay", home=home, cwd=src).stdout == changed.stdout


def test_files_over_a_chunk_are_hashed_whole(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    data = b"x" * (3 << 20) + b"tail"
    big.write_bytes(data)
    assert buildcache._file_digest(str(big)) == hashlib.sha256(data).hexdigest()
    assert buildcache._file_digest(str(tmp_path / "missing")) is None


def test_a_symlink_out_of_the_root_ends_a_cached_build(tmp_path: Path) -> None:
    """A base replaced by a link to the same files outside the overlay's tree: the read digests
    still match, but a fresh build refuses the link, so the cache must not answer."""
    src = _tree(tmp_path)
    home = tmp_path / "home"
    (src / "overlay" / "local").mkdir()
    (src / "overlay" / "local" / "cm.yaml").write_text(BASE_CM.replace("settings", "local"))
    (src / "overlay" / "kustomization.yaml").write_text("resources:\n- local/cm.yaml\n")
    first = _krm("build", "overlay", home=home, cwd=src)
    assert first.returncode == 0, first.stderr
    outside = tmp_path / "outside"
    (src / "overlay" / "local").rename(outside)
    (src / "overlay" / "local").symlink_to(outside)
    fresh = _krm("build", "overlay", "--no-cache", home=home, cwd=src)
    assert fresh.returncode == 1 and "security; file" in fresh.stderr
    warm = _krm("build", "overlay", home=home, cwd=src)
    assert (warm.returncode, warm.stdout, warm.stderr) == (1, "", fresh.stderr)
