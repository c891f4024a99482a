"""The function page's selectors: functionConfig from examples or the schema, what changed."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
import yaml

from catalogs.discovery import function_pages
from catalogs.discovery.function_pages import config_for, config_generated, version_changes
from catalogs.publishing import services
from orchestrator.functions.schema import function_schema


def _version(
    schema: dict[str, Any] | None = None,
    *,
    name: str = "v1",
    examples: list[str] | None = None,
    usage: str = "",
    runtime: dict[str, Any] | None = None,
    **extra: Any,
) -> SimpleNamespace:
    """A FunctionVersion's fields, as the selectors read them."""
    runtime = runtime or {"container": {"image": "registry.example.co/fn:v1"}}
    return SimpleNamespace(
        name=name,
        group="example.co",
        position=0,
        schema={"openAPIV3Schema": schema} if schema is not None else None,
        examples=examples or [],
        usage=usage,
        runtime=runtime,
        runtime_kinds=[k for k in ("container", "exec", "starlark") if k in runtime],
        requires_network=bool((runtime.get("container") or {}).get("requireNetwork")),
        requires_storage_mount=bool((runtime.get("container") or {}).get("requireStorageMount")),
        license=extra.get("license", "Apache 2.0"),
        idempotent=extra.get("idempotent", True),
    )


def _valid(config: dict[str, Any], version: Any) -> None:
    """krm build's own check: the orchestrator's JSON Schema of the version, with jsonschema."""
    jsonschema.validate(config, function_schema(version))


RICH = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "spec": {
            "type": "object",
            "required": ["namespace", "mode", "replicas", "ports", "owner", "labels", "since"],
            "properties": {
                "namespace": {"type": "string", "minLength": 3, "maxLength": 63},
                "mode": {"type": "string", "enum": ["strict", "lenient"]},
                "level": {"type": "string", "default": "info"},
                "replicas": {"type": "integer", "minimum": 2, "maximum": 5},
                "ratio": {"type": "number"},
                "ports": {
                    "type": "array",
                    "minItems": 2,
                    "items": {
                        "type": "object",
                        "required": ["port"],
                        "properties": {"port": {"x-kubernetes-int-or-string": True}},
                    },
                },
                "owner": {"type": "string", "format": "email"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "since": {"type": "string", "format": "date-time", "nullable": True},
                "optional": {"type": "boolean"},
            },
        }
    },
}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            RICH,
            {
                "spec": {
                    "namespace": "my-namespace",
                    "mode": "strict",
                    "replicas": 2,
                    "ports": [{"port": 1}, {"port": 1}],
                    "owner": "team@example.com",
                    "labels": {"key": "my-value"},
                    "since": "2025-01-01T00:00:00Z",
                    "level": "info",
                }
            },
        ),
        # Nothing required: the fields there are, to keep or delete.
        (
            {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "properties": {"logPath": {"type": "string"}}}
                },
            },
            {"spec": {"logPath": "my-log-path"}},
        ),
        # Fields at the top, no spec (the KEP allows any shape).
        (
            {
                "type": "object",
                "required": ["data"],
                "properties": {
                    "data": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            },
            {"data": {}},
        ),
        ({"type": "object"}, {}),
        (
            {
                "type": "object",
                "required": ["short"],
                "properties": {"short": {"type": "string", "maxLength": 4}},
            },
            {"short": "my-s"},
        ),
    ],
)
def test_a_config_generated_from_the_schema_passes_the_schema(schema, expected):
    version = _version(schema)
    snippet = config_generated(version, group="example.co", kind="SetNamespace")
    config = yaml.safe_load(snippet.text)
    assert config == {
        "apiVersion": "example.co/v1",
        "kind": "SetNamespace",
        "metadata": {"name": "set-namespace"},
        **expected,
    }
    assert snippet.source == "schema" and snippet.checked and snippet.problems == []
    _valid(config, version)
    # Key order as a person reads it: apiVersion, kind, metadata, then the schema's order.
    assert list(config)[:3] == ["apiVersion", "kind", "metadata"]


def test_a_schema_it_cannot_satisfy_says_where():
    version = _version(
        {
            "type": "object",
            "required": ["tag"],
            "properties": {"tag": {"type": "string", "pattern": "^v[0-9]+$"}},
        }
    )
    snippet = config_generated(version, group="example.co", kind="Tag")
    assert snippet.checked
    assert snippet.problems == ["tag: 'my-tag' does not match '^v[0-9]+$'"]


