"""``krm edit add|set|remove configmap|secret`` (kustomize v5.5's cases and messages)."""

from __future__ import annotations

import pytest

TAIL = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"


def test_add_configmap_from_every_source_and_merge_generator_options(edit):
    edit.write("resources: []\ngeneratorOptions:\n  labels:\n    g: l\n")
    (edit.path / "f.txt").write_text("hi\n")
    text = edit.ok(
        "edit",
        "add",
        "configmap",
        "cm",
        "--from-literal=a=b",
        "--from-file=f.txt,k=f.txt",
        "--behavior",
        "merge",
    )
    assert text == (
        "generatorOptions:\n  labels:\n    g: l\n"
        + TAIL
        + "configMapGenerator:\n- behavior: merge\n  files:\n  - f.txt\n  - k=f.txt\n"
        "  literals:\n  - a=b\n  name: cm\n  options:\n    labels:\n      g: l\n"
    )
    # The same name (and namespace) again extends the entry.
    text = edit.ok("edit", "add", "configmap", "cm", "--from-literal", "c=d")
    assert "  literals:\n  - a=b\n  - c=d\n" in text and text.count("name: cm") == 1


def test_add_secret_defaults_to_opaque(edit):
    edit.write("resources: []\n")
    (edit.path / "a.env").write_text("A=1\n")
    text = edit.ok("edit", "add", "secret", "s", "--from-env-file", "a.env", "--namespace", "ns")
    assert text == TAIL + (
        "secretGenerator:\n- envs:\n  - a.env\n  name: s\n  namespace: ns\n  type: Opaque\n"
    )
    text = edit.ok(
        "edit",
        "add",
        "secret",
        "tls",
        "--from-literal=k=v",
        "--type",
        "kubernetes.io/tls",
        "--disableNameSuffixHash",
    )
    assert (
        "- literals:\n  - k=v\n  name: tls\n  options:\n    disableNameSuffixHash: true\n"
        "  type: kubernetes.io/tls\n"
    ) in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["cm"],
            "failed to validate flags: at least from-env-file, or from-file or "
            "from-literal must be set",
        ),
        (["--from-literal=a=b"], "failed to validate flags: name must be specified once"),
        (
            ["cm", "x", "--from-literal=a=b"],
            "failed to validate flags: name must be specified once",
        ),
        (
            ["cm", "--from-env-file=a.env", "--from-literal=a=b"],
            "failed to validate flags: from-env-file cannot be combined with "
            "from-file or from-literal",
        ),
        (
            ["cm", "--from-literal=a=b", "--behavior=upsert"],
            'failed to validate flags: invalid behavior: must be one of "create", '
            '"merge", or "replace"',
        ),
        (
            ["cm", "--from-file=k=*.txt"],
            "failed to expand file source: 'pattern 'k=*.txt' catches files [a.txt "
            "b.txt], should catch only one",
        ),
        (["cm", "--from-literal=novalue"], "failed to create configmap: "),
        (["cm", "--from-file=missing.txt"], None),
    ],
)
def test_add_configmap_refusals(edit, argv, message):
    edit.write("resources: []\n")
    (edit.path / "a.txt").write_text("a")
    (edit.path / "b.txt").write_text("b")
    (edit.path / "a.env").write_text("A=1\n")
    if message is None:
        # A glob with no match is logged and dropped: nothing is left to add.
        code, err = edit("edit", "add", "configmap", *argv)
        assert code == 1
        assert err.endswith(
            " missing.txt has no match\nError: failed to validate flags: at least "
            "from-env-file, or from-file or from-literal must be set\n"
        )
        assert edit.read() == "resources: []\n"
        return
    assert edit.fails("edit", "add", "configmap", *argv).startswith(message)


