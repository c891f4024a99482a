"""Legacy exec plugins (``--enable-alpha-plugins``), differential against ``kubectl kustomize``.

The plugins are small Python programs in a plugin home; the capturing ones print what they were
given (arguments, environment, working directory, config file, stdin) as a ConfigMap, so the
comparison covers exactly what each tool hands a plugin, not only what comes out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator import execplugin

KUBECTL = shutil.which("kubectl")
GV = "someteam.example.com/v1"

CAPTURE_GENERATOR = """
import json, os, sys
cfg = sys.argv[1]
data = {
    "args": json.dumps(sys.argv[2:]),
    "cfgdir": str(os.path.dirname(cfg) == (os.environ.get("TMPDIR") or "/tmp")),
    "cfgname": os.path.basename(cfg)[:19],
    "cfg": open(cfg).read(),
    "cwd": os.getcwd(),
    "root": os.environ.get("KUSTOMIZE_PLUGIN_CONFIG_ROOT"),
    "string": os.environ.get("KUSTOMIZE_PLUGIN_CONFIG_STRING"),
    "stdin": sys.stdin.read(),
    "mine": os.environ.get("MINE", ""),
}
print(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gen"},
                  "data": data}))
"""

# Echoes its input, then a ConfigMap recording it (so the input's exact text is compared).
CAPTURE_TRANSFORMER = """
import json, sys
stdin = sys.stdin.read()
print(stdin)
print("---")
print(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "seen"},
                  "data": {"stdin": stdin, "args": json.dumps(sys.argv[2:])}}))
"""

CM = """apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data:
  x: "1"
"""
DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: c
        image: nginx
        envFrom:
        - configMapRef:
            name: hashed
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "plugins"
    path.mkdir()
    monkeypatch.setenv("KUSTOMIZE_PLUGIN_HOME", str(path))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return path


@pytest.fixture
def plugin(home: Path) -> Callable[..., Path]:
    def write(kind: str, body: str, *, gv: str = GV, shell: bool = False) -> Path:
        path = home / gv / kind.lower() / kind
        path.parent.mkdir(parents=True, exist_ok=True)
        shebang = "#!/bin/sh\n" if shell else f"#!{sys.executable}\n"
        path.write_text(shebang + body.lstrip("\n"))
        path.chmod(0o755)
        return path

    return write


@pytest.fixture
def app(tmp_path: Path) -> Callable[..., Path]:
    def write(files: dict[str, str]) -> Path:
        root = tmp_path / "app"
        for rel, text in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        return root

    return write


def _config(kind: str, extra: str = "", name: str = "p") -> str:
    return f"apiVersion: {GV}\nkind: {kind}\nmetadata:\n  name: {name}\n{extra}"


def kubectl(root: Path, *flags: str, env: dict[str, str] | None = None):
    if KUBECTL is None:
        if os.environ.get("CI"):
            pytest.fail("kubectl (the kustomize oracle) is not installed")
        pytest.skip("kubectl (the kustomize oracle) is not installed")
    return subprocess.run(
        [KUBECTL, "kustomize", str(root), *flags],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


def krm(root: Path, *flags: str, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", str(root), *flags],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


def same(root: Path, env: dict[str, str] | None = None) -> str:
    expected = kubectl(root, "--enable-alpha-plugins", env=env)
    assert expected.returncode == 0, expected.stderr
    got = krm(root, "--enable-alpha-plugins", env=env)
    assert got.returncode == 0, got.stderr
    assert got.stdout == expected.stdout
    return got.stdout


def both_fail(root: Path, *flags: str) -> tuple[str, str]:
    expected = kubectl(root, *flags)
    got = krm(root, *flags)
    assert expected.returncode == 1, expected.stdout
    assert got.returncode == 1, got.stdout
    assert got.stdout == ""
    return expected.stderr, got.stderr


# ------------------------------------------------------------------------------ what a plugin gets


def test_generator_and_transformer_get_what_kustomize_gives(plugin, app, home) -> None:
    plugin("GenOne", CAPTURE_GENERATOR)
    plugin("Seen", CAPTURE_TRANSFORMER)
    root = app(
        {
            "kustomization.yaml": "resources: [cm.yaml]\ngenerators: [g.yaml]\n"
            "transformers: [t.yaml]\n",
            "cm.yaml": CM,
            "g.yaml": _config(
                "GenOne",
                "  annotations:\n    a: b\nspec: {z: 1, a: [x, y]}\n"
                "argsOneLiner: \"one 'two three' # four\"\nargsFromFile: args.txt\n",
            ),
            "args.txt": "  first\n\nsecond line\n",
            "t.yaml": _config("Seen", "argsOneLiner: unclosed 'quote\n", name="t"),
        }
    )
    out = same(root, env={"MINE": "mine"})
    assert 'args: \'["one", "two three", "first", "second line"]\'' in out
    assert f"cwd: {root}" in out and "cfgname: kust-plugin-config-" in out
    assert "kustomize.config.k8s.io/id: |" in out  # the transformer saw the ids
    assert "internal.config.kubernetes.io/generatorBehavior: unspecified" in out
    assert "mine: mine" in out
    # the temporary config files are gone
    assert list((home.parent / "tmp").iterdir()) == []


def test_transformer_sees_build_annotations_of_a_renamed_base(plugin, app) -> None:
    plugin("Seen", CAPTURE_TRANSFORMER)
    root = app(
        {
            "base/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: pre-\n"
            "configMapGenerator:\n- name: made\n  literals: [k=v]\n  behavior: create\n",
            "base/cm.yaml": CM,
            "kustomization.yaml": "resources: [base]\nnameSuffix: -suf\ntransformers: [t.yaml]\n",
            "t.yaml": _config("Seen", name="t"),
        }
    )
    out = same(root)
    assert "internal.config.kubernetes.io/previousNames: a,pre-a" in out


def test_generator_options_from_annotations(plugin, app) -> None:
    plugin(
        "Hashed",
        """
