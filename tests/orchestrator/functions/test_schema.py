"""functionConfigs checked against their catalog schemas before any function of a build runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.build import BuildOptions, build
from orchestrator.catalog import schema_predicate
from orchestrator.functions import FnOptions
from orchestrator.functions.resolve import host_platform
from orchestrator.functions.schema import FunctionConfigError, to_json_schema

DATA = Path(__file__).parent / "data"

VALID = {
    "java.yaml": "apiVersion: example.com/v1\nkind: JavaApplication\nmetadata:\n  name: app\n"
    "spec:\n  application: team/my-app\n  version: v1.0\n  replicas: null\n",
    "secrets.yaml": "apiVersion: example.com/v1\nkind: SecretSidecar\nmetadata:\n  name: s\n"
    "spec:\n  key: my.secret.value\n  path: /etc/secrets\n",
    "logger.yaml": "apiVersion: example.com/v1\nkind: Logger\nmetadata:\n  name: my-logger\n"
    "spec:\n  logPath: /var/logs\n  level: null\n",
    "lb.yaml": "apiVersion: team.example.com/v1alpha1\nkind: HTTPLoadBalancer\nmetadata:\n"
    "  name: lb\nspec:\n  selector:\n    matchLabels:\n      app: nginx-example\n  expose:\n"
    "    serviceName: nginx\n    port: http\n  template:\n    apiVersion: v1\n    kind: Pod\n"
    "    metadata: {name: t}\n    spec: {anything: goes}\n",
    "labels.yaml": "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetLabels\nmetadata:\n  name: l\n"
    "labels:\n  color: orange\n",
    "ns.yaml": "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetNamespace\nmetadata:\n  name: n\n"
    "namespace: prod\n",
    "repl.yaml": "apiVersion: fn.kpt.dev/v1alpha1\nkind: ApplyReplacements\nmetadata:\n"
    "  name: r\nreplacements:\n- source:\n    kind: ConfigMap\n    name: a\n"
    "    fieldPath: data.x\n  targets:\n  - select:\n      kind: ConfigMap\n"
    "    fieldPaths: [data.y]\n",
}


@pytest.fixture(autouse=True)
def _config_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture
def catalog(tmp_path) -> Path:
    """The schema catalog and its no-op starlark script, copied next to the test's files."""
    shutil.copy(DATA / "noop.star", tmp_path / "noop.star")
    return Path(shutil.copy(DATA / "schema_catalog.yaml", tmp_path / "schema_catalog.yaml"))


def _opts(tmp_path, catalogs, **kw) -> BuildOptions:
    fn = FnOptions(cache_dir=str(tmp_path / "cache"), **kw)
    return BuildOptions(functions=fn, trusted_catalogs=[str(c) for c in catalogs])


def _app(write, files: dict[str, str], *, where: str = "app") -> None:
    for name, text in files.items():
        write(f"{where}/{name}", text)
    write(
        f"{where}/kustomization.yaml",
        "resources:\n- cm.yaml\ntransformers:\n" + "".join(f"- {n}\n" for n in files),
    )
    write(f"{where}/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")


def test_valid_configs_of_kep_examples_and_kpt_functions_pass(tmp_path, write, catalog):
    _app(write, VALID)
    result = build(str(tmp_path / "app"), _opts(tmp_path, [catalog]))
    assert [r["metadata"]["name"] for r in result.resources] == ["a"]
    assert len(result.results) == len(VALID)  # every function ran


def _exec_catalog(tmp_path, kit, write) -> Path:
    """A catalog with an exec function (no schema) that touches $MARKER when it runs."""
    sha = kit.make_tgz(tmp_path / "fn.tgz", {"bin/fn": kit.LABEL_FN})
    os_name, arch = host_platform()
    return write(
        "exec_catalog.yaml",
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: ex\n"
        "spec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: Labeler\n"
        "    versions:\n    - name: v1\n      runtime:\n        exec:\n"
        f"          platforms:\n          - bin: bin/fn\n            os: {os_name}\n"
        f"            arch: {arch}\n            uri: file://{tmp_path / 'fn.tgz'}\n"
        f'            sha256: "{sha}"\n',
    )


