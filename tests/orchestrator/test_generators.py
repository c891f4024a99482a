"""configMapGenerator / secretGenerator / hash: unit tests and the shared conformance corpus."""

from __future__ import annotations

import base64
import copy
import re
from pathlib import Path

import pytest
import yaml

from orchestrator.errors import ResourceConflictError, ValidationError
from orchestrator.filters import configmapgenerator, hash, secretgenerator
from orchestrator.filters.generatorutil import (
    env_pairs,
    fold_nel,
    parse_file_source,
    parse_literal,
)
from orchestrator.resource import Resource

CORPUS = Path(__file__).resolve().parents[1] / "conformance" / "kustomize" / "cases"


def _reader(files: dict[str, bytes]):
    def read(path: str) -> bytes:
        return files[path]

    return read


def _cm(args: dict, files: dict[str, bytes] | None = None, options: dict | None = None):
    return configmapgenerator.generate(args, options=options, read_file=_reader(files or {}))


def _secret(args: dict, files: dict[str, bytes] | None = None, options: dict | None = None):
    return secretgenerator.generate(args, options=options, read_file=_reader(files or {}))


# --- env files ----------------------------------------------------------------------------


def test_env_file_rules():
    content = (
        b"\xef\xbb\xbfFIRST=1\n"  # BOM on the first line is dropped
        b"# a comment\n"
        b"\n"
        b"   INDENTED=yes\n"  # leading whitespace trimmed
        b'QUOTED="kept as is"\n'  # env files do not unquote
        b"SPACES=a b  \n"  # trailing whitespace kept
        b"CRLF=x\r\n"  # one trailing \r dropped
        b"EQ=a=b=c\n"
        b"NOVALUE\n"  # key alone: empty value
        b"=orphan\n"  # empty key: ignored like a comment
        b"\t# indented comment\n"
        b"LAST=no newline"
    )
    assert env_pairs(content) == [
        ("FIRST", "1"),
        ("INDENTED", "yes"),
        ("QUOTED", '"kept as is"'),
        ("SPACES", "a b  "),
        ("CRLF", "x"),
        ("EQ", "a=b=c"),
        ("NOVALUE", ""),
        ("LAST", "no newline"),
    ]


def test_env_file_bom_only_on_first_line():
    assert env_pairs(b"A=1\n\xef\xbb\xbfB=2\n") == [("A", "1"), ("\ufeffB", "2")]


def test_env_file_go_whitespace_not_python_whitespace():
    # \x1c is whitespace to Python's str.isspace but not to Go's unicode.IsSpace.
    assert env_pairs(b"\x1cK=v\n\xc2\xa0L=w\n") == [("\x1cK", "v"), ("L", "w")]


def test_env_file_invalid_utf8_is_an_error_naming_the_line():
    with pytest.raises(ValidationError) as err:
        _cm({"name": "c", "envs": ["a.env"]}, {"a.env": b"OK=1\nBAD=\xff\n"})
    assert err.value.message == (
        "configMapGenerator 'c': env source files: [a.env]: "
        "line [66 65 68 61 255] has invalid utf8 bytes : BAD=\ufffd"
    )


def test_env_file_stops_at_an_overlong_line_like_bufio_scanner():
    content = b"A=1\nB=" + b"x" * (64 * 1024) + b"\nC=3\n"
    assert env_pairs(content) == [("A", "1")]
    # one byte shorter fits
    fits = b"A=1\nB=" + b"x" * (64 * 1024 - 3) + b"\nC=3\n"
    assert [k for k, _ in env_pairs(fits)] == ["A", "B", "C"]


def test_env_and_envs_are_combined_env_last():
    res = _cm(
        {"name": "c", "env": "b.env", "envs": ["a.env"]},
        {"a.env": b"A=1\n", "b.env": b"B=2\n"},
    )
    assert res.obj["data"] == {"A": "1", "B": "2"}


# --- literals and files -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("a=b", ("a", "b")),
        ("a=", ("a", "")),
        ("a==b", ("a", "=b")),
        ('a="quoted"', ("a", "quoted")),
        ("a='single'", ("a", "single")),
        ("a=\"mismatch'", ("a", "\"mismatch'")),
        ('a="', ("a", '"')),
        ('a=""', ("a", "")),
        ("a=this is a 'test'", ("a", "this is a 'test'")),
        ("a='x'y'", ("a", "x'y")),
    ],
)
def test_parse_literal(source, expected):
    assert parse_literal(source) == expected


