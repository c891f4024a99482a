"""A build cache for the ``krm build`` command line that can never change its output.

A cold build runs under a :class:`Recorder`, which notes every observation the engine makes of
the file system: each file read (its stamp, below), and the answer to every ``isdir``,
``isfile``, ``exists``, ``islink``, ``realpath``, ``listdir`` and ``scandir`` probe. The output
and those observations are stored, one file per build, under ``$XDG_CACHE_HOME/krm/builds`` (or
``~/.cache/krm/builds``), keyed by the engine's fingerprint (every file of the ``orchestrator``
package and of the YAML libraries it reads and writes with, by size and modification time, plus
the Python version), the command-line arguments, the working directory and the directory built.
A warm build with the same key re-checks every observation and prints the stored output only
when all of them still hold and the stored output still has its recorded length and CRC-32 (a
check against a damaged entry file, as zip and PNG use it); otherwise it builds again and
rewrites the entry.

A file read is stamped as git's index and Bazel stamp files: by its device, inode, size,
modification time and status-change time (``st_ctime``, which no user can set: any write,
``chmod``, ``touch`` or rename onto the path moves it to the present), and it still holds
when ``os.stat`` gives the very same five. A file changed less than :data:`SETTLED_NS` before
the build read it may change again within the same tick of the file system's clock without
its times moving (git's "racily clean" entries), so its stamp also holds its sha256, which is
then checked too. A file merely touched, or checked out again unchanged, is a miss (built
again), never a wrong answer.

Nothing is stored for a build that can depend on more than the files it read: one that writes a
file, or that loads the function machinery (any KRM function or catalog), or ``subprocess``
(helm, git, exec and container runtimes) or the network — judged by which modules the build
imported, so the cache is used only where a build runs in a fresh process, as the CLI does.
Entries are written atomically (a temporary file, then ``os.replace``); an entry that cannot be
read, or whose output does not match its length and CRC-32, is ignored and rewritten.

A warm build is mostly start-up, so the lookup path imports next to nothing: manifests are
:mod:`marshal` data (no ``json``, which would pull in ``re``), the few files hashed are hashed
with the built-in sha256 (OpenSSL's loads in ~2.5 ms, worth it only for large files), and the
command line is parsed without argparse when it is plain (:mod:`orchestrator.cli`).
``marshal`` trusts its input as much as Python trusts its own ``__pycache__``; the cache folder
is the user's.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys
import time

from orchestrator.digest import LARGE, sha256

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

FORMAT = 4
# A file whose modification or status-change time is less than this before the build started
# is stamped with its sha256 as well (3 s: more than the coarsest clock of a file system in
# use, FAT's 2 s).
SETTLED_NS = 3_000_000_000
# Whether st_ctime is the status-change time (POSIX), which a stamp relies on.
_STATUS_CHANGE = os.name != "nt"
# Modules whose import during a build means it may depend on more than the files it read.
UNCACHEABLE_MODULES = (
    "orchestrator.functions.plugin",
    "subprocess",
    "socket",
    "ssl",
    "urllib.request",
    "http.client",
    "httpx",
)
_PROBES = ("isdir", "isfile", "exists", "lexists", "islink", "realpath")
# Read size: a file of a whole chunk or more is hashed by OpenSSL (hashlib), which pays for its
# import there, the rest by the built-in sha256 (orchestrator.digest's threshold).
_CHUNK = LARGE
# Where the YAML libraries live (their code is part of the engine's fingerprint).
_LIBRARIES = ("yaml", "ryml")
# The engine's package: the files it reads from there (data/: its regular expression and
# field spec tables) are covered by the fingerprint, like its code, and are not noted.
_ENGINE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def cache_dir() -> str:
    """``$XDG_CACHE_HOME/krm/builds`` (or ``~/.cache/krm/builds``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "krm", "builds")


def _tree_fingerprint(root: str, out: list[str], prefix: str = "") -> None:
    try:
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if entry.is_dir():
            if name != "__pycache__":
                _tree_fingerprint(entry.path, out, f"{prefix}{name}/")
        elif not name.endswith((".pyc", ".pyo")):
            st = entry.stat()
            out.append(f"{prefix}{name}:{st.st_size}:{st.st_mtime_ns}")


