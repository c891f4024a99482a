"""The shared composition corpus (kustomize PR 4323 fixtures), run in-process.

The conformance runner (``tests/conformance/run composition``) drives the CLI; this
keeps the same cases in the test suite: outputs compared as YAML documents, error cases
checked against every regular expression of the prototype's ``errors.txt``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from orchestrator.build import BuildOptions
from orchestrator.composition import build
from orchestrator.errors import KrmError
from orchestrator.functions import FnOptions

CASES = Path(__file__).resolve().parents[2] / "conformance" / "composition" / "cases"
CASE_DIRS = (
    sorted(p for p in CASES.iterdir() if (p / "case.yaml").exists()) if CASES.is_dir() else []
)


@pytest.mark.skipif(not CASE_DIRS, reason="the shared conformance corpus is not on this machine")
@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_corpus_case(case: Path) -> None:
    meta = yaml.safe_load((case / "case.yaml").read_text())
    build_dir = str(case / meta.get("build", "."))
    flags = meta.get("flags") or []
    assert set(flags) <= {"--enable-alpha-plugins"}, flags  # the flags this test knows
    options = BuildOptions(
        functions=FnOptions(enable_alpha_plugins="--enable-alpha-plugins" in flags)
    )
    if meta["expect"] == "output":
        got = build(build_dir, options).to_yaml()
        want = (case / "expected.yaml").read_text()
        assert list(yaml.safe_load_all(got)) == list(yaml.safe_load_all(want))
        return
    with pytest.raises(KrmError) as info:
        build(build_dir, options)
    message = f"Error: {info.value}"
    for line in (case / "errors.txt").read_text().splitlines():
        if line.strip():
            rx = line.replace(meta["harness_path"], re.escape(os.path.abspath(build_dir)))
            assert re.search(rx, message), (line, message)
