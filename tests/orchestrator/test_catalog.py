"""orchestrator.catalog: both KEP-2906 shapes, the canonical form, every rule, hostile input.

Run without Django: ``.venv/bin/pytest -p no:django tests/orchestrator/test_catalog.py``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import pickle
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from orchestrator import catalog as catalog_module
from orchestrator.catalog import (
    API_VERSION,
    DEFAULT_MAX_BYTES,
    KINDS,
    SCHEMA_PATH,
    Catalog,
    CatalogError,
    FunctionDefinition,
    FunctionVersion,
    Problem,
    parse_catalog,
)
from orchestrator.errors import KrmError, ValidationError

DATA = Path(__file__).parent / "data" / "catalogs"
SHA_A = "a" * 64
SHA_B = hashlib.sha256(b"b").hexdigest()


def fn(**fields: Any) -> dict[str, Any]:
    """A minimal valid function entry, with ``fields`` replacing its parts."""
    entry: dict[str, Any] = {
        "group": "example.com",
        "names": {"kind": "Fn"},
        "versions": [{"name": "v1", "runtime": {"container": {"image": "example/fn:latest"}}}],
    }
    entry.update(fields)
    return entry


def doc(*functions: dict[str, Any], **top: Any) -> dict[str, Any]:
    """A catalog document holding ``functions``; ``top`` replaces top-level fields."""
    d: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "Catalog",
        "metadata": {"name": "t"},
        "spec": {"krmFunctions": list(functions)},
    }
    d.update(top)
    return d


def problems_of(data: bytes | str | dict[str, Any], **kwargs: Any) -> list[str]:
    """The problems parse_catalog reports, as the lines of str(CatalogError)."""
    text = json.dumps(data) if isinstance(data, dict) else data
    with pytest.raises(CatalogError) as err:
        parse_catalog(text, **kwargs)
    lines = [str(p) for p in err.value.problems]
    assert str(err.value) == "\n".join(lines)
    if isinstance(data, dict):
        # Catalog.from_dict runs the same validation on the same data.
        with pytest.raises(CatalogError) as again:
            Catalog.from_dict(data, strict=kwargs.get("strict", True))
        assert again.value.problems == err.value.problems
    return lines


def yaml_problem(data: bytes | str, **kwargs: Any) -> Problem:
    """The single problem of a document refused while reading its YAML."""
    with pytest.raises(CatalogError) as err:
        parse_catalog(data, **kwargs)
    assert len(err.value.problems) == 1, err.value.problems
    return err.value.problems[0]


# ----------------------------------------------------------------------------- shapes


def test_both_shapes_parse_to_the_same_canonical_bytes():
    catalog_shape = parse_catalog((DATA / "example-co.catalog.yaml").read_bytes())
    other_shape = parse_catalog((DATA / "example-co.krmfunctioncatalog.yaml").read_bytes())
    golden = (DATA / "example-co.canonical.yaml").read_bytes()
    assert catalog_shape.canonical_bytes() == golden
    assert other_shape.canonical_bytes() == golden
    assert catalog_shape.to_dict() == other_shape.to_dict()
    assert (
        catalog_shape.digest
        == other_shape.digest
        == ("sha256:" + hashlib.sha256(golden).hexdigest())
    )


def test_canonical_form_is_a_fixed_point_and_reads_the_same_in_yaml_1_1():
    golden = (DATA / "example-co.canonical.yaml").read_bytes()
    parsed = parse_catalog(golden)
    assert parsed.canonical_bytes() == golden
    # PyYAML's own (YAML 1.1) reader sees the same data: nothing in the canonical form is
    # ambiguous between 1.1 and 1.2 readers (e.g. tags: ["on"] stays a string).
    assert yaml.safe_load(golden) == parsed.to_dict()
    assert parsed.to_dict()["spec"]["krmFunctions"][2]["tags"] == ["mutator", "on"]


def test_model_of_the_sample_catalog():
    cat = parse_catalog((DATA / "example-co.krmfunctioncatalog.yaml").read_bytes())
    assert cat.name == "example-co-functions"
    assert cat.metadata == {
        "annotations": {"example.co/owner": "platform-team"},
        "labels": {"author": "ExampleCo"},
        "name": "example-co-functions",
    }
    assert [(f.group, f.kind) for f in cat.functions] == [
        ("example.com", "SetNamespace"),
        ("example.com", "SetLogger"),
        ("example.com", "EnsureNameSubstring"),
        ("example.com", "JavaApplication"),
    ]
    set_ns = cat.functions[0]
    assert set_ns.description == "Sets the namespace of every namespaced resource"
    assert set_ns.publisher == "example.com"
    assert set_ns.home == "https://example.com/functions/set-namespace"
    assert set_ns.maintainers == ["platform@example.com"]
    assert set_ns.tags == ["mutator", "namespace"]
    v1 = set_ns.versions[0]
    assert v1.name == "v1"
    assert v1.idempotent is True
    assert v1.usage == "https://example.com/functions/set-namespace/README.md"
    assert v1.examples == ["https://example.com/functions/set-namespace/examples/basic.md"]
    assert v1.license == "Apache-2.0"
    assert v1.schema["openAPIV3Schema"]["required"] == ["spec"]
    # "sha256:" prefix and upper-case hex normalized; requireNetwork: false dropped.
    assert v1.runtime == {
        "container": {
            "image": "docker.example.co/functions/set-namespace:v1.2.3",
            "sha256": "2c76f4f90bbec1a6cb6b89a155bd9f22d3afa553288b4cdfe15a41e26293fa5c",
        }
    }
    assert v1.runtime_kinds == ["container"]
    assert not v1.requires_network and not v1.requires_storage_mount
    logger = cat.functions[1].versions[0]
    assert logger.idempotent is False
    assert logger.maintainers == ["logging@example.com"]
    assert [p["os"] + "/" + p["arch"] for p in logger.runtime["exec"]["platforms"]] == [
        "linux/amd64",
        "linux/arm64",
        "darwin/arm64",
    ]
    star = cat.functions[2].versions[0]
    assert star.runtime_kinds == ["starlark"]
    assert star.schema is None and star.idempotent is None and star.license is None
    java = cat.functions[3]
    # The runtime beside versions applies to both versions; requireFilesystem is read as
    # requireStorageMount.
    assert [v.runtime for v in java.versions] == [java.versions[0].runtime] * 2
    assert java.versions[1].requires_network and java.versions[1].requires_storage_mount


def test_kep_minimal_example_fails_only_the_semver_pinning_rule():
    kep_minimal = """\
apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata: 
  name: "example-co-functions"
spec: 
  krmFunctions: 
  - group: example.com
    names:
      kind: JavaApplication
    description: "A Kustomize function that represents a Java based app"
    versions:
    - name: v1
    runtime: 
      container: 
        image: example/module_providers/java:v1.0.0
"""  # noqa: W291 - the KEP's text, trailing spaces included
    assert problems_of(kep_minimal) == [
        "spec.krmFunctions[0].runtime.container.sha256: required: the image tag 'v1.0.0' is a "
        "semantic version, so the image must be pinned (sha256, or @sha256:<digest> in image)"
    ]
    pinned = kep_minimal.replace("java:v1.0.0", f"java:v1.0.0\n        sha256: {SHA_A}")
    cat = parse_catalog(pinned)
    assert cat.find("example.com", "JavaApplication", "v1")[1].runtime == {
        "container": {"image": "example/module_providers/java:v1.0.0", "sha256": SHA_A}
    }


def test_kep_starlark_example_parses_to_a_uri_runtime():
    kep_starlark = """\
apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: "example-co-functions"
spec:
  krmFunctions:
  - group: example.com
    names:
      kind: GroovyApplication
    description: "A Kustomize function that can handle groovy apps"
    versions:
    - name: v1
    runtime:
      starlark: https://example.co/module_providers/starlark-func:v1.0.0
"""
    version = parse_catalog(kep_starlark).functions[0].versions[0]
    assert version.runtime == {
        "starlark": {"uri": "https://example.co/module_providers/starlark-func:v1.0.0"}
    }


def test_kep_full_example_with_a_bare_kind_in_a_catalog():
    # The KEP's "example representation", placeholders filled in: names.kind and bare kind mixed.
    text = f"""\
apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: "example-co-functions"
  labels:
    author: ExampleCo
spec:
  krmFunctions:
  - group: example.com
    names:
      kind: SetNamespace
    description: "A short description of the KRM function"
    publisher: example.com
    versions:
      - name: v1
        schema:
          openAPIV3Schema: {{type: object}}
        idempotent: true
        runtime:
          container:
            image: docker.example.co/functions/set-namespace:v1.2.3
            sha256: {SHA_A}
            requireNetwork: true
            requireStorageMount: false
        usage: https://example.com/README.md
        examples:
          - https://example.com/a/README.md
          - https://example.com/b/README.md
        license: Apache 2.0
    maintainers:
      - foo@example.com
    tags:
      - mutator
  - group: example.com
    kind: SetLogger
    description: "A short description of the KRM function"
    publisher: example.com
    versions:
      - name: v1
        idempotent: false
        runtime:
          exec:
            platforms:
              - bin: foo-amd64-linux
                os: linux
                arch: amd64
                uri: https://example.com/foo-amd64-linux.tar.gz
                sha256: {SHA_A}
              - bin: foo-amd64-darwin
                os: darwin
                arch: amd64
                uri: https://example.com/foo-amd64-darwin.tar.gz
                sha256: {SHA_B}
        license: Apache 2.0
    home: https://example.com
    maintainers:
      - foo@example.com
"""
    cat = parse_catalog(text)
    assert [f.kind for f in cat.functions] == ["SetNamespace", "SetLogger"]
    assert cat.functions[0].versions[0].license == "Apache 2.0"
    assert cat.functions[0].versions[0].requires_network
    assert not cat.functions[0].versions[0].requires_storage_mount
    assert cat.functions[1].versions[0].runtime_kinds == ["exec"]
    assert cat.to_dict()["spec"]["krmFunctions"][1]["names"] == {"kind": "SetLogger"}


def test_version_runtime_wins_over_the_shared_one_and_copies_are_independent():
    shared = {"container": {"image": "example/shared:latest"}}
    own = {"starlark": {"path": "fn.star"}}
    cat = Catalog.from_dict(
        doc(
            fn(
                runtime=shared,
                versions=[{"name": "v1"}, {"name": "v2", "runtime": own}, {"name": "v3"}],
            )
        )
    )
    v1, v2, v3 = cat.functions[0].versions
    assert v1.runtime == shared and v3.runtime == shared
    assert v2.runtime == own
    v1.runtime["container"]["image"] = "changed"
    assert v3.runtime["container"]["image"] == "example/shared:latest"


def test_runtime_kinds_are_sorted_and_flags_come_from_the_container():
    runtime = {
        "starlark": "https://example.com/f.star",
        "container": {"image": "example/fn:latest", "requireNetwork": True},
        "exec": {
            "platforms": [
                {"bin": "f", "os": "linux", "arch": "amd64", "uri": "https://x/f", "sha256": SHA_A}
            ]
        },
    }
    version = (
        Catalog.from_dict(doc(fn(versions=[{"name": "v1", "runtime": runtime}])))
        .functions[0]
        .versions[0]
    )
    assert version.runtime_kinds == ["container", "exec", "starlark"]
    assert list(version.runtime) == ["container", "exec", "starlark"]
    assert version.requires_network is True
    assert version.requires_storage_mount is False


def test_find_returns_the_first_definition_and_none_when_missing():
    first = fn(versions=[{"name": "v1", "runtime": {"container": {"image": "first:latest"}}}])
    second = fn(versions=[{"name": "v1", "runtime": {"container": {"image": "second:latest"}}}])
    cat = Catalog.from_dict(doc(first, second), strict=False)
    found = cat.find("example.com", "Fn", "v1")
    assert found is not None
    definition, version = found
    assert definition is cat.functions[0]
    assert version.runtime["container"]["image"] == "first:latest"
    assert cat.find("example.com", "Fn", "v2") is None
    assert cat.find("other.com", "Fn", "v1") is None
    assert cat.find("example.com", "Other", "v1") is None
    # Non-strict keeps both definitions, so its export is lossless.
    assert len(Catalog.from_dict(cat.to_dict(), strict=False).functions) == 2


def test_from_dict_builds_a_new_version_of_a_catalog():
    cat = parse_catalog((DATA / "example-co.catalog.yaml").read_bytes())
    data = cat.to_dict()
    data["spec"]["krmFunctions"].append(
        FunctionDefinition(
            group="contrib.example.org",
            kind="AddLabels",
            description="Contributed",
            versions=[
                FunctionVersion(
                    name="v1", runtime={"container": {"image": "ghcr.io/x/add-labels:main"}}
                )
            ],
        ).to_dict()
    )
    grown = Catalog.from_dict(data)
    assert len(grown.functions) == len(cat.functions) + 1
    assert grown.find("contrib.example.org", "AddLabels", "v1") is not None
    assert grown.digest != cat.digest
    assert parse_catalog(grown.canonical_bytes()).digest == grown.digest


def test_to_dict_is_a_fresh_copy():
    cat = parse_catalog((DATA / "example-co.catalog.yaml").read_bytes())
    before = cat.canonical_bytes()
    exported = cat.to_dict()
    exported["metadata"]["labels"]["author"] = "Mallory"
    exported["spec"]["krmFunctions"][0]["versions"][0]["runtime"]["container"]["image"] = "evil"
    assert cat.canonical_bytes() == before


def test_model_built_by_hand_serializes_canonically():
    cat = Catalog(
        metadata={"name": "hand", "labels": {"b": "2", "a": "1"}},
        functions=[
            FunctionDefinition(
                group="g.example",
                kind="K",
                versions=[
                    FunctionVersion(
                        name="v1",
                        runtime={
                            "container": {
                                "requireNetwork": False,
                                "sha256": "SHA256:" + SHA_A.upper(),
                                "image": "x/y:1.0.0",
                            }
                        },
                    )
                ],
            )
        ],
    )
    text = cat.canonical_bytes().decode()
    assert text == (
        "apiVersion: config.kubernetes.io/v1alpha1\n"
        "kind: Catalog\n"
        "metadata:\n"
        "  name: hand\n"
        "  labels:\n"
        '    a: "1"\n'
        '    b: "2"\n'
        "spec:\n"
        "  krmFunctions:\n"
        "    - group: g.example\n"
        "      names:\n"
        "        kind: K\n"
        "      versions:\n"
        "        - name: v1\n"
        "          runtime:\n"
        "            container:\n"
        "              image: x/y:1.0.0\n"
        f"              sha256: {SHA_A}\n"
    )
    assert parse_catalog(text).canonical_bytes() == text.encode()


def test_yaml_1_2_core_scalars():
    text = f"""\
apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: scalars
  labels: {{on: "x", "n": y}}
spec:
  krmFunctions:
  - group: example.com
    names: {{kind: Fn}}
    tags: [on, yes, no, off, y, 2021-01-01, 1_000, 0b11, .5e1x]
    versions:
    - name: v1
      schema:
        openAPIV3Schema:
          ints: [0o17, 0x1F, -12, +3]
          floats: [1.5, .5, 1e3, -.inf, .NaN]
          other: [~, null, Null, true, FALSE, !!str 12, !!float 3, "", '']
      runtime: {{container: {{image: "example/fn:latest", sha256: "{SHA_A}"}}}}
"""
    cat = parse_catalog(text)
    assert cat.metadata["labels"] == {"on": "x", "n": "y"}
    function = cat.functions[0]
    assert function.tags == ["on", "yes", "no", "off", "y", "2021-01-01", "1_000", "0b11", ".5e1x"]
    schema = function.versions[0].schema["openAPIV3Schema"]
    assert schema["ints"] == [15, 31, -12, 3]
    floats = schema["floats"]
    assert floats[:4] == [1.5, 0.5, 1000.0, float("-inf")] and floats[4] != floats[4]
    assert schema["other"] == [None, None, None, True, False, "12", 3.0, "", ""]
    again = parse_catalog(cat.canonical_bytes())
    assert again.canonical_bytes() == cat.canonical_bytes()


@pytest.mark.parametrize(
    "value",
    ["yes", "No", "on", "OFF", "y", "null", "~", "true", "0o17", "0x1F", "1.0", "1e3", ".inf",
     "-", "- x", "a: b", "a:", "#x", "x #y", "", " lead", "trail ", "'q'", '"dq"', "@at", "`bt",
     "%pct", "&anchor", "*alias", "!tag", "|", ">", "[x]", "{x}", "a\nb", "tab\there", "\x00",
     "\x85", "\u2028", "\ufeff", "\x7f", "é ü", "日本", "\U0001f600", "? q", ": c", "1_000",
     "2021-01-01", "0b11", "=", "<<"],
)  # fmt: skip
def test_every_string_round_trips_as_a_string(value):
    cat = Catalog.from_dict(doc(fn(description=value, tags=[value])))
    data = cat.canonical_bytes()
    again = parse_catalog(data)
    assert again.functions[0].description == value
    assert again.functions[0].tags == [value]
    assert again.canonical_bytes() == data
    # An independent YAML 1.1 reader (PyYAML's) reads the same string back.
    assert yaml.load(data, Loader=yaml.CSafeLoader)["spec"]["krmFunctions"][0]["tags"] == [value]


def test_very_long_keys_use_explicit_key_syntax():
    long_key = "k" * 2000
    cat = Catalog.from_dict(
        doc(fn(versions=[{"name": "v1", "schema": {"openAPIV3Schema": {long_key: {long_key: 1}}},
                          "runtime": {"starlark": "s"}}]))
    )  # fmt: skip
    data = cat.canonical_bytes()
    assert b"? " + long_key.encode() in data
    assert parse_catalog(data).functions[0].versions[0].schema == {
        "openAPIV3Schema": {long_key: {long_key: 1}}
    }


def test_digest_is_sha256_of_the_canonical_bytes():
    cat = Catalog.from_dict(doc(fn()))
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", cat.digest)
    assert cat.digest == "sha256:" + hashlib.sha256(cat.canonical_bytes()).hexdigest()
    assert cat.canonical_bytes().decode("utf-8").endswith("\n")


# ----------------------------------------------------------------------------- property tests

NAME = re.compile(r"[^\s/]+")
names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8).filter(
    NAME.fullmatch
)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
non_empty = texts.filter(bool)
shas = st.tuples(
    st.binary(min_size=32, max_size=32).map(bytes.hex), st.booleans(), st.booleans()
).map(lambda t: ("sha256:" if t[1] else "") + (t[0].upper() if t[2] else t[0]))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3),
    max_leaves=8,
)
image_names = st.from_regex(
    r"[a-z0-9]+(\.[a-z]+)?(:[0-9]{2,5})?(/[a-z0-9_-]+){1,2}", fullmatch=True
)
any_tags = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,10}", fullmatch=True)
loose_tags = st.sampled_from(["latest", "main", "v1", "1.0", "stable", "v2-rc"])
containers = st.one_of(
    st.builds(lambda n, t, s: {"image": f"{n}:{t}", "sha256": s}, image_names, any_tags, shas),
    st.builds(lambda n, t: {"image": f"{n}:{t}"}, image_names, loose_tags),
    st.builds(
        lambda n, d, s: {"image": f"{n}@sha256:{d}", **({"sha256": d} if s else {})},
        image_names,
        st.binary(min_size=32, max_size=32).map(bytes.hex),
        st.booleans(),
    ),
).flatmap(
    lambda c: st.fixed_dictionaries(
        {},
        optional={
            "requireNetwork": st.booleans(),
            "requireStorageMount": st.booleans(),
            "requireFilesystem": st.booleans(),
        },
    ).map(lambda flags: {**c, **flags})
)
platforms = st.lists(
    st.tuples(
        st.sampled_from(["linux", "darwin", "windows", "freebsd"]),
        st.sampled_from(["amd64", "arm64", "386", "arm", "ppc64le", "s390x", "riscv64"]),
    ),
    min_size=1,
    max_size=3,
    unique=True,
).flatmap(
    lambda pairs: st.tuples(
        *[
            st.builds(
                lambda b, u, s, os_=os_, arch=arch: {
                    "bin": b, "os": os_, "arch": arch, "uri": u, "sha256": s
                },
                st.from_regex(r"[a-z][a-z0-9.-]{0,8}(/[a-z0-9]{1,8})?", fullmatch=True),
                non_empty,
                shas,
            )
            for os_, arch in pairs
        ]
    ).map(list)
)  # fmt: skip
starlarks = st.one_of(
    non_empty,
    st.fixed_dictionaries({"uri": non_empty}, optional={"sha256": shas}),
    st.fixed_dictionaries({"path": non_empty}, optional={"sha256": shas}),
)
runtimes = st.fixed_dictionaries(
    {},
    optional={
        "container": containers,
        "exec": platforms.map(lambda p: {"platforms": p}),
        "starlark": starlarks,
    },
).filter(bool)
version_fields = st.fixed_dictionaries(
    {},
    optional={
        "schema": st.dictionaries(texts, json_values, max_size=3).map(
            lambda s: {"openAPIV3Schema": s}
        ),
        "idempotent": st.booleans(),
        "usage": texts,
        "examples": st.lists(texts, max_size=2),
        "license": non_empty,
        "maintainers": st.lists(texts, max_size=2),
    },
)
function_fields = st.fixed_dictionaries(
    {},
    optional={
        "description": texts,
        "publisher": texts,
        "home": texts,
        "maintainers": st.lists(texts, max_size=2),
        "tags": st.lists(texts, max_size=3),
    },
)


@st.composite
def catalogs(draw: st.DrawFn) -> dict[str, Any]:
    """Random valid catalogs in random mixtures of the KEP's shapes and key orders."""
    functions = []
    seen = set()
    for _ in range(draw(st.integers(0, 3))):
        group, kind = draw(names), draw(names)
        if (group, kind) in seen:
            continue
        seen.add((group, kind))
        shared = draw(st.none() | runtimes)
        versions = []
        for version_name in draw(st.lists(names, min_size=1, max_size=3, unique=True)):
            version = {"name": version_name, **draw(version_fields)}
            if shared is None or draw(st.booleans()):
                version["runtime"] = draw(runtimes)
            order = draw(st.permutations(list(version)))
            versions.append({k: version[k] for k in order})
        entry = {"group": group, "versions": versions, **draw(function_fields)}
        style = draw(st.sampled_from(["names", "bare", "both"]))
        if style != "bare":
            entry["names"] = {"kind": kind}
        if style != "names":
            entry["kind"] = kind
        if shared is not None:
            entry["runtime"] = shared
        order = draw(st.permutations(list(entry)))
        functions.append({k: entry[k] for k in order})
    metadata = {
        "name": draw(names),
        **draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "labels": st.dictionaries(texts, texts, max_size=3),
                    "annotations": st.dictionaries(texts, texts, max_size=3),
                    "uid": json_values,
                },
            )
        ),
    }
    return {
        "apiVersion": API_VERSION,
        "kind": draw(st.sampled_from(KINDS)),
        "metadata": metadata,
        "spec": {"krmFunctions": functions},
    }


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(catalogs())
def test_round_trip_through_the_canonical_form_is_the_identity(data):
    cat = Catalog.from_dict(copy.deepcopy(data))
    canonical = cat.canonical_bytes()
    again = parse_catalog(canonical)
    assert again.canonical_bytes() == canonical
    assert again.digest == cat.digest == "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert again.to_dict() == cat.to_dict()
    assert parse_catalog(again.canonical_bytes()).canonical_bytes() == canonical


