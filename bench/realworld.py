"""Benchmark: ``krm build`` vs ``kubectl kustomize`` (v5.5.0) on real repositories.

Given a cache folder holding fetched repositories (e.g. kubeflow/manifests, argoproj/argo-cd,
kubernetes-sigs/cluster-api, argoproj/argo-workflows), it finds every kustomization directory
and builds each one as a user runs the tools: ``kubectl kustomize DIR`` and the ``krm`` CLI as a
subprocess: with ``--no-cache`` (as issue 24 times start-up), cold (an empty
``$XDG_CACHE_HOME``, which the build fills) and warm (the same tree built again with the cache
the cold build left). A directory kustomize cannot build is skipped; one it builds only
with ``--load-restrictor LoadRestrictionsNone`` (as cluster-api's Makefile does) is built that
way by both tools. Wall time, CPU time and peak RSS of every child come from ``os.wait4``.

Prints a table and the issue's figures: total time ratio, median ratio for outputs under
100 kB, ratio for outputs over 1 MB, the argo-workflows ``manifests/quick-start/minimal`` times,
peak RSS of both, how many outputs are byte-identical, and the machine load (``uptime``).

    .venv/bin/python bench/realworld.py CACHE_DIR [--only SUBSTR] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
VENV_KRM = os.path.join(REPO, ".venv", "bin", "krm")
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
NONE_RESTRICTOR = ["--load-restrictor", "LoadRestrictionsNone"]
SMALL = 100 * 1000
LARGE = 1000 * 1000
MINIMAL = os.path.join("argo-workflows", "manifests", "quick-start", "minimal")


def find_kustomizations(root: str) -> list[str]:
    """Every directory under ``root`` holding a kustomization file, sorted, ``.git`` skipped."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        if any(f in filenames for f in KUSTOMIZATION_FILES):
            found.append(dirpath)
    return sorted(found)


