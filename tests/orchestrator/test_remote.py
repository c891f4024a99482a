"""Remote bases, components, build targets and files, against ``kubectl kustomize``.

The repositories are served on loopback by real git servers (smart HTTP through
``git http-backend``, ``git daemon``), as ``file://`` paths, and over ssh through a stand-in
``ssh`` (``GIT_SSH_COMMAND``, honoured by both tools' git) that runs ``git-upload-pack`` locally
and records what it was asked. Each form ``kubectl kustomize`` accepts must build byte-identically
with ``krm``; the cache of fetched commits is proven by counting requests at the server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from orchestrator import remote
from tests.orchestrator.gitserver import GIT, GitDaemon, SmartHTTP, commit_tree, free_port, git

pytestmark = pytest.mark.skipif(GIT is None, reason="git not installed")
KUBECTL = shutil.which("kubectl")

CM1 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\ndata:\n  a: '1'\n"
CM2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\n"
COMPONENT = (
    "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
    "commonLabels:\n  from: component\n"
)


# ------------------------------------------------------------------------------ parsing
# Inputs and expected parts from kustomize v5.5.0's repospec tests (clone spec, directory in
# the repository, ref).
PARSED = [
    (
        "https://git-codecommit.us-east-2.amazonaws.com/someorg/somerepo/somedir?ref=testbranch",
        "https://git-codecommit.us-east-2.amazonaws.com/someorg/somerepo",
        "somedir",
        "testbranch",
    ),
    (
        "http://github.com/someorg/somerepo/somedir",
        "https://github.com/someorg/somerepo",
        "somedir",
        "",
    ),
    (
        "git@github.com:someorg/somerepo.git/somedir",
        "git@github.com:someorg/somerepo.git",
        "somedir",
        "",
    ),
    (
        "git@gitlab2.sqtools.ru:infra/kubernetes/thanos-base.git?ref=v0.1.0",
        "git@gitlab2.sqtools.ru:infra/kubernetes/thanos-base.git",
        "",
        "v0.1.0",
    ),
    (
        "git@bitbucket.org:company/project.git//path?ref=branch",
        "git@bitbucket.org:company/project.git",
        "path",
        "branch",
    ),
    (
        "git@bitbucket.org/company/project.git//path?ref=branch",
        "git@bitbucket.org/company/project.git",
        "path",
        "branch",
    ),
    (
        "ssh://git@bitbucket.org/company/project.git//path?ref=branch",
        "ssh://git@bitbucket.org/company/project.git",
        "path",
        "branch",
    ),
    (
        "https://itfs.mycompany.com/collection/project/_git/somerepos/somedir?version=v1.0.0",
        "https://itfs.mycompany.com/collection/project/_git/somerepos",
        "somedir",
        "v1.0.0",
    ),
    (
        "git::https://itfs.mycompany.com/collection/project/_git/somerepos",
        "https://itfs.mycompany.com/collection/project/_git/somerepos",
        "",
        "",
    ),
    (
        "ssh://git-codecommit.us-east-2.amazonaws.com/someorg/somerepo/somepath",
        "ssh://git-codecommit.us-east-2.amazonaws.com/someorg/somerepo",
        "somepath",
        "",
    ),
    ("git@github.com/someorg/somerepo/somepath", "git@github.com:someorg/somerepo", "somepath", ""),
    (
        "https://github.com/kubernetes-sigs/kustomize//examples/multibases/dev/?ref=v1.0.6",
        "https://github.com/kubernetes-sigs/kustomize",
        "examples/multibases/dev/",
        "v1.0.6",
    ),
    (
        "ssh://git@github.com/kubernetes-sigs/kustomize//examples/multibases/dev?ref=v1.0.6",
        "git@github.com:kubernetes-sigs/kustomize",
        "examples/multibases/dev",
        "v1.0.6",
    ),
    ("gitHub.com/org/repo/dir", "https://github.com/org/repo", "dir", ""),
    ("github.com:org/repo", "https://github.com/org/repo", "", ""),
    ("hTTps://github.com/org/repo", "https://github.com/org/repo", "", ""),
    ("org-12345@github.com/org/repo", "org-12345@github.com:org/repo", "", ""),
    (
        "file://a/b/c/someRepo.git/somepath?ref=someBranch",
        "file://a/b/c/someRepo.git",
        "somepath",
        "someBranch",
    ),
    ("file://a/b/c/someRepo//somepath", "file://a/b/c/someRepo", "somepath", ""),
    ("file:///a/b/c/someRepo?ref=someBranch", "file:///a/b/c/someRepo", "", "someBranch"),
    ("file:///", "file:///", "", ""),
    (
        "https://example.org/path/to/repo.git/examples/multibases/dev",
        "https://example.org/path/to/repo.git",
        "examples/multibases/dev",
        "",
    ),
    # ".git" anywhere ends the repository, as in kustomize (a quirk kept for compatibility).
    (
        "https://example.org/org/repo.github.io/x",
        "https://example.org/org/repo.git",
        "hub.io/x",
        "",
    ),
    ("https://host/org/repo?version=master&ref=v1.0.0", "https://host/org/repo", "", "v1.0.0"),
]


@pytest.mark.parametrize(("url", "clone", "root", "ref"), PARSED, ids=[p[0] for p in PARSED])
def test_parse_repo_spec_like_kustomize(url: str, clone: str, root: str, ref: str) -> None:
    spec = remote.parse_repo_spec(url)
    assert spec is not None
    assert (spec.clone_spec, spec.kust_root, spec.ref) == (clone, root, ref)
    assert spec.forced == url.startswith("git::")


# Not a git URL for kustomize: read as a local path instead.
NOT_REPOS = [
    "/tmp",
    "../../tmp",
    "src/github.com/org/repo/path",
    "iauhsdiuashduas",
    "htxxxtp://github.com/",
    "ssh://git.example.com",
    "git::___",
    "https://host?ref=group/version/minor_version",
    "https://github.com/org/repo.git//path/../../exits/repo",
    "github.com!org/repo.git//path",
    "gh:org/repo",
    "https://github.com/thisisa404.yaml",
    "file:////tmp//path/to/whatever",
    "git@scp://github.com/org/repo.git//path",
    "git@ssh://github.com/org/repo.git//path",
    "git://127.0.0.1/org/repo.git",
    "base",
    "",
]


@pytest.mark.parametrize("url", NOT_REPOS)
def test_local_paths_and_bad_urls_are_no_repositories(url: str) -> None:
    assert remote.parse_repo_spec(url) is None


@pytest.mark.parametrize(
    ("query", "ref", "timeout", "submodules"),
    [
        ("", "", 27.0, True),
        ("ref=kustomize/v4.5.7", "kustomize/v4.5.7", 27.0, True),
        ("version=master", "master", 27.0, True),
        ("version=master&ref=v1.0.0", "v1.0.0", 27.0, True),
        ("version=master&submodules=", "master", 27.0, True),
        ("version=master&submodules=maybe", "master", 27.0, True),
        ("version=master&submodules=false", "master", 27.0, False),
        ("submodules=F", "", 27.0, False),
        ("version=master&timeout=", "master", 27.0, True),
        ("version=master&timeout=jiffy", "master", 27.0, True),
        ("version=master&timeout=0", "master", 27.0, True),
        ("version=master&timeout=-5", "master", 27.0, True),
        ("timeout=61", "", 61.0, True),
        ("timeout=1m30s", "", 90.0, True),
        ("timeout=1.5h", "", 5400.0, True),
        ("timeout=500ms", "", 0.5, True),
        # Go's url.ParseQuery fails on these, and kustomize then takes every default.
        ("ref=v1;x=y", "", 27.0, True),
        ("ref=v1&timeout=%zz", "", 27.0, True),
        ("ref=a+b%2Fc", "a b/c", 27.0, True),
    ],
)
def test_query_like_kustomize(query: str, ref: str, timeout: float, submodules: bool) -> None:
    spec = remote.parse_repo_spec(f"https://host/org/repo?{query}")
    assert spec is not None
    assert (spec.ref, spec.timeout, spec.submodules) == (ref, timeout, submodules)


# ------------------------------------------------------------------------------ servers


class Repos:
    """Bare repositories under one root, with a work tree to commit from."""

    def __init__(self, root: Path, work: Path) -> None:
        self.root = root
        self.work = work
        git("init", "-q", "-b", "main", cwd=work)
        self.c1 = commit_tree(
            work,
            {
                "base/kustomization.yaml": "resources: [cm.yaml]\n",
                "base/cm.yaml": CM1,
                "comp/kustomization.yaml": COMPONENT,
                "escape/kustomization.yaml": "resources: [../cm.yaml]\n",
                "escape-base/kustomization.yaml": "resources: [../../..]\n",
                "cm.yaml": CM2,
                "gen/kustomization.yaml": (
                    "resources: [../base]\nconfigMapGenerator:\n- name: g\n  literals: [a=b]\n"
                    "labels:\n- pairs: {x: z}\n"
                ),
                "self/kustomization.yaml": "resources: [cm.yaml]\n",
                "self/cm.yaml": CM2,
            },
            "one",
        )
        git("tag", "v1", cwd=work)
        git("tag", "-a", "v1a", "-m", "annotated", cwd=work)
        self.c2 = commit_tree(
            work,
            {
                "base/cm.yaml": CM1.replace("'1'", "'2'"),
                "kustomization.yaml": "resources: [base]\n",
            },
            "two",
        )
        self.publish()

    def publish(self) -> None:
        for name in ("org/repo.git", "org/plain"):
            target = self.root / name
            if target.exists():
                git("push", "-q", "--force", "--tags", str(target), "main", cwd=self.work)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                git("clone", "-q", "--bare", str(self.work), str(target), cwd=self.work)


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    base = tmp_path_factory.mktemp("git")
    (base / "work").mkdir()
    return Repos(base / "served", base / "work")


@pytest.fixture(scope="module")
def http(repos: Repos) -> Iterator[SmartHTTP]:
    server = SmartHTTP(repos.root)
    server.files["/files/cm.yaml"] = CM2.encode()
    server.files["/files/broken.yaml"] = b"a: [\n"
    server.files["/files/label.yaml"] = (
        b"apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: l\n"
        b"labels:\n  remote: label\nfieldSpecs:\n- path: metadata/labels\n  create: true\n"
    )
    yield server
    server.close()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(path))
    return path


def krm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


def kubectl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    if KUBECTL is None:
        if os.environ.get("CI"):
            pytest.fail("kubectl (the kustomize oracle) is not installed")
        pytest.skip("kubectl (the kustomize oracle) is not installed")
    return subprocess.run(
        [KUBECTL, "kustomize", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def kustomization(tmp_path: Path) -> Callable[..., Path]:
    def write(text: str, **files: str) -> Path:
        root = tmp_path / "app"
        root.mkdir(exist_ok=True)
        (root / "kustomization.yaml").write_text(text)
        for name, body in files.items():
            (root / name).write_text(body)
        return root

    return write


def same_as_kubectl(root: Path | str, *flags: str, env: dict[str, str] | None = None) -> str:
    expected = kubectl(str(root), *flags, env=env)
    assert expected.returncode == 0, expected.stderr
    got = krm("build", str(root), *flags, env=env)
    assert got.returncode == 0, got.stderr
    assert got.stdout == expected.stdout
    return got.stdout


# ------------------------------------------------------------------------------ forms


def _http_forms(http: SmartHTTP, repos: Repos) -> list[str]:
    u = http.url
    return [
        u("org/repo.git") + "//base?ref=v1",  # tag, explicit //
        u("org/repo.git") + "/base?ref=v1a",  # annotated tag, the repository ends at .git
        u("org/repo.git") + "//base",  # HEAD of the default branch
        u("org/plain") + "/base?ref=main",  # branch; org/repo is the first two segments
        u("org/plain") + f"//base?ref={repos.c1}",  # a commit id
        u("org/repo.git") + f"?ref={repos.c2}",  # the repository root
        u("org/repo.git") + "//base?version=v1&timeout=10s&submodules=false",
        "git::" + u("org/repo.git") + "//base?ref=v1",  # go-getter prefix, stripped
    ]


def test_every_http_form_builds_like_kubectl(kustomization, http, repos, cache) -> None:
    for url in _http_forms(http, repos):
        root = kustomization(f"resources:\n- {url}\n")
        out = same_as_kubectl(root)
        assert "kind: ConfigMap" in out, url


def test_file_forms_build_like_kubectl(kustomization, repos, cache) -> None:
    for url in [
        f"file://{repos.root}/org/repo.git//base?ref=v1",
        f"file://{repos.root}/org/plain",
        f"file://{repos.root}/org/plain?ref={repos.c2}",
        f"file://{repos.root}/org/repo.git/base?ref=main",
    ]:
        root = kustomization(f"resources:\n- {url}\n")
        assert "name: one" in same_as_kubectl(root), url


def test_component_and_build_target_urls(kustomization, http, repos, cache, tmp_path) -> None:
    root = kustomization(
        f"resources:\n- cm.yaml\ncomponents:\n- {http.url('org/repo.git')}//comp?ref=v1\n",
        **{"cm.yaml": CM2},
    )
    assert "from: component" in same_as_kubectl(root)
    out = same_as_kubectl(http.url("org/repo.git") + "//base?ref=v1")
    assert "name: one" in out
    assert "name: one" in same_as_kubectl(f"file://{repos.root}/org/plain?ref=main")


def test_origin_annotations_name_the_repository(kustomization, http, repos, cache) -> None:
    root = kustomization(
        f"resources:\n- {http.url('org/repo.git')}//gen?ref=v1\n"
        f"- file://{repos.root}/org/plain//self\n"
        "buildMetadata: [originAnnotations, transformerAnnotations]\n"
    )
    out = same_as_kubectl(root)
    assert f"path: base/cm.yaml\n      repo: {http.url('org/repo.git')}\n      ref: v1\n" in out


def test_git_over_https_and_an_https_file(kustomization, repos, cache, tmp_path) -> None:
    # A loopback HTTPS server with a trustme certificate; both tools trust its CA through the
    # environment (Go and Python read SSL_CERT_FILE, git GIT_SSL_CAINFO).
    import ssl

    import trustme

    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    env = {"SSL_CERT_FILE": str(bundle), "GIT_SSL_CAINFO": str(bundle)}
    server = SmartHTTP(repos.root, tls=context)
    server.files["/cm.yaml"] = CM2.encode()
    try:
        for url in (
            server.url("org/repo.git") + "//base?ref=v1",
            server.url("org/plain") + "/base?ref=main",
            server.url("cm.yaml"),
        ):
            assert url.startswith("https://127.0.0.1:")
            root = kustomization(f"resources:\n- {url}\n")
            assert "kind: ConfigMap" in same_as_kubectl(root, env=env), url
        # without the CA, the certificate is refused, and the message says so
        url = server.url("org/repo.git") + "//comp?ref=v1"
        root = kustomization(f"resources:\n- {url}\n")
        got = krm("build", str(root), env={"GIT_SSL_CAINFO": "", "SSL_CERT_FILE": ""})
        assert got.returncode == 1
        assert f"remote '{url}': 'git ls-remote -- " in got.stderr
        assert "certificate" in got.stderr.lower()
    finally:
        server.close()


def test_a_plain_https_file_is_downloaded(kustomization, http, cache) -> None:
    root = kustomization(f"resources:\n- {http.url('files/cm.yaml')}\n")
    assert "name: two" in same_as_kubectl(root)


def test_a_transformer_config_url(kustomization, http, repos, cache) -> None:
    # transformers: entries that are URLs are read like resources: entries.
    root = kustomization(
        f"resources: [cm.yaml]\ntransformers:\n- {http.url('files/label.yaml')}\n",
        **{"cm.yaml": CM2},
    )
    assert "remote: label" in same_as_kubectl(root)


SSH = """#!/bin/sh
# A stand-in ssh: records its arguments and runs the git command it is given on this
# machine, in the served root (a leading / of the repository path is dropped).
printf '%s\\n' "$*" >> "$SSH_LOG"
for last; do :; done
cd "$SSH_ROOT" || exit 1
exec sh -c "$(printf '%s' "$last" | sed "s#'/#'#")"
"""


def test_ssh_forms_pass_git_what_kubectl_passes(kustomization, repos, cache, tmp_path) -> None:
    ssh = tmp_path / "ssh"
    ssh.write_text(SSH)
    ssh.chmod(0o755)
    for url in [
        "git@127.0.0.1:org/repo.git//base?ref=v1",
        "ssh://git@127.0.0.1/org/repo.git//base?ref=v1",
        "ssh://127.0.0.1/org/plain/base?ref=main",
        "git@github.com:org/repo.git//base?ref=v1",
        "github.com/org/repo/base?ref=v1",
    ]:
        logs = []
        for tool in (kubectl, lambda *a, env: krm("build", *a, env=env)):
            log = tmp_path / f"ssh-{len(logs)}.log"
            env = {
                "GIT_SSH_COMMAND": str(ssh),
                "SSH_LOG": str(log),
                "SSH_ROOT": str(repos.root),
                "XDG_CACHE_HOME": str(tmp_path / f"cache-{url.replace('/', '_')}"),
                # github.com over https goes to the stand-in too.
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "url.ssh://git@127.0.0.1/.insteadOf",
                "GIT_CONFIG_VALUE_0": "https://github.com/",
            }
            root = kustomization(f"resources:\n- {url}\n")
            result = tool(str(root), env=env)
            assert result.returncode == 0, (url, result.stderr)
            logs.append((result.stdout, sorted(set(log.read_text().splitlines()))))
        assert logs[0] == logs[1], url
        assert "name: one" in logs[0][0]


def _settled(daemon: GitDaemon, at_least: int) -> int:
    deadline = time.monotonic() + 10
    while daemon.connections() < at_least and time.monotonic() < deadline:
        time.sleep(0.05)
    return daemon.connections()


def test_timeout_ends_a_hanging_fetch(kustomization, repos, cache, tmp_path) -> None:
    ssh = tmp_path / "ssh"
    ssh.write_text("#!/bin/sh\nexec sleep 60\n")
    ssh.chmod(0o755)
    url = "git@127.0.0.1:org/repo.git//base?ref=v1&timeout=1"
    root = kustomization(f"resources:\n- {url}\n")
    env = {"GIT_SSH_COMMAND": str(ssh)}
    start = time.monotonic()
    expected = kubectl(str(root), env=env)
    assert expected.returncode == 1 and "hit 1s timeout" in expected.stderr
    middle = time.monotonic()
    got = krm("build", str(root), env=env)
    assert got.returncode == 1
    assert got.stderr == (
        f"Error: {root}/kustomization.yaml: remote '{url}': 'git ls-remote -- "
        "git@127.0.0.1:org/repo.git v1' timed out after 1s (a ?timeout= in the URL waits longer)\n"
    )
    assert time.monotonic() - middle < 10 and middle - start < 10


def test_git_daemon_urls_are_refused_by_both(kustomization, repos, cache, tmp_path) -> None:
    # kustomize has no git:// form: the URL is read as a local path, and the daemon, which
    # serves the repository (ls-remote below), is never asked by either tool.
    daemon = GitDaemon(repos.root, tmp_path / "daemon.log")
    try:
        url = f"{daemon.url('org/repo.git')}//base?ref=v1"
        assert repos.c1 in git("ls-remote", daemon.url("org/repo.git"), "v1", cwd=tmp_path)
        before = _settled(daemon, 1)
        root = kustomization(f"resources:\n- {url}\n")
        assert kubectl(str(root)).returncode == 1
        got = krm("build", str(root))
        assert got.returncode == 1
        assert got.stderr == (
            f"Error: {root}/kustomization.yaml: resource '{url}' "
            "does not exist (neither a file nor a kustomization directory)\n"
        )
        git("ls-remote", daemon.url("org/repo.git"), cwd=tmp_path)
        assert _settled(daemon, before + 1) == before + 1
    finally:
        daemon.close()


def test_submodules_are_fetched_unless_turned_off(
    http, repos, cache, tmp_path, kustomization
) -> None:
    work = tmp_path / "withsub"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    git(
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        http.url("org/repo.git"),
        "sub",
        cwd=work,
    )
    commit_tree(work, {"kustomization.yaml": "resources: [sub/base]\n"}, "with a submodule")
    bare = repos.root / "org" / "withsub.git"
    git("clone", "-q", "--bare", str(work), str(bare), cwd=tmp_path)
    root = kustomization(f"resources:\n- {http.url('org/withsub.git')}?ref=main\n")
    assert "name: one" in same_as_kubectl(root)
    off = kustomization(f"resources:\n- {http.url('org/withsub.git')}?ref=main&submodules=false\n")
    expected = kubectl(str(off))
    got = krm("build", str(off))
    assert expected.returncode == got.returncode == 1
    assert "resource 'sub/base' does not exist" in got.stderr


# ------------------------------------------------------------------------------ the cache


def test_a_commit_is_fetched_once_then_built_with_no_request(
    kustomization, http, repos, cache
) -> None:
    url = http.url("org/repo.git") + f"//base?ref={repos.c1}"
    root = kustomization(f"resources:\n- {url}\n")
    before = len(http.requests)
    first = krm("build", "--no-cache", str(root))
    assert first.returncode == 0, first.stderr
    assert len(http.requests) > before
    before = len(http.requests)
    second = krm("build", "--no-cache", str(root))
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert http.requests[before:] == []
    assert (cache / "krm" / "git" / "trees" / repos.c1).is_dir()


def test_a_branch_is_resolved_each_build_and_fetched_only_when_it_moved(
    kustomization, http, repos, cache
) -> None:
    url = http.url("org/repo.git") + "//base?ref=main"
    root = kustomization(f"resources:\n- {url}\n")
    assert krm("build", str(root)).returncode == 0
    before = len(http.requests)
    again = krm("build", str(root))
    assert again.returncode == 0, again.stderr
    asked = http.requests[before:]
    # one ls-remote (ref advertisement and ls-refs), no fetch
    assert asked and all("upload-pack" in r for r in asked)
    assert len(asked) <= 2
    before = len(http.requests)
    offline = krm("build", "--offline", str(root))
    assert offline.returncode == 0, offline.stderr
    assert offline.stdout == again.stdout
    assert http.requests[before:] == []
    # The branch moves: the next online build sees the new commit, like kustomize.
    moved = commit_tree(repos.work, {"base/cm.yaml": CM1.replace("'1'", "'3'")}, "three")
    repos.publish()
    try:
        new = same_as_kubectl(root)
        assert 'a: "3"' in new
        assert (cache / "krm" / "git" / "trees" / moved).is_dir()
    finally:
        git("reset", "-q", "--hard", repos.c2, cwd=repos.work)
        repos.publish()


def test_offline_without_the_commit_is_an_error(kustomization, http, repos, cache) -> None:
    url = http.url("org/repo.git") + f"//base?ref={repos.c1}"
    root = kustomization(f"resources:\n- {url}\n")
    before = len(http.requests)
    got = krm("build", "--offline", str(root))
    assert got.returncode == 1
    assert got.stderr == (
        f"Error: {root}/kustomization.yaml: remote '{url}': commit {repos.c1} is not in the "
        f"cache ({cache}/krm/git) and --offline forbids fetching it\n"
    )
    branch = kustomization(f"resources:\n- {http.url('org/repo.git')}//base?ref=v1\n")
    got = krm("build", "--offline", str(branch))
    assert got.returncode == 1
    assert "ref 'v1' is not in the cache" in got.stderr
    assert http.requests[before:] == []
    assert not (cache / "krm" / "git" / "trees").exists() or not any(
        (cache / "krm" / "git" / "trees").iterdir()
    )


# ------------------------------------------------------------------------------ errors


def _both_fail(root: Path, *flags: str) -> str:
    expected = kubectl(str(root), *flags)
    assert expected.returncode == 1, expected.stdout
    got = krm("build", str(root), *flags)
    assert got.returncode == 1, got.stdout
    assert got.stdout == ""
    return got.stderr


def test_unreachable_remote_names_url_and_reason(kustomization, cache) -> None:
    url = f"http://127.0.0.1:{free_port()}/org/repo.git//base?ref=v1"
    err = _both_fail(kustomization(f"resources:\n- {url}\n"))
    assert err.startswith("Error: ") and f"remote '{url}'" in err
    assert "Connection refused" in err or "Failed to connect" in err


def test_missing_repository_and_ref(kustomization, http, cache) -> None:
    url = http.url("org/nothing.git") + "//base?ref=v1"
    err = _both_fail(kustomization(f"resources:\n- {url}\n"))
    assert f"remote '{url}': 'git ls-remote -- {http.url('org/nothing.git')} v1' failed: " in err
    assert "not found" in err
    url = http.url("org/repo.git") + "//base?ref=nope"
    err = _both_fail(kustomization(f"resources:\n- {url}\n"))
    assert f"remote '{url}': 'git fetch --depth=1 {http.url('org/repo.git')} nope' failed: " in err
    assert "couldn't find remote ref nope" in err


def test_a_directory_missing_in_the_repository(kustomization, http, cache) -> None:
    url = http.url("org/repo.git") + "//nothere?ref=v1"
    err = _both_fail(kustomization(f"resources:\n- {url}\n"))
    assert f"remote '{url}': 'nothere' does not exist in the repository" in err


def test_a_ref_that_looks_like_an_option_is_refused(kustomization, http, cache) -> None:
    url = http.url("org/repo.git") + "//base?ref=--upload-pack=touch%20/tmp/owned"
    root = kustomization(f"resources:\n- {url}\n")
    got = krm("build", str(root))
    assert got.returncode == 1
    assert got.stderr == (
        f"Error: {root}/kustomization.yaml: remote '{url}': ref '--upload-pack=touch /tmp/owned' "
        "starts with '-' (git would read it as an option)\n"
    )


def test_load_restrictor_applies_inside_the_clone(kustomization, http, cache) -> None:
    # Even with LoadRestrictionsNone, as in kustomize: a cloned kustomization reads only below
    # its own directory, and its bases stay inside the repository.
    url = http.url("org/repo.git") + "//escape?ref=v1"
    root = kustomization(f"resources:\n- {url}\n")
    err = _both_fail(root, "--load-restrictor", "LoadRestrictionsNone")
    assert "security; file" in err and "is not in or below" in err
    url = http.url("org/repo.git") + "//escape-base?ref=v1"
    err = _both_fail(kustomization(f"resources:\n- {url}\n"))
    assert (
        "security; bases in kustomizations found in cloned git repos must be within the repo" in err
    )


def test_a_missing_plain_file_stops_the_build(kustomization, http, cache) -> None:
    # One path segment: no repository either, so kustomize stops at the HTTP status.
    before = len(http.requests)
    err = _both_fail(kustomization(f"resources:\n- {http.url('missing.yaml')}\n"))
    assert err.endswith(
        f"kustomization.yaml: cannot download '{http.url('missing.yaml')}': status code 404 "
        "(Not Found)\n"
    )
    assert http.requests[before:] == ["GET /missing.yaml"] * 2  # kubectl's, then krm's


def test_a_missing_or_broken_file_that_may_be_a_repository(kustomization, http, cache) -> None:
    # Two segments: kustomize tries the URL as a repository too, and both attempts fail.
    for name in ("files/missing.yaml", "files/broken.yaml"):
        url = http.url(name)
        err = _both_fail(kustomization(f"resources:\n- {url}\n"))
        assert f"remote '{url}': 'git ls-remote -- {url} HEAD' failed: " in err
    assert "(and as a file: " in err  # the broken file's own error is kept


def test_a_repository_that_includes_itself_is_a_cycle(kustomization, tmp_path, cache) -> None:
    work = tmp_path / "loopwork"
    work.mkdir()
    bare = tmp_path / "loop.git"
    url = f"file://{bare}//loop?ref=main"
    git("init", "-q", "-b", "main", cwd=work)
    commit_tree(work, {"loop/kustomization.yaml": f"resources:\n- {url}\n"}, "loop")
    git("clone", "-q", "--bare", str(work), str(bare), cwd=tmp_path)
    err = _both_fail(kustomization(f"resources:\n- {url}\n"))
    assert f"cycle detected: URI '{url}' referenced by previous URI '{url}'" in err


def test_build_cache_serves_a_pinned_remote_build_with_no_request(
    kustomization, http, repos, cache
) -> None:
    url = http.url("org/repo.git") + f"//base?ref={repos.c1}"
    root = kustomization(f"resources:\n- {url}\n")
    outputs = [krm("build", str(root)) for _ in range(3)]
    assert [o.returncode for o in outputs] == [0, 0, 0]
    assert outputs[0].stdout == outputs[1].stdout == outputs[2].stdout
    # the first fetched (not cacheable: it ran git), the second stored, the third was a hit
    assert len(list((cache / "krm" / "builds").iterdir())) == 1
    before = len(http.requests)
    assert krm("build", str(root)).stdout == outputs[0].stdout
    assert http.requests[before:] == []


# ------------------------------------------------------------------------------ batch runs


def test_a_batch_run_fetches_each_remote_once_failures_included(
    http, repos, cache, tmp_path
) -> None:
    # Three overlays name the same branch, the same missing repository and the same plain
    # file URL; the batch asks the server once for each, and every output is still what a
    # single build of that directory prints.
    good = http.url("org/repo.git") + "//base?ref=main"
    missing = http.url("org/nothing.git") + "//base?ref=v1"
    file_url = http.url("files/cm.yaml")
    root = tmp_path / "tree"
    for name in ("a", "b", "c"):
        (root / name).mkdir(parents=True)
        (root / name / "kustomization.yaml").write_text(
            f"resources:\n- {good}\n- {file_url}\nnamePrefix: {name}-\n"
        )
        (root / f"broken-{name}").mkdir()
        (root / f"broken-{name}" / "kustomization.yaml").write_text(f"resources:\n- {missing}\n")
    before = len(http.requests)
    out = tmp_path / "out"
    got = krm("build", "--batch", str(root), "-o", str(out))
    assert got.returncode == 1, got.stderr
    asked = http.requests[before:]
    # Each URL is first tried as a file (kustomize's order), once in the whole run.
    for line in ("/files/cm.yaml", "/org/repo.git//base?ref=main", "/org/nothing.git//base?ref=v1"):
        assert asked.count(f"GET {line}") == 1, asked
    # One ref advertisement for the missing repository's ls-remote; two for the branch (its
    # ls-remote, then the fetch of a commit the cache has not seen), not two per overlay.
    ads = {
        repo: [r for r in asked if r.startswith(f"GET /{repo}/info/refs")]
        for repo in ("org/repo.git", "org/nothing.git")
    }
    assert (len(ads["org/repo.git"]), len(ads["org/nothing.git"])) == (2, 1), asked
    for name in ("a", "b", "c"):
        single = krm("build", str(root / name))
        assert single.returncode == 0, single.stderr
        assert (out / name / "build.yaml").read_text() == single.stdout
        assert f"name: {name}-" in single.stdout
        failed = krm("build", str(root / f"broken-{name}"))
        assert failed.returncode == 1
        error = (out / f"broken-{name}" / "error.txt").read_text()
        assert error == failed.stderr
        # The error names this directory's kustomization, not the first one that failed.
        assert error.startswith(f"Error: {root / f'broken-{name}'}/kustomization.yaml: remote ")
        assert f"remote '{missing}': 'git ls-remote -- " in error