# Characters YAML cannot hold raw (C0/C1 controls, DEL, BOM, non-characters, and the 1.1 line
# breaks NEL/LS/PS): escaped in the JSON text, which both JSON and YAML read back the same.
NOT_YAML_PRINTABLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]"
)


@PROPERTY
@given(catalogs())
def test_any_shape_read_as_yaml_text_gives_the_same_canonical_form(data):
    # JSON is YAML: the reader and from_dict agree on every shape, for text written by json
    # (flow style, different quoting), not by this module's own writer.
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except ValueError:  # infinity has no JSON spelling
        assume(False)
    text = NOT_YAML_PRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    assert json.loads(text) == data
    assert parse_catalog(text).canonical_bytes() == Catalog.from_dict(data).canonical_bytes()


VALIDATOR = jsonschema.Draft202012Validator(json.loads(Path(SCHEMA_PATH).read_text()))


@st.composite
def mutated_catalogs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid catalog with one random change: a key deleted, replaced or added."""
    data = draw(catalogs())
    spots: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                spots.append((node, key))
                walk(value)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                spots.append((node, i))
                walk(value)

    walk(data)
    container, key = draw(st.sampled_from(spots))
    action = draw(st.sampled_from(["delete", "replace", "add"]))
    odd_values = st.sampled_from(
        ["", "x", "linux", "amd64", "a" * 64, "v1", [], {}, None, 0, True, "../x", "img:v1.2.3"]
    )
    if action == "delete":
        del container[key]
    elif action == "replace":
        container[key] = draw(odd_values | json_values)
    elif isinstance(container, dict):
        field = draw(
            st.sampled_from(["extra", "name", "kind", "names", "runtime", "sha256", "image"])
        )
        container[field] = draw(odd_values | json_values)
    return data


@PROPERTY
@given(mutated_catalogs())
def test_compiled_schema_agrees_with_jsonschema(data):
    validator = VALIDATOR
    event(f"schema-valid: {validator.is_valid(data)}")
    assert catalog_module._schema_accepts(data) == validator.is_valid(data)
    if not validator.is_valid(data):
        assert catalog_module.schema_problems(data)
    # Whatever passes the schema is either built or refused with CatalogError, never a crash.
    try:
        Catalog.from_dict(data)
    except CatalogError as err:
        assert err.problems


def test_schema_file_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(json.loads(Path(SCHEMA_PATH).read_text()))


def test_schema_compiler_refuses_keywords_it_does_not_implement():
    with pytest.raises(NotImplementedError, match=r"\['uniqueItems'\]"):
        catalog_module._compile({"type": "array", "uniqueItems": True}, {}, {})


# ----------------------------------------------------------------------------- validation rules


def test_the_path_form_of_the_brief():
    bad_exec = {
        "exec": {
            "platforms": [
                {"bin": "f", "os": "linux", "arch": "amd64", "uri": "https://x/f", "sha256": "abc"}
            ]
        }
    }
    data = doc(
        fn(names={"kind": "A"}),
        fn(names={"kind": "B"}),
        fn(names={"kind": "C"}, versions=[{"name": "v1", "runtime": bad_exec}]),
    )
    assert problems_of(data) == [
        "spec.krmFunctions[2].versions[0].runtime.exec.platforms[0].sha256: "
        "must be a sha256 digest: 64 hexadecimal characters"
    ]


def test_exec_platform_without_sha256():
    platform = {"bin": "f", "os": "linux", "arch": "amd64", "uri": "https://x/f"}
    data = doc(fn(versions=[{"name": "v1", "runtime": {"exec": {"platforms": [platform]}}}]))
    assert problems_of(data) == [
        "spec.krmFunctions[0].versions[0].runtime.exec.platforms[0].sha256: "
        "required field is missing"
    ]


@pytest.mark.parametrize(
    ("image", "sha256", "expected"),
    [
        ("example/fn:v1.0.0", None, "'v1.0.0'"),
        ("example/fn:1.2.3", None, "'1.2.3'"),
        ("example/fn:v1.2.3-rc.1", None, "'v1.2.3-rc.1'"),
        ("registry.example:5000/team/fn:0.10.0", None, "'0.10.0'"),
        ("example/fn:v1.0.0", SHA_A, None),
        (f"example/fn:v1.0.0@sha256:{SHA_A}", None, None),
        (f"example/fn:v1.0.0@sha256:{SHA_A}", "sha256:" + SHA_A.upper(), None),
        ("example/fn:latest", None, None),
        ("example/fn:v1", None, None),
        ("example/fn:1.0", None, None),
        ("registry.example:5000/team/fn", None, None),
        ("example/fn:v01.0.0", None, None),
    ],
)
def test_container_with_a_semver_tag_must_be_pinned(image, sha256, expected):
    container = {"image": image, **({"sha256": sha256} if sha256 else {})}
    data = doc(fn(versions=[{"name": "v1", "runtime": {"container": container}}]))
    if expected is None:
        assert (
            Catalog.from_dict(data).functions[0].versions[0].runtime["container"]["image"] == image
        )
    else:
        assert problems_of(data) == [
            "spec.krmFunctions[0].versions[0].runtime.container.sha256: required: the image tag "
            f"{expected} is a semantic version, so the image must be pinned (sha256, or "
            "@sha256:<digest> in image)"
        ]


def test_container_digest_and_sha256_must_agree():
    container = {"image": f"example/fn@sha256:{SHA_A}", "sha256": SHA_B}
    data = doc(fn(versions=[{"name": "v1", "runtime": {"container": container}}]))
    assert problems_of(data) == [
        "spec.krmFunctions[0].versions[0].runtime.container.sha256: "
        f"does not match the digest in image (sha256:{SHA_A})"
    ]


def test_container_digest_must_be_a_sha256():
    container = {"image": "example/fn@sha256:abc"}
    data = doc(fn(versions=[{"name": "v1", "runtime": {"container": container}}]))
    assert problems_of(data) == [
        "spec.krmFunctions[0].versions[0].runtime.container.image: "
        "the digest after '@' must be sha256: and 64 lower-case hexadecimal characters"
    ]


def test_duplicate_function_is_an_error_when_strict_and_first_wins_otherwise():
    data = doc(
        fn(versions=[{"name": "v1", "runtime": {"starlark": "first"}}]),
        fn(names={"kind": "Other"}),
        fn(kind="Fn", names=None, versions=[{"name": "v1", "runtime": {"starlark": "second"}}]),
    )
    del data["spec"]["krmFunctions"][2]["names"]
    assert problems_of(data) == [
        "spec.krmFunctions[2].versions[0].name: duplicate function example.com/v1 Fn "
        "(first defined at spec.krmFunctions[0].versions[0])"
    ]
    cat = parse_catalog(json.dumps(data), strict=False)
    assert cat.find("example.com", "Fn", "v1")[1].runtime == {"starlark": {"uri": "first"}}


def test_duplicate_version_inside_one_function():
    data = doc(fn(versions=[{"name": "v1", "runtime": {"starlark": "a"}}] * 2))
    assert problems_of(data) == [
        "spec.krmFunctions[0].versions[1].name: duplicate function example.com/v1 Fn "
        "(first defined at spec.krmFunctions[0].versions[0])"
    ]


def test_names_kind_and_kind_must_agree():
    assert problems_of(doc(fn(kind="Other"))) == [
        "spec.krmFunctions[0].kind: 'Other' conflicts with names.kind 'Fn'"
    ]
    assert Catalog.from_dict(doc(fn(kind="Fn"))).functions[0].kind == "Fn"


def test_a_function_needs_a_kind():
    data = doc(fn())
    del data["spec"]["krmFunctions"][0]["names"]
    assert problems_of(data) == ["spec.krmFunctions[0].names.kind: required field is missing"]
    assert problems_of(doc(fn(names={}))) == [
        "spec.krmFunctions[0].names.kind: required field is missing"
    ]


def test_every_version_needs_a_runtime_here_or_beside_versions():
    data = doc(fn(versions=[{"name": "v1", "runtime": {"starlark": "s"}}, {"name": "v2"}]))
    assert problems_of(data) == [
        "spec.krmFunctions[0].versions[1].runtime: required field is missing "
        "(set it here, or once beside versions)"
    ]


def test_runtime_needs_at_least_one_kind():
    data = doc(fn(versions=[{"name": "v1", "runtime": {}}]))
    assert problems_of(data) == [
        "spec.krmFunctions[0].versions[0].runtime: "
        "must set at least one of container, exec, starlark"
    ]


@pytest.mark.parametrize(
    ("starlark", "message"),
    [
        ({"uri": "a", "path": "b"}, "must set exactly one of uri, path"),
        ({}, "must set exactly one of uri, path"),
        ({"sha256": SHA_A}, "must set exactly one of uri, path"),
        ("", "must not be empty"),
        (3, "must be a string or a mapping, got an integer"),
    ],
)
def test_starlark_runtime_shape(starlark, message):
    data = doc(fn(versions=[{"name": "v1", "runtime": {"starlark": starlark}}]))
    assert problems_of(data) == [f"spec.krmFunctions[0].versions[0].runtime.starlark: {message}"]


def test_starlark_path_with_sha256():
    runtime = {"starlark": {"sha256": "sha256:" + SHA_A, "path": "fns/f.star"}}
    version = Catalog.from_dict(doc(fn(versions=[{"name": "v1", "runtime": runtime}])))
    assert version.functions[0].versions[0].runtime == {
        "starlark": {"path": "fns/f.star", "sha256": SHA_A}
    }


@pytest.mark.parametrize("bin_", ["../f", "a/../../f", "/usr/bin/f", "\\f", "C:f", "a\\..\\f"])
def test_exec_bin_must_stay_inside_the_download(bin_):
    platform = {"bin": bin_, "os": "linux", "arch": "amd64", "uri": "https://x/f", "sha256": SHA_A}
    data = doc(fn(versions=[{"name": "v1", "runtime": {"exec": {"platforms": [platform]}}}]))
    assert problems_of(data) == [
        "spec.krmFunctions[0].versions[0].runtime.exec.platforms[0].bin: "
        "must be a relative path inside the download, without '..'"
    ]


def test_exec_platform_listed_twice():
    platform = {"bin": "f", "os": "linux", "arch": "amd64", "uri": "https://x/f", "sha256": SHA_A}
    data = doc(fn(runtime={"exec": {"platforms": [platform, platform]}}, versions=[{"name": "v1"}]))
    assert problems_of(data) == [
        "spec.krmFunctions[0].runtime.exec.platforms[1]: duplicate platform linux/amd64 "
        "(first at spec.krmFunctions[0].runtime.exec.platforms[0])"
    ]


def test_exec_platform_enums_and_required_fields():
    platform = {"bin": "", "os": "plan9", "arch": "mips", "sha256": SHA_A}
    data = doc(fn(versions=[{"name": "v1", "runtime": {"exec": {"platforms": [platform]}}}]))
    base = "spec.krmFunctions[0].versions[0].runtime.exec.platforms[0]"
    assert problems_of(data) == [
        f"{base}.arch: must be one of amd64, arm64, 386, arm, ppc64le, s390x, riscv64; got 'mips'",
        f"{base}.bin: must not be empty",
        f"{base}.os: must be one of linux, darwin, windows, freebsd; got 'plan9'",
        f"{base}.uri: required field is missing",
    ]
    assert problems_of(
        doc(fn(versions=[{"name": "v1", "runtime": {"exec": {"platforms": []}}}]))
    ) == [
        "spec.krmFunctions[0].versions[0].runtime.exec.platforms: must list at least one platform"
    ]


@pytest.mark.parametrize("license_", ["Apache 2.0", "Apache-2.0", "MIT", "LicenseRef-Internal"])
def test_license_is_any_non_empty_string(license_):
    version = {"name": "v1", "license": license_, "runtime": {"starlark": "s"}}
    cat = Catalog.from_dict(doc(fn(versions=[version])))
    assert cat.functions[0].versions[0].license == license_
    version["license"] = ""
    assert problems_of(doc(fn(versions=[version]))) == [
        "spec.krmFunctions[0].versions[0].license: must not be empty"
    ]


def test_only_group_kind_version_name_and_runtime_are_required():
    cat = Catalog.from_dict(doc(fn()))
    function = cat.functions[0]
    assert (function.description, function.publisher, function.home) == (None, None, None)
    assert function.maintainers == [] and function.tags == []
    version = function.versions[0]
    assert (version.schema, version.idempotent, version.usage, version.license) == (None,) * 4
    assert version.examples == [] and version.maintainers == []
    assert problems_of(doc({"versions": [{"runtime": {"starlark": "s"}}]})) == [
        "spec.krmFunctions[0].group: required field is missing",
        "spec.krmFunctions[0].names.kind: required field is missing",
        "spec.krmFunctions[0].versions[0].name: required field is missing",
    ]


def test_unknown_fields_are_named_with_a_suggestion():
    data = doc(fn(verisons=[]), status={})
    data["spec"]["krmFunctions"][0]["versions"][0]["runtime"]["container"]["requireNetwrok"] = True
    assert problems_of(data) == [
        "spec.krmFunctions[0].verisons: unknown field (did you mean 'versions'?)",
        "spec.krmFunctions[0].versions[0].runtime.container.requireNetwrok: "
        "unknown field (did you mean 'requireNetwork'?)",
        "status: unknown field",
    ]


def test_wrong_types_name_what_was_found():
    data = doc(
        fn(
            group=3,
            description=["x"],
            tags="mutator",
            versions=[{"name": "v1", "idempotent": "maybe", "runtime": {"starlark": "s"}}],
        )
    )
    assert problems_of(data) == [
        "spec.krmFunctions[0].description: must be a string, got a list",
        "spec.krmFunctions[0].group: must be a string, got an integer",
        "spec.krmFunctions[0].tags: must be a list, got 'mutator'",
        "spec.krmFunctions[0].versions[0].idempotent: must be true or false, got 'maybe'",
    ]


def test_names_must_not_contain_whitespace_or_slashes():
    data = doc(fn(group="example.com/x", names={"kind": "My Kind"}))
    data["metadata"]["name"] = "a b"
    assert problems_of(data) == [
        "metadata.name: must not contain whitespace or '/'",
        "spec.krmFunctions[0].group: must not contain whitespace or '/'",
        "spec.krmFunctions[0].names.kind: must not contain whitespace or '/'",
    ]


def test_metadata_and_spec_are_required():
    assert problems_of({"apiVersion": API_VERSION, "kind": "Catalog"}) == [
        "metadata: required field is missing",
        "spec: required field is missing",
    ]
    assert problems_of(doc(metadata={"labels": {"a": 1}}, spec={})) == [
        "metadata.labels.a: must be a string, got an integer",
        "metadata.name: required field is missing",
        "spec.krmFunctions: required field is missing",
    ]


def test_keys_that_are_not_identifiers_are_quoted_in_paths():
    data = doc(fn(), metadata={"name": "x", "labels": {"app.kubernetes.io/name": None}})
    assert problems_of(data) == [
        'metadata.labels["app.kubernetes.io/name"]: must be a string, got null'
    ]


def test_versions_must_not_be_empty_but_a_catalog_may_be():
    assert problems_of(doc(fn(versions=[]))) == [
        "spec.krmFunctions[0].versions: must list at least one version"
    ]
    assert Catalog.from_dict(doc()).functions == []


@pytest.mark.parametrize(
    ("top", "expected"),
    [
        ({"apiVersion": "v1"}, ["apiVersion: must be config.kubernetes.io/v1alpha1, got 'v1'"]),
        ({"apiVersion": None}, ["apiVersion: must be config.kubernetes.io/v1alpha1, got null"]),
        ({"kind": "Kustomization"},
         ["kind: must be Catalog or KRMFunctionCatalog, got 'Kustomization'"]),
        ({"kind": "KRMFunctionDefinition"},
         ["kind: must be Catalog or KRMFunctionCatalog, got 'KRMFunctionDefinition'"]),
        ({"apiVersion": "config.kubernetes.io/v1", "kind": 7},
         ["apiVersion: must be config.kubernetes.io/v1alpha1, got 'config.kubernetes.io/v1'",
          "kind: must be Catalog or KRMFunctionCatalog, got an integer"]),
    ],
)  # fmt: skip
def test_wrong_api_version_or_kind_is_reported_alone(top, expected):
    # The rest of the document is broken too, but it is not a catalog, so only this is said.
    assert problems_of(doc({"bogus": 1}, **top)) == expected


def test_missing_api_version_and_kind():
    data = doc()
    del data["apiVersion"], data["kind"]
    assert problems_of(data) == [
        "apiVersion: must be config.kubernetes.io/v1alpha1 (missing)",
        "kind: must be Catalog or KRMFunctionCatalog (missing)",
    ]


def test_from_dict_refuses_what_is_not_a_mapping():
    with pytest.raises(CatalogError) as err:
        Catalog.from_dict(["a"])
    assert str(err.value) == "a catalog must be a mapping, got a list"
    with pytest.raises(CatalogError) as err:
        Catalog.from_dict(None)
    assert str(err.value) == "the catalog is empty"


# ----------------------------------------------------------------------------- hostile input


def test_size_limit():
    data = json.dumps(doc(fn())).encode()
    assert parse_catalog(data, max_bytes=len(data)).name == "t"
    with pytest.raises(CatalogError) as err:
        parse_catalog(data, max_bytes=len(data) - 1)
    assert err.value.problems == [
        Problem("", f"catalog is {len(data)} bytes, over the limit of {len(data) - 1} bytes")
    ]
    assert DEFAULT_MAX_BYTES == 5 * 1024 * 1024
    big = b"# " + b"x" * DEFAULT_MAX_BYTES + b"\n"
    assert str(yaml_problem(big)) == (
        f"catalog is {len(big)} bytes, over the limit of {DEFAULT_MAX_BYTES} bytes"
    )


def test_size_of_text_is_counted_in_utf8_bytes():
    text = json.dumps(doc(fn(description="é" * 100)), ensure_ascii=False)
    size = len(text.encode("utf-8"))
    assert size > len(text)
    assert str(yaml_problem(text, max_bytes=size - 1)) == (
        f"catalog is {size} bytes, over the limit of {size - 1} bytes"
    )
    assert parse_catalog(text, max_bytes=size).functions[0].description == "é" * 100


def test_billion_laughs_is_refused_at_the_first_alias_quickly():
    bomb = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
        f"{b}: &{b} [{','.join(['*' + a] * 9)}]\n"
        for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    )
    problem = yaml_problem(bomb)
    assert problem == Problem("", "YAML aliases are not allowed in a catalog (*a)", 2, 8)
    assert str(problem) == "line 2, column 8: YAML aliases are not allowed in a catalog (*a)"


def test_a_single_alias_is_refused_but_an_anchor_alone_is_fine():
    text = json.dumps(doc(fn()))
    anchored = text.replace('"metadata": {', '"metadata": &meta {')
    assert parse_catalog(anchored).name == "t"
    aliased = yaml.safe_dump(doc(fn(), metadata={"name": "t"}), sort_keys=False)
    aliased = aliased.replace("name: t", "name: &n t\n  uid: *n")
    problem = yaml_problem(aliased)
    assert (problem.line, problem.column) == (5, 8)
    assert problem.message == "YAML aliases are not allowed in a catalog (*n)"


def test_deep_nesting_is_refused_without_crashing():
    # libyaml's composer overflows the C stack near 100k levels (a segfault); events do not.
    flow = "a: " + "[" * 300_000 + "]" * 300_000 + "\n"
    problem = yaml_problem(flow)
    assert str(problem) == "line 1, column 103: nested deeper than 100 levels"
    block = "".join(" " * i + "- \n" for i in range(150))
    assert str(yaml_problem(block)) == "line 101, column 101: nested deeper than 100 levels"


def test_exactly_one_document():
    one = json.dumps(doc(fn()))
    assert parse_catalog("---\n" + one + "\n...\n").name == "t"
    assert str(yaml_problem(one + "\n---\n" + one)) == (
        "line 2, column 1: a catalog is one YAML document, but another document starts here"
    )
    assert str(yaml_problem(one + "\n---\n")) == (
        "line 2, column 1: a catalog is one YAML document, but another document starts here"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the catalog is empty"),
        ("# only a comment\n", "the catalog is empty"),
        ("~\n", "the catalog is empty"),
        ("- a\n- b\n", "a catalog must be a mapping, got a list"),
        ("just a string\n", "a catalog must be a mapping, got 'just a string'"),
        ("42\n", "a catalog must be a mapping, got an integer"),
    ],
)
def test_documents_that_are_not_a_mapping(text, message):
    assert yaml_problem(text) == Problem("", message)


def test_non_utf8_input_names_the_byte_line_and_column():
    data = b"apiVersion: v1\nkind: Catalog\nx: \xc3\xa9\xc3\xa9 \xff\n"
    problem = yaml_problem(data)
    assert problem == Problem("", "not valid UTF-8 (byte 0xff); a catalog must be UTF-8", 3, 7)
    utf16 = "apiVersion: v1\n".encode("utf-16")
    assert str(yaml_problem(utf16)) == (
        "line 1, column 1: not valid UTF-8 (byte 0xff); a catalog must be UTF-8"
    )


def test_utf8_byte_order_mark_is_accepted():
    data = b"\xef\xbb\xbf" + json.dumps(doc(fn())).encode()
    assert parse_catalog(data).name == "t"


def test_text_that_cannot_be_utf8():
    assert (
        str(yaml_problem("a: \ud800\n"))
        == "text cannot be encoded as UTF-8: surrogates not allowed"
    )


def test_control_characters_are_refused_with_their_position():
    problem = yaml_problem("apiVersion: v1\nkind: é\x01\n")
    assert str(problem) == (
        "line 2, column 8: character #x0001 is not allowed: control characters are not allowed"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: [1\nb: 2\n",
         "line 2, column 2: did not find expected ',' or ']' "
         "(while parsing a flow sequence at line 1, column 4)"),
        ("a: 1\n\tb: 2\n",
         "line 2, column 1: found a tab character that violates indentation "
         "(while scanning a plain scalar at line 1, column 4)"),
        ("a: b: c\n", "line 1, column 5: mapping values are not allowed in this context"),
        ('a: "unterminated\n',
         "line 2, column 1: found unexpected end of stream "
         "(while scanning a quoted scalar at line 1, column 4)"),
    ],
)  # fmt: skip
def test_yaml_syntax_errors_have_line_and_column(text, expected):
    problem = yaml_problem(text)
    assert str(problem) == expected
    assert problem.path == ""
    assert problem.line is not None and problem.column is not None


def test_duplicate_keys_are_refused():
    text = "apiVersion: x\nkind: Catalog\nmetadata:\n  name: a\n  name: b\n"
    assert yaml_problem(text) == Problem("", "duplicate key 'name'", 5, 3)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: {true: x}\n",
         "line 1, column 5: mapping keys must be strings, found 'true' (quote it)"),
        ("a:\n  1: x\n", "line 2, column 3: mapping keys must be strings, found '1' (quote it)"),
        ("a:\n  ~: x\n", "line 2, column 3: mapping keys must be strings, found '~' (quote it)"),
        ("? [a]\n: b\n",
         "line 1, column 3: mapping keys must be strings, found a mapping or list (quote it)"),
    ],
)  # fmt: skip
def test_mapping_keys_must_be_strings(text, expected):
    assert str(yaml_problem(text)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: !!binary aGk=\n", "line 1, column 4: unsupported YAML tag tag:yaml.org,2002:binary"),
        ("a: !!python/object:os.system x\n",
         "line 1, column 4: unsupported YAML tag tag:yaml.org,2002:python/object:os.system"),
        ("a: !custom x\n", "line 1, column 4: unsupported YAML tag !custom"),
        ("a: !!set {x}\n", "line 1, column 4: unsupported YAML tag tag:yaml.org,2002:set"),
        ("a: !!int x\n", "line 1, column 4: 'x' is not a valid !!int"),
        ("a: !!bool yes\n", "line 1, column 4: 'yes' is not a valid !!bool"),
        ("a: " + "9" * 5000 + "\n", "line 1, column 4: number too long to read"),
    ],
)  # fmt: skip
def test_unsupported_tags_and_scalars(text, expected):
    assert str(yaml_problem(text)) == expected


def test_core_tags_are_honoured():
    text = json.dumps(doc(fn())).replace('"Fn"', "!!str Fn").replace('"t"', "! t")
    cat = parse_catalog(text)
    assert cat.functions[0].kind == "Fn" and cat.name == "t"


# ----------------------------------------------------------------------------- the error type


def test_catalog_error_is_a_typed_engine_error():
    with pytest.raises(CatalogError) as err:
        parse_catalog("- x\n", source="catalogs/bad.yaml")
    error = err.value
    assert isinstance(error, ValidationError) and isinstance(error, KrmError)
    assert error.file == "catalogs/bad.yaml"
    assert str(error) == "a catalog must be a mapping, got a list"
    assert error.problems == [Problem("", "a catalog must be a mapping, got a list")]
    clone = pickle.loads(pickle.dumps(error))
    assert clone.problems == error.problems and clone.file == error.file
    assert str(clone) == str(error)
    with pytest.raises(CatalogError) as err:
        parse_catalog(b"a: \xff", source="x.yaml")
    assert err.value.file == "x.yaml"


def test_problem_is_frozen_and_formats_three_ways():
    assert str(Problem("a.b[0]", "bad")) == "a.b[0]: bad"
    assert str(Problem("", "bad", 3, 4)) == "line 3, column 4: bad"
    assert str(Problem("", "bad")) == "bad"
    with pytest.raises(AttributeError):
        Problem("a", "b").path = "c"  # type: ignore[misc]


# ----------------------------------------------------------------------------- light and fast


def test_import_is_light_and_jsonschema_is_loaded_only_to_explain_a_rejection():
    valid = (DATA / "example-co.catalog.yaml").as_posix()
    script = f"""
