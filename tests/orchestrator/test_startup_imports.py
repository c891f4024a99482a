"""A small build imports only what it uses: start-up is most of the time of a small ``krm build``.

Each build runs in a fresh interpreter, which then reports the modules it loaded and, for each
module that must not be there, the module whose import loaded it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import orchestrator

# Modules a plain small build must not load (self import times here: PyYAML with its datetime
# and base64 ~9 ms; typing ~2 ms; hashlib with OpenSSL ~2.5 ms; datetime ~1 ms; copy with
# weakref ~0.6 ms; contextlib and argparse with gettext and locale ~0.4 and ~2 ms; re with
# enum ~2.5 ms, json ~1.4 ms: the engine's patterns come compiled (lazyre) and JSON is read
# by json's C scanner (jsonc); urllib.parse and base64 import re); nor the machinery that
# shares large builds with child processes (orchestrator.parallel, pickle); nor the
# collections package (~2 ms), which ryml's SWIG module imports and does not use.
NOT_LOADED = (
    "yaml",
    "typing",
    "hashlib",
    "datetime",
    "copy",
    "contextlib",
    "argparse",
    "re",
    "enum",
    "json",
    "urllib",
    "base64",
    "pickle",
    "orchestrator.parallel",
    "collections",
)

_SCRIPT = """
import sys

NOT_LOADED = set(sys.argv[2].split(","))
importers = {}


class _Watch:
    # Records which module asked for a watched one (the first frame outside importlib).
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name in NOT_LOADED and name not in importers:
            frame = sys._getframe(1)
            while frame is not None and frame.f_globals.get("__name__", "").startswith(
                ("importlib", "_frozen_importlib")
            ):
                frame = frame.f_back
            importers[name] = frame.f_globals.get("__name__") if frame else None
        return None


sys.meta_path.insert(0, _Watch)
from orchestrator.build import build

from orchestrator import kustomization

parsed = []
real_parse = kustomization.parse
def counting_parse(data, **kw):
    parsed.append(kw["source"])
    return real_parse(data, **kw)
kustomization.parse = counting_parse

result = build(sys.argv[1])
result.to_yaml()
modules = sorted(sys.modules)
import json
print(json.dumps({"modules": modules, "importers": importers,
                  "resources": len(result.resources), "parsed": parsed}))
"""

_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.25
"""
_SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - port: 80
"""


def _tree(root: Path) -> None:
    base, overlay = root / "base", root / "overlay"
    base.mkdir()
    overlay.mkdir()
    (base / "kustomization.yaml").write_text("resources:\n- deployment.yaml\n- service.yaml\n")
    (base / "deployment.yaml").write_text(_DEPLOYMENT)
    (base / "service.yaml").write_text(_SERVICE)
    (overlay / "kustomization.yaml").write_text(
        "resources:\n- ../base\nnamePrefix: prod-\nnamespace: prod\n"
        "labels:\n- pairs:\n    team: a\n"
        "configMapGenerator:\n- name: settings\n  literals:\n  - level=info\n"
        # A plain image name: matched without regular expressions.
        "images:\n- name: nginx\n  newTag: '1.27'\n"
    )
    patched = root / "patched"
    patched.mkdir()
    # A plain patch selector: matched without regular expressions.
    (patched / "kustomization.yaml").write_text(
        "resources:\n- ../base\n"
        "patches:\n- target:\n    kind: Deployment\n    name: web\n"
        "  patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n"
        "      name: web\n    spec:\n      replicas: 2\n"
    )


def _build_in_fresh_process(path: Path) -> dict[str, object]:
    env = dict(os.environ)
    # The orchestrator package under test, wherever it is imported from.
    env["PYTHONPATH"] = str(Path(orchestrator.__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(path), ",".join(NOT_LOADED)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out: dict[str, object] = json.loads(proc.stdout)
    return out


# A patch copies what it patches (copy.deepcopy): only regular expressions are pinned there.
@pytest.mark.parametrize(
    ("directory", "resources", "not_loaded"),
    [("base", 2, NOT_LOADED), ("overlay", 3, NOT_LOADED), ("patched", 2, ("re", "enum", "json"))],
)
def test_small_build_imports_only_what_it_uses(
    tmp_path: Path, directory: str, resources: int, not_loaded: tuple[str, ...]
) -> None:
    _tree(tmp_path)
    report = _build_in_fresh_process(tmp_path / directory)
    assert report["resources"] == resources  # the overlay's generated ConfigMap is hashed
    modules = report["modules"]
    assert isinstance(modules, list)
    importers = report["importers"]
    assert isinstance(importers, dict)
    loaded = {name: importers.get(name) for name in not_loaded if name in modules}
    assert loaded == {}, f"loaded by a small build (module: imported from): {loaded}"


def test_each_kustomization_is_parsed_once(tmp_path: Path) -> None:
    """The functions pre-check walks the tree before the build; the build reuses what it read."""
    _tree(tmp_path)
    report = _build_in_fresh_process(tmp_path / "overlay")
    parsed = report["parsed"]
    assert isinstance(parsed, list)
    assert sorted(Path(p).parent.name for p in parsed) == ["base", "overlay"]


def test_digest_without_openssl_equals_hashlib() -> None:
    """Both implementations digest.sha256 picks from (hashlib is loaded in this process)."""
    import _sha256  # type: ignore[import-not-found]
    import hashlib

    from orchestrator import digest

    data = b"apiVersion: v1\n" * 1000
    for payload in (data, b""):
        expected = hashlib.sha256(payload).hexdigest()
        assert digest.sha256(payload).hexdigest() == expected
        assert _sha256.sha256(payload).hexdigest() == expected
