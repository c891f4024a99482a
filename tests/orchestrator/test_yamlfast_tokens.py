"""The fast reader's typing checks learn many tokens at once: the same answers as one by one.

``yamlfast._learn_disagreements`` asks ryml about all of a text's new tokens in one flow
sequence and one flow map; ``_disagreement`` asks about one token at a time. For every token
of the vendored corpus and a list of tricky spellings, both must agree, with go-yaml v3's
typing and v2's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator import yamlfast, yamlio

CORPUS = Path(__file__).resolve().parents[1] / "data" / "yamlfast"
TRICKY = [
    "~", "null", "Null", "NULL", "True", "TRUE", "False", "y", "Y", "n", "yes", "No", "on",
    "OFF", "0", "-0", "+1", "007", "0o17", "0x1F", "0X1f", "0b101", "1_000", "1.0", "1.", ".5",
    "-.5", "+.5", "1e3", "1E+3", "1.5e-3", ".inf", "-.inf", "+.inf", ".nan", ".NaN", "inf",
    "nan", "-inf", "1.2.3", "v1", "2024-01-01", "12:30", "0.0.0.0", "1-2", "-1-", "9" * 30,
    "0." + "0" * 20 + "1", "1e400", "-1e400", "1_0.5", "0x", "0o", "+", ".", "-.",
]  # fmt: skip


# Spellings of numbers and versions as manifests hold them (ports, tags, modes, sizes).
_SPELLINGS = (
    str,
    lambda i: f"0{i}",
    lambda i: f"1.{i}.0",
    lambda i: f"{i}.{i}",
    lambda i: f"{i}e{i % 7}",
    lambda i: f"0x{i:x}",
    lambda i: f"-{i}_{i}",
    lambda i: f"+{i}.",
)


def _corpus_tokens() -> set[str]:
    tokens: set[str] = set()
    for path in sorted(CORPUS.rglob("*")):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            tokens |= yamlfast._tokens(yamlfast._lines(text)[1])
    return tokens


@pytest.mark.parametrize("plain", [yamlio._v3_plain, yamlio._v2_plain], ids=["v3", "v2"])
def test_learning_many_tokens_at_once_gives_each_tokens_answer(plain: Callable[[str], Any]) -> None:
    generated = {f(i) for i in range(200) for f in _SPELLINGS}
    tokens = _corpus_tokens() | set(TRICKY) | generated
    assert len(tokens) > 1000
    yamlfast._import_ryml()
    yamlfast._DISAGREE.clear()
    with yamlfast._QuietStderr():
        yamlfast._learn_disagreements(tokens, plain)
    learned = {t: yamlfast._DISAGREE.get((t, plain)) for t in tokens}
    assert all(answer is not None for answer in learned.values())  # all learned in one go
    yamlfast._DISAGREE.clear()
    with yamlfast._QuietStderr():
        one_by_one = {t: yamlfast._disagreement(t, plain) for t in tokens}
    assert learned == one_by_one
    assert any(value is not None for value, _ in one_by_one.values())  # some do disagree