def _library_dirs(name: str) -> list[str]:
    """Where ``import name`` would find a package (the first ``sys.path`` entry holding it),
    without importing it or importlib.util."""
    for entry in sys.path:
        candidate = os.path.join(entry or ".", name)
        if os.path.isfile(os.path.join(candidate, "__init__.py")):
            return [os.path.abspath(candidate)]
    return []


def engine_fingerprint() -> str:
    """What identifies the engine's code: its files, the YAML libraries' and the Python
    version."""
    parts = [f"format={FORMAT}", sys.version]
    _tree_fingerprint(os.path.dirname(os.path.abspath(__file__)), parts)
    for name in _LIBRARIES:
        for location in _library_dirs(name):
            parts.append(f"{name}={location}")
            _tree_fingerprint(location, parts)
    return str(sha256("\n".join(parts).encode()).hexdigest())


def make_key(path: str, arguments: Any) -> str:
    """The cache key of building ``path`` with ``arguments`` (plain data: the command line's
    words, or parsed options) from the working directory."""
    material = (
        ("engine", engine_fingerprint()),
        ("arguments", arguments),
        ("cwd", os.getcwd()),
        ("path", os.path.realpath(path)),
        ("arg", path),
    )
    return str(sha256(repr(material).encode()).hexdigest())


def _file_digest(
    path: str | bytes | os.PathLike[Any], opener: Callable[..., Any] = builtins.open
) -> str | None:
    """sha256 of a file's bytes, or None when it cannot be read as a file."""
    try:
        with opener(path, "rb") as f:
            return _digest_of(f)
    except OSError:
        return None


def _digest_of(f: Any) -> str:
    """sha256 of the rest of the open file ``f``."""
    chunk = f.read(_CHUNK)
    h = sha256(chunk)  # OpenSSL's once the process has hashed a MiB (digest.sha256)
    while len(chunk) == _CHUNK:
        chunk = f.read(_CHUNK)
        h.update(chunk)
    return str(h.hexdigest())


def _settled(st: os.stat_result, since: int) -> bool:
    """Whether a file last changed at least SETTLED_NS before ``since`` (time.time_ns()).
    Never on Windows, where ``st_ctime`` is the file's creation time, which a write leaves."""
    return _STATUS_CHANGE and max(st.st_mtime_ns, st.st_ctime_ns) < since - SETTLED_NS


