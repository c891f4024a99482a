"""Hostile YAML against every engine entry point that reads untrusted bytes, through ``krm``.

Each case is a value for a ``spec`` field on line 5 of the document an entry point reads: a
resource, a kustomization, a patch, a Composition, an exec function's ResourceList output, and a
catalog read by ``krm view catalog``. ``krm`` runs as a subprocess; every refusal is one line
``Error: <file>: …`` with exit code 1, and an existing ``-o`` output file keeps its content. The
inputs are made by ``engine_inputs`` at test time: alias bombs, nesting of ``[``, ``{`` and block
collections to 100,000 levels, a huge scalar, bytes that are not UTF-8, duplicate keys, NUL.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from orchestrator.catalog import DEFAULT_MAX_BYTES
from orchestrator.yamllimits import MAX_DEPTH
from tests.hostile import engine_inputs as ei

ROOT = Path(__file__).resolve().parents[2]
PREVIOUS = "previous good output\n"


def _value(case: str) -> bytes:
    """The bytes after ``spec:`` (line 5, column 1) for a case."""
    kind, _, size = case.partition("-")
    if kind == "flow[":
        return b" " + ei.nested_flow(int(size) - 1, "[").encode()
    if kind == "flow{":
        return b" " + ei.nested_flow(int(size) - 1, "{").encode()
    if kind == "block":
        return ei.nested_block(int(size) - 1, 0).encode()
    if kind == "blockmap":
        return ei.nested_block_mappings(int(size) - 1, 0).encode()
    return {
        "alias_bomb": ei.alias_bomb().encode(),
        "invalid_utf8": b" caf\xe9 \xff\xfe",
        "duplicate_keys": b" {a: 1, b: 2, a: 3}",
        "nul": b" a\x00b",
        "huge_scalar": b" " + b"x" * (DEFAULT_MAX_BYTES + 1),
    }[case]


HEADS = {
    "resource": b"apiVersion: example.com/v1\nkind: Example\nmetadata:\n  name: x\n",
    "kustomization": b"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
    b"resources:\n- r.yaml\n",
    "patch": b"apiVersion: example.com/v1\nkind: Example\nmetadata:\n  name: x\n",
    "composition": b"apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\n"
    b"catalogs: []\ntransformers: []\n",
    "function_output": b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"
    b"results: []\n",
    "catalog": b"apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: x\n",
}
RESOURCE = HEADS["resource"] + b"spec: old\n"
FN_CONFIG = (
    "apiVersion: example.com/v1\nkind: Fn\nmetadata:\n  name: f\n  annotations:\n"
    "    config.kubernetes.io/function: |\n      exec:\n        path: ./fn.sh\n"
)


def _setup(tmp_path: Path, entry: str, doc: bytes) -> tuple[list[str], str]:
    """Write the tree for one entry point; returns the krm arguments and the file shown."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "r.yaml").write_bytes(RESOURCE)
    kustomization = b"resources:\n- r.yaml\n"
    if entry == "resource":
        (app / "r.yaml").write_bytes(doc)
        shown = "app/r.yaml"
    elif entry == "kustomization":
        kustomization = doc
        shown = "app/kustomization.yaml"
    elif entry == "patch":
        (app / "p.yaml").write_bytes(doc)
        kustomization += b"patches:\n- path: p.yaml\n"
        shown = "app/p.yaml"
    elif entry == "composition":
        (app / "composition.yaml").write_bytes(doc)
        return ["build", "app"], "app/composition.yaml"
    elif entry == "function_output":
        (app / "out.yaml").write_bytes(doc)
        (app / "fn.sh").write_text("#!/bin/sh\ncat out.yaml\n")
        (app / "fn.sh").chmod(0o755)
        (app / "fn.yaml").write_text(FN_CONFIG)
        kustomization += b"transformers:\n- fn.yaml\n"
        shown = "function example.com/v1/Fn 'f' (exec ./fn.sh, from annotation)"
    else:
        (tmp_path / "catalog.yaml").write_bytes(doc)
        return ["view", "catalog", "catalog.yaml"], "catalog.yaml"
    (app / "kustomization.yaml").write_bytes(kustomization)
    return ["build", "app", "--enable-exec"], shown


def _krm(tmp_path: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )


