"""``krm edit add|remove …`` and ``edit set label|annotation|buildmetadata`` against the cases
of kustomize v5.5's own tests (on-disk error texts where kustomize's tests use an in-memory
file system)."""

from __future__ import annotations

import pytest

TAIL = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
RESOURCE = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n"


def test_add_resource_globs_into_the_existing_field(edit):
    edit.write()
    (edit.path / "myWonderfulResource.yaml").write_text(RESOURCE)
    (edit.path / "myWonderfulResource.yamlanother").write_text(RESOURCE)
    text = edit.ok("edit", "add", "resource", "myWonderfulResource.yaml*")
    assert text == edit.REWRITTEN.replace(
        "  note: This is an example annotation\n",
        "  note: This is an example annotation\n"
        "resources:\n- myWonderfulResource.yaml\n- myWonderfulResource.yamlanother\n",
    )


def test_add_resource_already_there_is_logged_not_refused(edit):
    edit.write()
    (edit.path / "r.yaml").write_text(RESOURCE)
    edit.ok("edit", "add", "resource", "r.yaml")
    code, err = edit("edit", "add", "resource", "r.yaml")
    assert code == 0
    assert err.endswith(" resource r.yaml already in kustomization file\n")
    assert edit.read().count("- r.yaml\n") == 1


def test_add_resource_skips_the_kustomization_file_itself(edit):
    edit.write()
    text = edit.ok("edit", "add", "resource", "kustomization.yaml")
    assert text == edit.REWRITTEN


def test_add_resource_refusals(edit):
    edit.write()
    assert edit.fails("edit", "add", "resource") == "must specify a resource file\n"
    missing = edit.path / "myWonderfulResource.yaml"
    assert edit.fails("edit", "add", "resource", "myWonderfulResource.yaml") == (
        "myWonderfulResource.yaml has no match: must build at directory: evalsymlink failure "
        f"on '{missing}' : lstat {missing}: no such file or directory\n"
    )


def test_add_resource_no_verify_and_urls(edit):
    edit.write("resources:\n- a.yaml\n")
    url = "https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v1.0.6"
    assert edit.ok("edit", "add", "resource", "--no-verify", "missing.yaml", url) == (
        f"resources:\n- a.yaml\n- missing.yaml\n- {url}\n" + TAIL
    )


def test_add_component(edit):
    edit.write()
    (edit.path / "comp").mkdir()
    assert edit.ok("edit", "add", "component", "comp") == edit.REWRITTEN + "components:\n- comp\n"
    assert edit.fails("edit", "add", "component") == "must specify a component file\n"


def test_add_base(edit):
    edit.write()
    for d in ("my/path/to/wonderful/base", "other/path/to/even/more/wonderful/base"):
        (edit.path / d).mkdir(parents=True)
    paths = "my/path/to/wonderful/base,other/path/to/even/more/wonderful/base"
    text = edit.ok("edit", "add", "base", paths)
    assert (
        "resources:\n- my/path/to/wonderful/base\n- other/path/to/even/more/wonderful/base\n"
        in text
    )
    assert edit.fails("edit", "add", "base", paths) == (
        "base my/path/to/wonderful/base already in kustomization file\n"
    )
    assert edit.fails("edit", "add", "base") == "must specify a base directory\n"
    assert edit.fails("edit", "add", "base", "nope") == "nope does not exist\n"


@pytest.mark.parametrize("kind", ["generator", "transformer"])
def test_add_generator_and_transformer(edit, kind):
    edit.write()
    (edit.path / f"my{kind}.yaml").write_text("x")
    (edit.path / f"my{kind}.yamlanother").write_text("x")
    text = edit.ok("edit", "add", kind, f"my{kind}.yaml*")
    assert text == edit.REWRITTEN + f"{kind}s:\n- my{kind}.yaml\n- my{kind}.yamlanother\n"
    assert edit.fails("edit", "add", kind) == (
        f"must specify a yaml file which contains a {kind} plugin resource\n"
    )
    code, err = edit("edit", "add", kind, "nothing*")
    assert code == 0 and err.endswith(" nothing* has no match\n")


