"""Trial runs of contributions: real downloads from a loopback server, real jailed runs."""

# The shared fixtures are imported by name (tests/catalogs has no conftest of its own): F811.
# ruff: noqa: F811

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import tarfile
import threading

import pytest

from catalogs.review import sandbox, trials
from catalogs.review.models import TrialRun, TrialRunStatus
from catalogs.review.services import (
    contribution_request_changes,
    contribution_resubmit,
    contribution_submit,
)
from tests.catalogs.review.container_fixtures import needs_image_tools, pushed_images  # noqa: F401
from tests.catalogs.review.contribution_fixtures import (  # noqa: F401 (fixtures)
    DEFINITION,
    as_user,
    contributor,
    published,
    reviewer,
)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(sandbox.jail_available() is None, reason="no jail can be built here"),
]


@pytest.fixture(autouse=True)
def _trials_run_in_this_process(jobs_in_this_process):
    """Trial tasks run eagerly here, also on CI's services stage: its worker has neither these
    tests' settings (TRIAL_RUNS_ENABLED, the cache dir) nor their uncommitted rows."""


ANNOTATE = (
    'for r in ctx.resource_list["items"]:\n    r["metadata"]["annotations"] = {"trial": "yes"}\n'
)


@pytest.fixture
def served(tmp_path, settings):
    """A loopback HTTP server for runtime files; returns put(name, text) -> (url, sha256)."""
    settings.TRIAL_RUNS_ENABLED = True
    settings.TRIAL_CACHE_DIR = str(tmp_path / "cache")
    settings.TRIAL_ALLOWED_NETWORKS = ["127.0.0.0/8"]  # the loopback server below
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def put(name: str, text: str | bytes) -> tuple[str, str]:
        data = text.encode() if isinstance(text, str) else text
        (root / name).write_bytes(data)
        url = f"http://127.0.0.1:{server.server_address[1]}/{name}"
        return url, hashlib.sha256(data).hexdigest()

    yield put
    server.shutdown()
    server.server_close()


def _definition(runtime: str) -> str:
    head, _, _ = DEFINITION.partition("    runtime:\n")
    return head + "    runtime:\n" + runtime


def _starlark(url: str, sha: str) -> str:
    return _definition(f"      starlark:\n        uri: {url}\n        sha256: {sha}\n")


def _submit(published, contributor, content, capture):
    with capture(execute=True):
        return contribution_submit(catalog=published, content=content, actor=contributor)


def test_a_contribution_is_trial_run_when_it_arrives(
    served, published, contributor, django_capture_on_commit_callbacks
):
    url, sha = served("annotate.star", ANNOTATE)
    c = _submit(published, contributor, _starlark(url, sha), django_capture_on_commit_callbacks)
    [run] = trials.trial_run_list(contribution=c)
    assert run.status == TrialRunStatus.OK, run.detail
    assert run.runtime == "starlark"
    assert run.revision == 1
    assert not run.flagged
    assert run.diff["changed"] == [
        "ConfigMap/demo/settings",
        "Deployment.apps/demo/web",
        "Service/demo/web",
    ]
    assert "bwrap" in run.jail


@pytest.mark.parametrize(
    ("script", "flag"),
    [
        ("fail('broken')\n", "crashed or reported errors"),
        ("while True:\n    pass\n", "crashed or reported errors"),
        ('ctx.resource_list["items"] = []\n', "removed input resources"),
    ],
    ids=["crash", "endless-loop", "removes-resources"],
)
def test_a_misbehaving_function_is_flagged(
    served, published, contributor, django_capture_on_commit_callbacks, script, flag
):
    url, sha = served("bad.star", script)
    c = _submit(published, contributor, _starlark(url, sha), django_capture_on_commit_callbacks)
    [run] = trials.trial_run_list(contribution=c)
    assert run.flagged
    assert any(f.startswith(flag) for f in run.flags), run.flags


def test_an_exec_function_that_probes_the_jail_is_run_contained_and_flagged(
    served, published, contributor, django_capture_on_commit_callbacks
):
    program = (
        "#!/bin/bash\n"
        "exec 3<>/dev/tcp/127.0.0.1/9 || true\n"
        'echo owned > "$HOME/.profile" || true\n'
        "cat\n"
    )
    url, sha = served("probe", program)
    runtime = (
        "      exec:\n        platforms:\n"
        f"        - {{bin: probe, os: linux, arch: {trials._arch()},\n"
        f"           uri: '{url}', sha256: {sha}}}\n"
    )
    c = _submit(published, contributor, _definition(runtime), django_capture_on_commit_callbacks)
    [run] = trials.trial_run_list(contribution=c)
    assert run.runtime == "exec"
    assert run.status == TrialRunStatus.OK, run.detail
    assert run.tried_network and run.tried_write_outside
    assert "tried to use the network" in run.flags
    assert "tried to write outside its scratch dir" in run.flags
    assert run.diff == {"added": [], "removed": [], "changed": []}
    # What ran, for the reviewer: the download's files (one executable here).
    assert run.artifact == f"{len(program):>10} * probe"


