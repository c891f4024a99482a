"""The loader's path shortcuts give exactly what os.path gives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator import fs


def _tree(root: Path) -> None:
    (root / "app/sub/deep").mkdir(parents=True)
    (root / "other/dir").mkdir(parents=True)
    (root / "app/file.yaml").write_text("x")
    (root / "other/dir/f.yaml").write_text("x")
    os.symlink("../other/dir", root / "app/link-out")
    os.symlink("sub", root / "app/link-in")
    os.symlink("missing", root / "app/dangling")
    os.symlink("loop-b", root / "app/loop-a")
    os.symlink("loop-a", root / "app/loop-b")
    os.symlink("file.yaml", root / "app/file-link.yaml")


RELATIVE = [
    ".",
    "file.yaml",
    "sub",
    "sub/deep",
    "sub/deep/missing/more.yaml",
    "file.yaml/below",
    "link-out",
    "link-out/f.yaml",
    "link-in/deep",
    "dangling",
    "dangling/x",
    "loop-a",
    "file-link.yaml",
    "..",
    "../other/dir/f.yaml",
    "../../",
    "../../../../../../..",
    "/",
    "/etc/hostname",
]


@pytest.mark.parametrize("relative", RELATIVE)
def test_realpath_below_a_real_root_equals_os_realpath(tmp_path: Path, relative: str) -> None:
    _tree(tmp_path)
    root = os.path.realpath(tmp_path / "app")
    full = os.path.normpath(os.path.join(root, relative))
    assert fs._realpath(root, full) == os.path.realpath(full)


def _relpath_display(path: str) -> str:
    # What display() returned before its shortcut.
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


@pytest.mark.parametrize(
    "path",
    [
        "{cwd}",
        "{cwd}/",
        "{cwd}/a.yaml",
        "{cwd}/a/../b.yaml",
        "{cwd}/..b/c.yaml",
        "{cwd}b/c.yaml",
        "{parent}",
        "{parent}/x.yaml",
        "/",
        "//x/y",
        "relative/a.yaml",
        "./a/../b",
        "../up.yaml",
        "",
    ],
)
def test_display_equals_relpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    text = path.format(cwd=os.getcwd(), parent=os.path.dirname(os.getcwd()))
    assert fs.display(text) == _relpath_display(text)


def test_display_from_the_file_system_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    for text in ("/", "/etc", "/etc/../usr/x", "etc"):
        assert fs.display(text) == _relpath_display(text)
