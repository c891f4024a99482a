"""Benchmark: ``krm build --batch ROOT -o OUT`` against a loop of ``kubectl kustomize`` (v5.5.0)
over the same directories, and against a loop of single ``krm build --no-cache`` processes.

Every directory under ROOT holding a kustomization is built by ``kubectl kustomize DIR`` one
process each (the loop a CI job runs), and by one ``krm build --batch`` process. Each batch output
is compared with kustomize's where kustomize builds the directory, and (``--single``) with what a
separate ``krm build --no-cache DIR`` prints: ``build.yaml`` with its stdout, ``error.txt`` with
its stderr. Wall and CPU seconds and peak RSS (``os.wait4``) of each side and the machine load
are printed, with the target (batch ≤ 0.1× the kustomize loop, RSS ≤ kustomize's peak).

    .venv/bin/python bench/batch.py ROOT [--single] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import realworld  # noqa: E402  (the sibling bench: run(), uptime(), krm_env())


def _read(path: str) -> bytes | None:
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return f.read()


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="a repository (or folder of them) to build every overlay of")
    ap.add_argument("--krm", default=realworld.VENV_KRM, help="the krm executable")
    ap.add_argument("--kubectl", default="kubectl", help="the kubectl executable")
    ap.add_argument(
        "--single", action="store_true", help="also compare with one krm build per directory"
    )
    ap.add_argument("--json", help="write the figures and per-directory verdicts here")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    realworld.compile_bytecode()
    sys.path.insert(0, realworld.REPO)
    from orchestrator.batch import BUILD_FILE, ERROR_FILE, find_dirs

    dirs = find_dirs(root)
    load_before = realworld.uptime()
    kus: dict[str, bytes | None] = {}
    kus_wall = kus_cpu = kus_rss = 0.0
    for rel in dirs:
        r = realworld.run([args.kubectl, "kustomize", os.path.join(root, rel)])
        kus[rel] = r["stdout"] if r["rc"] == 0 else None
        kus_wall += r["wall"]
        kus_cpu += r["cpu"]
        kus_rss = max(kus_rss, r["rss_kib"] / 1024)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        env = realworld.krm_env(os.path.join(tmp, "cache"))
        b = realworld.run([args.krm, "build", "--batch", root, "-o", out], env=env)
        load_after = realworld.uptime()
        verdicts: dict[str, str] = {}
        for rel in dirs:
            built = os.path.join(out, rel, BUILD_FILE)
            mine = _read(built)
            if kus[rel] is None:
                verdicts[rel] = "kustomize fails" + (", krm builds" if mine is not None else "")
            else:
                verdicts[rel] = "identical" if mine == kus[rel] else "DIFFERENT"
        single_same = single_total = 0
        single_wall = 0.0
        if args.single:
            for rel in dirs:
                s = realworld.run(
                    [args.krm, "build", "--no-cache", os.path.join(root, rel)], env=env
                )
                single_wall += s["wall"]
                name = BUILD_FILE if s["rc"] == 0 else ERROR_FILE
                path = os.path.join(out, rel, name)
                expected = s["stdout"] if s["rc"] == 0 else s["stderr"].encode()
                got = _read(path)
                single_total += 1
                if got == expected:
                    single_same += 1
                else:
                    verdicts[rel] += "; differs from a single krm build"
    covered = [r for r in dirs if kus[r] is not None]
    figures = {
        "directories": len(dirs),
        "kustomize_builds": len(covered),
        "identical_to_kustomize": sum(verdicts[r] == "identical" for r in covered),
        "kustomize_loop_s": round(kus_wall, 3),
        "kustomize_loop_cpu_s": round(kus_cpu, 3),
        "kustomize_peak_rss_mib": round(kus_rss, 1),
        "batch_s": round(b["wall"], 3),
        "batch_cpu_s": round(b["cpu"], 3),
        "batch_rss_mib": round(b["rss_kib"] / 1024, 1),
        "batch_rc": b["rc"],
        "ratio": round(b["wall"] / kus_wall, 3) if kus_wall else None,
        "single_identical": f"{single_same}/{single_total}" if args.single else None,
        "single_loop_s": round(single_wall, 3) if args.single else None,
    }
    for rel in dirs:
        if "DIFFERENT" in verdicts[rel] or "differs" in verdicts[rel]:
            print(f"{verdicts[rel]}: {rel}")
    for k, v in figures.items():
        print(f"{k}: {v}")
    ratio = figures["ratio"]
    met = ratio is not None and ratio <= 0.1
    print(f"target batch <= 0.1x the kustomize loop: {ratio} {'met' if met else 'MISSED'}")
    rss_met = figures["batch_rss_mib"] <= figures["kustomize_peak_rss_mib"]
    print(f"target batch RSS <= kustomize's peak: {'met' if rss_met else 'MISSED'}")
    print(f"load before: {load_before}")
    print(f"load after:  {load_after}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"figures": figures, "verdicts": verdicts}, f, indent=1, sort_keys=True)
    bad = figures["identical_to_kustomize"] != figures["kustomize_builds"] or (
        args.single and single_same != single_total
    )
    return 1 if bad else 0


if __name__ == "__main__":
    if shutil.which("kubectl") is None and "--kubectl" not in sys.argv:
        sys.exit("kubectl (the oracle) is not installed")
    sys.exit(main())
