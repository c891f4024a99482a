#!/usr/bin/env python3
"""Build every kustomization directory under some folders with ``kubectl kustomize`` and
``krm build`` and compare the outputs byte for byte.

Usage: ``.venv/bin/python scripts/realworld_compare.py [-j 2] DIR [DIR ...]``

Each DIR is a fetched repository (or a folder of them: pass ``--repos`` to treat every
sub-folder as one repository). Both tools get the same ``--load-restrictor``: the default,
except under paths matching ``--none-glob`` (cluster-api's ``test/e2e/data`` trees are
built with ``LoadRestrictionsNone`` by its Makefile). Only directories kustomize builds
count as covered; a directory where exactly one of the two fails is reported as such.
Exit status: 0 when every covered directory is identical and krm fails nowhere kustomize
succeeds (nor succeeds where it fails), 1 otherwise.
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
SKIP_DIRS = frozenset({".git", "node_modules", "vendor", "third_party"})
DEFAULT_NONE_GLOBS = ("*/test/e2e/data/*",)
NONE = "LoadRestrictionsNone"
ROOT_ONLY = "LoadRestrictionsRootOnly"


def kustomization_dirs(root: Path) -> Iterator[Path]:
    """Directories under ``root`` holding a kustomization file (symlinked files included)."""
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        if any(name in files for name in KUSTOMIZATION_FILES):
            yield Path(here)


def restrictor_for(path: Path, none_globs: tuple[str, ...]) -> str:
    """The load restrictor both tools get for ``path``."""
    text = path.as_posix() + "/"
    return NONE if any(fnmatch.fnmatch(text, g) for g in none_globs) else ROOT_ONLY


class Outcome:
    """What the two tools did with one directory."""

    __slots__ = ("path", "repo", "restrictor", "kustomize", "krm", "kustomize_s", "krm_s")

    def __init__(self, path: Path, repo: str, restrictor: str) -> None:
        self.path = path
        self.repo = repo
        self.restrictor = restrictor
        # (exit status, stdout, stderr) of each tool
        self.kustomize: tuple[int, bytes, bytes] = (0, b"", b"")
        self.krm: tuple[int, bytes, bytes] = (0, b"", b"")
        self.kustomize_s = 0.0
        self.krm_s = 0.0

    @property
    def status(self) -> str:
        """identical | different | krm-error | krm-only-builds | both-fail."""
        k_ok, r_ok = self.kustomize[0] == 0, self.krm[0] == 0
        if k_ok and r_ok:
            return "identical" if self.kustomize[1] == self.krm[1] else "different"
        if k_ok:
            return "krm-error"
        return "krm-only-builds" if r_ok else "both-fail"


def _run(cmd: list[str], env: dict[str, str], timeout: float, cwd: Path) -> tuple[tuple, float]:
    start = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, env=env, timeout=timeout, check=False, cwd=cwd)
        result = (p.returncode, p.stdout, p.stderr)
    except subprocess.TimeoutExpired:
        result = (124, b"", f"timed out after {timeout:.0f}s".encode())
    return result, time.perf_counter() - start


def compare_dir(
    path: Path,
    repo: str,
    restrictor: str,
    *,
    kubectl: str,
    timeout: float = 300.0,
    engine: Path = REPO,
    no_cache: bool = False,
) -> Outcome:
    """Build ``path`` with both tools and record what each printed."""
    out = Outcome(path, repo, restrictor)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(engine)
    flags = ["--load-restrictor", restrictor]
    out.kustomize, out.kustomize_s = _run(
        [kubectl, "kustomize", str(path), *flags], env, timeout, engine
    )
    # Run from the engine's checkout: ``python -m`` imports from the working directory first.
    out.krm, out.krm_s = _run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "build",
            str(path),
            *flags,
            *(["--no-cache"] if no_cache else []),
        ],
        env,
        timeout,
        engine,
    )
    return out


def compare_trees(
    repos: list[tuple[str, Path]],
    *,
    kubectl: str,
    jobs: int = 1,
    none_globs: tuple[str, ...] = DEFAULT_NONE_GLOBS,
    timeout: float = 300.0,
    engine: Path = REPO,
    progress: bool = False,
    no_cache: bool = False,
) -> list[Outcome]:
    """Compare every kustomization directory of each (name, root) repository."""
    work = [
        (d, name, restrictor_for(d.relative_to(root.parent), none_globs))
        for name, root in repos
        for d in kustomization_dirs(root)
    ]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [
            pool.submit(
                compare_dir,
                d,
                name,
                r,
                kubectl=kubectl,
                timeout=timeout,
                engine=engine,
                no_cache=no_cache,
            )
            for d, name, r in work
        ]
        done = []
        for i, f in enumerate(futures, 1):
            done.append(f.result())
            if progress:
                print(f"[{i}/{len(futures)}] {done[-1].status}: {done[-1].path}", file=sys.stderr)
        return done


def summary(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    """Counts per repository: found, covered (kustomize builds), identical, and failures."""
    table: dict[str, dict[str, int]] = {}
    for o in outcomes:
        row = table.setdefault(
            o.repo,
            {
                "found": 0,
                "covered": 0,
                "identical": 0,
                "different": 0,
                "krm-error": 0,
                "krm-only-builds": 0,
                "both-fail": 0,
            },
        )
        row["found"] += 1
        row["covered"] += o.kustomize[0] == 0
        row[o.status] += 1
    return table


def _diff(o: Outcome, lines: int) -> str:
    diff = difflib.unified_diff(
        o.kustomize[1].decode(errors="replace").splitlines(),
        o.krm[1].decode(errors="replace").splitlines(),
        "kubectl kustomize",
        "krm build",
        lineterm="",
    )
    return "\n".join(list(diff)[:lines])


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", type=Path, help="repository folders to scan")
    p.add_argument("--repos", action="store_true", help="each DIR holds several repositories")
    p.add_argument("-j", "--jobs", type=int, default=1, help="directories built at once (max 2)")
    p.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    p.add_argument(
        "--none-glob",
        action="append",
        default=None,
        help=f"paths (relative to the repository's parent) built with {NONE}; "
        f"default {list(DEFAULT_NONE_GLOBS)}",
    )
    p.add_argument(
        "--engine",
        type=Path,
        default=REPO,
        help="checkout whose orchestrator package krm runs (default: this one)",
    )
    p.add_argument("--progress", action="store_true", help="one line per directory to stderr")
    p.add_argument("--no-cache", action="store_true", help="run krm build with --no-cache")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per tool and directory")
    p.add_argument("--diff-lines", type=int, default=20, help="diff lines shown per difference")
    p.add_argument("--json", type=Path, help="write every outcome to this file")
    args = p.parse_args(argv)
    if args.jobs > 2:
        p.error("-j is at most 2 (the machine is shared)")
    repos: list[tuple[str, Path]] = []
    for d in args.dirs:
        d = d.resolve()
        if not d.is_dir():
            p.error(f"not a directory: {d}")
        subs = sorted(x for x in d.iterdir() if x.is_dir()) if args.repos else [d]
        repos.extend((s.name, s) for s in subs)
    globs = tuple(args.none_glob) if args.none_glob else DEFAULT_NONE_GLOBS
    outcomes = compare_trees(
        repos,
        kubectl=args.kubectl,
        jobs=args.jobs,
        none_globs=globs,
        timeout=args.timeout,
        engine=args.engine.resolve(),
        progress=args.progress,
        no_cache=args.no_cache,
    )
    for o in outcomes:
        if o.status in ("identical", "both-fail"):
            continue
        print(f"== {o.status}: {o.path} ({o.restrictor})")
        if o.status == "different":
            print(_diff(o, args.diff_lines))
        elif o.status == "krm-error":
            print("   krm: " + o.krm[2].decode(errors="replace").strip()[-500:])
        else:
            print("   kustomize: " + o.kustomize[2].decode(errors="replace").strip()[-500:])
    table = summary(outcomes)
    cols = ["found", "covered", "identical", "different", "krm-error", "krm-only-builds"]
    print(f"{'repository':<24}" + "".join(f"{c:>16}" for c in cols))
    total = dict.fromkeys(cols, 0)
    for repo, row in table.items():
        print(f"{repo:<24}" + "".join(f"{row[c]:>16}" for c in cols))
        for c in cols:
            total[c] += row[c]
    print(f"{'total':<24}" + "".join(f"{total[c]:>16}" for c in cols))
    k_s = sum(o.kustomize_s for o in outcomes if o.status == "identical")
    r_s = sum(o.krm_s for o in outcomes if o.status == "identical")
    if k_s:
        print(f"wall time over identical dirs: kustomize {k_s:.1f}s, krm {r_s:.1f}s")
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "path": str(o.path),
                        "repo": o.repo,
                        "restrictor": o.restrictor,
                        "status": o.status,
                        "kustomize_s": round(o.kustomize_s, 3),
                        "krm_s": round(o.krm_s, 3),
                        "krm_stderr": o.krm[2].decode(errors="replace")[-2000:],
                        "kustomize_stderr": o.kustomize[2].decode(errors="replace")[-2000:],
                    }
                    for o in outcomes
                ],
                indent=1,
            )
        )
    bad = total["different"] + total["krm-error"] + total["krm-only-builds"]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