BAD_JAVA = (
    "apiVersion: example.com/v1\nkind: JavaApplication\nmetadata:\n  name: app\nspec:\n"
    "  application: Not_A_Repo\n  replicas: 0\n  replica: 2\n"
)
BAD_LB = (
    "apiVersion: team.example.com/v1alpha1\nkind: HTTPLoadBalancer\nmetadata:\n  name: lb\n"
    "spec:\n  expose:\n    serviceName: nginx\n    port: [80]\n  template:\n    kind: Pod\n"
)
BAD_REPL = (
    "apiVersion: fn.kpt.dev/v1alpha1\nkind: ApplyReplacements\nmetadata:\n  name: r\n"
    "replacements:\n- source:\n    kind: ConfigMap\n  targets:\n  - select: {kind: X}\n"
    "    fieldPaths: []\n"
)


def _broken_tree(tmp_path, kit, write) -> tuple[Path, list[Path]]:
    """base: exec Labeler (would touch the marker) then an invalid JavaApplication;
    overlay: an invalid HTTPLoadBalancer inline in the kustomization, and a kpt function."""
    exec_catalog = _exec_catalog(tmp_path, kit, write)
    write("base/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    write("base/labeler.yaml", "apiVersion: example.com/v1\nkind: Labeler\nmetadata:\n  name: l\n")
    write("base/java.yaml", BAD_JAVA)
    write(
        "base/kustomization.yaml",
        "resources:\n- cm.yaml\ntransformers:\n- labeler.yaml\n- java.yaml\n",
    )
    write("overlay/repl.yaml", BAD_REPL)
    inline = "".join("    " + line + "\n" for line in BAD_LB.splitlines())
    write(
        "overlay/kustomization.yaml",
        "resources:\n- ../base\ntransformers:\n- repl.yaml\n- |\n" + inline,
    )
    return tmp_path / "overlay", [exec_catalog, tmp_path / "schema_catalog.yaml"]


EXPECTED = [
    "base/java.yaml:6: spec.application: 'Not_A_Repo' does not match '^[a-z0-9-]+/[a-z0-9-]+$'",
    "base/java.yaml:8: spec.replica: unknown field (known fields: application, replicas, version)",
    "base/java.yaml:5: spec: 'version' is a required property",
    "base/java.yaml:7: spec.replicas: 0 is less than the minimum of 1",
    "overlay/kustomization.yaml:13: spec.expose.port: [80] is not valid under any of the given "
    "schemas",
    "overlay/kustomization.yaml:14: spec.template: 'apiVersion' is a required property",
    "overlay/repl.yaml:10: replacements[0].targets[0].fieldPaths: [] should be non-empty",
]


def test_all_problems_of_all_configs_at_once_and_nothing_runs(tmp_path, kit, write, catalog):
    overlay, catalogs = _broken_tree(tmp_path, kit, write)
    marker = tmp_path / "marker"
    with pytest.raises(FunctionConfigError) as exc:
        build(str(overlay), _opts(tmp_path, catalogs, env=[f"MARKER={marker}"]))
    assert not marker.exists()  # the exec function listed before the bad config never ran
    text = str(exc.value).replace(str(tmp_path) + os.sep, "")
    lines = text.splitlines()
    assert lines[0] == (
        "7 functionConfig problems (schema check; no function was run; --skip-schema to bypass):"
    )
    got = sorted(line.strip().split(" [function ")[0] for line in lines[1:])
    assert got == sorted(EXPECTED), "\n".join(got)
    assert "[function example.com/v1/JavaApplication 'app', schema from catalog " in text


def _krm(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_cli_error_block_exit_1_then_skip_schema_runs_with_a_warning(tmp_path, kit, write, catalog):
    overlay, catalogs = _broken_tree(tmp_path, kit, write)
    marker = tmp_path / "marker"
    flags = [f"--trusted-catalog={c}" for c in catalogs] + ["--env", f"MARKER={marker}"]
    home = tmp_path / "home"
    proc = _krm("build", str(overlay), *flags, home=home, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("Error: 7 functionConfig problems")
    assert proc.stderr.count("\n  ") == 7 and "Traceback" not in proc.stderr
    assert f"{tmp_path}/base/java.yaml:8: spec.replica: unknown field" in proc.stderr
    assert not marker.exists()
    proc = _krm("build", str(overlay), *flags, "--skip-schema", home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert marker.exists()
    assert "Warning: --skip-schema: functionConfigs were not checked" in proc.stderr
    assert "exec-fn: ran" in proc.stdout


def test_per_function_opt_out_in_the_config_file(tmp_path, write, catalog):
    _app(write, {"java.yaml": BAD_JAVA, "ns.yaml": VALID["ns.yaml"]})
    write("config/krm/config.yaml", "skipSchema:\n- example.com/v1/JavaApplication\n")
    result = build(str(tmp_path / "app"), _opts(tmp_path, [catalog]))
    assert len(result.results) == 2
    assert (
        "Warning: functionConfig schema check skipped for example.com/v1/JavaApplication "
        "(skipSchema in the krm config file)" in result.warnings
    )
    write("config/krm/config.yaml", "skipSchema: JavaApplication\n")
    with pytest.raises(Exception, match="skipSchema must be a list"):
        build(str(tmp_path / "app"), _opts(tmp_path, [catalog]))


def test_explicit_runtime_is_not_checked_and_results_stay_untouched(tmp_path, write, catalog):
    # The script sits in the kustomization's root (one out of it is refused like any file),
    # and a runtime the kustomization names itself runs only with --enable-alpha-plugins.
    explicit = BAD_JAVA + "runtime:\n  starlark:\n    path: noop.star\n"
    _app(write, {"java.yaml": explicit})
    write("app/noop.star", "")
    result = build(str(tmp_path / "app"), _opts(tmp_path, [catalog], enable_alpha_plugins=True))
    assert len(result.results) == 1


def test_invalid_schema_in_a_catalog_is_a_problem_not_a_crash(tmp_path, write):
    write("noop.star", "")
    write(
        "cat.yaml",
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: c\n"
        "spec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: Odd\n"
        "    versions:\n    - name: v1\n      runtime:\n        starlark:\n"
        "          path: noop.star\n"
        "      schema:\n        openAPIV3Schema:\n          type: objekt\n",
    )
    _app(write, {"odd.yaml": "apiVersion: example.com/v1\nkind: Odd\nmetadata:\n  name: o\n"})
    with pytest.raises(FunctionConfigError) as exc:
        build(str(tmp_path / "app"), _opts(tmp_path, [tmp_path / "cat.yaml"]))
    assert "the catalog's schema is invalid: 'objekt' is not valid" in str(exc.value)


@pytest.mark.parametrize(
    ("openapi", "good", "bad"),
    [
        ({"type": "string", "nullable": True}, [None, "x"], [1]),
        ({"type": "string", "enum": ["a"], "nullable": True}, [None, "a"], ["b"]),
        ({"x-kubernetes-int-or-string": True}, [80, "http"], [1.5, [], None]),
        ({"type": "string", "format": "int-or-string"}, [80, "50%"], [True, {}]),
        ({"type": "integer", "format": "int32"}, [2**31 - 1], [2**31, "1"]),
        ({"type": "integer", "format": "int64"}, [2**63 - 1], [2**63]),
        ({"type": "number", "minimum": 0, "exclusiveMinimum": True}, [0.1], [0]),
        ({"type": "number", "maximum": 1, "exclusiveMaximum": True}, [0.9, -3], [1, 2]),
        ({"type": "string", "maxLength": 2, "format": "hostname"}, ["ab"], ["abc"]),
        ({"type": "array", "maxItems": 1, "items": {"type": "integer"}}, [[1]], [[1, 2], ["a"]]),
        ({"type": "object", "maxProperties": 1}, [{"a": 1}], [{"a": 1, "b": 2}]),
        ({"allOf": [{"type": "integer"}, {"minimum": 3}]}, [3, 4], [2, "a", True]),
        ({"type": "array", "x-kubernetes-list-type": "set"}, [[1, 2]], [[1, 1]]),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}},
            [{"a": "x"}],
            [{"b": "x"}],
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "x-kubernetes-preserve-unknown-fields": True,
            },
            [{"a": "x", "b": 1}],
            [{"a": 1}],
        ),
        (
            {"type": "object", "x-kubernetes-embedded-resource": True},
            [{"apiVersion": "v1", "kind": "Pod", "metadata": {}}],
            [{"kind": "Pod"}, {"apiVersion": 1, "kind": "Pod"}],
        ),
    ],
)
def test_openapi_to_json_schema(openapi, good, bad):
    import jsonschema

    before = json.dumps(openapi, sort_keys=True)
    # Wrapped as a field so the root object's implicit apiVersion/kind/metadata don't interfere.
    schema = to_json_schema({"type": "object", "properties": {"f": openapi}})
    assert json.dumps(openapi, sort_keys=True) == before  # the catalog's data is not modified
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    assert [x for x in good if not v.is_valid({"f": x})] == []
    assert [x for x in bad if v.is_valid({"f": x})] == []
    assert not any(k.startswith("x-kubernetes") or k == "nullable" for k in _keys(schema))
    # The fast yes/no the build uses agrees with jsonschema wherever it applies.
    try:
        fast = schema_predicate(schema)
    except NotImplementedError:
        assert "uniqueItems" in _keys(schema)  # the one keyword here it leaves to jsonschema
        return
    assert [fast({"f": x}) for x in good + bad] == [v.is_valid({"f": x}) for x in good + bad]