@pytest.mark.parametrize("bad", ["novalue", "=value"])
def test_bad_literal_is_an_error(bad):
    with pytest.raises(ValidationError) as err:
        _cm({"name": "c", "literals": ["ok=1", bad]})
    assert err.value.message == (
        f"configMapGenerator 'c': literal sources [ok=1 {bad}]: "
        f"invalid literal source {bad}, expected key=value"
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("dir/app.conf", ("app.conf", "dir/app.conf")),
        ("key=dir/app.conf", ("key", "dir/app.conf")),
        ("app.conf", ("app.conf", "app.conf")),
    ],
)
def test_parse_file_source(source, expected):
    assert parse_file_source(source) == expected


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("=a.txt", 'missing key name for file path "a.txt" in source "=a.txt"'),
        ("k=", 'missing file path for key name "k" in source "k="'),
        ("a=b=c", "source \"a=b=c\" key name or file path contains '='"),
    ],
)
def test_bad_file_source_is_an_error(source, message):
    with pytest.raises(ValidationError) as err:
        _cm({"name": "c", "files": [source]})
    assert err.value.message == f"configMapGenerator 'c': file sources: [{source}]: {message}"


def test_repeated_key_is_an_error():
    with pytest.raises(ValidationError) as err:
        _cm({"name": "c", "literals": ["a=1"], "files": ["a"]}, {"a": b"x"})
    assert err.value.message == "configmap c illegally repeats the key `a`"


def test_missing_name_is_an_error():
    with pytest.raises(ValidationError) as err:
        _cm({"literals": ["a=1"]})
    assert err.value.message == "a configmap must have a name"


def test_unknown_behavior_acts_as_create_like_kustomize():
    # kubectl kustomize builds `behavior: upsert` as a plain create (checked against v5.5.0).
    assert _cm({"name": "c", "behavior": "upsert"}).behavior == "create"
    assert _cm({"name": "c", "behavior": "merge"}).behavior == "merge"


def test_non_string_behavior_is_an_error():
    with pytest.raises(ValidationError) as err:
        _cm({"name": "c", "behavior": 1})
    assert err.value.message == "configMapGenerator 'c': behavior must be a string, got 1"


def test_unknown_field_is_an_error():
    with pytest.raises(ValidationError) as err:
        _cm({"name": "c", "literal": ["a=1"]})
    assert err.value.message == "configMapGenerator 'c': unknown field(s) literal"


def test_configmap_shape_and_order_of_sources():
    res = _cm(
        {
            "name": "c",
            "namespace": "ns",
            "literals": ["L=1"],
            "files": ["f.txt", "bin=blob"],
            "envs": ["e.env"],
        },
        {"f.txt": "héllo\n".encode(), "blob": b"\x00\xff" * 40, "e.env": b"E=2\n"},
    )
    assert res.behavior == "create"
    assert res.needs_hash is True
    raw = base64.b64encode(b"\x00\xff" * 40).decode()
    assert res.obj == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns"},
        "data": {"E": "2", "L": "1", "f.txt": "héllo\n"},
        # 108 base64 characters: kyaml breaks at 70 and ends every line with \n
        "binaryData": {"bin": raw[:70] + "\n" + raw[70:] + "\n"},
    }


def test_empty_configmap_has_no_data_and_secret_has_empty_data():
    assert "data" not in _cm({"name": "c"}).obj
    assert _secret({"name": "s"}).obj["data"] == {}


def test_options_merge_local_wins_and_global_true_wins():
    res = _cm(
        {
            "name": "c",
            "options": {
                "labels": {"a": "local"},
                "annotations": {"n": "1"},
                "disableNameSuffixHash": False,
            },
        },
        options={
            "labels": {"a": "global", "b": "global"},
            "disableNameSuffixHash": True,
            "immutable": True,
        },
    )
    assert res.obj["metadata"]["labels"] == {"a": "local", "b": "global"}
    assert res.obj["metadata"]["annotations"] == {"n": "1"}
    assert res.obj["immutable"] is True
    assert res.needs_hash is False


