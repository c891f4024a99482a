"""Whole-repository builds (``krm build --batch ROOT -o OUTDIR``).

Every directory under ROOT that holds a kustomization file is built in this one process, with a
:class:`orchestrator.share.Share` active so that what the builds have in common (parsed files,
bases and their accumulated resources) is read and accumulated once. Each directory's output is
``OUTDIR/<relative dir>/build.yaml``, the bytes ``krm build ROOT/<relative dir>`` prints, or
``error.txt``, the line it prints on failure; its warnings go to ``warnings.txt``.
"""

from __future__ import annotations

import os

from orchestrator.build import BuildOptions, build
from orchestrator.errors import KrmError
from orchestrator.fs import KUSTOMIZATION_FILES, NONE
from orchestrator.share import Share

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

BUILD_FILE = "build.yaml"
ERROR_FILE = "error.txt"
WARNINGS_FILE = "warnings.txt"


class BatchResult:
    """Which directories (relative to the root, ``.`` for the root) built and which failed."""

    __slots__ = ("built", "failed", "share")

    def __init__(self, share: Share) -> None:
        self.built: list[str] = []
        self.failed: list[str] = []
        self.share = share


def find_dirs(root: str, *, skip: str | None = None) -> list[str]:
    """Every directory under ``root`` holding a kustomization file, relative to ``root`` and
    sorted; ``.git`` directories and ``skip`` (an output directory inside the root) are not
    entered."""
    skip_real = os.path.realpath(skip) if skip else None
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d != ".git"
            and (skip_real is None or os.path.realpath(os.path.join(dirpath, d)) != skip_real)
        )
        names = set(filenames)
        if any(n in names for n in KUSTOMIZATION_FILES):
            found.append(os.path.relpath(dirpath, root))
    return sorted(found)


def referenced_dirs(dirs: list[str]) -> set[str]:
    """The real paths of the directories that the kustomizations in ``dirs``, and those they
    name in turn, name as resources, generators, transformers or validators: the bases whose
    accumulation a later build may ask for again. Files that do not parse are passed over (the
    build reports them)."""
    from orchestrator import kustomization
    from orchestrator.fs import find_kustomization

    found: set[str] = set()
    todo = [os.path.realpath(d) for d in dirs]
    done: set[str] = set()
    while todo:
        real = todo.pop()
        if real in done:
            continue
        done.add(real)
        try:
            k = kustomization.load(find_kustomization(real, NONE, real_root=real))
        except (KrmError, OSError):
            continue
        for field in ("resources", "generators", "transformers", "validators"):
            for entry in k.get(field) or []:
                if not isinstance(entry, str) or "\n" in entry:
                    continue
                path = os.path.realpath(os.path.join(real, entry))
                if os.path.isdir(path):
                    found.add(path)
                    todo.append(path)
    return found


def error_line(exc: BaseException, path: str) -> str:
    """The line ``krm build`` prints for a failed build (without the traceback)."""
    if isinstance(exc, RecursionError):  # as the CLI words it
        exc = KrmError("data nested too deeply to process", file=path)
    return f"Error: {exc}\n"


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def build_all(
    root: str,
    outdir: str,
    options: BuildOptions,
    *,
    progress: Callable[[int, int, str], None] | None = None,
) -> BatchResult:
    """Build every kustomization directory under ``root`` into ``outdir``.

    ``progress(done, total, relative_dir)`` is called before each build and once at the end.
    With ``options.debug``, a failure is raised instead of written to ``error.txt``.
    """
    dirs = find_dirs(root, skip=outdir)
    share = Share()
    result = BatchResult(share)
    with share.active():
        share.wanted = referenced_dirs([root if d == "." else os.path.join(root, d) for d in dirs])
        for i, rel in enumerate(dirs):
            if progress is not None:
                progress(i, len(dirs), rel)
            path = root if rel == "." else os.path.join(root, rel)
            out = os.path.join(outdir, rel)
            os.makedirs(out, exist_ok=True)
            for name in (BUILD_FILE, ERROR_FILE, WARNINGS_FILE):
                # What an earlier run left there no longer describes this build.
                if os.path.exists(os.path.join(out, name)):
                    os.remove(os.path.join(out, name))
            try:
                built = build(path, options)
                text = built.to_yaml()
            except (KrmError, OSError, RecursionError) as exc:
                if options.debug:
                    raise
                _write(os.path.join(out, ERROR_FILE), error_line(exc, path))
                result.failed.append(rel)
                continue
            _write(os.path.join(out, BUILD_FILE), text)
            warnings = list(dict.fromkeys(built.warnings))
            if warnings:
                _write(os.path.join(out, WARNINGS_FILE), "".join(w + "\n" for w in warnings))
            result.built.append(rel)
    if progress is not None:
        progress(len(dirs), len(dirs), "")
    return result


def run(root: str, outdir: str, options: BuildOptions) -> int:
    """The ``--batch`` command: build, show progress on a terminal, print a summary line to
    stderr; 1 if any directory failed (or none was found), else 0."""
    import sys

    if not os.path.isdir(root):
        from orchestrator.errors import LoadError

        exists = os.path.exists(root)
        raise LoadError("must be a directory" if exists else "directory does not exist", file=root)
    bar = _ProgressBar() if sys.stderr.isatty() else None
    try:
        result = build_all(root, outdir, options, progress=bar.update if bar else None)
    finally:
        if bar is not None:
            bar.close()
    total = len(result.built) + len(result.failed)
    if not total:
        print(f"Error: no kustomization found under '{root}'", file=sys.stderr)
        return 1
    line = f"built {len(result.built)} of {total} directories into {outdir}"
    if result.failed:
        line += f"; {len(result.failed)} failed (their {ERROR_FILE} says why):"
        line += "".join(f"\n  {rel}" for rel in result.failed)
    print(line, file=sys.stderr)
    return 1 if result.failed else 0


class _ProgressBar:
    """A progress bar on stderr (rich), shown only on a terminal."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.progress = Progress(
            TextColumn("building"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True),
            transient=True,
        )
        self.task = self.progress.add_task("", total=None)
        self.progress.start()

    def update(self, done: int, total: int, rel: str) -> None:
        self.progress.update(self.task, completed=done, total=total, description=rel)

    def close(self) -> None:
        self.progress.stop()