def test_the_files_of_an_exec_archive_are_listed_for_the_reviewer(
    served, published, contributor, django_capture_on_commit_callbacks
):
    program = b"#!/bin/sh\ncat\n"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data, mode in (
            ("bin/set-owner", program, 0o755),
            ("README.md", b"# set-owner\n", 0o644),
            ("lib/helper.sh", b"echo hi\n", 0o644),
        ):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    url, sha = served("set-owner.tar.gz", buffer.getvalue())
    runtime = (
        "      exec:\n        platforms:\n"
        f"        - {{bin: bin/set-owner, os: linux, arch: {trials._arch()},\n"
        f"           uri: '{url}', sha256: {sha}}}\n"
    )
    c = _submit(published, contributor, _definition(runtime), django_capture_on_commit_callbacks)
    [run] = trials.trial_run_list(contribution=c)
    assert run.status == TrialRunStatus.OK, run.detail
    assert run.artifact.splitlines() == [
        f"{12:>10}   README.md",
        f"{len(program):>10} * bin/set-owner",
        f"{8:>10}   lib/helper.sh",
    ]
    [artifact] = trials.trial_artifacts(contribution=c)
    assert (artifact.runtime, artifact.text) == ("exec", run.artifact)


EXAMPLE_IN = """\
apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: one}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: two}}
functionConfig: {owner: team-a}
"""
EXAMPLE_OUT = """\
---
apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: one, labels: {owner: team-a}}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: two, labels: {owner: team-a}}}
"""
SET_OWNER = (
    'owner = ctx.resource_list["functionConfig"]["owner"]\n'
    'for r in ctx.resource_list["items"]:\n'
    '    r["metadata"]["labels"] = {"owner": owner}\n'
)


def _with_examples(content: str, *urls: str) -> str:
    lines = "".join(f"    - {u}\n" for u in urls)
    return content + "    examples:\n" + lines


@pytest.mark.parametrize(
    ("script", "flags"),
    [
        (SET_OWNER, []),
        (
            SET_OWNER + 'ctx.resource_list["items"].pop()\n',
            ["output differs from the example's expected output"],
        ),
    ],
    ids=["as-promised", "drops-a-resource"],
)
def test_examples_with_expected_output_are_checked(
    served, published, contributor, django_capture_on_commit_callbacks, script, flags
):
    url, sha = served("set-owner.star", script)
    example, _ = served("example.yaml", EXAMPLE_IN + EXAMPLE_OUT)
    content = _with_examples(_starlark(url, sha), "https://example.org/docs", example)
    c = _submit(published, contributor, content, django_capture_on_commit_callbacks)
    [run] = trials.trial_run_list(contribution=c)  # the documentation link is not an example
    assert run.example == f"example {example}"
    assert run.status == TrialRunStatus.OK, run.detail
    assert [f.split(":")[0] for f in run.flags] == flags  # no "removed input resources" flag
    if flags:
        assert "ConfigMap/two" in run.flags[0]


def test_an_unreadable_example_is_flagged_and_not_run(
    served, published, contributor, django_capture_on_commit_callbacks
):
    url, sha = served("set-owner.star", SET_OWNER)
    example, _ = served("example.yaml", "kind: Deployment\n")
    content = _with_examples(_starlark(url, sha), example)
    c = _submit(published, contributor, content, django_capture_on_commit_callbacks)
    [run] = trials.trial_run_list(contribution=c)
    assert run.status == TrialRunStatus.NOT_RUN
    assert run.flags == ["its example could not be read"]
    assert "one or two ResourceList" in run.detail


def test_a_digest_mismatch_runs_nothing(
    served, published, contributor, django_capture_on_commit_callbacks
):
    url, _ = served("annotate.star", ANNOTATE)
    content = _starlark(url, hashlib.sha256(b"something else").hexdigest())
    c = _submit(published, contributor, content, django_capture_on_commit_callbacks)
    [run] = trials.trial_run_list(contribution=c)
    assert run.status == TrialRunStatus.NOT_RUN
    assert "sha256 mismatch" in run.detail