def test_options_must_be_string_maps():
    with pytest.raises(ValidationError) as err:
        _cm({"name": "c", "options": {"labels": {"a": 1}}})
    assert err.value.message == (
        "configMapGenerator 'c': options.labels must be a map of strings to strings"
    )


def test_secret_shape():
    res = _secret(
        {"name": "s", "type": "kubernetes.io/tls", "literals": ["tls.key=k"], "files": ["tls.crt"]},
        {"tls.crt": b"\xff\xfe"},
    )
    assert res.obj == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "//4=", "tls.key": "aw=="},
    }
    assert _secret({"name": "s"}).obj["type"] == "Opaque"


def test_secret_rejects_non_string_type():
    with pytest.raises(ValidationError) as err:
        _secret({"name": "s", "type": 5})
    assert err.value.message == "secretGenerator 's': type must be a string"


def test_configmap_rejects_type():
    with pytest.raises(ValidationError) as err:
        _cm({"name": "c", "type": "Opaque"})
    assert err.value.message == "configMapGenerator 'c': unknown field(s) type"


# --- hash -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        # vectors from kustomize's api/hasher/hasher_test.go
        ({"apiVersion": "v1", "kind": "ConfigMap"}, "6ct58987ht"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "data": {"one": ""}}, "9g67k2htb6"),
        (
            {"apiVersion": "v1", "kind": "ConfigMap", "data": {"two": 2, "one": "", "three": 3}},
            "7757f9kkct",
        ),
        ({"apiVersion": "v1", "kind": "ConfigMap", "binaryData": {"one": ""}}, "6mtk2m274t"),
        ({"apiVersion": "v1", "kind": "Secret", "type": "my-type"}, "5gmgkf8578"),
        (
            {"apiVersion": "v1", "kind": "Secret", "type": "my-type", "data": {"one": ""}},
            "74bd68bm66",
        ),
        (
            {
                "kind": "Secret",
                "type": "my-type",
                "data": {"one": ""},
                "stringData": {"two": 2},
            },
            "c4h4264gdb",
        ),
    ],
)
def test_hash_vectors(obj, expected):
    assert hash.content_hash(obj) == expected


def test_hash_ignores_name_labels_and_namespace_like_kustomize():
    a = {"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}
    b = {"kind": "ConfigMap", "metadata": {"name": "b", "labels": {"x": "y"}}, "data": {"k": "v"}}
    assert hash.content_hash(a) == hash.content_hash(b)
    c = copy.deepcopy(a)
    c["data"]["k"] = "w"
    assert hash.content_hash(c) != hash.content_hash(a)


def test_go_json_escapes():
    assert hash.go_json({"b": '<&>\u2028\u2029\x01\b\f\n\t"\\é', "a": [1, 2.5, True, None]}) == (
        '{"a":[1,2.5,true,null],"b":"\\u003c\\u0026\\u003e\\u2028\\u2029\\u0001\\b\\f\\n\\t\\"\\\\é"}'
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (1e21, "1e+21"),
        (123456789.5, "123456789.5"),
    ],
)
def test_go_json_floats(value, text):
    assert hash.go_json(value) == text


# --- merge and replace ----------------------------------------------------------------------


def _base_and_overlay(behavior: str, overlay_opts: dict | None = None):
    base = _cm(
        {
            "name": "c",
            "literals": ["a=1", "b=2"],
            "options": {"labels": {"l": "base", "keep": "x"}, "annotations": {"n": "base"}},
        }
    )
    overlay = _cm(
        {
            "name": "c",
            "behavior": behavior,
            "literals": ["b=3", "c=4"],
            "options": {"labels": {"l": "overlay"}, **(overlay_opts or {})},
        }
    )
    return base, overlay


def test_merge():
    base, overlay = _base_and_overlay("merge")
    base.rename(name="p-c")
    configmapgenerator.merge_into(base, overlay)
    assert base.obj == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "p-c",
            "labels": {"keep": "x", "l": "overlay"},
            "annotations": {"n": "base"},
        },
        "data": {"a": "1", "b": "3", "c": "4"},
    }
    assert base.needs_hash is True
    assert base.behavior == "create"
    assert base.previous == [("", "c")]