def test_add_generator_without_kustomization(edit):
    (edit.path / "g.yaml").write_text("x")
    assert edit.fails("edit", "add", "generator", "g.yaml") == (
        "Missing kustomization file 'kustomization.yaml'.\n\n"
    )


def test_add_buildmetadata(edit):
    edit.write("")
    text = edit.ok(
        "edit", "add", "buildmetadata", "originAnnotations,transformerAnnotations,managedByLabel"
    )
    assert text == TAIL + (
        "buildMetadata:\n- originAnnotations\n- transformerAnnotations\n- managedByLabel\n"
    )
    edit.write(
        "\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "buildMetadata: [originAnnotations]"
    )
    assert edit.fails("edit", "add", "buildmetadata", "originAnnotations") == (
        "buildMetadata option originAnnotations already in kustomization file\n"
    )
    assert edit.fails("edit", "add", "buildmetadata", "invalid_option") == (
        "invalid buildMetadata option: invalid_option\n"
    )
    assert edit.fails("edit", "add", "buildmetadata", "option1", "option2") == (
        "too many arguments: [option1 option2]; to provide multiple buildMetadata options, "
        "please separate options by comma\n"
    )


def test_add_annotation(edit):
    edit.write()
    text = edit.ok("edit", "add", "annotation", "k1:v1,k2:v2", 'k3:"v1:v2"', "k4", "b:")
    assert (
        'commonAnnotations:\n  b: ""\n  k1: v1,k2:v2\n  k3: v1:v2\n  k4: ""\n'
        "  note: This is an example annotation\n"
    ) in text
    assert edit.fails("edit", "add", "annotation") == "must specify annotation\n"
    assert edit.fails("edit", "add", "annotation", ":nokey") == (
        "invalid annotation: ':nokey' (need k:v pair where v may be quoted)\n"
    )
    assert edit.fails("edit", "add", "annotation", "k1:other") == (
        "annotation k1 already in kustomization file\n"
    )
    assert "  k1: other\n" in edit.ok("edit", "add", "annotation", "-f", "k1:other")


def test_add_label(edit):
    edit.write()
    text = edit.ok("edit", "add", "label", "owls:cute")
    assert "commonLabels:\n  app: helloworld\n  owls: cute\n" in text
    assert edit.fails("edit", "add", "label", "owls:ugly") == (
        "label owls already in kustomization file\n"
    )
    assert "  owls: ugly\n" in edit.ok("edit", "add", "label", "--force", "owls:ugly")
    assert edit.fails("edit", "add", "label") == "must specify label\n"
    assert edit.fails("edit", "add", "label", "--include-templates", "a:b") == (
        "--without-selector flag must be specified for --include-templates to work\n"
    )


def test_add_label_without_selector(edit):
    edit.write("resources: []\n")
    text = edit.ok("edit", "add", "label", "--without-selector", "new:label")
    assert text == TAIL + "labels:\n- pairs:\n    new: label\n"
    text = edit.ok(
        "edit", "add", "label", "--without-selector", "--include-templates", "other:label"
    )
    assert text == TAIL + (
        "labels:\n- pairs:\n    new: label\n- includeTemplates: true\n  pairs:\n    other: label\n"
    )


