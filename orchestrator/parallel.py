"""Work for other cores in large builds: big resource files parsed by forked child processes,
with results identical to parsing all of them in order in one process.

Most of a large build's time is parsing a few big files (CRDs): pure work, bytes in and plain
data out. Where ``os.fork`` exists and the process runs no other thread, children forked at the
start of a build whose tree holds such files (or, in a run of builds, when a kustomization lists
them) parse some of them with the very same function (``yamlio``) and send back the documents
over pipes, pickled (unpickling is ~20 times quicker than parsing), while the parent parses the
other files ahead of the build's turn. A child's result is only ever an answer the parent could
have computed:

- The parent still reads every file itself, through its Loader (so the load restrictor and the
  build cache's Recorder see what they always see), and uses a child's documents only when the
  child read the very same bytes; nothing outlives the kustomization whose files were parsed.
- A child that fails on a file, dies, or sends anything short leaves that work to the parent,
  which then does it itself, raising the error it always would.
- Children leave with ``os._exit`` (no stdio buffers flushed, no atexit handlers) and are always
  reaped; one still running when its results are no longer wanted is killed first.

Writing the output is left to one process: forked after the build, a child and its parent copy
most of the heap's pages as they update reference counts (copy-on-write), and on a 12 MB output
(argo-workflows) writing in halves took as long as writing it all in one.

``KRM_PARALLEL=0`` turns this off; a number sets how many children to use (by default, one per
idle core beyond the first, at most :data:`MAX_CHILDREN`). Small builds never import this module.
"""

from __future__ import annotations

import contextlib
import os
import sys

from orchestrator import yamlfast, yamlio

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

ENV = "KRM_PARALLEL"
# Test hook: a child kills itself (SIGKILL) after writing this many bytes of its answer.
DIE_ENV = "KRM_PARALLEL_DIE_AFTER"
MAX_CHILDREN = 3
_NONE = (1 << 64) - 1  # a length that marks "no result"
_SIGKILL = 9
_live = 0  # children forked and not yet reaped (nested kustomizations each prefetch)
_fds: set[int] = set()  # the read ends of their pipes (a later child closes its copies)


def children() -> int:
    """How many children may work beside this process now (0: do everything here)."""
    wanted = os.environ.get(ENV, "")
    if wanted == "0" or not hasattr(os, "fork"):
        return 0
    threading = sys.modules.get("threading")  # forking a threaded process is unsafe
    if threading is not None and threading.active_count() != 1:
        return 0
    if wanted.isdigit():
        most = int(wanted)
    else:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        # Only idle cores help: the kernel shares the CPU between sessions, not processes
        # (autogroup), so where others keep every core busy a child adds only its overhead
        # (pickling, copy-on-write faults: ~15% of the work it takes).
        most = cores - 1 - max(_others_running() - _live, 0)  # our own children come below
    return max(0, min(most, MAX_CHILDREN) - _live)


def _others_running() -> int:
    """How many other tasks are running or ready to run right now (Linux's /proc/loadavg;
    read with ``os`` calls, which a build cache's Recorder does not note), 0 if unknown."""
    try:
        fd = os.open("/proc/loadavg", os.O_RDONLY)
        try:
            fields = os.read(fd, 256).split()
        finally:
            os.close(fd)
        return max(int(fields[3].split(b"/")[0]) - 1, 0)
    except (OSError, ValueError, IndexError):
        return 0


class _Child:
    """One forked child and the pipe its answer comes through."""

    __slots__ = ("pid", "fd", "answer")

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd
        # Its frames once collected: None until then, [] when it failed.
        self.answer: list[Any] | None = None

    def collect(self, count: int) -> list[Any]:
        """The child's ``count`` frames (see :func:`_frames`), [] if it failed."""
        if self.answer is None:
            chunks: list[bytes] = []
            try:
                while True:
                    chunk = os.read(self.fd, 1 << 20)
                    if not chunk:
                        break
                    chunks.append(chunk)
            except OSError:
                chunks = []
            ok = self._end()
            self.answer = _frames(b"".join(chunks), count) if ok else []
        return self.answer

    def close(self) -> None:
        """Stop and reap the child if its answer was never collected."""
        if self.answer is None:
            if self.pid:
                with contextlib.suppress(OSError):  # it has exited already
                    os.kill(self.pid, _SIGKILL)
            self._end()
            self.answer = []

    def _end(self) -> bool:
        """Close the pipe and reap the child (once); whether it exited with status 0."""
        if self.fd >= 0:
            _close(self.fd)
            self.fd = -1
        ok = _reap(self.pid) if self.pid else False
        self.pid = 0
        return ok