def test_replace_keeps_metadata_but_not_data():
    base, overlay = _base_and_overlay("replace")
    configmapgenerator.merge_into(base, overlay)
    assert base.obj["data"] == {"b": "3", "c": "4"}
    assert base.obj["metadata"]["labels"] == {"keep": "x", "l": "overlay"}


def test_merge_hash_flag_needs_both():
    base, overlay = _base_and_overlay("merge", {"disableNameSuffixHash": True})
    configmapgenerator.merge_into(base, overlay)
    assert base.needs_hash is False
    base2 = _cm({"name": "c", "options": {"disableNameSuffixHash": True}})
    overlay2 = _cm({"name": "c", "behavior": "merge", "literals": ["x=1"]})
    configmapgenerator.merge_into(base2, overlay2)
    assert base2.needs_hash is False


def test_merge_into_plain_configmap_stringifies_values():
    plain = Resource(
        obj={
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns"},
            "data": {"n": 1, "t": True},
        }
    )
    overlay = _cm({"name": "c", "namespace": "ns", "behavior": "merge", "literals": ["x=1"]})
    configmapgenerator.merge_into(plain, overlay)
    assert plain.obj["data"] == {"n": "1", "t": "true", "x": "1"}
    assert plain.obj["metadata"]["namespace"] == "ns"
    assert plain.needs_hash is False


def test_merge_secret():
    base = _secret({"name": "s", "literals": ["a=1"]})
    overlay = _secret({"name": "s", "behavior": "merge", "literals": ["b=2"]})
    secretgenerator.merge_into(base, overlay)
    assert base.obj["data"] == {"a": "MQ==", "b": "Mg=="}
    assert base.obj["type"] == "Opaque"


def test_merge_with_create_behavior_is_an_error():
    base, _ = _base_and_overlay("merge")
    again = _cm({"name": "c", "literals": ["z=1"]})
    before = copy.deepcopy(base.obj)
    with pytest.raises(ResourceConflictError) as err:
        configmapgenerator.merge_into(base, again)
    assert err.value.message.endswith("exists; behavior must be merge or replace")
    assert base.obj == before


# --- corpus -----------------------------------------------------------------------------------


def _corpus_generators():
    cases = []
    if not CORPUS.is_dir():
        return cases
    for case in sorted(CORPUS.iterdir()):
        meta = yaml.safe_load((case / "case.yaml").read_text())
        if meta.get("expect") != "output":
            continue
        build = case / meta["build"]
        kfile = build / "kustomization.yaml"
        if not kfile.exists():
            continue
        kust = yaml.safe_load(kfile.read_text()) or {}
        for kind, key in (("ConfigMap", "configMapGenerator"), ("Secret", "secretGenerator")):
            for i, args in enumerate(kust.get(key) or []):
                if args.get("behavior") in ("merge", "replace"):
                    continue
                cases.append(
                    pytest.param(case, build, kind, args, kust, id=f"{case.name}-{key}-{i}")
                )
    return cases


@pytest.mark.parametrize(("case", "build", "kind", "args", "kust"), _corpus_generators())
def test_corpus_generated_names_and_data(case, build, kind, args, kust):
    module = configmapgenerator if kind == "ConfigMap" else secretgenerator
    res = module.generate(
        args,
        options=kust.get("generatorOptions"),
        read_file=lambda p: (build / p).read_bytes(),
    )
    suffix = f"-{hash.content_hash(res.obj)}" if res.needs_hash else ""
    expected = [
        doc
        for doc in yaml.safe_load_all((case / "expected.yaml").read_text())
        if doc and doc.get("kind") == kind
    ]
    # namePrefix/nameSuffix of the case are applied by other filters: the generator's name must
    # appear in the final name, and the hash must end it.
    names = [doc["metadata"]["name"] for doc in expected]
    found = [
        doc
        for doc in expected
        if args["name"] in doc["metadata"]["name"] and doc["metadata"]["name"].endswith(suffix)
    ]
    assert found, f"{args['name']}{suffix} not among {names}"
    doc = found[0]
    assert doc.get("data") == res.obj.get("data")
    assert doc.get("binaryData") == res.obj.get("binaryData")
    if kind == "Secret":
        assert doc.get("type") == res.obj["type"]