def test_a_local_path_runtime_is_never_read_by_the_worker(
    served, published, contributor, django_capture_on_commit_callbacks
):
    content = _definition("      starlark:\n        path: /etc/passwd\n")
    c = _submit(published, contributor, content, django_capture_on_commit_callbacks)
    [run] = trials.trial_run_list(contribution=c)
    assert run.status == TrialRunStatus.NOT_RUN
    assert "not an https" in run.detail


def test_a_container_image_without_digest_is_recorded_as_not_run(
    served, published, contributor, django_capture_on_commit_callbacks
):
    c = _submit(published, contributor, DEFINITION, django_capture_on_commit_callbacks)
    [run] = trials.trial_run_list(contribution=c)
    assert run.runtime == "container"
    assert run.version == "v1"
    assert run.status == TrialRunStatus.NOT_RUN
    assert run.detail == (
        "registry.example.org/set-owner:v1: image registry.example.org/set-owner:v1 has a tag "
        "but no digest: the builtin runtime runs only pinned images (image@sha256:<digest>, or "
        "the catalog's sha256); nothing was run"
    )


@needs_image_tools
def test_a_container_function_is_pulled_and_run_in_the_jail(
    served, pushed_images, published, contributor, django_capture_on_commit_callbacks
):
    good, probe = pushed_images.pushed["two"], pushed_images.pushed["netprobe"]
    content = _versions(
        ("v2", f"      container:\n        image: {probe.ref}\n        sha256: {probe.hex}\n"),
        ("v1", f"      container:\n        image: {good.ref}\n        sha256: {good.hex}\n"),
    )
    c = _submit(published, contributor, content, django_capture_on_commit_callbacks)
    runs = {r.version: r for r in trials.trial_run_list(contribution=c)}
    assert set(runs) == {"v1", "v2"}
    assert runs["v1"].runtime == "container"
    assert runs["v1"].status == TrialRunStatus.OK, runs["v1"].detail
    assert runs["v1"].diff["added"] == ["ConfigMap/probe"]
    assert "bwrap" in runs["v1"].jail
    assert runs["v2"].status == TrialRunStatus.FAILED
    assert "tried to use the network" in runs["v2"].flags
    assert pushed_images.listener.reached == []


def _versions(*versions: tuple[str, str]) -> str:
    """DEFINITION with the given (name, runtime YAML) versions, in that order."""
    head = DEFINITION.partition("  versions:\n")[0] + "  versions:\n"
    for name, runtime in versions:
        head += f"  - name: {name}\n    runtime:\n{runtime}"
    return head


def _probe_exec(served) -> str:
    program = "#!/bin/bash\nexec 3<>/dev/tcp/127.0.0.1/9 || true\ncat\n"
    url, sha = served("probe", program)
    return (
        "      exec:\n        platforms:\n"
        f"        - {{bin: probe, os: linux, arch: {trials._arch()},\n"
        f"           uri: '{url}', sha256: {sha}}}\n"
    )


def test_every_version_of_a_new_function_runs_labelled_with_its_version(
    served, published, contributor, reviewer, as_user, django_capture_on_commit_callbacks
):
    """A v2 that opens the network, listed before v1: both run, and v2 is flagged."""
    url, sha = served("annotate.star", ANNOTATE)
    v1 = f"      starlark:\n        uri: {url}\n        sha256: {sha}\n"
    content = _versions(("v2", _probe_exec(served)), ("v1", v1))
    c = _submit(published, contributor, content, django_capture_on_commit_callbacks)
    runs = {r.version: r for r in trials.trial_run_list(contribution=c)}
    assert set(runs) == {"v1", "v2"}
    assert (runs["v1"].runtime, runs["v1"].status, runs["v1"].flags) == ("starlark", "ok", [])
    assert runs["v2"].runtime == "exec"
    assert runs["v2"].flags == ["tried to use the network"]
    body = as_user(reviewer).get(f"/review/{c.pk}/").content.decode()
    assert "<th>Version</th>" in body
    assert "<td>v2</td>" in body and "<td>v1</td>" in body
    # Each row says when it ran (runs of earlier revisions and reruns pile up).
    assert "<th>Run at</th>" in body
    for run in runs.values():
        stamp = run.created_at.strftime("%Y-%m-%d %H:%M:%S")
        assert f'<time datetime="{run.created_at.isoformat()}">{stamp} UTC</time>' in body


