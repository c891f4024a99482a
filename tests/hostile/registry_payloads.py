"""Hostile bytes for the registry's entry points, each with the exact problem it must produce.

Shared by tests/hostile/test_registry_*.py. Catalog documents: (bytes, [(path, message, line,
column)]). The sizes are the issue's: nesting to 100,000 levels, a scalar over the 5 MiB limit.
"""

from __future__ import annotations

from tests.catalogs.bad_documents import ALIAS_BOMB

HEAD = "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: x\n"
LIMIT = 5 * 1024 * 1024  # CATALOG_MAX_BYTES's default
HUGE = (HEAD + "spec:\n  krmFunctions: []\n  x: " + "y" * (LIMIT + 1000) + "\n").encode()

YAML_DOCUMENTS: dict[str, tuple[bytes, list[tuple[str, str, int | None, int | None]]]] = {
    "alias-bomb": (
        ALIAS_BOMB.encode(),
        [("", "YAML aliases are not allowed in a catalog (*a)", 2, 8)],
    ),
    "deep-lists-100000": (
        b"[" * 100_000 + b"]" * 100_000,
        [("", "nested deeper than 100 levels", 1, 101)],
    ),
    "deep-maps-100000": (
        b"a: " + b"{a: " * 100_000 + b"}" * 100_000,
        [("", "nested deeper than 100 levels", 1, 400)],
    ),
    "huge-scalar": (
        HUGE,
        [("", f"catalog is {len(HUGE)} bytes, over the limit of {LIMIT} bytes", None, None)],
    ),
    "invalid-utf8": (
        HEAD.encode() + b"spec: \xff\xfe\n",
        [("", "not valid UTF-8 (byte 0xff); a catalog must be UTF-8", 5, 7)],
    ),
    "duplicate-keys": ((HEAD + "kind: Catalog\n").encode(), [("", "duplicate key 'kind'", 5, 1)]),
    "nul-byte": (
        HEAD.encode() + b"spec:\n  krmFunctions: []\n# \x00\n",
        [
            (
                "",
                "character #x0000 is not allowed: control characters are not allowed",
                7,
                3,
            )
        ],
    ),
}

# JSON request bodies, with the exact 400 answer of any endpoint that reads JSON.
JSON_BODIES: dict[str, tuple[bytes, dict]] = {
    "deep-arrays-100000": (
        b"[" * 100_000 + b"]" * 100_000,
        {"detail": "JSON parse error - nested deeper than 200 levels."},
    ),
    "deep-objects-100000": (
        b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        {"detail": "JSON parse error - nested deeper than 200 levels."},
    ),
    "invalid-utf8": (
        b'{"content": "\xff"}',
        {"detail": "JSON parse error - not valid UTF-8 (byte 0xff)."},
    ),
    "duplicate-keys": (
        b'{"content": "a", "content": "b"}',
        {"detail": "JSON parse error - duplicate key 'content'"},
    ),
    "nan": (
        b'{"content": NaN}',
        {"detail": "JSON parse error - Out of range float values are not JSON compliant: 'NaN'"},
    ),
    "truncated": (
        b'{"content": "a',
        {
            "detail": "JSON parse error - Unterminated string starting at: line 1 column 13 "
            "(char 12)"
        },
    ),
}


def problems(name: str) -> list[dict]:
    """The expected ``problems`` of YAML document ``name`` as the API renders them."""
    return [
        {"path": p, "message": m, "line": line, "column": col}
        for p, m, line, col in YAML_DOCUMENTS[name][1]
    ]
