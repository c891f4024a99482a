"""Generate ``fieldspecs.json`` from ``fieldspecs.yaml`` (the commented source of truth).

The engine reads the JSON copy at start-up: ``json`` parses it in well under a millisecond,
where the YAML loader needs several. ``tests/orchestrator/test_fieldspec_data.py`` checks that
the two hold the same data. Run after editing the YAML::

    python orchestrator/data/gen_fieldspecs.py
"""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator import yamlio

HERE = Path(__file__).parent
YAML_FILE = HERE / "fieldspecs.yaml"
JSON_FILE = HERE / "fieldspecs.json"


def render() -> str:
    """The JSON text for the current YAML file."""
    data = yamlio.load(YAML_FILE.read_bytes(), source=str(YAML_FILE))
    sections = []
    for key, items in data.items():
        # one field spec (or one nameReference entry) a line, so diffs stay readable
        lines = ",\n".join("  " + json.dumps(item) for item in items)
        sections.append(f"{json.dumps(key)}: [\n{lines}\n]")
    return "{\n" + ",\n".join(sections) + "\n}\n"


if __name__ == "__main__":
    JSON_FILE.write_text(render(), encoding="utf-8")