def test_without_a_schema_the_config_is_a_skeleton():
    snippet = config_for(_version(None), group="", kind="Plain")
    assert snippet.source == "skeleton" and not snippet.checked
    assert yaml.safe_load(snippet.text) == {
        "apiVersion": "v1",
        "kind": "Plain",
        "metadata": {"name": "plain"},
    }


SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["namespace"],
            "properties": {"namespace": {"type": "string"}},
        }
    },
}


def test_an_example_config_is_shown_as_the_author_wrote_it():
    example = (
        "# the team's namespace\napiVersion: example.co/v1\nkind: SetNamespace\n"
        "metadata:\n  name: ns\nspec:\n  namespace: team-a  # edit me\n"
    )
    version = _version(SCHEMA, examples=["https://example.co/ex.md", example])
    snippet = config_for(version, group="example.co", kind="SetNamespace")
    assert snippet.source == "example" and snippet.label == "from the catalog's example 2"
    assert snippet.text == example
    assert snippet.checked and snippet.problems == []


def test_examples_in_markdown_resource_lists_and_usage_are_found():
    markdown = (
        "## Basic\n\nRun it on your app:\n\n```yaml\napiVersion: example.co/v1\n"
        "kind: SetNamespace\nmetadata:\n  name: md\nspec:\n  namespace: from-markdown\n```\n"
    )
    resource_list = yaml.safe_dump(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": [],
            "functionConfig": {
                "apiVersion": "example.co/v1",
                "kind": "SetNamespace",
                "metadata": {"name": "rl"},
                "spec": {"namespace": "from-resource-list"},
            },
        }
    )
    usage = "# Usage\n\n```yaml\nkind: SetNamespace\nspec:\n  namespace: from-usage\n```\n"
    version = _version(SCHEMA, examples=[markdown, resource_list], usage=usage)
    found = function_pages._examples_configs(version, group="example.co", kind="SetNamespace")
    assert [(s.source, yaml.safe_load(s.text)["spec"]["namespace"]) for s in found] == [
        ("example", "from-markdown"),
        ("example", "from-resource-list"),
        ("usage", "from-usage"),
    ]


def test_an_example_the_schema_refuses_gives_way_to_one_it_accepts():
    wrong_version = "apiVersion: example.co/v2\nkind: SetNamespace\nspec: {namespace: v2}\n"
    other_kind = "apiVersion: example.co/v1\nkind: Other\nspec: {namespace: x}\n"
    bad = (
        "apiVersion: example.co/v1\nkind: SetNamespace\nmetadata: {name: b}\nspec: {namespace: 7}\n"
    )
    good = "apiVersion: example.co/v1\nkind: SetNamespace\nmetadata: {name: g}\n"
    good += "spec: {namespace: ok}\n"
    version = _version(SCHEMA, examples=[wrong_version, other_kind, bad, good])
    snippet = config_for(version, group="example.co", kind="SetNamespace")
    assert snippet.text == good and snippet.problems == []
    # Only refused ones: the first is shown, with what the schema says.
    snippet = config_for(_version(SCHEMA, examples=[bad]), group="example.co", kind="SetNamespace")
    assert snippet.text == bad
    assert snippet.problems == ["spec.namespace: 7 is not of type 'string'"]


def test_hostile_yaml_in_an_example_is_not_expanded():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    version = _version(SCHEMA, examples=[bomb, "[" * 5000 + "]" * 5000])
    snippet = config_for(version, group="example.co", kind="SetNamespace")
    assert snippet.source == "schema"


# ----------------------------------------------------------------------------- changes


def _texts(old, new) -> list[tuple[str, str, str]]:
    return [(c.area, c.level, c.text) for c in version_changes(old, new)]


def test_no_change_is_an_empty_list():
    assert version_changes(_version(SCHEMA), _version(SCHEMA)) == []


def test_runtime_digest_and_image_changes():
    old = _version(runtime={"container": {"image": "r.example.co/fn:v1", "sha256": "a" * 64}})
    new = _version(runtime={"container": {"image": "r.example.co/fn:v2", "sha256": "b" * 64}})
    digests = f"sha256:{'a' * 12}… → sha256:{'b' * 12}…"
    assert _texts(old, new) == [
        ("runtime", "changed", f"image r.example.co/fn:v1 → r.example.co/fn:v2 (digest {digests})")
    ]
    # The same tag now pointing at other content: worth a warning.
    moved = _version(runtime={"container": {"image": "r.example.co/fn:v1", "sha256": "b" * 64}})
    assert _texts(old, moved) == [("runtime", "warn", f"image digest {digests}")]
    pinned = _version(runtime={"container": {"image": f"r.example.co/fn@sha256:{'a' * 64}"}})
    assert _texts(pinned, old) == [
        ("runtime", "changed", f"image r.example.co/fn@sha256:{'a' * 64} → r.example.co/fn:v1")
    ]