def test_set_configmap_literal_and_namespace(edit):
    edit.write("configMapGenerator:\n- name: test-cm\n  literals:\n  - key1=val1\n  - key2=val2\n")
    text = edit.ok("edit", "set", "configmap", "test-cm", "--from-literal=key1=val2")
    assert text == (
        "configMapGenerator:\n- literals:\n  - key1=val2\n  - key2=val2\n  name: test-cm\n" + TAIL
    )
    text = edit.ok(
        "edit", "set", "configmap", "test-cm", "--namespace=default", "--new-namespace=test-new-ns"
    )
    assert "  namespace: test-new-ns\n" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["test-cm", "--from-literal=test-key=test-value"],
            "failed to create configmap: failed to update literal sources: key "
            "'test-key' not found in resource",
        ),
        (
            ["test-cm2", "--from-literal=key1=v"],
            "failed to create configmap: could not set new ConfigMap value: unable "
            'to find ConfigMap with name "test-cm2"',
        ),
        (
            ["test-cm", "--namespace=test-ns"],
            "failed to validate flags: at least one of [--from-literal, "
            "--new-namespace] must be specified",
        ),
        (
            ["test-cm", "--from-literal=value"],
            "failed to create configmap: failed to update literal sources: failed "
            "to update resource: invalid format: literal values must be specified "
            "in the key=value format",
        ),
    ],
)
def test_set_configmap_refusals(edit, argv, message):
    edit.write("configMapGenerator:\n- name: test-cm\n  literals:\n  - key1=val1\n")
    assert edit.fails("edit", "set", "configmap", *argv) == message + "\n"


def test_set_secret_says_secret(edit):
    edit.write("secretGenerator:\n- name: s\n  literals:\n  - k=v\n")
    assert edit.fails("edit", "set", "secret", "t", "--from-literal=k=w") == (
        "failed to create secret: could not set new Secret value: unable to find Secret with "
        'name "t"\n'
    )
    assert "  - k=w\n" in edit.ok("edit", "set", "secret", "s", "--from-literal=k=w")


@pytest.mark.parametrize(
    ("kind", "field"), [("configmap", "configMapGenerator"), ("secret", "secretGenerator")]
)
def test_remove_configmap_and_secret(edit, kind, field):
    edit.write(
        f"{field}:\n- name: a\n  literals:\n  - k=v\n- name: b\n  namespace: "
        f"ns\n  literals:\n  - k=v\n"
    )
    # Another namespace does not match.
    assert edit.fails("edit", "remove", kind, "a", "--namespace", "ns") == (
        f"no specified {kind}(s) were found in the kustomization.yaml file\n"
    )
    code, err = edit("edit", "remove", kind, "a,c")
    assert code == 0 and err.endswith(f" {kind} c doesn't exist in kustomization file\n")
    assert edit.read() == f"{field}:\n- literals:\n  - k=v\n  name: b\n  namespace: ns\n" + TAIL
    assert edit.ok("edit", "remove", kind, "b", "--namespace=ns") == TAIL
    assert edit.fails("edit", "remove", kind) == f"at least one {kind} name must be specified\n"
    assert edit.fails("edit", "remove", kind, "a", "b") == (
        f"too many arguments: [a b]; to provide multiple {kind}s to remove, please separate "
        f"{kind} names by commas\n"
    )


def test_generated_objects_build_like_kubectl(edit, oracle):
    import subprocess
    import sys

    edit.write("resources: []\n")
    (edit.path / "app.properties").write_text("x=1\n")
    edit.ok("edit", "add", "configmap", "cfg", "--from-file=app.properties", "--from-literal=a=b")
    edit.ok("edit", "add", "secret", "creds", "--from-literal=password=s3cret")
    edit.ok("edit", "set", "configmap", "cfg", "--from-literal=a=c")
    want = oracle(edit.path)
    assert want.returncode == 0, want.stderr.decode()
    got = subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", str(edit.path)], capture_output=True
    )
    assert got.stdout == want.stdout
    assert b"a: c" in got.stdout and b"kind: Secret" in got.stdout