def test_only_new_or_changed_versions_run(
    served, published, contributor, django_capture_on_commit_callbacks
):
    """The catalog already has SetOwner v1 and v2: a contribution adding v3 and changing v2 runs
    those two, not the unchanged v1 (wherever it is listed)."""
    import yaml

    from catalogs.publishing import services as publishing

    url, sha = served("annotate.star", ANNOTATE)
    star = f"      starlark:\n        uri: {url}\n        sha256: {sha}\n"
    other, other_sha = served("annotate-v2.star", ANNOTATE + "# v2\n")
    changed = f"      starlark:\n        uri: {other}\n        sha256: {other_sha}\n"
    spec = yaml.safe_load(_versions(("v1", star), ("v2", star)))["spec"]
    catalog = {
        "apiVersion": "config.kubernetes.io/v1alpha1",
        "kind": "Catalog",
        "metadata": {"name": "test-catalog"},
        "spec": {"krmFunctions": [spec]},
    }
    publishing.catalog_version_publish(
        catalog=published, content=yaml.safe_dump(catalog), actor=None
    )
    published.refresh_from_db()
    content = _versions(("v3", star), ("v1", star), ("v2", changed))
    c = _submit(published, contributor, content, django_capture_on_commit_callbacks)
    runs = trials.trial_run_list(contribution=c)
    assert sorted(r.version for r in runs) == ["v2", "v3"]
    assert all(r.status == TrialRunStatus.OK for r in runs), [r.detail for r in runs]
    # nothing new or changed: nothing to run
    unchanged = _submit(
        published,
        contributor,
        _versions(("v1", star), ("v2", star)),
        django_capture_on_commit_callbacks,
    )
    assert trials.trial_run_list(contribution=unchanged) == []


def test_a_resubmission_is_trial_run_again(
    served, published, contributor, reviewer, django_capture_on_commit_callbacks
):
    bad_url, bad_sha = served("bad.star", "fail('broken')\n")
    c = _submit(
        published, contributor, _starlark(bad_url, bad_sha), django_capture_on_commit_callbacks
    )
    contribution_request_changes(contribution=c, actor=reviewer, reason="it crashes")
    url, sha = served("annotate.star", ANNOTATE)
    with django_capture_on_commit_callbacks(execute=True):
        c = contribution_resubmit(contribution=c, content=_starlark(url, sha), actor=contributor)
    [run] = trials.trial_run_list(contribution=c)
    assert run.revision == 2
    assert run.status == TrialRunStatus.OK
    assert TrialRun.objects.filter(contribution=c).count() == 2
    # The crashed run of revision 1 wrote no output: there is nothing to compare with.
    assert trials.trial_output_diffs(contribution=c) == []
    # The script being approved is the one revision 2 ran (sha256-verified).
    [artifact] = trials.trial_artifacts(contribution=c)
    assert (artifact.version, artifact.runtime, artifact.text) == ("v1", "starlark", ANNOTATE)


LABEL = 'for r in ctx.resource_list["items"]:\n    r["metadata"]["labels"] = {"tier": "%s"}\n'


def test_the_output_of_a_new_revision_is_compared_with_the_previous_ones(
    served, published, contributor, reviewer, django_capture_on_commit_callbacks
):
    url, sha = served("one.star", LABEL % "one")
    c = _submit(published, contributor, _starlark(url, sha), django_capture_on_commit_callbacks)
    [first] = trials.trial_run_list(contribution=c)
    assert "tier: one" in first.output and "kind: ConfigMap" in first.output
    assert trials.trial_output_diffs(contribution=c) == []  # revision 1: nothing before it
    contribution_request_changes(contribution=c, actor=reviewer, reason="tier two, please")
    url, sha = served("two.star", LABEL % "two")
    with django_capture_on_commit_callbacks(execute=True):
        c = contribution_resubmit(contribution=c, content=_starlark(url, sha), actor=contributor)
    [diff] = trials.trial_output_diffs(contribution=c)
    assert (diff.version, diff.example, diff.previous_revision) == ("v1", trials.BUILTIN_EXAMPLE, 1)
    assert diff.lines[:2] == ["--- revision 1 output", "+++ revision 2 output"]
    changed = [line for line in diff.lines[2:] if line[:1] in "+-"]
    assert changed == ["-    tier: one", "+    tier: two"] * 3, diff.lines
    # A revision whose output is the same says so: no lines.
    contribution_request_changes(contribution=c, actor=reviewer, reason="docs")
    with django_capture_on_commit_callbacks(execute=True):
        c = contribution_resubmit(
            contribution=c, content=_starlark(url, sha) + "\n# same\n", actor=contributor
        )
    [same] = trials.trial_output_diffs(contribution=c)
    assert (same.previous_revision, same.lines) == (2, [])


