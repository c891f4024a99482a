"""Hostile and invalid catalog documents, each with the exact problems the registry must report.

Each entry: document, then (path, message, line, column) per problem, in line order (a problem
found from its path has the line of that path, or of its deepest existing parent, and no column).
"""

from __future__ import annotations

VALID_HEAD = "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: bad\n"

# The classic "billion laughs": nine levels of nine aliases each.
ALIAS_BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{b}: &{b} [{','.join(['*' + a] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)

BAD_DOCUMENTS: dict[str, tuple[bytes | str, list[tuple[str, str, int | None, int | None]]]] = {
    "alias-bomb": (ALIAS_BOMB, [("", "YAML aliases are not allowed in a catalog (*a)", 2, 8)]),
    "not-a-mapping": ("- a\n- b\n", [("", "a catalog must be a mapping, got a list", None, None)]),
    "scalar": (
        "just a string\n",
        [("", "a catalog must be a mapping, got 'just a string'", None, None)],
    ),
    "empty": ("", [("", "the catalog is empty", None, None)]),
    "wrong-api-version": (
        "apiVersion: v1\nkind: Catalog\nmetadata:\n  name: x\nspec:\n  krmFunctions: []\n",
        [("apiVersion", "must be config.kubernetes.io/v1alpha1, got 'v1'", 1, None)],
    ),
    "wrong-kind": (
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: ConfigMap\nmetadata:\n  name: x\n"
        "spec:\n  krmFunctions: []\n",
        [("kind", "must be Catalog or KRMFunctionCatalog, got 'ConfigMap'", 2, None)],
    ),
    "yaml-syntax": (
        VALID_HEAD.replace("name: bad", "name: [bad"),
        [
            (
                "",
                "did not find expected ',' or ']' (while parsing a flow sequence at line 4, "
                "column 9)",
                5,
                1,
            )
        ],
    ),
    "schema-errors": (
        VALID_HEAD + "spec:\n  krmFunctions:\n  - group: example.co\n    names:\n      kind: A\n"
        "    versions:\n    - name: v1\n      idempotent: maybe\n      runtime:\n        exec:\n"
        "          platforms:\n          - bin: a\n            os: linux\n            arch: amd64\n"
        "            uri: https://example.co/a.tgz\n",
        [
            (
                "spec.krmFunctions[0].versions[0].idempotent",
                "must be true or false, got 'maybe'",
                12,
                None,
            ),
            (
                "spec.krmFunctions[0].versions[0].runtime.exec.platforms[0].sha256",
                "required field is missing",
                16,
                None,
            ),
        ],
    ),
    "two-documents": (
        VALID_HEAD + "---\n" + VALID_HEAD,
        [("", "a catalog is one YAML document, but another document starts here", 5, 1)],
    ),
    "not-utf8": (
        b"\xff\xfe\x00bad",
        [("", "not valid UTF-8 (byte 0xff); a catalog must be UTF-8", 1, 1)],
    ),
    "duplicate-key": (
        VALID_HEAD + "kind: Catalog\n",
        [("", "duplicate key 'kind'", 5, 1)],
    ),
    # KEP-2906: a container image whose tag is a semantic version must be pinned by sha256.
    "semver-tag-unpinned": (
        VALID_HEAD + "spec:\n  krmFunctions:\n  - group: example.co\n    names:\n      kind: A\n"
        "    versions:\n    - name: v1\n      runtime:\n        container:\n"
        "          image: registry.example.co/a:v1.2.3\n",
        [
            (
                "spec.krmFunctions[0].versions[0].runtime.container.sha256",
                "required: the image tag 'v1.2.3' is a semantic version, so the image must be "
                "pinned (sha256, or @sha256:<digest> in image)",
                13,
                None,
            )
        ],
    ),
    # The same (group, kind, version) twice in one catalog, once per KEP shape of the kind.
    "duplicate-function": (
        VALID_HEAD + "spec:\n  krmFunctions:\n  - group: example.co\n    names:\n      kind: A\n"
        "    versions:\n    - name: v1\n      runtime:\n        container:\n"
        "          image: registry.example.co/a:v1\n"
        "  - group: example.co\n    kind: A\n"
        "    versions:\n    - name: v1\n      runtime:\n        container:\n"
        "          image: registry.example.co/a-again:v1\n",
        [
            (
                "spec.krmFunctions[1].versions[0].name",
                "duplicate function example.co/v1 A (first defined at "
                "spec.krmFunctions[0].versions[0])",
                18,
                None,
            )
        ],
    ),
    # The schema checks fields in its own order; problems are listed in the document's.
    "fields-out-of-order": (
        VALID_HEAD
        + "spec:\n  krmFunctions:\n  - versions:\n    - name: v1\n      idempotent: maybe\n"
        "      runtime:\n        container:\n          image: registry.example.co/b:v1\n"
        "    names:\n      kind: 5\n    group: 3\n",
        [
            (
                "spec.krmFunctions[0].versions[0].idempotent",
                "must be true or false, got 'maybe'",
                9,
                None,
            ),
            ("spec.krmFunctions[0].names.kind", "must be a string, got an integer", 14, None),
            ("spec.krmFunctions[0].group", "must be a string, got an integer", 15, None),
        ],
    ),
}


def expected_problems(name: str) -> list[dict]:
    """The problems of BAD_DOCUMENTS[name] as the API renders them."""
    return [
        {"path": path, "message": message, "line": line, "column": column}
        for path, message, line, column in BAD_DOCUMENTS[name][1]
    ]