def test_exec_platforms_and_runtime_kinds():
    def platform(arch: str, sha: str) -> dict[str, str]:
        return {"bin": "fn", "os": "linux", "arch": arch, "uri": "https://x/fn", "sha256": sha}

    old = _version(runtime={"container": {"image": "r/fn:v1"}})
    new = _version(
        runtime={
            "container": {"image": "r/fn:v1"},
            "exec": {"platforms": [platform("amd64", "c" * 64)]},
        }
    )
    newer = _version(
        runtime={"exec": {"platforms": [platform("amd64", "d" * 64), platform("arm64", "e" * 64)]}}
    )
    assert _texts(old, new) == [
        ("runtime", "added", "exec runtime added"),
        ("runtime", "added", "exec binary for linux/amd64 added"),
        ("capability", "warn", "now runs a binary on the build machine"),
    ]
    assert _texts(new, newer) == [
        ("runtime", "removed", "container runtime removed"),
        ("runtime", "added", "exec binary for linux/arm64 added"),
        ("runtime", "warn", f"exec linux/amd64 sha256 {'c' * 12}… → {'d' * 12}…"),
    ]


def test_schema_fields_added_removed_retyped_required_and_enums():
    old = _version(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "gone": {"type": "string"},
                        "size": {"type": "string"},
                        "mode": {"type": "string", "enum": ["a", "b"]},
                        "name": {"type": "string"},
                    },
                }
            },
        }
    )
    new = _version(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["name", "zone"],
                    "properties": {
                        "size": {"type": "integer"},
                        "mode": {"type": "string", "enum": ["a", "c"]},
                        "name": {"type": "string"},
                        "zone": {"type": "string"},
                        "extra": {"type": "boolean"},
                    },
                }
            },
        }
    )
    assert _texts(old, new) == [
        ("schema", "warn", "required field spec.zone added (string)"),
        ("schema", "added", "field spec.extra added (boolean)"),
        ("schema", "removed", "field spec.gone removed"),
        ("schema", "warn", "field spec.size: type string → integer"),
        ("schema", "warn", "field spec.mode: allowed values added c; removed b"),
        ("schema", "warn", "field spec.name is now required"),
    ]
    assert _texts(_version(None), new)[0] == (
        "schema",
        "added",
        "functionConfig schema added (configs are now checked)",
    )


def test_capabilities_and_details():
    old = _version(runtime={"container": {"image": "r/fn:v1"}}, license="MIT")
    new = _version(
        runtime={"container": {"image": "r/fn:v1", "requireNetwork": True}},
        license="Apache 2.0",
        idempotent=False,
    )
    assert _texts(old, new) == [
        ("capability", "warn", "now needs network (krm build needs --network)"),
        ("details", "changed", "licence MIT → Apache 2.0"),
        ("details", "changed", "now not idempotent"),
    ]
    assert _texts(new, old)[0] == ("capability", "added", "no longer needs network")


def test_versions_sort_as_kubernetes_prefers_them():
    names = ["v1alpha1", "v2", "foo", "v1beta1", "v1", "v1beta2", "v10", "bar"]
    assert sorted(names, key=function_pages.version_priority) == [
        "v10",
        "v2",
        "v1",
        "v1beta2",
        "v1beta1",
        "v1alpha1",
        "bar",
        "foo",
    ]


@pytest.mark.parametrize(
    ("kind", "name"),
    [("SetNamespace", "set-namespace"), ("HTTPLoadBalancer", "http-load-balancer"), ("X", "x")],
)
def test_kebab_names(kind, name):
    assert function_pages.kebab(kind) == name