def _build_args(args: list[str]) -> list[str]:
    return [*args, "-o", "out.yaml"] if args[0] == "build" else args


DEPTH_ERROR = "nested deeper than 100 levels"
# (line, column) where each nesting case passes MAX_DEPTH: ``spec`` is depth 1, so the 100th
# collection of the value is the 101st level ("spec: " is 6 characters; "{a: " 4; "- " 2).
DEPTH_AT = {
    "flow[": (5, 7 + 99),
    "flow{": (5, 7 + 4 * 99),
    "block": (6, 1 + 2 * 99),
    "blockmap": (5 + 100, 1 + 100),
}
NESTING = [f"{k}-{n}" for k in ("flow[", "flow{", "block") for n in (1000, 25000, 100000)] + [
    "blockmap-1000"
]


def _yaml_error(case: str, entry: str) -> str:
    """The message the YAML reader gives for a case, after ``<file>: ``."""
    kind = case.partition("-")[0]
    if kind in DEPTH_AT:
        line, column = DEPTH_AT[kind]
        return f"{DEPTH_ERROR} (line {line}, column {column})"
    # The head of a kustomization writes one node fewer than the others.
    written = 23 if entry == "kustomization" else 24
    return {
        # l5's seventh alias of l4 (13,942 nodes each) takes the total over the floor.
        "alias_bomb": "too much aliasing: aliases expand to over 100000 nodes from "
        f"{written} written up to here (line 11, column 42)",
        "invalid_utf8": "not valid UTF-8: byte 0xe9 (line 5, column 10)",
        "duplicate_keys": 'invalid YAML: mapping key "a" already defined at line 5 '
        "(line 5, column 20)",
        "nul": "invalid YAML: control characters are not allowed: #x0000 (line 5, column 8)",
    }[case]


SHOWN = {
    "resource": "app/r.yaml",
    "kustomization": "app/kustomization.yaml",
    "patch": "app/p.yaml",
    "composition": "app/composition.yaml",
    "function_output": "function example.com/v1/Fn 'f' (exec ./fn.sh, from annotation) wrote "
    "output that is not YAML",
}
CASES = [*NESTING, "alias_bomb", "invalid_utf8", "duplicate_keys", "nul"]
# Duplicate keys are read as go-yaml v2 reads kustomization files (the last one wins) and
# as Composition fields (tested below): not a YAML error for those two.
BUILD_MATRIX = [
    (entry, case)
    for entry in SHOWN
    for case in CASES
    if not (case == "duplicate_keys" and entry in ("kustomization", "composition"))
]


@pytest.mark.parametrize(("entry", "case"), BUILD_MATRIX)
def test_krm_build_refuses(tmp_path: Path, entry: str, case: str) -> None:
    args, _ = _setup(tmp_path, entry, HEADS[entry] + b"spec:" + _value(case) + b"\n")
    (tmp_path / "out.yaml").write_text(PREVIOUS)
    proc = _krm(tmp_path, _build_args(args))
    assert (proc.returncode, proc.stderr) == (
        1,
        f"Error: {SHOWN[entry]}: {_yaml_error(case, entry)}\n",
    )
    assert proc.stdout == ""
    assert (tmp_path / "out.yaml").read_text() == PREVIOUS


def _catalog_error(case: str) -> str:
    kind = case.partition("-")[0]
    if kind in DEPTH_AT:
        line, column = DEPTH_AT[kind]
        return f"line {line}, column {column}: {DEPTH_ERROR}"
    return {
        "alias_bomb": "line 7, column 12: YAML aliases are not allowed in a catalog (*l0)",
        "invalid_utf8": "line 5, column 10: not valid UTF-8 (byte 0xe9); a catalog must be UTF-8",
        "duplicate_keys": "line 5, column 20: duplicate key 'a'",
        "nul": "line 5, column 8: character #x0000 is not allowed: control characters are not "
        "allowed",
    }[case]


@pytest.mark.parametrize("case", CASES)
def test_krm_view_catalog_refuses(tmp_path: Path, case: str) -> None:
    args, _ = _setup(tmp_path, "catalog", HEADS["catalog"] + b"spec:" + _value(case) + b"\n")
    proc = _krm(tmp_path, args)
    assert (proc.returncode, proc.stderr) == (
        1,
        f"Error: catalog catalog.yaml is invalid:\n{_catalog_error(case)}\n",
    )
    assert proc.stdout == ""


