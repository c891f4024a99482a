"""The engine reads the default field specs from ``data/fieldspecs.json``, generated from the
commented ``data/fieldspecs.yaml``: the two must hold the same data."""

from __future__ import annotations

import json

from orchestrator import fieldspec, yamlio
from orchestrator.data import gen_fieldspecs


def test_json_copy_matches_yaml_source() -> None:
    from_yaml = yamlio.load(gen_fieldspecs.YAML_FILE.read_bytes())
    from_json = json.loads(gen_fieldspecs.JSON_FILE.read_text(encoding="utf-8"))
    assert from_json == from_yaml
    assert gen_fieldspecs.JSON_FILE.read_text(encoding="utf-8") == gen_fieldspecs.render()
    assert fieldspec._default_data() == from_yaml


def test_split_path_fast_and_escaped_paths() -> None:
    assert fieldspec.split_path("spec/template/metadata/labels") == (
        "spec",
        "template",
        "metadata",
        "labels",
    )
    assert fieldspec.split_path("/a//b/") == ("a", "b")
    assert fieldspec.split_path("metadata/annotations/x.io\\/name") == (
        "metadata",
        "annotations",
        "x.io/name",
    )