import sys
print('''apiVersion: v1
kind: ConfigMap
metadata:
  name: hashed
  annotations:
    kustomize.config.k8s.io/needs-hash: "true"
    keep: me
data:
  k: v
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: merged
  annotations:
    kustomize.config.k8s.io/behavior: merge
data:
  extra: "1"''')
""",
    )
    root = app(
        {
            "kustomization.yaml": "resources: [deploy.yaml]\n"
            "configMapGenerator:\n- name: merged\n  literals: [k=v]\n"
            "generators: [g.yaml]\n",
            "deploy.yaml": DEPLOY,
            "g.yaml": _config("Hashed"),
        }
    )
    out = same(root)
    assert "name: hashed-" in out and "keep: me" in out and 'extra: "1"' in out


def test_transformer_replaces_adds_and_removes_by_id(plugin, app) -> None:
    # Keeps the Deployment (changed), drops the ConfigMap, adds a Secret.
    plugin(
        "Edit",
        """
import sys
docs = sys.stdin.read().split("---\\n")
web = [d for d in docs if "kind: Deployment" in d][0]
print(web.replace("image: nginx", "image: nginx:2"))
print("---")
print("apiVersion: v1\\nkind: Secret\\nmetadata:\\n  name: new\\n")
""",
    )
    root = app(
        {
            "kustomization.yaml": "resources: [deploy.yaml, cm.yaml]\ntransformers: [t.yaml]\n"
            "namePrefix: p-\n",
            "deploy.yaml": DEPLOY,
            "cm.yaml": CM,
            "t.yaml": _config("Edit"),
        }
    )
    out = same(root)
    assert "image: nginx:2" in out and "name: new" in out and "kind: ConfigMap" not in out


def test_plugin_home_from_xdg_config_home(plugin, app, home, tmp_path, monkeypatch) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "kustomize").mkdir(parents=True)
    home.rename(xdg / "kustomize" / "plugin")
    monkeypatch.delenv("KUSTOMIZE_PLUGIN_HOME")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    path = xdg / "kustomize" / "plugin" / GV / "genone" / "GenOne"
    path.parent.mkdir(parents=True)
    path.write_text(f"#!{sys.executable}\n{CAPTURE_GENERATOR}")
    path.chmod(0o755)
    root = app({"kustomization.yaml": "generators: [g.yaml]\n", "g.yaml": _config("GenOne")})
    assert "name: gen" in same(root)
    assert execplugin.find({"apiVersion": GV, "kind": "GenOne"}) == (str(path), "")


def test_a_config_naming_its_runtime_is_no_legacy_plugin(plugin, app) -> None:
    # The function annotation makes it a KRM function in kustomize too.
    plugin("GenOne", CAPTURE_GENERATOR)
    config = {
        "apiVersion": GV,
        "kind": "GenOne",
        "metadata": {"annotations": {"config.kubernetes.io/function": "exec: {path: ./x}"}},
    }
    from orchestrator.accumulator import _names_runtime

    assert _names_runtime(config)
    assert not _names_runtime({"apiVersion": GV, "kind": "GenOne"})


# ------------------------------------------------------------------------------ errors


def test_without_the_flag_both_refuse(plugin, app) -> None:
    path = plugin("GenOne", CAPTURE_GENERATOR)
    root = app({"kustomization.yaml": "generators: [g.yaml]\n", "g.yaml": _config("GenOne")})
    expected, got = both_fail(root)
    assert "external plugins disabled; unable to load external plugin 'GenOne'" in expected
    assert got == (
        f"Error: {root}/kustomization.yaml: no runtime for {GV} GenOne: no catalog defines it; "
        "catalogs searched: none (add catalogs: or --trusted-catalog); an exec plugin exists at "
        f"{path}: --enable-alpha-plugins runs it\n"
    )


@pytest.mark.parametrize("role", ["generators", "transformers"])
def test_a_failing_plugin(plugin, app, home, role) -> None:
    path = plugin("Failer", 'echo "bad things" >&2\nexit 3\n', shell=True)
    root = app(
        {
            "kustomization.yaml": f"resources: [cm.yaml]\n{role}: [g.yaml]\n",
            "cm.yaml": CM,
            "g.yaml": _config("Failer"),
        }
    )
    expected, got = both_fail(root, "--enable-alpha-plugins")
    assert "bad things" in expected and "exit status 3" in expected
    assert got == (
        f"Error: {root}/kustomization.yaml: plugin {path} failed (exit status 3): bad things\n"
    )
    # kustomize leaves its temporary config file behind on failure; krm does not.
    own = home.parent / "krm-tmp"
    own.mkdir()
    assert krm(root, "--enable-alpha-plugins", env={"TMPDIR": str(own)}).returncode == 1
    assert list(own.iterdir()) == []


def test_an_unexecutable_plugin(plugin, app) -> None:
    path = plugin("GenOne", CAPTURE_GENERATOR)
    path.chmod(0o644)
    root = app({"kustomization.yaml": "generators: [g.yaml]\n", "g.yaml": _config("GenOne")})
    expected, got = both_fail(root, "--enable-alpha-plugins")
    assert f"unexecutable plugin at: {path}" in expected
    assert got == f"Error: {root}/kustomization.yaml: unexecutable plugin at: {path}\n"


def test_a_missing_plugin_and_a_missing_home(plugin, app, home, monkeypatch, tmp_path) -> None:
    root = app({"kustomization.yaml": "generators: [g.yaml]\n", "g.yaml": _config("Nothere")})
    path = home / GV / "nothere" / "Nothere"
    expected, got = both_fail(root, "--enable-alpha-plugins")
    assert f"expected file with Go object code at: {path}.so" in expected
    assert got.endswith(
        "catalogs searched: none (add catalogs: or --trusted-catalog); "
        f"no exec plugin at {path} (Go plugins, {path}.so, are not supported)\n"
    )
    monkeypatch.setenv("KUSTOMIZE_PLUGIN_HOME", str(tmp_path / "none"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none2"))
    monkeypatch.setenv("HOME", str(tmp_path / "none3"))
    expected, got = both_fail(root, "--enable-alpha-plugins")
    tried = (
        f"unable to find plugin root - tried: ('{tmp_path}/none'; homed in "
        f"$KUSTOMIZE_PLUGIN_HOME), ('{tmp_path}/none2/kustomize/plugin'; homed in "
        f"$XDG_CONFIG_HOME), ('{tmp_path}/none3/.config/kustomize/plugin'; homed in default "
        f"value of $XDG_CONFIG_HOME), ('{tmp_path}/none3/kustomize/plugin'; homed in home "
        "directory)"
    )
    assert tried in expected
    assert got.endswith(f"; {tried}\n")


@pytest.mark.parametrize(
    ("output", "kubectl_says", "krm_says"),
    [
        (
            "cat; echo ---; cat cm.yaml",
            'generated duplicate resource: {\\"version\\":\\"v1\\",\\"kind\\":\\"ConfigMap\\",'
            '\\"name\\":\\"a\\"}',
            'generated duplicate resource: {"version":"v1","kind":"ConfigMap","name":"a"}',
        ),
        ("echo 'kind: ConfigMap'", "missing metadata.name", "missing metadata.name"),
        ("echo 'a: ['", "did not find expected node content", "did not find expected node"),
    ],
)
def test_bad_transformer_output(plugin, app, output, kubectl_says, krm_says) -> None:
    plugin("Bad", output + "\n", shell=True)
    root = app(
        {
            "kustomization.yaml": "resources: [cm.yaml]\ntransformers: [t.yaml]\n",
            "cm.yaml": CM,
            "t.yaml": _config("Bad"),
        }
    )
    expected, got = both_fail(root, "--enable-alpha-plugins")
    assert kubectl_says in expected
    assert krm_says in got and got.startswith("Error: ")


def test_a_bad_needs_hash_value(plugin, app) -> None:
    plugin(
        "Gen",
        "printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: x\\n  annotations:\\n"
        "    kustomize.config.k8s.io/needs-hash: maybe\\n'\n",
        shell=True,
    )
    root = app({"kustomization.yaml": "generators: [g.yaml]\n", "g.yaml": _config("Gen")})
    expected, got = both_fail(root, "--enable-alpha-plugins")
    message = (
        'the annotation "kustomize.config.k8s.io/needs-hash" contains an invalid value ("maybe")'
    )
    assert message.replace('"', '\\"') in expected
    assert got == f"Error: {root}/kustomization.yaml: {message}\n"


# ------------------------------------------------------------------- pinned by a trusted catalog


def _pin_catalog(tmp_path: Path, kind: str, runtime: str) -> Path:
    path = tmp_path / "catalog.yaml"
    path.write_text(
        f"""apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: pins