def test_huge_scalar_over_the_catalog_limit(tmp_path: Path) -> None:
    doc = HEADS["catalog"] + b"spec:" + _value("huge_scalar") + b"\n"
    args, _ = _setup(tmp_path, "catalog", doc)
    proc = _krm(tmp_path, args)
    assert (proc.returncode, proc.stderr) == (
        1,
        f"Error: cannot fetch catalog catalog.yaml: {tmp_path / 'catalog.yaml'} is {len(doc)} "
        f"bytes, over the limit of {DEFAULT_MAX_BYTES} bytes\n",
    )


def test_huge_scalar_in_a_resource_builds(tmp_path: Path) -> None:
    # kustomize has no size limit on resources; a large scalar is read and written linearly.
    big = _value("huge_scalar")
    args, _ = _setup(tmp_path, "resource", HEADS["resource"] + b"spec:" + big + b"\n")
    proc = _krm(tmp_path, args)
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout)["spec"] == big.decode().strip()


@pytest.mark.parametrize("kind", ["flow[", "flow{", "block"])
def test_nesting_up_to_the_limit_builds(tmp_path: Path, kind: str) -> None:
    args, _ = _setup(
        tmp_path, "resource", HEADS["resource"] + b"spec:" + _value(f"{kind}-{MAX_DEPTH}") + b"\n"
    )
    proc = _krm(tmp_path, args)
    assert proc.returncode == 0, proc.stderr
    value, depth = yaml.safe_load(proc.stdout), 0
    while isinstance(value, (dict, list)) and value:
        value = (
            value["spec"] if depth == 0 else (value[0] if isinstance(value, list) else value["a"])
        )
        depth += 1
    assert depth == MAX_DEPTH - (0 if kind == "block" else 1)  # an empty [] or {} ends the flow


def test_anchors_as_real_files_use_them_still_work(tmp_path: Path) -> None:
    doc = HEADS["resource"] + b"spec:" + ei.anchors_in_use().encode() + b"\n"
    args, _ = _setup(tmp_path, "resource", doc)
    (tmp_path / "app" / "kustomization.yaml").write_text(
        "resources:\n- r.yaml\ncommonLabels: &labels {app: web}\ncommonAnnotations: *labels\n"
    )
    proc = _krm(tmp_path, args)
    assert proc.returncode == 0, proc.stderr
    out = yaml.safe_load(proc.stdout)
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert out["spec"] == {
        "base": {"cpu": "100m", "memory": "64Mi"},
        "env": env,
        "first": {"cpu": "100m", "memory": "128Mi"},
        "second": env,
        "third": env,
    }
    assert out["metadata"] == {"annotations": {"app": "web"}, "labels": {"app": "web"}, "name": "x"}


def test_duplicate_keys_in_a_kustomization_last_one_wins(tmp_path: Path) -> None:
    args, _ = _setup(tmp_path, "resource", RESOURCE)
    (tmp_path / "app" / "kustomization.yaml").write_text(
        "resources:\n- r.yaml\nnamePrefix: a-\nnamePrefix: b-\n"
    )
    proc = _krm(tmp_path, args)
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout)["metadata"]["name"] == "b-x"


def test_duplicate_keys_in_a_composition_refused(tmp_path: Path) -> None:
    doc = (
        b"apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\ntransformers:\n"
        b"- {apiVersion: builtin, kind: LabelTransformer, metadata: {name: a},"
        b" labels: {a: b}, labels: {c: d}}\n"
        b"transformers: []\n"
    )
    args, _ = _setup(tmp_path, "composition", doc)
    (tmp_path / "out.yaml").write_text(PREVIOUS)
    proc = _krm(tmp_path, _build_args(args))
    assert (proc.returncode, proc.stderr) == (
        1,
        f"Error: app/composition.yaml: failed to decode Composition at path {tmp_path / 'app'}:\n"
        '  line 5: mapping key "transformers" already defined at line 3 (at transformers)\n'
        '  line 4: mapping key "labels" already defined at line 4 (at transformers[0].labels)\n',
    )
    assert (tmp_path / "out.yaml").read_text() == PREVIOUS


