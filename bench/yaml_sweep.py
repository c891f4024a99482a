"""Sweep: which YAML texts the fast reader (``orchestrator.yamlfast``, rapidyaml) declines, and why.

Every ``*.yaml`` / ``*.yml`` file (and ``Kustomization``) under the given directories is read the
way a build reads it (``yamlio``'s go-yaml v3 typing; v2's for kustomization files), once with the
fast reader forced on and once with PyYAML. A text the fast reader answers must give exactly
PyYAML's documents (a difference is a bug, listed and counted as ``DIFFERENT``); a text it declines
is counted under the reason it gave. With ``--mutations N``, N fuzzed variants of each file (lines
dropped, duplicated, re-indented; a trailing space or tab, a final line break removed; scalars
swapped for tricky ones) are checked the same way, so what a mutation breaks must be declined or
read the same. Texts PyYAML rejects too are counted apart (``both reject``).

    .venv/bin/python bench/yaml_sweep.py DIR [DIR...] [--mutations 3] [--seed 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ["KRM_YAML_FAST"] = "always"

from orchestrator import yamlfast, yamlio, yamlpy  # noqa: E402
from orchestrator.errors import KrmError  # noqa: E402

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
TRICKY = [
    "[-1:]",
    "'[-1:]'",
    "0644",
    "~",
    "yes",
    "True",
    "1_000",
    ".inf",
    "0x1F",
    "''",
    "|",
    ">-",
    "a: b",
    "- x",
    "{a: 1}",
    "[1, 2]",
    '"a\\tb"',
    "null",
    "@x",
    "`x",
    "%x",
    "*x",
    "&x y",
    "!!str 1",
    "#c",
    "- ",
    "x #c",
    "a\tb",
]


def yaml_files(roots: list[str]) -> list[str]:
    """Every YAML file under ``roots``, sorted, ``.git`` skipped."""
    found = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != ".git")
            for name in sorted(filenames):
                if name.endswith((".yaml", ".yml")) or name == "Kustomization":
                    found.append(os.path.join(dirpath, name))
    return found


def mutate(text: str, rng: random.Random) -> str:
    """One random mutation of ``text`` (line-level, as edits and generators make them)."""
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    op = rng.randrange(9)
    if op == 0:
        del lines[i]
    elif op == 1:
        lines.insert(i, lines[i])
    elif op == 2:
        lines[i] = "  " + lines[i]
    elif op == 3:
        lines[i] = lines[i] + rng.choice([" ", "\t", "  ", " \t", "\t "])
    elif op == 4:
        return text.rstrip("\n")
    elif op == 5 and ": " in lines[i]:
        key, _, _ = lines[i].partition(": ")
        lines[i] = f"{key}: {rng.choice(TRICKY)}"
    elif op == 6 and lines[i].lstrip().startswith("- "):
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = f"{indent}- {rng.choice(TRICKY)}"
    elif op == 7:
        lines[i] = lines[i].replace(" ", "\t", 1)
    else:
        lines[i] = lines[i] + " #" + rng.choice(TRICKY)
    return "\n".join(lines)


def reason_class(reason: str) -> str:
    """A reason without the details that make each one unique (pattern texts stay)."""
    return re.sub(r"'.'|\d+", "_", reason)[:100]


def check(text: str, v2: bool) -> tuple[str, str]:
    """(verdict, reason): ``fast`` (answered, same as PyYAML), ``declined``, ``both reject``,
    ``DIFFERENT``."""
    plain = yamlio._v2_plain if v2 else yamlio._v3_plain
    fast = yamlfast.load_docs(text, None, plain, fold=not v2)  # as yamlio reads
    reason = yamlfast.last_reason
    try:
        slow: object = yamlpy.load_docs(v2, text, "sweep", fold=not v2)
    except (KrmError, RecursionError) as exc:
        slow = exc
    if fast is None:
        return ("both reject" if isinstance(slow, Exception) else "declined"), reason
    if isinstance(slow, Exception):
        return "DIFFERENT", f"PyYAML rejects: {slow}"
    if repr(fast) != repr(slow) or fast != slow:
        return "DIFFERENT", "documents differ"
    return "fast", ""


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", help="directories to sweep (e.g. fetched repositories)")
    ap.add_argument("--mutations", type=int, default=0, help="fuzzed variants per file")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the counts and the declined files here")
    ap.add_argument("--show", type=int, default=10, help="examples to print per reason")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    counts: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    different: list[str] = []
    t0 = time.perf_counter()
    files = yaml_files(args.dirs)
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        try:
            text = yamlio.decode(data, source=path)
        except KrmError:
            counts["file: not UTF-8"] += 1
            continue
        v2 = os.path.basename(path) in KUSTOMIZATION_NAMES
        variants = [("file", text)] + [
            ("mutation", mutate(text, rng)) for _ in range(args.mutations if text else 0)
        ]
        for what, variant in variants:
            verdict, reason = check(variant, v2)
            counts[f"{what}: {verdict}"] += 1
            if verdict == "declined":
                key = f"{what}: {reason_class(reason)}"
                reasons[key] += 1
                if len(examples[key]) < args.show:
                    examples[key].append(path)
            elif verdict == "DIFFERENT":
                different.append(f"{what} of {path}: {reason}")
                if what == "mutation":
                    different.append("    " + json.dumps(variant))
    print(f"{len(files)} files in {time.perf_counter() - t0:.1f} s")
    for key, n in sorted(counts.items()):
        print(f"{key:<30} {n:>7}")
    print("declined, by reason:")
    for key, n in reasons.most_common():
        print(f"{n:>7}  {key}")
        for ex in examples[key][:3]:
            print(f"           {ex}")
    for line in different:
        print("DIFFERENT", line)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "counts": counts,
                    "reasons": reasons,
                    "examples": examples,
                    "different": different,
                },
                f,
                indent=1,
                sort_keys=True,
            )
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
