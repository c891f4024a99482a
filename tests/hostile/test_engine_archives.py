"""Hostile exec archives: traversal and link tricks in tar and zip, refused before anything escapes.

Each case unpacks through ``fetch.exec_binary`` (what a build does with a catalog's exec runtime)
into a cache inside a work directory holding sentinel files, and checks the exact error, that
nothing in the work directory changed (no file written, overwritten or linked outside the
destination) and that the cache holds no partial entry. The archives are built here; the long
symlink chain is the CVE-2025-4517 one, which this machine's Python (3.11.7) extracts outside the
destination with ``tarfile``'s ``filter="data"``.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tarfile
import warnings
from pathlib import Path

import pytest

from orchestrator.functions import FetchError, fetch
from orchestrator.functions.options import FnOptions
from tests.hostile import engine_inputs as ei
from tests.hostile.engine_inputs import Member, directory, file, hardlink, symlink

ROOT = Path(__file__).resolve().parents[2]
FN = b"#!/bin/sh\ncat\n"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A work directory with sentinels next to (and just above) where archives unpack."""
    work = tmp_path / "work"
    (work / "cache" / "exec").mkdir(parents=True)
    (work / "cache" / "exec" / "flag").write_bytes(b"original")
    (work / "flag").write_bytes(b"original")
    (work / "sentinel").mkdir()
    (work / "sentinel" / "keep").write_bytes(b"keep")
    return work


def _unpack(work: Path, archive: Path, sha: str, bin_: str = "bin/fn") -> str:
    options = FnOptions(cache_dir=str(work / "cache"))
    return fetch.exec_binary(
        {"uri": f"file://{archive}", "sha256": sha, "bin": bin_}, options=options, base_dir=None
    )


def _unchanged(work: Path, before: dict, blobs: str = "cache/blobs") -> None:
    after = {k: v for k, v in ei.snapshot(work).items() if not k.startswith(blobs)}
    assert after == before  # no new, changed or partial entry anywhere (cache/exec included)


def _partial_dest(work: Path) -> str:
    # What tempfile.mkdtemp(prefix=".partial-") makes: 8 random characters.
    return str(work / "cache" / "exec" / ".partial-abcdefgh")


TAR_CASES: dict[str, tuple[object, str]] = {
    "dot-then-parent": (
        lambda w: [symlink("l1", "."), symlink("l1/l2", ".."), file("l1/l2/escape")],
        "'l1/l2' in archive {uri} lies below the link 'l1'",
    ),
    "long-chain-cve-2025-4517": (
        lambda w: ei.long_chain_members(_partial_dest(w)),
        "'{long}' in archive {uri} lies below the link 'a'",
    ),
    "absolute-path": (
        lambda w: [file(str(w / "sentinel" / "abs"))],
        "unsafe path '{work}/sentinel/abs' in archive {uri}",
    ),
    "dotdot": (lambda w: [file("../../flag")], "unsafe path '../../flag' in archive {uri}"),
    "dotdot-after-name": (
        lambda w: [file("bin/../../../flag")],
        "unsafe path 'bin/../../../flag' in archive {uri}",
    ),
    "hardlink-absolute": (
        lambda w: [hardlink("bin/fn", str(w / "flag"))],
        "link 'bin/fn' in archive {uri} points outside it",
    ),
    "hardlink-dotdot": (
        lambda w: [hardlink("bin/fn", "../../flag")],
        "link 'bin/fn' in archive {uri} points outside it",
    ),
    "hardlink-through-symlink": (
        lambda w: [directory("d"), file("d/f"), symlink("l", "d"), hardlink("bin/fn", "l/f")],
        "hard link 'bin/fn' in archive {uri} does not name a file unpacked before it",
    ),
    "hardlink-to-later-file": (
        lambda w: [hardlink("bin/fn", "bin/real"), file("bin/real")],
        "hard link 'bin/fn' in archive {uri} does not name a file unpacked before it",
    ),
    "symlink-dotdot-outside": (
        lambda w: [symlink("bin/fn", "../../flag")],
        "link 'bin/fn' in archive {uri} points outside it",
    ),
    "symlink-absolute": (
        lambda w: [symlink("bin/fn", str(w / "flag"))],
        "link 'bin/fn' in archive {uri} points outside it",
    ),
    "symlink-dotdot-after-name": (
        lambda w: [directory("bin/sub"), symlink("bin/x", "sub/../../..")],
        "link 'bin/x' in archive {uri} has '..' after a name in its target 'sub/../../..' "
        "(only leading '..' are allowed)",
    ),
    "symlink-empty-target": (
        lambda w: [symlink("bin/fn", "")],
        "link 'bin/fn' in archive {uri} has an empty target",
    ),
    "link-then-file-same-name": (
        lambda w: [file("real"), symlink("bin/fn", "../real"), file("bin/fn", b"over")],
        "archive {uri} holds 'bin/fn' twice",
    ),
    "file-below-link": (
        lambda w: [directory("real"), symlink("bin", "real"), file("bin/fn")],
        "'bin/fn' in archive {uri} lies below the link 'bin'",
    ),
    "file-below-file": (
        lambda w: [file("bin"), file("bin/fn")],
        "'bin/fn' in archive {uri} lies below the file 'bin'",
    ),
    "link-replaces-dir": (
        lambda w: [directory("bin"), symlink("bin", "real")],
        "archive {uri} holds 'bin' twice",
    ),
    "char-device": (
        lambda w: [Member("bin/fn", tarfile.CHRTYPE)],
        "archive {uri} holds a special file 'bin/fn'",
    ),
    "block-device": (
        lambda w: [Member("bin/fn", tarfile.BLKTYPE)],
        "archive {uri} holds a special file 'bin/fn'",
    ),
    "fifo": (
        lambda w: [Member("bin/fn", tarfile.FIFOTYPE)],
        "archive {uri} holds a special file 'bin/fn'",
    ),
}