def test_nothing_is_enqueued_when_trial_runs_are_off(
    published, contributor, settings, django_capture_on_commit_callbacks
):
    settings.TRIAL_RUNS_ENABLED = False
    c = _submit(published, contributor, DEFINITION, django_capture_on_commit_callbacks)
    assert TrialRun.objects.filter(contribution=c).count() == 0


def test_the_review_page_shows_trial_runs_and_a_reviewer_can_rerun_them(
    served, published, contributor, reviewer, as_user, django_capture_on_commit_callbacks
):
    url, sha = served("bad.star", 'ctx.resource_list["items"] = []\n')
    c = _submit(published, contributor, _starlark(url, sha), django_capture_on_commit_callbacks)
    client = as_user(reviewer)
    body = client.get(f"/review/{c.pk}/").content.decode()
    assert "Trial runs in the sandbox" in body
    assert "removed input resources" in body
    assert "− Deployment.apps/demo/web" in body
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/review/{c.pk}/trials/")
    assert response.status_code == 302
    assert TrialRun.objects.filter(contribution=c).count() == 2


def test_the_author_sees_the_trial_runs_on_their_contribution_page(
    served, published, contributor, as_user, django_capture_on_commit_callbacks
):
    url, sha = served("bad.star", 'ctx.resource_list["items"] = []\n')
    c = _submit(published, contributor, _starlark(url, sha), django_capture_on_commit_callbacks)
    body = as_user(contributor).get(f"/contributions/{c.pk}/").content.decode()
    assert "Trial runs in the sandbox" in body
    assert "removed input resources" in body
    assert "− Deployment.apps/demo/web" in body
    assert "Run the trials again" not in body  # a reviewer's button, not the author's


def test_only_reviewers_rerun_trials(
    served, published, contributor, as_user, django_capture_on_commit_callbacks
):
    url, sha = served("annotate.star", ANNOTATE)
    c = _submit(published, contributor, _starlark(url, sha), django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        response = as_user(contributor).post(f"/review/{c.pk}/trials/")
    assert response.status_code == 403
    assert TrialRun.objects.filter(contribution=c).count() == 1


def test_a_rerun_is_refused_when_trial_runs_are_off(
    published, contributor, reviewer, as_user, settings
):
    c = contribution_submit(catalog=published, content=DEFINITION, actor=contributor)
    settings.TRIAL_RUNS_ENABLED = False
    response = as_user(reviewer).post(f"/review/{c.pk}/trials/", follow=True)
    assert "Trial runs are turned off" in response.content.decode()
    assert TrialRun.objects.filter(contribution=c).count() == 0


def test_a_trial_over_the_upstream_rate_limit_waits_and_records_it(
    served, published, contributor, django_capture_on_commit_callbacks, settings
):
    """The runtime's host is at its limit: the trial is held back, then runs (eager: in place)."""
    from catalogs import ratelimits

    url, sha = served("annotate.star", ANNOTATE)
    settings.UPSTREAM_RATE_LIMIT = "1/second"
    settings.UPSTREAM_RATE_LIMIT_STORAGE_URL = "memory://"
    ratelimits.upstream_limiter.cache_clear()
    try:
        assert ratelimits.upstream_hosts_admit(urls=[url]) is None  # another run took the slot
        c = _submit(published, contributor, _starlark(url, sha), django_capture_on_commit_callbacks)
    finally:
        ratelimits.upstream_limiter.cache_clear()
    [run] = trials.trial_run_list(contribution=c)
    assert run.status == TrialRunStatus.OK, run.detail
    assert run.deferrals >= 1


@pytest.mark.parametrize(
    ("image", "url"),
    [
        ("127.0.0.1:5000/fn/one@sha256:" + "a" * 64, "http://127.0.0.1:5000/v2/"),
        ("ghcr.io/example/fn:v1", "https://ghcr.io/v2/"),
        ("busybox:1.36", "https://docker.io/v2/"),
    ],
)
def test_a_container_trial_takes_a_rate_limit_slot_at_the_image_registry(image, url):
    assert trials._upstream_urls({"container": {"image": image}}, []) == [url]