def run(cmd: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``cmd``; return exit code, stdout bytes, wall and CPU seconds and peak RSS (KiB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {
            "rc": proc.returncode,
            "stdout": out.read(),
            "stderr": err.read().decode(errors="replace"),
            "wall": wall,
            "cpu": usage.ru_utime + usage.ru_stime,
            "rss_kib": usage.ru_maxrss,
        }


def uptime() -> str:
    """The machine's load, as ``uptime`` prints it."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def krm_env(cache: str) -> dict[str, str]:
    """The environment krm runs in: this checkout's code, bytecode cached as after an install."""
    env = dict(os.environ, XDG_CACHE_HOME=cache, PYTHONPATH=REPO)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_bytecode() -> None:
    """Write the engine's ``.pyc`` files once, as ``pip install`` does for a user."""
    env = krm_env(tempfile.gettempdir())
    cmd = [sys.executable, "-m", "compileall", "-q", os.path.join(REPO, "orchestrator")]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)


def bench_dir(path: str, krm: list[str], kubectl: str) -> dict | None:
    """Build one directory with both tools; ``None`` when kustomize cannot build it."""
    flags: list[str] = []
    kus = run([kubectl, "kustomize", path])
    if kus["rc"] != 0:
        flags = NONE_RESTRICTOR
        kus = run([kubectl, "kustomize", path, *flags])
        if kus["rc"] != 0:
            return None
    with tempfile.TemporaryDirectory() as cache:
        env = krm_env(cache)
        # As users run it with no build cache (issue 24's start-up figure), then cold (an
        # empty cache, which the build fills) and warm (served from it).
        nocache = run([*krm, "build", "--no-cache", path, *flags], env=env)
        cold = run([*krm, "build", path, *flags], env=env)
        warm = run([*krm, "build", path, *flags], env=env)
    return {
        "flags": flags,
        "bytes": len(kus["stdout"]),
        "kustomize_s": kus["wall"],
        "kustomize_cpu_s": kus["cpu"],
        "kustomize_rss_mib": kus["rss_kib"] / 1024,
        "krm_rc": cold["rc"],
        "krm_error": cold["stderr"][-300:] if cold["rc"] else "",
        "nocache_s": nocache["wall"],
        "nocache_identical": nocache["rc"] == 0 and nocache["stdout"] == kus["stdout"],
        "cold_s": cold["wall"],
        "cold_cpu_s": cold["cpu"],
        "cold_rss_mib": cold["rss_kib"] / 1024,
        "warm_s": warm["wall"],
        "warm_rss_mib": warm["rss_kib"] / 1024,
        "identical": cold["rc"] == 0 and cold["stdout"] == kus["stdout"],
        "warm_identical": warm["rc"] == 0 and warm["stdout"] == kus["stdout"],
    }


def summarise(rows: dict[str, dict]) -> dict:
    """The issue's figures over the per-directory rows (keyed by path relative to the cache)."""

    def ratio(num: float, den: float) -> float | None:
        return round(num / den, 3) if den else None

    def total(key: str, sel: list[dict]) -> float:
        return sum(r[key] for r in sel)

    all_rows = list(rows.values())
    small = [r for r in all_rows if r["bytes"] < SMALL]
    large = [r for r in all_rows if r["bytes"] > LARGE]
    minimal = next((r for k, r in rows.items() if k.rstrip("/").endswith(MINIMAL)), None)
    return {
        "directories": len(all_rows),
        "identical": sum(r["identical"] for r in all_rows),
        "warm_identical": sum(r["warm_identical"] for r in all_rows),
        "nocache_identical": sum(r["nocache_identical"] for r in all_rows),
        "krm_errors": sum(r["krm_rc"] != 0 for r in all_rows),
        "kustomize_total_s": round(total("kustomize_s", all_rows), 3),
        "cold_total_s": round(total("cold_s", all_rows), 3),
        "warm_total_s": round(total("warm_s", all_rows), 3),
        "cold_total_ratio": ratio(total("cold_s", all_rows), total("kustomize_s", all_rows)),
        "warm_total_ratio": ratio(total("warm_s", all_rows), total("kustomize_s", all_rows)),
        "small_dirs": len(small),
        "small_median_cold_ratio": (
            round(statistics.median(r["cold_s"] / r["kustomize_s"] for r in small), 3)
            if small
            else None
        ),
        "small_median_nocache_ratio": (
            round(statistics.median(r["nocache_s"] / r["kustomize_s"] for r in small), 3)
            if small
            else None
        ),
        "small_median_warm_ratio": (
            round(statistics.median(r["warm_s"] / r["kustomize_s"] for r in small), 3)
            if small
            else None
        ),
        "large_dirs": len(large),
        "large_cold_ratio": ratio(total("cold_s", large), total("kustomize_s", large)),
        "large_warm_ratio": ratio(total("warm_s", large), total("kustomize_s", large)),
        "minimal": (
            {k: round(minimal[k], 3) for k in ("kustomize_s", "cold_s", "warm_s", "bytes")}
            | {
                "kustomize_rss_mib": round(minimal["kustomize_rss_mib"], 1),
                "cold_rss_mib": round(minimal["cold_rss_mib"], 1),
            }
            if minimal
            else None
        ),
        "kustomize_peak_rss_mib": round(
            max((r["kustomize_rss_mib"] for r in all_rows), default=0), 1
        ),
        "krm_peak_rss_mib": round(
            max((max(r["cold_rss_mib"], r["warm_rss_mib"]) for r in all_rows), default=0), 1
        ),
    }


# Issue 24's targets (on at least 25 public repositories, a quiet machine).
TARGETS = [
    ("cold_total_ratio", 0.25, "cold total time ratio"),
    ("small_median_nocache_ratio", 0.6, "median ratio, outputs < 100 kB, --no-cache"),
    ("large_cold_ratio", 0.15, "cold ratio, outputs > 1 MB"),
    ("warm_total_ratio", 0.05, "warm total time ratio"),
]


def report(summary: dict) -> list[str]:
    """Human-readable summary lines, with each target met or MISSED."""
    s = summary
    lines = [
        f"directories kustomize builds: {s['directories']}  byte-identical: cold {s['identical']}, "
        f"warm {s['warm_identical']}, --no-cache {s['nocache_identical']}  "
        f"krm errors: {s['krm_errors']}",
        f"total: kustomize {s['kustomize_total_s']:.2f}s  krm cold {s['cold_total_s']:.2f}s  "
        f"warm {s['warm_total_s']:.2f}s",
        f"outputs < 100 kB: {s['small_dirs']} dirs, median ratio --no-cache "
        f"{s['small_median_nocache_ratio']} cold {s['small_median_cold_ratio']} "
        f"warm {s['small_median_warm_ratio']}",
        f"outputs > 1 MB: {s['large_dirs']} dirs, ratio cold {s['large_cold_ratio']}"
        f" warm {s['large_warm_ratio']}",
        f"peak RSS: kustomize {s['kustomize_peak_rss_mib']} MiB, krm {s['krm_peak_rss_mib']} MiB",
    ]
    if s["minimal"]:
        m = s["minimal"]
        lines.append(
            f"{MINIMAL} ({m['bytes']} bytes): kustomize {m['kustomize_s']:.2f}s "
            f"({m['kustomize_rss_mib']} MiB), krm cold {m['cold_s']:.2f}s ({m['cold_rss_mib']} MiB)"
            f", warm {m['warm_s']:.2f}s; target cold <= 1.5s "
            + ("met" if m["cold_s"] <= 1.5 else "MISSED")
        )
    for key, target, label in TARGETS:
        value = s[key]
        if value is not None:
            verdict = "met" if value <= target else "MISSED"
            lines.append(f"target {label} <= {target}: {value} {verdict}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache", help="folder holding the fetched repositories")
    ap.add_argument(
        "--only",
        default="",
        help="only directories whose path contains one of these (comma-separated) strings",
    )
    ap.add_argument("--json", help="write rows and summary to this file")
    ap.add_argument(
        "--krm",
        default=VENV_KRM if os.path.exists(VENV_KRM) else (shutil.which("krm") or "krm"),
        help="the krm command line (default: the venv's krm)",
    )
    ap.add_argument("--kubectl", default="kubectl", help="the kubectl executable")
    ap.add_argument("--quiet", action="store_true", help="no per-directory rows")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.cache)
    compile_bytecode()
    load_before = uptime()
    rows: dict[str, dict] = {}
    only = [s for s in args.only.split(",") if s] or [""]
    dirs = [
        d for d in find_kustomizations(root) if any(s in os.path.relpath(d, root) for s in only)
    ]
    if not args.quiet:
        print(f"{'directory':<70} {'bytes':>9} {'kus s':>7} {'cold s':>7} {'warm s':>7} same")
    for d in dirs:
        rel = os.path.relpath(d, root)
        row = bench_dir(d, shlex.split(args.krm), args.kubectl)
        if row is None:
            continue
        rows[rel] = row
        if not args.quiet:
            same = "yes" if row["identical"] else ("ERR" if row["krm_rc"] else "DIFF")
            print(
                f"{rel[-70:]:<70} {row['bytes']:>9} {row['kustomize_s']:>7.2f} "
                f"{row['cold_s']:>7.2f} {row['warm_s']:>7.2f} {same}",
                flush=True,
            )
    summary = summarise(rows) if rows else {}
    load_after = uptime()
    if summary:
        for line in report(summary):
            print(line)
    print(f"load before: {load_before}")
    print(f"load after:  {load_after}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "load_before": load_before,
                    "load_after": load_after,
                    "summary": summary,
                    "rows": rows,
                },
                f,
                indent=1,
                sort_keys=True,
            )
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