@pytest.mark.django_db
def test_history_compares_each_catalog_version_with_the_previous_one(catalog):
    def doc(image_tag: str, extra_field: str = "") -> str:
        props = "          properties:\n            a: {type: string}\n" + extra_field
        return (
            "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: m\n"
            "spec:\n  krmFunctions:\n  - group: example.co\n    names:\n      kind: Tool\n"
            "    versions:\n    - name: v1\n      schema:\n        openAPIV3Schema:\n"
            "          type: object\n" + props + "      runtime:\n        container:\n"
            f"          image: registry.example.co/tool:{image_tag}\n"
            "  - group: example.co\n    names:\n      kind: Other\n    versions:\n"
            "    - name: v1\n      runtime:\n        container:\n"
            f"          image: r/o:{image_tag}\n"
        )

    for text in (
        doc("a"),
        doc("b"),
        doc("b", "            b: {type: integer}\n").replace("r/o:b", "r/o:c"),
    ):
        services.catalog_version_publish(catalog=catalog, content=text, actor=None)
    catalog.refresh_from_db()
    history = function_pages.function_history(catalog=catalog, group="example.co", kind="Tool")
    entries = history["entries"]
    assert [e["catalog_version"].number for e in entries] == [3, 2, 1]
    assert [c.text for c in entries[0]["changes"]] == ["field b added (integer)"]
    assert [c.text for c in entries[1]["changes"]] == [
        "image registry.example.co/tool:a → registry.example.co/tool:b"
    ]
    assert entries[2]["first"] and not history["more"]
    short = function_pages.function_history(
        catalog=catalog, group="example.co", kind="Tool", limit=2
    )
    assert [e["catalog_version"].number for e in short["entries"]] == [3, 2] and short["more"]


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "integer"}, 1),
        ({"type": "integer", "minimum": 0.5}, 1),
        ({"type": "integer", "minimum": 5, "exclusiveMinimum": True}, 6),
        ({"type": "integer", "exclusiveMinimum": 7}, 8),
        ({"type": "integer", "maximum": 0}, 0),
        ({"type": "integer", "maximum": -3, "exclusiveMaximum": True}, -4),
        ({"type": "number", "exclusiveMaximum": 1}, 0.5),
        ({"type": "number", "minimum": 2.5}, 2.5),
        ({"type": "integer", "format": "int32", "minimum": -10, "maximum": 10}, 1),
    ],
)
def test_numbers_respect_their_bounds(schema, value):
    version = _version({"type": "object", "required": ["n"], "properties": {"n": schema}})
    snippet = config_generated(version, group="example.co", kind="Count")
    assert yaml.safe_load(snippet.text)["n"] == value
    assert snippet.problems == []


def test_arrays_get_as_many_items_as_they_need():
    version = _version(
        {
            "type": "object",
            "required": ["hosts"],
            "properties": {"hosts": {"type": "array", "minItems": 3, "items": {"type": "string"}}},
        }
    )
    snippet = config_generated(version, group="example.co", kind="Hosts")
    assert yaml.safe_load(snippet.text)["hosts"] == ["my-hosts"] * 3
    assert snippet.problems == []


def test_an_example_without_api_version_or_name_gets_them():
    usage = "```yaml\nkind: SetNamespace\nspec:\n  namespace: a\n```\n"
    snippet = config_for(_version(SCHEMA, usage=usage), group="example.co", kind="SetNamespace")
    assert snippet.source == "usage" and snippet.problems == []
    assert snippet.text == (
        "apiVersion: example.co/v1\nkind: SetNamespace\nmetadata:\n  name: set-namespace\n"
        "spec:\n  namespace: a\n"
    )


def test_an_example_too_long_to_read_is_skipped():
    example = "apiVersion: example.co/v1\nkind: SetNamespace\nspec: {namespace: a}\n"
    example += "#" * function_pages.MAX_EXAMPLE_CHARS
    snippet = config_for(
        _version(SCHEMA, examples=[example]), group="example.co", kind="SetNamespace"
    )
    assert snippet.source == "schema"


def test_generated_fields_carry_what_the_schema_says_as_comments():
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["namespace", "mode", "hosts"],
                "properties": {
                    "namespace": {"type": "string", "description": "The namespace\nto set."},
                    "mode": {"type": "string", "enum": ["strict", "on"]},
                    "note": {"type": "string", "default": "x", "description": "d" * 200},
                    "hosts": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {"name": {"type": "string", "description": "Host name."}},
                        },
                    },
                },
            }
        },
    }
    snippet = config_generated(_version(schema), group="example.co", kind="SetNamespace")
    assert snippet.text == (
        "apiVersion: example.co/v1\n"
        "kind: SetNamespace\n"
        "metadata:\n"
        "  name: set-namespace\n"
        "spec:\n"
        "  namespace: my-namespace  # required: The namespace to set.\n"
        "  mode: strict  # required: one of: strict, 'on'\n"
        "  hosts:  # required\n"
        "  - name: my-name  # required: Host name.\n"
        f"  note: x  # {'d' * 89}…\n"
    )
    assert snippet.problems == []