def test_huge_scalar_patched_onto_a_mapping_gives_a_short_error(tmp_path: Path) -> None:
    args, _ = _setup(tmp_path, "patch", HEADS["patch"] + b"spec:" + _value("huge_scalar") + b"\n")
    (tmp_path / "app" / "r.yaml").write_bytes(HEADS["resource"] + b"spec: {a: b}\n")
    (tmp_path / "out.yaml").write_text(PREVIOUS)
    proc = _krm(tmp_path, _build_args(args))
    shown = "x" * 2000  # of the scalar's DEFAULT_MAX_BYTES + 1 characters and YAML's "\n...\n"
    assert (proc.returncode, proc.stderr) == (
        1,
        "Error: app/p.yaml: Example/x: wrong node kind: expected MappingNode but got ScalarNode: "
        f"node contents:\n{shown}… ({DEFAULT_MAX_BYTES + 6} characters in all)\n\n",
    )
    assert (tmp_path / "out.yaml").read_text() == PREVIOUS


GOOD_CATALOG = HEADS["catalog"] + (
    b"spec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: Labeler\n"
    b"    versions:\n    - name: v1\n      runtime:\n        container:\n"
    b"          image: example/labeler:v1\n"
)


@pytest.fixture
def catalog_server() -> Iterator[tuple[str, dict[str, bytes]]]:
    """A real HTTP server on loopback serving ``/catalog.yaml`` from a dict, with ETags."""
    served: dict[str, bytes] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path != "/catalog.yaml":  # e.g. the .sig krm view catalog looks for
                self.send_error(404)
                return
            body = served["body"]
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            if self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/catalog.yaml", served
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("case", ["alias_bomb", "flow[-100000", "invalid_utf8"])
def test_hostile_catalog_download_keeps_the_cached_good_one(
    tmp_path: Path, catalog_server: tuple[str, dict[str, bytes]], case: str
) -> None:
    url, served = catalog_server
    served["body"] = GOOD_CATALOG
    good = _krm(tmp_path, ["view", "catalog", url])
    assert good.returncode == 0, good.stderr
    assert "example.com/v1  Labeler  container" in good.stdout
    served["body"] = HEADS["catalog"] + b"spec:" + _value(case) + b"\n"
    proc = _krm(tmp_path, ["view", "catalog", url])
    assert (proc.returncode, proc.stderr) == (
        1,
        f"Error: catalog {url} is invalid:\n{_catalog_error(case)}\n",
    )
    # The cache still holds the good catalog: --offline shows exactly what it showed before.
    offline = _krm(tmp_path, ["view", "catalog", "--offline", url])
    assert (offline.returncode, offline.stdout) == (0, good.stdout)


def test_nesting_at_the_limit_survives_merge_copy_and_dump(tmp_path: Path) -> None:
    # Accepted input at the deepest allowed level goes through a strategic merge patch, a JSON
    # patch, labels, a name prefix and the per-resource writer without hitting a recursion limit.
    deep = b" " + ei.nested_flow(MAX_DEPTH - 1, "{").encode()
    args, _ = _setup(tmp_path, "patch", HEADS["patch"] + b"spec:" + deep + b"\n")
    app = tmp_path / "app"
    (app / "r.yaml").write_bytes(HEADS["resource"] + b"spec:" + deep + b"\n")
    (app / "kustomization.yaml").write_text(
        "resources:\n- r.yaml\nnamePrefix: p-\nlabels:\n- pairs: {a: b}\n"
        "patches:\n- path: p.yaml\n- target: {kind: Example}\n"
        '  patch: \'[{"op": "add", "path": "/spec/b", "value": 1}]\'\n'
    )
    (tmp_path / "out").mkdir()
    proc = _krm(tmp_path, ["build", "app", "-o", "out"])
    assert proc.returncode == 0, proc.stderr
    out = yaml.safe_load((tmp_path / "out" / "example.com_v1_example_p-x.yaml").read_text())
    assert out["spec"]["b"] == 1
    value, depth = out["spec"]["a"], 3  # root 1, spec 2, spec.a 3, …
    while value:
        value, depth = value["a"], depth + 1
    assert depth == MAX_DEPTH