spec:
  krmFunctions:
  - group: someteam.example.com
    names:
      kind: {kind}
    versions:
    - name: v1
      runtime:
{runtime}"""
    )
    return path


def _exec_runtime(sha: str, os_arch: tuple[str, str] | None = None) -> str:
    from orchestrator.functions.resolve import host_platform

    os_name, arch = os_arch or host_platform()
    return (
        "        exec:\n          platforms:\n"
        f"          - {{bin: bin/gen, os: {os_name}, arch: {arch}, "
        f"uri: https://example.com/gen.tar.gz, sha256: '{sha}'}}\n"
    )


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_catalog_pins_the_plugin_binary(plugin, app, tmp_path) -> None:
    """The catalog's exec sha256 matches the plugin: it runs as without the catalog."""
    path = plugin("GenOne", CAPTURE_GENERATOR)
    root = app({"kustomization.yaml": "generators: [gen.yaml]\n", "gen.yaml": _config("GenOne")})
    unpinned = krm(root, "--enable-alpha-plugins")
    catalog = _pin_catalog(tmp_path, "GenOne", _exec_runtime(_sha(path)))
    got = krm(root, "--enable-alpha-plugins", "--trusted-catalog", str(catalog))
    assert got.returncode == 0, got.stderr
    assert got.stdout == unpinned.stdout and "kind: ConfigMap" in got.stdout


