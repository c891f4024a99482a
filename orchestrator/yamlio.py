"""YAML input and output, matching kustomize's reading and writing.

Reading follows go-yaml v3 (what kyaml uses): YAML 1.2 core-schema scalars, so
``yes``/``on``/``no`` and timestamps stay strings, and keys are always strings.
Writing follows what ``kustomize build`` prints: each resource goes through JSON
and go-yaml v2 (sigs.k8s.io/yaml), so keys are sorted in go-yaml's natural order,
sequences are indentless, strings that go-yaml v2 would read as something else are
double-quoted, and multi-line strings become literal block scalars.

Texts are read by ``yamlfast`` (rapidyaml) where it can show it agrees with PyYAML's
libyaml bindings, and by ``yamlpy`` (PyYAML's C loader, with the limits of ``yamllimits``)
otherwise; output is written by ``yamlemit``, with libyaml's emitter (in ``yamlpy``) for the
rare documents it defers. ``yamlpy`` and PyYAML are imported only when a text or a document
needs them: a small build never loads them.
"""

from __future__ import annotations

from orchestrator import yamlemit, yamlfast
from orchestrator.errors import YamlError
from orchestrator.yamllimits import decode_error
from orchestrator.yamlscalar import (  # the names other modules reach through yamlio
    _ORDER_CACHE as _ORDER_CACHE,
)
from orchestrator.yamlscalar import (
    _STR as _STR,
)
from orchestrator.yamlscalar import (
    _STYLE_CACHE as _STYLE_CACHE,
)
from orchestrator.yamlscalar import (
    _number_text as _number_text,
)
from orchestrator.yamlscalar import (
    _plain_implicit as _plain_implicit,
)
from orchestrator.yamlscalar import (
    _str_style as _str_style,
)
from orchestrator.yamlscalar import (
    _v2_plain as _v2_plain,
)
from orchestrator.yamlscalar import (
    _v3_plain as _v3_plain,
)
from orchestrator.yamlscalar import (
    go_sorted_keys as go_sorted_keys,
)
from orchestrator.yamlscalar import (
    scalar_text as scalar_text,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from orchestrator.yamlpy import Loader as Loader
    from orchestrator.yamlpy import Loader11 as Loader11
    from orchestrator.yamlpy import _construct as _construct
    from orchestrator.yamlpy import _mark as _mark

# Names of the PyYAML path that other modules reach through this one (``yamlio.Loader``...).
_PYYAML_NAMES = frozenset(("Loader", "Loader11", "_construct", "_mark"))


def __getattr__(name: str) -> Any:
    """``Loader``, ``Loader11``, ``_construct``, ``_mark``: imported from ``yamlpy`` when asked."""
    if name in _PYYAML_NAMES:
        from orchestrator import yamlpy

        return getattr(yamlpy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ----------------------------------------------------------------------------- reading


def load_all(text: str | bytes, *, source: str | None = None, fold: bool = True) -> list[Any]:
    """Parse every document of a YAML stream; empty documents are dropped.

    ``fold``: folded block scalars (``>``) as kustomize leaves them in the resources it reads
    (its go-yaml round trip: ``yamlscalar.goyaml_folded``); False for documents kustomize
    does not read as resources (catalogs, schemas, lock files), which keep the spec's value.
    """
    return _load_docs(False, text, source, fold)


def _load_docs(v2: bool, text: str | bytes, source: str | None, fold: bool = False) -> list[Any]:
    """The non-empty documents of a stream, with go-yaml v2's typing or else v3's (``fold``:
    folded scalars as go-yaml's round trip leaves them, see ``load_all``)."""
    raw = None
    if isinstance(text, bytes):
        if text[:2] not in (b"\xff\xfe", b"\xfe\xff") and text[:3] != b"\xef\xbb\xbf":
            raw = text  # UTF-8 as it is: the fast path parses these bytes
        text = decode(text, source=source)
    if yamlfast.wanted(text):
        fast = yamlfast.load_docs(text, raw, _v2_plain if v2 else _v3_plain, fold=fold)
        if fast is not None:
            return fast
    from orchestrator import yamlpy  # PyYAML: only for the texts the fast path declines

    return yamlpy.load_docs(v2, text, source, fold=fold)


def load_yaml11(text: str | bytes, *, source: str | None = None) -> list[Any]:
    """Parse a YAML stream with go-yaml v2's YAML 1.1 typing (y/yes/on are booleans)."""
    return _load_docs(True, text, source)


def load(text: str | bytes, *, source: str | None = None, fold: bool = True) -> Any:
    """Parse a single-document YAML text (None when empty; ``fold``: see ``load_all``)."""
    docs = load_all(text, source=source, fold=fold)
    if len(docs) > 1:
        raise YamlError("expected a single YAML document", file=source)
    return docs[0] if docs else None


def decode(data: bytes, *, source: str | None = None) -> str:
    """Decode file bytes as UTF-8 (or UTF-16/32 when a BOM says so)."""
    try:
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            return data.decode("utf-16")
        if data[:3] == b"\xef\xbb\xbf":
            return data[3:].decode("utf-8")
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise decode_error(data, exc, source) from None


# ----------------------------------------------------------------------------- writing

_WRITER = yamlemit.Writer(
    str_style=_str_style,
    plain_implicit=_plain_implicit,
    sorted_keys=go_sorted_keys,
    scalar_text=scalar_text,
    number_text=_number_text,
)


def fast_dump(obj: Any) -> str:
    """``dump`` by the fast writer alone (raises ``yamlemit.Fallback`` where it defers)."""
    return _WRITER.dump(obj)


def dump(obj: Any) -> str:
    """One object as kustomize prints it (no document separator)."""
    try:
        return _WRITER.dump(obj)
    except yamlemit.Fallback:
        return libyaml_dump(obj)


def libyaml_dump(obj: Any) -> str:
    """``dump`` through PyYAML nodes and libyaml's emitter (the reference writer)."""
    from orchestrator import yamlpy

    return yamlpy.libyaml_dump(obj)


def dump_all(objs: Iterable[Any]) -> str:
    """Objects as a kustomize stream: each dumped, joined with ``---`` lines."""
    return "---\n".join(dump(o) for o in objs)


def dump_all_bytes(objs: Iterable[Any]) -> bytes:
    """``dump_all(objs)`` encoded as UTF-8, each document on its own: a text holding one
    non-ASCII character is encoded character by character, so a large output stays ASCII
    (a copy) in all the documents but the few that are not (12 MB of argo-workflows' CRDs
    with one 'µ': ~8 ms less)."""
    return b"---\n".join(dump(o).encode("utf-8") for o in objs)
