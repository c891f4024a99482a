"""Large builds share their parsing with forked children (orchestrator.parallel).

Every build here runs as a user runs it, in a fresh process, once with ``KRM_PARALLEL=0`` (all
in one process) and once with children forced on: the output, the exit status and the error
line must be the same bytes, whatever a child does (fails on a file, dies half-way through its
answer), and no child may be left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator import buildcache, parallel

# Large enough for orchestrator.accumulator's PREFETCH_MIN_FILE (128 KiB) and, a few of them,
# for PREFETCH_MIN_TOTAL (1 MiB) and orchestrator.parallel's MIN_SHARE.
_PROPERTIES = 2600


def _crd(plural: str, extra: str = "") -> str:
    """A CustomResourceDefinition of ~300 kB, shaped like the generated ones real trees hold."""
    props = "".join(
        f"                field{i}:\n"
        f"                  description: Field {i} of the {plural} spec, with a sentence "
        f"long enough to look like generated documentation.\n"
        f"                  type: {('string', 'integer', 'boolean')[i % 3]}\n"
        for i in range(_PROPERTIES)
    )
    return (
        "apiVersion: apiextensions.k8s.io/v1\n"
        "kind: CustomResourceDefinition\n"
        "metadata:\n"
        f"  name: {plural}.example.com\n"
        "  annotations:\n"
        "    note:\n"  # an implicit null: an ImplicitNullMap, pickled by the child
        "    text: ünïcödé ✓ 🚀\n"
        "spec:\n"
        "  group: example.com\n"
        "  names:\n"
        f"    kind: {plural.capitalize()}\n"
        f"    plural: {plural}\n"
        "  scope: Namespaced\n"
        "  versions:\n"
        "  - name: v1\n"
        "    served: true\n"
        "    storage: true\n"
        "    schema:\n"
        "      openAPIV3Schema:\n"
        "        type: object\n"
        "        properties:\n"
        "          spec:\n"
        "            type: object\n"
        "            properties:\n"
        "              nested:\n"
        "                type: object\n"
        "                properties:\n" + props + extra
    )


_CM = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
    "data:\n  key: 'yes'\n  empty:\n  text: ünïcödé ✓ 🚀\n"
)
_PLURALS = ("alphas", "betas", "gammas", "deltas", "epsilons")


def _tree(root: Path, last: str | None = None) -> Path:
    """crds/ (five large CRDs and small files between them) under an overlay that lists four
    large CRDs of its own around it (its child still parsing while crds/ forks its own);
    ``last``: the text of crds/' last large file instead of its CRD."""
    crds = root / "crds"
    crds.mkdir(parents=True)
    names = []
    for i, plural in enumerate(_PLURALS):
        name = f"{plural}.yaml"
        text = _crd(plural) if last is None or i < len(_PLURALS) - 1 else last
        (crds / name).write_text(text)
        (crds / f"cm{i}.yaml").write_text(_CM.format(name=f"cm{i}"))
        names += [name, f"cm{i}.yaml"]
    (crds / "kustomization.yaml").write_text("resources:\n" + "".join(f"- {n}\n" for n in names))
    overlay = root / "overlay"
    overlay.mkdir()
    own = ("firsts", "seconds", "thirds", "fourths")
    for plural in own:
        (overlay / f"{plural}.yaml").write_text(_crd(plural))
    listed = [f"{own[0]}.yaml", f"{own[1]}.yaml", "../crds", f"{own[2]}.yaml", f"{own[3]}.yaml"]
    (overlay / "kustomization.yaml").write_text(
        "resources:\n" + "".join(f"- {n}\n" for n in listed) + "commonLabels:\n  team: a\n"
    )
    return overlay