@pytest.mark.parametrize("case", sorted(TAR_CASES))
def test_hostile_tar_refused(tmp_path: Path, work: Path, case: str) -> None:
    make, message = TAR_CASES[case]
    members = make(work)  # type: ignore[operator]
    archive = tmp_path / "fn.tgz"
    sha = ei.make_tar(archive, members)
    before = ei.snapshot(work)
    with pytest.raises(FetchError) as exc:
        _unpack(work, archive, sha)
    long = members[2 * 16].name if case.startswith("long-chain") else ""
    assert str(exc.value) == message.format(uri=f"file://{archive}", work=work, long=long)
    _unchanged(work, before)


ZIP_CASES: dict[str, tuple[list[tuple[str, bytes, int]], str]] = {
    "dotdot": ([("../../flag", b"x", 0o100644)], "unsafe path '../../flag' in archive {uri}"),
    "dotdot-after-name": (
        [("bin/../../flag", b"x", 0o100644)],
        "unsafe path 'bin/../../flag' in archive {uri}",
    ),
    "absolute": ([("/tmp/evil", b"x", 0o100644)], "unsafe path '/tmp/evil' in archive {uri}"),
    "drive-letter": ([("C:/evil", b"x", 0o100644)], "unsafe path 'C:/evil' in archive {uri}"),
    "backslashes": (
        [("..\\..\\flag", b"x", 0o100644)],
        "unsafe path '..\\\\..\\\\flag' in archive {uri}",
    ),
    "symlink": (
        [("bin/fn", b"../../flag", 0o120777)],
        "archive {uri} holds a symbolic link 'bin/fn'",
    ),
    "char-device": (
        [("bin/fn", b"", 0o020644)],
        "archive {uri} holds a special file 'bin/fn'",
    ),
    "same-name-twice": (
        [("bin/fn", FN, 0o100755), ("bin/fn", b"over", 0o100755)],
        "archive {uri} holds 'bin/fn' twice",
    ),
    "file-below-file": (
        [("bin", b"x", 0o100644), ("bin/fn", FN, 0o100755)],
        "'bin/fn' in archive {uri} lies below the file 'bin'",
    ),
}


@pytest.mark.parametrize("case", sorted(ZIP_CASES))
def test_hostile_zip_refused(tmp_path: Path, work: Path, case: str) -> None:
    entries, message = ZIP_CASES[case]
    archive = tmp_path / "fn.zip"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name on purpose
        sha = ei.make_zip(archive, entries)
    before = ei.snapshot(work)
    with pytest.raises(FetchError) as exc:
        _unpack(work, archive, sha)
    assert str(exc.value) == message.format(uri=f"file://{archive}")
    _unchanged(work, before)


def test_links_that_stay_inside_still_unpack(tmp_path: Path, work: Path) -> None:
    # Links as real release archives use them: relative, leading '..' only, to files inside.
    members = [
        directory("./"),
        file("libexec/fn", FN),
        symlink("bin/fn", "../libexec/fn"),
        hardlink("bin/fn2", "libexec/fn"),
        symlink("bin/here", "."),
        symlink("bin/lib", "../libexec"),
    ]
    archive = tmp_path / "fn.tgz"
    sha = ei.make_tar(archive, members)
    path = _unpack(work, archive, sha)
    root = work / "cache" / "exec" / sha
    assert path == str(root / "bin" / "fn")
    assert os.path.realpath(path) == str(root / "libexec" / "fn")
    assert (root / "bin" / "fn2").read_bytes() == FN
    assert (root / "bin" / "lib" / "fn").read_bytes() == FN
    assert os.readlink(root / "bin" / "here") == "."
    assert stat.S_IMODE(os.stat(root / "libexec" / "fn").st_mode) & 0o111
    assert (work / "flag").read_bytes() == b"original"


def test_cli_build_refuses_long_chain_archive(tmp_path: Path, work: Path) -> None:
    """``krm build`` with a trusted catalog whose exec runtime is the CVE-2025-4517 archive."""
    archive = tmp_path / "fn.tgz"
    cache = work / "xdg" / "krm"  # where krm caches with XDG_CACHE_HOME=work/xdg
    (cache / "exec").mkdir(parents=True)
    (cache / "exec" / "flag").write_bytes(b"original")
    dest = str(cache / "exec" / ".partial-abcdefgh")
    sha = ei.make_tar(archive, ei.long_chain_members(dest))
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text("resources: [cm.yaml]\ntransformers: [fn.yaml]\n")
    (app / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    (app / "fn.yaml").write_text(
        "apiVersion: example.com/v1\nkind: Labeler\nmetadata:\n  name: l\n"
    )
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: c\n"
        "spec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: Labeler\n"
        "    versions:\n    - name: v1\n      runtime:\n        exec:\n          platforms:\n"
        f"          - bin: bin/fn\n            os: linux\n            arch: {_arch()}\n"
        f"            uri: file://{archive}\n            sha256: {sha}\n"
    )
    out = tmp_path / "out.yaml"
    out.write_text("previous good output\n")
    before = ei.snapshot(work)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "build",
            str(app),
            "-o",
            str(out),
            "--enable-exec",
            f"--trusted-catalog={catalog}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(work / "xdg")},
        timeout=120,
    )
    long = ei.long_chain_members(dest)[2 * 16].name
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == f"Error: '{long}' in archive file://{archive} lies below the link 'a'\n"
    assert out.read_text() == "previous good output\n"
    _unchanged(work, before, blobs="xdg/krm/blobs")


def _arch() -> str:
    from orchestrator.functions.resolve import host_platform

    return host_platform()[1]