def test_go_json_fast_path_equals_the_general_encoder():
    import random

    rng = random.Random(7)
    chars = 'ab<>&\u2028\u2029\x00\x1f"\\é\U0001f600 \n'
    for _ in range(200):
        data = {
            "".join(rng.choice(chars) for _ in range(rng.randint(0, 6))): "".join(
                rng.choice(chars) for _ in range(rng.randint(0, 20))
            )
            for _ in range(rng.randint(0, 6))
        }
        value = {"data": data, "kind": "ConfigMap", "n": [1, True, None]}
        out: list[str] = []
        hash._encode(value, out)
        # Go escapes these (\u003c...) even inside strings.
        slow = re.sub("[<>&\u2028\u2029]", lambda m: f"\\u{ord(m.group()):04x}", "".join(out))
        assert hash.go_json(value) == slow


def test_go_json_writes_dates_as_rfc3339_text() -> None:
    # A value can only be a date once something imported datetime: hash.py looks it up then.
    import datetime

    value = {
        "day": datetime.date(2024, 2, 29),
        "at": datetime.datetime(2024, 2, 29, 13, 5, 7, tzinfo=datetime.UTC),
    }
    assert hash.go_json(value) == '{"at":"2024-02-29T13:05:07+00:00","day":"2024-02-29"}'


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("a\x85b", "a b"),
        ("a  \x85  b", "a b"),
        ("a\x85\x85b", "a\nb"),
        ("a \x85 \x85 \x85b", "a\n\nb"),
        ("\x85z", " z"),
        ("no nel", "no nel"),
    ],
)
def test_fold_nel(text, folded):
    assert fold_nel(text) == folded


def test_literal_nel_is_folded_before_hashing_but_file_data_is_not():
    literal = _cm({"name": "c", "literals": ["a=x\x85y"]})
    assert literal.obj["data"] == {"a": "x y"}
    from_file = _cm({"name": "c", "files": ["f"]}, {"f": "x\x85y".encode()})
    assert from_file.obj["data"] == {"f": "x\x85y"}  # the writer folds it; the hash must not


def test_plugin_configs_ignore_unknown_fields():
    # kustomize's builtin plugin configs (generators: files) are decoded leniently.
    res = configmapgenerator.generate(
        {"name": "c", "labels": {"x": "y"}, "literals": ["a=1"]},
        options=None,
        read_file=_reader({}),
        strict=False,
    )
    assert res.obj["data"] == {"a": "1"}
    assert "labels" not in res.obj["metadata"]


@pytest.mark.parametrize(("behavior", "origin"), [("merge", "base"), ("replace", "overlay")])
def test_origin_annotation_kept_on_merge_taken_on_replace(behavior, origin):
    anno = "config.kubernetes.io/origin"
    base = _cm({"name": "c", "literals": ["a=1"], "options": {"annotations": {anno: "base"}}})
    overlay = _cm(
        {
            "name": "c",
            "behavior": behavior,
            "literals": ["b=2"],
            "options": {"annotations": {anno: "overlay"}},
        }
    )
    configmapgenerator.merge_into(base, overlay)
    assert base.obj["metadata"]["annotations"][anno] == origin


def test_read_errors_keep_their_type_and_name_the_source():
    from orchestrator.errors import LoadError

    def read(path: str) -> bytes:
        raise LoadError("file does not exist", file=path)

    with pytest.raises(LoadError) as err:
        secretgenerator.generate({"name": "s", "files": ["k=a.txt"]}, options=None, read_file=read)
    assert err.value.message == "secretGenerator 's': file sources: [k=a.txt]: file does not exist"
    assert err.value.file == "a.txt"
    with pytest.raises(LoadError) as err:
        configmapgenerator.generate({"name": "c", "envs": ["x.env"]}, options=None, read_file=read)
    assert err.value.message == (
        "configMapGenerator 'c': env source files: [x.env]: file does not exist"
    )


def test_option_flags_must_be_booleans():
    # A quoted "false" would otherwise be truthy and silently drop the hash.
    with pytest.raises(ValidationError) as err:
        _cm({"name": "c", "options": {"disableNameSuffixHash": "false"}})
    assert err.value.message == (
        "configMapGenerator 'c': options.disableNameSuffixHash must be true or false, got 'false'"
    )
    with pytest.raises(ValidationError) as err:
        _cm({"name": "c"}, options={"immutable": 1})
    assert err.value.message == "generatorOptions.immutable must be true or false, got 1"