# Builds ``argv[1]`` in this process and reports how many files' documents came from a child
# and whether any child is left unreaped.
_SCRIPT = """
import json, os, sys
from orchestrator import parallel
from orchestrator.build import build
from orchestrator.errors import KrmError

used = {"docs": 0}
real_docs = parallel.Prefetch.docs
def docs(self, path, data):
    from_child = path in self.jobs and path not in self.own  # not parsed ahead by the parent
    found = real_docs(self, path, data)
    used["docs"] += from_child and found is not None
    return found
parallel.Prefetch.docs = docs

try:
    text = build(sys.argv[1]).to_yaml()
except KrmError as exc:
    text = "error: " + str(exc)
try:
    os.waitpid(-1, os.WNOHANG)
    left = True
except ChildProcessError:
    left = False
print(json.dumps({"text": text, "used": used, "children_left": left}))
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KRM_PARALLEL")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    env.update(extra)
    return env


def _report(path: Path, **env: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(path)],
        capture_output=True,
        text=True,
        env=_env(**env),
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, object] = json.loads(proc.stdout)
    return report


def _cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        env=_env(XDG_CACHE_HOME=str(cwd / "cache"), **env),
        cwd=cwd,
        check=False,
        timeout=120,
    )


@pytest.mark.parametrize("children", ["1", "3"])
def test_children_parse_what_one_process_would(tmp_path: Path, children: str) -> None:
    overlay = _tree(tmp_path)
    alone = _report(overlay, KRM_PARALLEL="0")
    shared = _report(overlay, KRM_PARALLEL=children)
    assert alone["used"] == {"docs": 0}
    used = shared["used"]
    assert isinstance(used, dict)
    assert used["docs"] >= 2, used
    assert shared["text"] == alone["text"]
    assert str(alone["text"]).count("kind: CustomResourceDefinition") == 9
    assert shared["children_left"] is False
    cli_alone = _cli("build", "--no-cache", str(overlay), cwd=tmp_path, KRM_PARALLEL="0")
    cli_shared = _cli("build", "--no-cache", str(overlay), cwd=tmp_path, KRM_PARALLEL=children)
    assert cli_alone.returncode == cli_shared.returncode == 0, cli_shared.stderr
    assert cli_shared.stdout == cli_alone.stdout
    assert cli_alone.stdout.count("kind: CustomResourceDefinition") == 9


@pytest.mark.parametrize("die_after", ["0", "100", "400000"])
def test_a_child_that_dies_leaves_its_work_to_the_parent(tmp_path: Path, die_after: str) -> None:
    overlay = _tree(tmp_path)
    alone = _report(overlay, KRM_PARALLEL="0")
    dying = _report(overlay, KRM_PARALLEL="1", KRM_PARALLEL_DIE_AFTER=die_after)
    assert dying["text"] == alone["text"]
    assert dying["used"] == {"docs": 0}
    assert dying["children_left"] is False


@pytest.mark.parametrize(
    "last",
    [
        _crd("epsilons", extra="  bad: [unclosed\n"),  # a YAML error, found by the child
        "apiVersion: v1\ndata:\n  x: " + "y" * 300_000 + "\n",  # no kind: found by the parent
        "\xff".join(["a: b"] * 80_000),  # not UTF-8 (written as such below)
    ],
    ids=["yaml", "no-kind", "utf8"],
)
def test_a_file_that_fails_gives_the_same_error(tmp_path: Path, last: str) -> None:
    overlay = _tree(tmp_path, last=last)
    if "\xff" in last:
        (tmp_path / "crds" / "epsilons.yaml").write_bytes(last.encode("latin-1"))
    alone = _cli("build", "--no-cache", str(overlay), cwd=tmp_path, KRM_PARALLEL="0")
    shared = _cli("build", "--no-cache", str(overlay), cwd=tmp_path, KRM_PARALLEL="1")
    assert alone.returncode == shared.returncode != 0
    assert alone.stderr and shared.stderr == alone.stderr
    assert shared.stdout == alone.stdout == ""
    report = _report(overlay, KRM_PARALLEL="1")
    assert str(report["text"]).startswith("error: ")
    assert report["children_left"] is False


def test_the_build_cache_still_records_every_file(tmp_path: Path) -> None:
    overlay = _tree(tmp_path)
    # Children as many as the cores and the load allow: what decides (/proc/loadavg) is no
    # observation of the build.
    cold = _cli("build", str(overlay), cwd=tmp_path)
    assert cold.returncode == 0, cold.stderr
    (entry,) = (tmp_path / "cache" / "krm" / "builds").glob("*/*.entry")
    manifest, output = buildcache.unpack(entry.read_bytes())
    assert output == cold.stdout.encode()
    assert not [path for _, path, _ in manifest["observations"] if path.startswith("/proc")]
    reads = {path for op, path, _ in manifest["observations"] if op == "read"}
    crds = tmp_path / "crds"
    assert {str(p) for p in crds.iterdir()} <= reads
    # The last large file is a child's: changed, it must be read and parsed again.
    last = crds / "epsilons.yaml"
    last.write_text(last.read_text().replace("Field 7 of", "Field seven of"))
    warm = _cli("build", str(overlay), cwd=tmp_path, KRM_PARALLEL="1")
    alone = _cli("build", "--no-cache", str(overlay), cwd=tmp_path, KRM_PARALLEL="0")
    assert "Field seven of" in warm.stdout
    assert warm.stdout == alone.stdout


def test_batch_builds_are_unchanged(tmp_path: Path) -> None:
    _tree(tmp_path / "src")
    outs = {}
    for setting in ("0", "1"):
        out = tmp_path / f"out{setting}"
        done = _cli(
            "build",
            "--batch",
            str(tmp_path / "src"),
            "-o",
            str(out),
            cwd=tmp_path,
            KRM_PARALLEL=setting,
        )
        assert done.returncode == 0, done.stderr
        outs[setting] = {
            str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()
        }
    assert outs["1"] == outs["0"]
    assert len(outs["0"]["overlay/build.yaml"]) > 1_000_000


def test_a_base_two_overlays_share_gets_its_own_documents_each_time(tmp_path: Path) -> None:
    """The whole tree's files are parsed ahead once; a base read twice in one build (two
    overlays of one parent) is parsed again the second time, so the overlays' changes to the
    first copy cannot reach the second."""
    base = tmp_path / "base"
    base.mkdir()
    names = []
    for plural in _PLURALS:  # large namespaced resources (CRDs would not take the prefix)
        (base / f"{plural}.yaml").write_text(
            _crd(plural).replace("kind: CustomResourceDefinition", "kind: Widget", 1)
        )
        names.append(f"{plural}.yaml")
    (base / "cm.yaml").write_text(_CM.format(name="shared"))
    (base / "kustomization.yaml").write_text(
        "resources:\n" + "".join(f"- {n}\n" for n in [*names, "cm.yaml"])
    )
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "kustomization.yaml").write_text(
            f"resources:\n- ../base\nnamePrefix: {side}-\ncommonLabels:\n  side: {side}\n"
        )
    top = tmp_path / "top"
    top.mkdir()
    (top / "kustomization.yaml").write_text("resources:\n- ../a\n- ../b\n")
    alone = _report(top, KRM_PARALLEL="0")
    shared = _report(top, KRM_PARALLEL="1")
    assert shared["text"] == alone["text"]
    assert "name: a-shared" in str(alone["text"]) and "name: b-shared" in str(alone["text"])
    used = shared["used"]
    assert isinstance(used, dict) and used["docs"] >= 1  # a child's documents were taken
    assert shared["children_left"] is False


def test_documents_parsed_ahead_are_given_once_and_only_for_the_same_bytes() -> None:
    prefetch = parallel.Prefetch()
    prefetch.own["/x.yaml"] = (b"a: 1\n", [{"a": 1}])
    prefetch.own["/y.yaml"] = (b"b: 1\n", [{"b": 1}])
    assert prefetch.has("/x.yaml")
    assert prefetch.docs("/x.yaml", b"a: 1\n") == [{"a": 1}]
    assert prefetch.docs("/x.yaml", b"a: 1\n") is None  # a second read parses it again
    assert prefetch.docs("/y.yaml", b"b: 2\n") is None  # the file changed since: parse it
    assert not prefetch.has("/y.yaml")