def _stamp(st: os.stat_result, digest: str | None) -> tuple[Any, ...]:
    """A file's stamp: device, inode, size, modification and status-change times (ns), and
    its sha256 when it had not settled (else None)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest)


def _file_stamp(
    path: str | bytes | os.PathLike[Any], since: int, opener: Callable[..., Any] = builtins.open
) -> tuple[Any, ...] | None:
    """The stamp of the file at ``path`` (hashed unless settled before ``since``), or None when
    it cannot be read as a file."""
    try:
        with opener(path, "rb") as f:
            st = os.fstat(f.fileno())
            return _stamp(st, None if _settled(st, since) else _digest_of(f))
    except OSError:
        return None


def _listing(path: Any, lister: Callable[..., Any]) -> list[str] | None:
    try:
        return sorted(str(x) for x in lister(path))
    except OSError:
        return None


class Recorder:
    """Notes the file-system observations of one build (see the module docstring)."""

    def __init__(self) -> None:
        self.observations: dict[tuple[str, str], Any] = {}
        self.uncacheable: str | None = None
        self._originals: dict[tuple[Any, str], Any] = {}
        self._before: set[str] = set()

    def _note(self, op: str, path: Any, result: Any) -> None:
        try:
            key = (op, os.path.abspath(os.fspath(path)))
        except TypeError:  # a file descriptor or something else that is not a path
            self.uncacheable = self.uncacheable or f"{op} on {path!r}"
            return
        if key in self.observations and self.observations[key] != result:
            self.uncacheable = self.uncacheable or f"{key[1]} changed during the build"
        self.observations.setdefault(key, result)

    def _patch(self, owner: Any, name: str, wrapper: Callable[..., Any]) -> None:
        self._originals[(owner, name)] = getattr(owner, name)
        setattr(owner, name, wrapper)

    def active(self) -> _Recording:
        """Record while the ``with`` block runs (the whole process sees the wrappers)."""
        return _Recording(self)

    def _start(self) -> None:
        real_open = builtins.open
        since = time.time_ns()  # when recording started

        def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            if any(c in mode for c in "wax+"):
                self.uncacheable = self.uncacheable or f"the build wrote {file!r}"
            elif isinstance(file, str) and file.startswith(_ENGINE):
                pass  # the engine's own data (its tables): part of the engine's fingerprint
            elif isinstance(file, (str, bytes, os.PathLike)):
                if mode == "rb" and not args and not kwargs:
                    # Read once: hashed, then handed over from memory (the engine reads every
                    # file whole, with open(path, "rb")).
                    try:
                        with real_open(file, "rb") as f:
                            st = os.fstat(f.fileno())  # before reading: a later write moves it
                            data = f.read()
                    except OSError:
                        self._note("read", file, None)
                    else:
                        digest = None if _settled(st, since) else str(sha256(data).hexdigest())
                        self._note("read", file, _stamp(st, digest))
                        return _ReadFile(data, file)
                else:
                    self._note("read", file, _file_stamp(file, since, real_open))
            else:
                self.uncacheable = self.uncacheable or f"the build read {file!r}"
            return real_open(file, mode, *args, **kwargs)

        def probe(name: str) -> Callable[..., Any]:
            original = getattr(os.path, name)

            def wrapper(path: Any, *args: Any, **kwargs: Any) -> Any:
                result = original(path, *args, **kwargs)
                self._note(name, path, result)
                return result

            return wrapper

        def lister(name: str) -> Callable[..., Any]:
            original = getattr(os, name)

            def wrapper(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
                result = original(path, *args, **kwargs)
                if name == "scandir":
                    entries = list(result)
                    result.close()
                    self._note(name, path, sorted(e.name for e in entries))
                    return _Entries(entries)
                self._note(name, path, sorted(result))
                return result

            return wrapper

        self._before = {m for m in UNCACHEABLE_MODULES if m in sys.modules}
        if self._before:
            self.uncacheable = f"{sorted(self._before)[0]} was loaded before the build"
        self._patch(builtins, "open", open_)
        for name in _PROBES:
            self._patch(os.path, name, probe(name))
        for name in ("listdir", "scandir"):
            self._patch(os, name, lister(name))

    def _stop(self) -> None:
        for (owner, name), original in self._originals.items():
            setattr(owner, name, original)
        self._originals.clear()
        loaded = [m for m in UNCACHEABLE_MODULES if m in sys.modules and m not in self._before]
        if loaded and not self.uncacheable:
            self.uncacheable = f"the build loaded {loaded[0]}"


def _crc32(data: bytes) -> int:
    import zlib

    return zlib.crc32(data)


class _ReadFile:
    """What ``open(path, "rb")`` gives, from bytes already read: ``read``, ``readinto`` and
    the context manager (io.BytesIO, which shares the bytes until they would be copied),
    named as the file."""

    def __init__(self, data: bytes, name: Any) -> None:
        import io

        self._buffer = io.BytesIO(data)
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._buffer, attr)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._buffer)

    def __enter__(self) -> _ReadFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._buffer.close()


class _Recording:
    """The ``with`` block of :meth:`Recorder.active` (a class: contextlib costs start-up)."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def __enter__(self) -> Recorder:
        self.recorder._start()
        return self.recorder

    def __exit__(self, *exc: object) -> None:
        self.recorder._stop()


class _Entries:
    """A replayed ``os.scandir`` iterator (also a context manager, like the real one)."""

    def __init__(self, entries: list[Any]) -> None:
        self._entries = entries

    def __iter__(self) -> Iterator[Any]:
        return iter(self._entries)

    def __enter__(self) -> _Entries:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def close(self) -> None:
        """Nothing to release: the real iterator is already closed."""


