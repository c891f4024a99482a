"""Fixtures for ``krm edit``/``krm create``: run the CLI in a directory, read the result."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import cli

# The kustomization kustomize's own edit tests start from (commands/internal/testutils).
KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namePrefix: some-prefix
nameSuffix: some-suffix
# Labels to add to all objects and selectors.
# These labels would also be used to form the selector for apply --prune
# Named differently than \u201clabels\u201d to avoid confusion with metadata for this object
commonLabels:
  app: helloworld
commonAnnotations:
  note: This is an example annotation
resources: []
#- service.yaml
#- ../some-dir/
# There could also be configmaps in Base, which would make these overlays
configMapGenerator: []
# There could be secrets in Base, if just using a fork/rebase workflow
secretGenerator: []
replacements:
  - path: replacement.yaml
"""

# The same file as kustomize writes it back unchanged: empty fields dropped (their comments
# stay), lists written without indentation.
KUSTOMIZATION_REWRITTEN = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namePrefix: some-prefix
nameSuffix: some-suffix
# Labels to add to all objects and selectors.
# These labels would also be used to form the selector for apply --prune
# Named differently than \u201clabels\u201d to avoid confusion with metadata for this object
commonLabels:
  app: helloworld
commonAnnotations:
  note: This is an example annotation
#- service.yaml
#- ../some-dir/
# There could also be configmaps in Base, which would make these overlays
# There could be secrets in Base, if just using a fork/rebase workflow
replacements:
- path: replacement.yaml
"""


class Edit:
    """Runs ``krm`` in a temporary directory holding a kustomization file."""

    ORIGINAL = KUSTOMIZATION
    REWRITTEN = KUSTOMIZATION_REWRITTEN

    def __init__(self, path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.path = path
        self._capsys = capsys
        self.out = ""  # what the last command wrote to stdout

    def write(self, text: str = KUSTOMIZATION, name: str = "kustomization.yaml") -> None:
        (self.path / name).write_text(text, encoding="utf-8")

    def read(self, name: str = "kustomization.yaml") -> str:
        return (self.path / name).read_text(encoding="utf-8")

    def __call__(self, *argv: str) -> tuple[int, str]:
        """Run ``krm ARGV``; the exit status and what it wrote to stderr."""
        self._capsys.readouterr()
        code = cli.main(list(argv))
        captured = self._capsys.readouterr()
        self.out = captured.out
        return code, captured.err

    def ok(self, *argv: str) -> str:
        """Run ``krm ARGV`` expecting success; the kustomization file afterwards."""
        code, err = self(*argv)
        assert code == 0, err
        return self.read()

    def fails(self, *argv: str) -> str:
        """Run ``krm ARGV`` expecting failure and no change to the file; the error text."""
        before = {p.name: p.read_bytes() for p in self.path.iterdir() if p.is_file()}
        code, err = self(*argv)
        assert code == 1
        after = {p.name: p.read_bytes() for p in self.path.iterdir() if p.is_file()}
        assert after == before
        assert err.startswith("Error: ")
        return err[len("Error: ") :]


@pytest.fixture
def edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Edit:
    """An :class:`Edit` whose directory is the current one."""
    monkeypatch.chdir(tmp_path)
    return Edit(tmp_path, capsys)