def test_set_label_and_annotation_overwrite(edit):
    edit.write()
    text = edit.ok("edit", "set", "label", "app:other", "new:x")
    assert "commonLabels:\n  app: other\n  new: x\n" in text
    text = edit.ok("edit", "set", "annotation", "note:changed", "example.com/a:b")
    assert "commonAnnotations:\n  example.com/a: b\n  note: changed\n" in text
    assert edit.fails("edit", "set", "label") == "must specify label\n"
    assert edit.fails("edit", "set", "annotation") == "must specify annotation\n"
    assert "  A.b/x_y: v\n" in edit.ok("edit", "set", "annotation", "A.b/x_y:v")
    for bad in ("bad key!:v", "-a:v", "a/:v", "/a:v", "a" * 64 + ":v"):
        assert edit.fails("edit", "set", "annotation", "--", bad).startswith("invalid annotation")
    assert edit.fails("edit", "set", "annotation", "bad key!:v") == (
        "invalid annotation key: see the syntax and character set rules at "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations/\n"
    )


def test_set_buildmetadata_replaces(edit):
    edit.write("buildMetadata:\n- originAnnotations\n")
    assert edit.ok("edit", "set", "buildmetadata", "managedByLabel") == (
        "buildMetadata:\n- managedByLabel\n" + TAIL
    )


# kustomize's remove tests: (items in the file, arguments, items left).
REMOVALS = [
    (
        ["resource1.yaml", "resource2.yaml", "resource3.yaml"],
        ["resource1.yaml"],
        ["resource2.yaml", "resource3.yaml"],
    ),
    (
        [
            "foo/resource1.yaml",
            "foo/resource2.yaml",
            "foo/resource3.yaml",
            "do/not/deleteme/please.yaml",
        ],
        ["foo/resource*.yaml"],
        ["do/not/deleteme/please.yaml"],
    ),
    (
        ["foo/foo.yaml", "bar/bar.yaml", "resource3.yaml", "do/not/deleteme/please.yaml"],
        ["foo/*.*", "bar/*.*", "res*.yaml"],
        ["do/not/deleteme/please.yaml"],
    ),
]


@pytest.mark.parametrize("field", ["resources", "transformers"])
@pytest.mark.parametrize(("items", "args", "left"), REMOVALS)
def test_remove_by_pattern(edit, field, items, args, left):
    edit.write(f"{field}:\n  - " + "\n  - ".join(items))
    text = edit.ok("edit", "remove", field[:-1], *args)
    assert text == f"{field}:\n" + "".join(f"- {i}\n" for i in left) + TAIL


@pytest.mark.parametrize("field", ["resources", "transformers"])
def test_remove_nothing_found_leaves_the_file_as_written(edit, field):
    original = f"{field}:\n  - resource1.yaml\n  - resource2.yaml"
    edit.write(original)
    assert edit.ok("edit", "remove", field[:-1], "foo") == original
    assert edit.fails("edit", "remove", field[:-1]) == f"must specify a {field[:-1]} file\n"


def test_remove_component_is_not_a_command(edit):
    edit.write("components:\n- c\n")
    with pytest.raises(SystemExit):
        edit("edit", "remove", "component", "c")
    assert edit.read() == "components:\n- c\n"


def test_remove_buildmetadata(edit):
    edit.write("buildMetadata:\n- originAnnotations\n- managedByLabel\n")
    assert edit.ok("edit", "remove", "buildmetadata", "originAnnotations") == (
        "buildMetadata:\n- managedByLabel\n" + TAIL
    )
    assert edit.ok("edit", "remove", "buildmetadata", "managedByLabel") == TAIL
    assert edit.fails("edit", "remove", "buildmetadata", "nope") == (
        "invalid buildMetadata option: nope\n"
    )