def _still_holds(op: str, path: str, expected: Any) -> bool:
    if op == "read":
        if expected is None:  # was not readable as a file: still is not
            return _file_stamp(path, 0) is None
        try:
            st = os.stat(path)
        except OSError:
            return False
        if _stamp(st, expected[5]) != expected:
            return False
        return expected[5] is None or _file_digest(path) == expected[5]
    if op in _PROBES:
        return bool(getattr(os.path, op)(path) == expected)
    if op == "listdir":
        return bool(_listing(path, os.listdir) == expected)
    if op == "scandir":
        try:
            with os.scandir(path) as it:
                return bool(sorted(e.name for e in it) == expected)
        except OSError:
            return False
    return False


class Entry:
    """A cached build: its output (UTF-8 bytes, as the CLI writes them) and warnings."""

    __slots__ = ("output", "warnings")

    def __init__(self, output: bytes, warnings: list[str]) -> None:
        self.output = output
        self.warnings = warnings


def pack(manifest: dict[str, Any], output: bytes) -> bytes:
    """An entry file: the manifest's length (8 bytes), the manifest (marshal), the output."""
    return b"".join(pack_pieces(manifest, output))


def pack_pieces(manifest: dict[str, Any], output: bytes) -> list[bytes]:
    """``pack``'s bytes in pieces, written one after another (an output may be many MB)."""
    head = marshal.dumps(manifest)
    return [len(head).to_bytes(8, "little"), head, output]


def read_manifest(f: Any, total: int) -> dict[str, Any]:
    """The manifest at the start of the entry file ``f`` (``total`` bytes long), leaving ``f``
    at the output (ValueError when it is not an entry)."""
    size = int.from_bytes(f.read(8), "little")
    if size > total - 8:
        raise ValueError("truncated cache entry")
    manifest = marshal.loads(f.read(size))
    if not isinstance(manifest, dict):
        raise ValueError("not a cache entry")
    return manifest


def unpack(blob: bytes) -> tuple[dict[str, Any], bytes]:
    """The manifest and output of an entry file (ValueError when it is not one)."""
    import io

    f = io.BytesIO(blob)
    return read_manifest(f, len(blob)), f.read()


class BuildCache:
    """The cache entry of one build (one key) in ``directory``: one file, written at once."""

    def __init__(self, key: str, directory: str | None = None) -> None:
        self.key = key
        self.directory = os.path.join(directory or cache_dir(), key[:2])
        self.path = os.path.join(self.directory, f"{key}.entry")

    def lookup(self) -> Entry | None:
        """The stored build, when every observation still holds; None otherwise."""
        try:
            with open(self.path, "rb") as f:
                # The manifest first, then the output read on its own (no copy of many MB).
                data = read_manifest(f, os.fstat(f.fileno()).st_size)
                if data.get("format") != FORMAT or data.get("key") != self.key:
                    return None
                for op, path, expected in data["observations"]:
                    if not _still_holds(op, path, expected):
                        return None
                raw = f.read()
            if len(raw) != data["output_length"] or _crc32(raw) != data["output_crc32"]:
                return None  # damaged: built again and rewritten
            warnings = [str(w) for w in data["warnings"]]
            return Entry(raw, warnings)
        except (OSError, ValueError, KeyError, TypeError, EOFError, MemoryError):
            return None  # unreadable or not an entry: built again and rewritten

    def store(self, recorder: Recorder, raw: bytes, warnings: list[str]) -> bool:
        """Store a cold build's output (UTF-8 bytes, atomically); False when it must not be
        cached."""
        if recorder.uncacheable:
            return False
        data = {
            "format": FORMAT,
            "key": self.key,
            "observations": [(op, path, r) for (op, path), r in recorder.observations.items()],
            "output_length": len(raw),
            "output_crc32": _crc32(raw),
            "warnings": list(warnings),
        }
        try:
            os.makedirs(self.directory, exist_ok=True)
            _atomic_write(self.path, pack_pieces(data, raw))
        except OSError:
            return False  # a read-only or full cache never fails the build
        return True


def _atomic_write(path: str, pieces: list[bytes]) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            for piece in pieces:
                f.write(piece)
        os.replace(tmp, path)
    except BaseException:
        from contextlib import suppress  # the failure path only: contextlib costs start-up

        with suppress(OSError):
            os.unlink(tmp)
        raise