@pytest.mark.parametrize("case", ["other-digest", "other-platform", "container-runtime"])
def test_a_plugin_the_catalog_does_not_pin_is_not_run(plugin, app, tmp_path, case) -> None:
    marker = tmp_path / "ran"
    path = plugin("GenOne", f"open({str(marker)!r}, 'w').close()\n" + CAPTURE_GENERATOR)
    runtime = {
        "other-digest": _exec_runtime("0" * 64),
        "other-platform": _exec_runtime(_sha(path), ("freebsd", "riscv64")),
        "container-runtime": "        container: {image: 'example.com/gen@sha256:"
        + "a" * 64
        + "'}\n",
    }[case]
    catalog = _pin_catalog(tmp_path, "GenOne", runtime)
    root = app({"kustomization.yaml": "generators: [gen.yaml]\n", "gen.yaml": _config("GenOne")})
    got = krm(root, "--enable-alpha-plugins", "--trusted-catalog", str(catalog))
    assert got.returncode == 1 and got.stdout == ""
    message = got.stderr.strip().splitlines()
    assert len(message) == 1, got.stderr
    assert f"legacy plugin {path} for {GV} GenOne" in message[0]
    assert {
        "other-digest": f"has sha256 {_sha(path)}; catalog {catalog} pins sha256 {'0' * 64}",
        "other-platform": f"catalog {catalog} pins it for freebsd/riscv64, not ",
        "container-runtime": f"catalog {catalog} defines that function with another runtime "
        "(container) and pins no binary for it",
    }[case] in message[0]
    assert not marker.exists()  # nothing ran


def test_a_catalog_defining_other_functions_leaves_the_plugin_alone(plugin, app, tmp_path) -> None:
    plugin("GenOne", CAPTURE_GENERATOR)
    catalog = _pin_catalog(tmp_path, "SomethingElse", _exec_runtime("0" * 64))
    root = app({"kustomization.yaml": "generators: [gen.yaml]\n", "gen.yaml": _config("GenOne")})
    got = krm(root, "--enable-alpha-plugins", "--trusted-catalog", str(catalog))
    assert got.returncode == 0, got.stderr