import sys
import orchestrator.catalog as c
print("jsonschema" in sys.modules, "django" in sys.modules)
c.parse_catalog(open({valid!r}, "rb").read())
print("jsonschema" in sys.modules)
try:
    c.parse_catalog("apiVersion: config.kubernetes.io/v1alpha1\\nkind: Catalog\\nspec: 1\\n")
except c.CatalogError as err:
    print("jsonschema" in sys.modules, str(err).replace("\\n", " | "))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == [
        "False False",
        "False",
        "True metadata: required field is missing | spec: must be a mapping, got an integer",
    ]


def test_a_flood_of_schema_errors_is_cut_short():
    data = doc(*[fn(names={"kind": f"K{i}"}, group=i) for i in range(1200)])
    problems = problems_of(data)
    assert len(problems) == 1001
    assert problems[0] == "spec.krmFunctions[0].group: must be a string, got an integer"
    assert problems[-1] == "more problems not shown (first 1000)"


def test_from_dict_refuses_what_yaml_cannot_hold():
    import datetime

    data = doc(fn(versions=[{"name": "v1", "schema": {"openAPIV3Schema": {1: "x"}},
                             "runtime": {"starlark": "s"}}]))  # fmt: skip
    with pytest.raises(CatalogError) as err:
        Catalog.from_dict(data)
    assert str(err.value) == (
        "spec.krmFunctions[0].versions[0].schema.openAPIV3Schema: "
        "mapping keys must be strings, found an integer"
    )
    data = doc(fn(), metadata={"name": "t", "created": datetime.date(2026, 1, 1)})
    with pytest.raises(CatalogError) as err:
        Catalog.from_dict(data)
    assert str(err.value) == "metadata.created: must be YAML data, got date"
