"""``fs.repo_spec`` answers local paths without importing ``orchestrator.remote``: the same
answer ``remote.parse_repo_spec`` gives, for any path."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator import fs, remote

_PIECES = st.sampled_from(
    ["github.com", "GitHub.com", "git::", "https://", "ssh://", "file://", "git@", "user@", "/",
     ":", "@", ".", "..", "?ref=v1", "org", "repo", "x", "-", "~", "%2F", " "]
)  # fmt: skip


@settings(max_examples=3000, deadline=None)
@given(st.lists(_PIECES, max_size=6).map("".join) | st.text(max_size=12))
def test_the_precheck_never_misses_a_repository(path: str) -> None:
    assert repr(fs.repo_spec(path)) == repr(remote.parse_repo_spec(path))


def test_remote_and_local_examples() -> None:
    assert fs.repo_spec("../base") is None
    assert fs.repo_spec("overlays/prod") is None
    assert fs.repo_spec("github.com/org/repo/path?ref=v1") is not None
    assert fs.repo_spec("git@github.com:org/repo") is not None
    assert fs.repo_spec("https://example.com/org/repo.git") is not None
