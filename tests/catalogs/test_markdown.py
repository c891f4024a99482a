"""Catalog Markdown is rendered with markdown-it-py, sanitized with nh3: hostile input is inert."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from catalogs.markdown import MAX_MARKDOWN_CHARS, markdown_code_blocks, markdown_html

HOSTILE = """\
# Set namespace

<script>alert("script tag")</script>
<SCRIPT SRC=https://evil.example/x.js></SCRIPT>
<style>body { display: none }</style>
<img src="https://evil.example/pixel.gif" onerror="alert('img')">
<a href="javascript:alert('raw link')" onclick="alert('click')">raw link</a>
<div onmouseover="alert('hover')" style="position:fixed">hover me</div>
<iframe src="https://evil.example/frame"></iframe>
<object data="https://evil.example/x.swf"></object>
<form action="https://evil.example/"><input name="password"></form>
<svg onload="alert('svg')"><circle r="1"/></svg>

[md link](javascript:alert('md'))
[data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)
[VBScript](vbscript:msgbox(1))
[relative](/admin/)
![tracking pixel](https://evil.example/pixel.png)
<a href="JaVaScRiPt:alert(1)">mixed case</a>
<a href="&#106;avascript:alert(1)">entity</a>
<!-- a comment -->

[good link](https://example.com/docs "Docs")
"""


class _Elements(HTMLParser):
    """Every element and attribute of an HTML fragment, as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_comment(self, data):
        self.comments.append(data)


def test_hostile_markdown_and_html_are_sanitized():
    out = markdown_html(HOSTILE)
    parsed = _Elements()
    parsed.feed(out)
    tags = {tag for tag, _ in parsed.tags}
    assert tags <= {"h3", "p", "a", "div"}, tags
    for tag, attrs in parsed.tags:
        for name, value in attrs:
            assert name in ("href", "title", "rel"), (tag, name, value)
            if name == "href":
                assert value and value.startswith("https://"), value
    assert parsed.comments == []
    # Script and style bodies are gone, not shown as text.
    assert "script tag" not in out and "display: none" not in out
    # Links markdown-it refuses (javascript:, data:, vbscript:) stay inert text.
    assert "[md link](javascript:alert(&#x27;md&#x27;))" in out or "[md link](javascript:" in out
    # Text survives; the good link keeps its target and gets a safe rel.
    assert "hover me" in out and "raw link" in out
    assert (
        '<a href="https://example.com/docs" title="Docs" rel="nofollow noopener noreferrer">'
        "good link</a>" in out
    )


def test_images_become_links_and_nothing_loads_from_elsewhere():
    out = markdown_html("![the diagram](https://example.com/d.png)")
    assert "<img" not in out
    assert '<a href="https://example.com/d.png" rel="nofollow noopener noreferrer">' in out
    assert "[image: the diagram]" in out


def test_markdown_renders_headings_tables_and_code():
    text = (
        "# Usage\n\nSets **every** namespace.\n\n## Fields\n\n| field | type |\n|---|---|\n"
        "| namespace | string |\n\n```yaml\nspec:\n  namespace: a\n```\n"
    )
    out = markdown_html(text)
    # The README's headings sit under the page's <h2>.
    assert "<h3>Usage</h3>" in out and "<h4>Fields</h4>" in out
    assert "<strong>every</strong>" in out
    assert "<table>" in out and "<td>namespace</td>" in out
    assert '<code class="language-yaml">spec:\n  namespace: a\n</code>' in out


def test_long_markdown_is_cut_at_a_line_and_says_so():
    text = "".join(f"line {i} of a long README\n\n" for i in range(5000))
    assert len(text) > MAX_MARKDOWN_CHARS
    out = markdown_html(text)
    assert "longer than this page shows" in out
    assert len(out) < MAX_MARKDOWN_CHARS * 2
    assert "line 4999" not in out


@pytest.mark.parametrize(
    ("text", "blocks"),
    [
        ("```yaml\na: 1\n```\n", [("yaml", "a: 1\n")]),
        ("text\n\n    b: 2\n", [("", "b: 2\n")]),
        ("no code here", []),
    ],
)
def test_code_blocks_are_found(text, blocks):
    assert list(markdown_code_blocks(text)) == blocks
