"""Write docs/cli.md, the `krm` CLI reference, from the real argparse parser.

Run `.venv/bin/python scripts/cli_reference.py` after changing a `krm` flag; tests/test_docs.py
fails while docs/cli.md differs from what this prints.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "cli.md"
WIDTH = "100"  # help is wrapped at COLUMNS - 2; fixed so the page does not depend on the terminal

HEADER = """# `krm` command reference

Generated from `krm --help` and each subcommand's `--help` by `scripts/cli_reference.py`
(a test fails when this page and the real help text differ). Usage notes and examples:
[Building with krm](guide/developer.md).
"""


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _walk(parser: argparse.ArgumentParser, words: list[str]) -> list[tuple[list[str], str]]:
    pages = [(words, parser.format_help())]
    for name, child in _subparsers(parser).items():
        pages.extend(_walk(child, [*words, name]))
    return pages


def render() -> str:
    """The reference page, as Markdown."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        from orchestrator.cli import _parser

        pages = _walk(_parser(), ["krm"])
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    parts = [HEADER]
    for words, text in pages:
        parts.append(f"\n## `{' '.join(words)}`\n\n```text\n{text.rstrip()}\n```\n")
    return "".join(parts)


def main() -> int:
    TARGET.write_text(render())
    print(f"wrote {TARGET.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