def _keys(node):
    if isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from _keys(v)
    elif isinstance(node, list):
        for v in node:
            yield from _keys(v)


def test_root_allows_object_fields_but_not_typos(tmp_path):
    schema = to_json_schema({"type": "object", "properties": {"spec": {"type": "object"}}})
    import jsonschema

    v = jsonschema.Draft202012Validator(schema)
    assert v.is_valid({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x"}, "spec": {}})
    assert not v.is_valid({"apiVersion": "a/v1", "kind": "K", "sepc": {}})


def test_krm_fn_schema_prints_the_json_schema(tmp_path, catalog):
    home = tmp_path / "home"
    proc = _krm("fn", "schema", "SetNamespace", "--catalog", str(catalog), home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    assert schema["title"] == "fn.kpt.dev/v1alpha1 SetNamespace"
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["namespace"]["maxLength"] == 63
    assert schema["additionalProperties"] is False
    proc = _krm(
        "fn", "schema", "example.com/v1/Logger", "--catalog", str(catalog), home=home, cwd=tmp_path
    )
    assert json.loads(proc.stdout)["properties"]["spec"]["properties"]["level"]["type"] == [
        "string",
        "null",
    ]
    proc = _krm("fn", "schema", "Nope", "--catalog", str(catalog), home=home, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == f"Error: no catalog defines Nope; catalogs searched: {catalog}\n"
    proc = _krm("fn", "schema", "Nope", home=home, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: no catalog to search: pass --catalog REF")
    proc = _krm("--help", home=home, cwd=tmp_path)
    assert "fn" in proc.stdout


def test_composition_configs_are_checked_before_they_run(tmp_path, write, catalog):
    # A Composition build has no tree walk: each config is checked just before it would run.
    write(
        "app/composition.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\ncatalogs:\n"
        "- ../schema_catalog.yaml\ntransformers:\n- apiVersion: example.com/v1\n"
        "  kind: JavaApplication\n  metadata: {name: app}\n  spec: {application: team/app}\n",
    )
    with pytest.raises(FunctionConfigError) as exc:
        build(str(tmp_path / "app"), _opts(tmp_path, [catalog]))
    assert exc.value.problems[0].path == "spec"
    assert exc.value.problems[0].message == "'version' is a required property"
    write(
        "app/composition.yaml",
        (tmp_path / "app/composition.yaml")
        .read_text()
        .replace("{application: team/app}", "{application: team/app, version: v1}"),
    )
    assert len(build(str(tmp_path / "app"), _opts(tmp_path, [catalog])).results) == 1


def test_a_build_without_functions_loads_no_function_machinery(tmp_path, write):
    # The build cache (and the import budget) count on this: the precheck stays a file walk.
    write("app/kustomization.yaml", "resources:\n- cm.yaml\n")
    write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    code = (
        "import sys; from orchestrator.build import build; build(sys.argv[1]); "
        "print(sorted(m for m in sys.modules if m.startswith('orchestrator.functions.')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "app")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
    )
    # Only the walk that finds functionConfigs (none here): not even the schema module.
    assert proc.stdout.strip() == "['orchestrator.functions.walk']"


def test_krm_fn_schema_of_a_function_without_schema_says_so(tmp_path, write):
    write("noop.star", "")
    write(
        "cat.yaml",
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: c\n"
        "spec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: Plain\n"
        "    versions:\n    - name: v1\n      runtime:\n        starlark:\n"
        "          path: noop.star\n",
    )
    home = tmp_path / "home"
    proc = _krm("fn", "schema", "Plain", "--catalog", "cat.yaml", home=home, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == "Error: example.com/v1 Plain in catalog cat.yaml has no schema\n"
    assert "--skip-schema" in _krm("build", "--help", home=home, cwd=tmp_path).stdout
