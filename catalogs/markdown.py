"""Catalog-supplied Markdown (usage and example text) rendered to HTML that is safe to inline.

markdown-it-py parses CommonMark (with tables and strikethrough; raw HTML is parsed too, since
READMEs use it), then nh3 (the ammonia sanitizer) keeps only an allow-list of tags and
attributes: no script or style (their content goes too), no ``on*`` or ``style`` attributes, no
``javascript:``/``data:`` URLs, and every link gets ``rel="nofollow noopener noreferrer"``.
Images are never loaded (the registry serves no asset from elsewhere): they become links.
Relative links are dropped: they would point into the registry, not at the author's files.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

MAX_MARKDOWN_CHARS = 8_000  # longer text is cut at a line and says so (the page-weight budget)
MAX_CODE_SCAN_CHARS = 60_000  # searched for YAML code blocks
TRUNCATED_NOTE = "*The text is longer than this page shows; the catalog has all of it.*"

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "kbd", "li", "ol", "p", "pre", "s", "span",
    "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
_ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "ol": {"start"},
    "td": {"align"},
    "th": {"align"},
    "code": {"class"},
}
_URL_SCHEMES = {"http", "https", "mailto"}


def _image_as_link(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """An image becomes a link to it: nothing is fetched from elsewhere when the page loads."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    return f'<a href="{html.escape(src)}">[image: {html.escape(alt)}]</a>'


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.add_render_rule("image", _image_as_link)
    return md


_MD = _parser()
# Code blocks only: block-level parsing, no inline rules (a third of the work).
_BLOCKS = MarkdownIt("commonmark", {"html": True}).disable("inline")


def _absolute_or_anchor(tag: str, attribute: str, value: str) -> str | None:
    if attribute == "href" and not value.lower().startswith(("https://", "http://", "mailto:")):
        return None  # relative: would resolve inside the registry
    if attribute == "class" and not value.startswith("language-"):
        return None
    return value


def markdown_html(text: str, *, heading_offset: int = 2) -> str:
    """``text`` as sanitized HTML; Markdown headings move down ``heading_offset`` levels."""
    if len(text) > MAX_MARKDOWN_CHARS:
        text = text[: text.rfind("\n", 0, MAX_MARKDOWN_CHARS) + 1 or MAX_MARKDOWN_CHARS]
        text += "\n\n" + TRUNCATED_NOTE + "\n"
    return _markdown_html(text, heading_offset)


# Catalog text never changes once published: the same text renders to the same HTML, so a
# process keeps the last few (keys are cut to the limit first: at most 256 × 8,000 characters).
@functools.lru_cache(maxsize=256)
def _markdown_html(text: str, heading_offset: int) -> str:
    tokens = _MD.parse(text)
    for token in tokens:
        # A README's "# Title" sits under the page's own headings.
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + heading_offset)}"
    rendered = _MD.renderer.render(tokens, _MD.options, {})
    return nh3.clean(
        rendered,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        attribute_filter=_absolute_or_anchor,
        link_rel="nofollow noopener noreferrer",
        strip_comments=True,
    )


def markdown_code_blocks(text: str) -> tuple[tuple[str, str], ...]:
    """(info string, content) of every fenced or indented code block of ``text`` (its first
    ``MAX_CODE_SCAN_CHARS`` characters)."""
    return _code_blocks(text[:MAX_CODE_SCAN_CHARS])


@functools.lru_cache(maxsize=256)
def _code_blocks(text: str) -> tuple[tuple[str, str], ...]:
    return tuple(
        (t.info.strip().lower(), t.content)
        for t in _BLOCKS.parse(text)
        if t.type in ("fence", "code_block")
    )