def _close(fd: int) -> None:
    _fds.discard(fd)
    os.close(fd)


def _reap(pid: int) -> bool:
    """Wait for child ``pid``; whether it exited with status 0."""
    global _live
    _live -= 1
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            return False
        return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _frames(blob: bytes, count: int) -> list[Any]:
    """The ``count`` frames of a child's answer: each a pair of length-prefixed parts, None where
    one is "no result"; [] when the answer is cut short or runs on."""
    view = memoryview(blob)
    out: list[Any] = []
    pos = 0
    while len(out) != count:
        parts: list[memoryview | None] = []
        for _part in range(2):
            if pos + 8 > len(view):
                return []
            size = int.from_bytes(view[pos : pos + 8], "little")
            pos += 8
            if size == _NONE:
                parts.append(None)
                continue
            if pos + size > len(view):
                return []
            parts.append(view[pos : pos + size])
            pos += size
        out.append(None if parts[0] is None or parts[1] is None else (parts[0], parts[1]))
    return out if pos == len(view) else []


def _fork(work: Any, *args: Any) -> _Child | None:
    """A child running ``work(*args)``, which returns the parts of its answer; None if the
    fork failed. The child writes its answer in one go once it has all of it (it has nothing
    else to do meanwhile) and leaves with ``os._exit``, status 0 only when all was written."""
    global _live
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the child
        status = 1
        try:
            for fd in (read_fd, *_fds):
                os.close(fd)
            _write(write_fd, work(*args))
            status = 0
        finally:
            os._exit(status)
    _live += 1
    _fds.add(read_fd)
    os.close(write_fd)
    return _Child(pid, read_fd)


def _write(fd: int, parts: list[bytes | None]) -> None:
    """Each part length-prefixed (None as the "no result" length), all written to ``fd``."""
    die = os.environ.get(DIE_ENV)
    budget = int(die) if die and die.isdigit() else -1
    for part in parts:
        pieces: list[bytes | memoryview] = [
            (_NONE if part is None else len(part)).to_bytes(8, "little")
        ]
        if part is not None:
            pieces.append(part)
        for piece in pieces:
            view = memoryview(piece)
            while view:
                if budget == 0:
                    os.kill(os.getpid(), _SIGKILL)
                size = len(view) if budget < 0 else min(len(view), budget)
                written = os.write(fd, view[:size])
                view = view[written:]
                if budget > 0:
                    budget -= written


# ----------------------------------------------------------------------------- parsing


def _read(path: str) -> bytes:
    """The bytes of ``path``, read with ``os`` calls (not ``open``, which a build cache's
    Recorder may wrap: its notes would be the child's, and lost)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 22)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def _parse_files(jobs: list[tuple[str, str]]) -> list[bytes | None]:
    """In a child: for each (file, source) the bytes read and the pickled documents, or two
    "no result" parts when reading or parsing failed (the parent then does it and fails)."""
    import pickle

    parts: list[bytes | None] = []
    for path, source in jobs:
        try:
            data = _read(path)
            docs = yamlio.load_all(data, source=source)
            parts += (data, pickle.dumps(docs, protocol=pickle.HIGHEST_PROTOCOL))
        except Exception:
            parts += (None, None)
    return parts


class Prefetch:
    """Documents of resource files being parsed by children, for one kustomization's files."""

    def __init__(self) -> None:
        # file -> (child, the file's place in the child's answer)
        self.jobs: dict[str, tuple[_Child, int]] = {}
        self.counts: dict[_Child, int] = {}
        # file -> (the bytes read, its documents): parsed here ahead of the build's turn
        self.own: dict[str, tuple[bytes, list[Any]]] = {}

    def has(self, path: str) -> bool:
        """Whether documents of ``path`` may be here (parsed ahead, or by a child)."""
        return path in self.jobs or path in self.own

    def parse_ahead(self, files: list[tuple[str, str]]) -> None:
        """Parse ``files`` ((path, source)) here now, ahead of the build's turn, while the
        children parse theirs; one that cannot be read or parsed is left to the build (which
        then raises the error it always would, where it always would)."""
        for path, source in files:
            try:
                data = _read(path)
                self.own[path] = (data, yamlio.load_all(data, source=source))
            except Exception:
                continue

    def docs(self, path: str, data: bytes) -> list[Any] | None:
        """The documents of ``path`` if a child parsed exactly ``data`` (else None: parse it)."""
        mine = self.own.pop(path, None)
        if mine is not None:
            # Each file's documents are handed out once (the build changes them); a second
            # read of the file (a base two overlays use) parses it again.
            return mine[1] if mine[0] == data else None
        job = self.jobs.pop(path, None)
        if job is None:
            return None
        child, place = job
        answer = child.collect(self.counts[child])
        frame = answer[place] if answer else None
        if frame is None:
            return None
        answer[place] = None  # its memory goes with the documents
        read, blob = frame
        if read != data:
            return None
        import pickle

        try:
            docs: list[Any] = pickle.loads(blob)
        except Exception:
            return None
        return docs

    def close(self) -> None:
        """Stop (if still running) and reap every child."""
        for child in self.counts:
            child.close()
        self.jobs.clear()
        self.own.clear()