@pytest.mark.parametrize(
    ("kind", "field"), [("label", "commonLabels"), ("annotation", "commonAnnotations")]
)
def test_remove_label_and_annotation(edit, kind, field):
    edit.write(f"{field}:\n  {kind}1: val1\n  {kind}2: val2\n")
    assert edit.ok("edit", "remove", kind, f"{kind}1") == f"{field}:\n  {kind}2: val2\n" + TAIL
    assert edit.fails("edit", "remove", kind, f"{kind}3") == (
        f"{kind} {kind}3 is not defined in kustomization file\n"
    )
    assert edit.ok("edit", "remove", kind, "-i", f"{kind}3,{kind}2") == TAIL
    # kustomize's argument errors say "label" for both commands.
    assert edit.fails("edit", "remove", kind) == "must specify label\n"
    assert edit.fails("edit", "remove", kind, "a", "b") == (
        "labels must be comma-separated, with no spaces\n"
    )
    assert edit.fails("edit", "remove", kind, "a,,b") == "invalid label: '' (name is empty)\n"
    edit.write("")
    assert edit.fails("edit", "remove", kind, f"{kind}1") == (
        f"{field} is not defined in kustomization file\n"
    )
    assert edit.ok("edit", "remove", kind, "--ignore-non-existence", f"{kind}1") == TAIL


def test_add_and_remove_patch(edit):
    edit.write("resources:\n- a.yaml\n")
    text = edit.ok(
        "edit",
        "add",
        "patch",
        "--path",
        "p.yaml",
        "--kind",
        "Deployment",
        "--name",
        "web",
        "--label-selector",
        "app=x",
    )
    assert text == (
        "resources:\n- a.yaml\n"
        + TAIL
        + "patches:\n- path: p.yaml\n  target:\n    kind: Deployment\n    labelSelector: app=x\n"
        "    name: web\n"
    )
    inline = "- op: replace\n  path: /spec/replicas\n  value: 3"
    text = edit.ok("edit", "add", "patch", "--patch", inline, "--kind", "Deployment")
    assert text.endswith(
        "- patch: |-\n    - op: replace\n      path: /spec/replicas\n      value: 3\n"
        "  target:\n    kind: Deployment\n"
    )
    code, err = edit("edit", "add", "patch", "--patch", inline, "--kind", "Deployment")
    assert code == 0 and err.endswith(" already in kustomization file\n")
    # Removal needs every field to match.
    assert edit.ok("edit", "remove", "patch", "--path", "p.yaml") == text
    text = edit.ok(
        "edit",
        "remove",
        "patch",
        "--path",
        "p.yaml",
        "--kind",
        "Deployment",
        "--name",
        "web",
        "--label-selector",
        "app=x",
    )
    assert "p.yaml" not in text and "op: replace" in text
    assert edit.fails("edit", "add", "patch") == "must provide either patch or path\n"
    assert edit.fails("edit", "add", "patch", "--path", "a", "--patch", "b") == (
        "patch and path can't be set at the same time\n"
    )
    assert edit.fails("edit", "remove", "patch", "--path", "a", "--patch", "b") == (
        "patch and path can't be set at the same time\n"
    )


def _git_repo(root):
    import subprocess

    (root / "app").mkdir(parents=True)
    (root / "app" / "s.yaml").write_text(RESOURCE.replace("name: s", "name: remote"))
    (root / "app" / "kustomization.yaml").write_text("resources:\n- s.yaml\n")
    env = ["-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), *env, "commit", "-qm", "x"], check=True)


def test_add_resource_fetches_a_remote_to_check_it(edit, tmp_path_factory, monkeypatch, oracle):
    repo = tmp_path_factory.mktemp("repo")
    _git_repo(repo)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    edit.write("resources: []\n")
    url = f"file://{repo}//app?ref=main"
    assert edit.ok("edit", "add", "resource", url) == f"resources:\n- {url}\n" + TAIL
    built = oracle(edit.path)
    assert built.returncode == 0 and b"name: remote" in built.stdout
    bad_dir = f"file://{repo}//nope?ref=main"
    assert edit.fails("edit", "add", "resource", bad_dir) == (
        f"{bad_dir} has no match: 'nope' is not a directory in {bad_dir}\n"
    )
    missing = f"file://{repo}-missing//app?ref=main"
    assert edit.fails("edit", "add", "resource", missing).startswith(
        f"{missing} has no match: remote '{missing}': "
    )