# What a file costs to go through beyond its bytes (reading, a Resource, the checks), in bytes.
_PER_FILE = 4096
# The least work (in bytes, as above) worth splitting off to a child: the number of children is
# at most the work over this, minus one.
MIN_SHARE = 512 * 1024


def prefetch(
    files: list[tuple[str, str, int, bool]], workers: int, *, whole_tree: bool = False
) -> Prefetch:
    """Children parsing some of the large ``files`` ((path, source, size, large) in the order
    the parent asks for them; the parent parses the others). The parent parses the first large
    ones itself meanwhile, each child a later run, cut so that everyone has about as much to do:
    the parent's share counts its small files too.

    ``whole_tree``: ``files`` are those of a whole build, forked for at its start; the parent
    then parses all of its share at once, ahead of the build's turn (so it waits for a child
    only once its own parsing is done, wherever the build meets the children's files), and
    a share of small files only is enough for it."""
    out = Prefetch()
    cost = [size + _PER_FILE for _, _, size, _ in files]
    cost_of = {path: c for (path, _, _, _), c in zip(files, cost, strict=True)}
    # No more children than leave everyone MIN_SHARE to do.
    workers = min(workers, int(sum(cost) / MIN_SHARE) - 1)
    if workers < 1:
        return out
    share = sum(cost) / (workers + 1)
    # Where, in the bytes of large files, the parent's share ends and each child's does.
    small = sum(c for c, (_, _, _, large) in zip(cost, files, strict=True) if not large)
    own = max(share - small, 0)
    rest = (sum(cost) - small - own) / workers
    runs: list[list[tuple[str, str]]] = [[] for _ in range(workers + 1)]
    done = 0
    for (path, source, _, large), size in zip(files, cost, strict=True):
        if not large:
            continue
        middle = done + size / 2
        to = 0 if middle < own or not rest else min(1 + int((middle - own) / rest), workers)
        runs[to].append((path, source))
        done += size
    # Whole files make uneven runs: one side with less than half a share of large files has
    # too little to do for the overlap to repay the fork, the pickling and the copy-on-write
    # faults (small files go quicker than their bytes say: kueue's one 1.4 MB CRD beside
    # 0.4 MB of small ones took a child 100 ms, the parent 14 ms, and the build 5% longer).
    parent_share = sum(cost_of[path] for path, _ in runs[0])
    if whole_tree:
        parent_share += small
    if parent_share < MIN_SHARE / 2:
        return out
    runs = [run for run in runs[1:] if sum(cost_of[path] for path, _ in run) >= MIN_SHARE / 2]
    if runs:
        import pickle  # noqa: F401  (once here, for the parent, which unpickles, and children)

        yamlfast.preload()
    for run in runs:
        child = _fork(_parse_files, run)
        if child is None:
            break
        out.counts[child] = len(run)
        for place, (path, _) in enumerate(run):
            out.jobs[path] = (child, place)
    if whole_tree and out.counts:
        out.parse_ahead([(path, source) for path, source, _, _ in files if path not in out.jobs])
    return out
