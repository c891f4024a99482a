"""Downloads for function runtimes: fetch, verify sha256, unpack safely, cache by digest.

Order matters for trust: a blob is downloaded to a temporary file while its sha256 is computed,
compared with the catalog's digest, and only then moved into the content-addressed cache
(``$XDG_CACHE_HOME/krm/blobs/sha256/<hex>``); archives are unpacked from there into
``exec/<hex>/`` with every member checked first. Nothing is executed before all of that passed.

Schemes: ``https://``; ``http://`` only to a loopback address (a local registry or test
server); ``file://`` and absolute paths. Registry blob URLs are plain https/http URLs.

Credentials: a ``~/.netrc`` (or ``$NETRC``) entry for the URL's host is sent as Basic
authentication (private catalogs of a registry), to that host only, never after a redirect to
another one.
"""

from __future__ import annotations

import hashlib
import ipaddress
import lzma
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from orchestrator.errors import KrmError
from orchestrator.functions.options import FnOptions

CHUNK = 1 << 16
MAX_REDIRECTS = 5


class FetchError(KrmError):
    """A download failed, broke a limit, or did not match its digest."""


class DigestMismatchError(FetchError):
    """A download's bytes are not the ones its sha256 names."""


def is_loopback(host: str) -> bool:
    """Whether a URL host names this machine (localhost, 127.0.0.0/8, ::1)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> None:
    """Refuse schemes and hosts that downloads may not use."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return
    if parts.scheme == "http":
        if is_loopback(parts.hostname or ""):
            return
        raise FetchError(f"refusing to download {url}: plain http is allowed only to loopback")
    raise FetchError(f"refusing to download {url}: unsupported scheme {parts.scheme!r}")


def local_path(uri: str, base_dir: str | None = None) -> str | None:
    """The file a ``file://`` URI or a path names; None for network URLs."""
    parts = urlsplit(uri)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise FetchError(f"file URI {uri} names a remote host")
        return unquote(parts.path)
    if parts.scheme in ("http", "https"):
        return None
    if parts.scheme and len(parts.scheme) > 1:
        raise FetchError(f"unsupported URI scheme {parts.scheme!r} in {uri}")
    if os.path.isabs(uri):
        return uri
    if base_dir is None:
        raise FetchError(f"relative path {uri!r} without a directory to resolve it against")
    return os.path.join(base_dir, uri)


def netrc_path() -> str:
    """``$NETRC``, else ``~/.netrc``: where krm reads the credentials it sends over http(s)."""
    return os.environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")


def netrc_credentials(host: str, *, path: str | None = None) -> tuple[str, str] | None:
    """(login, password) for ``host`` in a netrc file (``machine <host> login <user> password
    <token>``, as curl and git read it; its ``default`` entry too), or None.

    ``path`` is the file to read; without it ``netrc_path()``. Read with Python's ``netrc``
    module, which refuses a ``~/.netrc`` with passwords that others can read (the default file
    only). FetchError names the file when it cannot be read or parsed, never a secret.
    """
    import netrc

    explicit = path is not None or "NETRC" in os.environ
    path = path or netrc_path()
    if not os.path.isfile(path):
        return None
    try:
        # No argument for the default file: the module checks its permissions then.
        found = netrc.netrc(path if explicit else None).authenticators(host.lower())
    except (netrc.NetrcParseError, OSError) as exc:
        raise FetchError(f"cannot read credentials from {path}: {exc}") from None
    if found is None:
        return None
    login, _account, password = found
    return login or "", password or ""


def netrc_authorization(url: str) -> str | None:
    """``Basic`` credentials for ``url``'s host from the netrc file (``netrc_credentials``), or
    None.

    Sent only over https, or plain http to loopback: never in clear text over a network.
    """
    import base64

    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not host or not (parts.scheme == "https" or (parts.scheme == "http" and is_loopback(host))):
        return None
    found = netrc_credentials(host)
    if found is None:
        return None
    pair = f"{found[0]}:{found[1]}".encode()
    return "Basic " + base64.b64encode(pair).decode()


def same_origin(url: str, other: str) -> bool:
    """Whether two URLs have the same scheme, host and port (credentials may go to both)."""
    a, b = urlsplit(url), urlsplit(other)
    return (a.scheme, (a.hostname or "").lower(), a.port) == (
        b.scheme,
        (b.hostname or "").lower(),
        b.port,
    )


def access_hint(url: str, *, sent: bool) -> str:
    """What a 401/403/404 may mean for a registry's private catalog, and where krm looked."""
    host = (urlsplit(url).hostname or "").lower()
    how = f"sent the credentials of machine {host}" if sent else f"no entry for machine {host}"
    return (
        f"not found or you lack access; krm reads credentials from ~/.netrc ({netrc_path()}: {how})"
    )


def _ssl_context(options: FnOptions) -> Any:
    import ssl

    cafile = options.ca_file or os.environ.get("SSL_CERT_FILE") or None
    return ssl.create_default_context(cafile=cafile)


@dataclass
class Response:
    """An HTTP answer: status, body (None on 304 and 404), ETag, final URL and headers."""

    status: int
    body: bytes | None
    etag: str | None
    url: str
    headers: dict[str, str] = field(default_factory=dict)


def http_get(
    url: str,
    *,
    options: FnOptions,
    max_bytes: int,
    headers: dict[str, str] | None = None,
    sink: Any = None,
    missing_ok: bool = False,
) -> Response:
    """GET with redirects re-checked at every hop and a hard size limit.

    With ``sink`` (a binary file) the body is streamed into it and ``body`` is None. With
    ``missing_ok`` a 404 is an answer (status 404, no body) rather than an error.
    """
    import httpx  # imported here: only builds that download pay for it

    if options.offline:
        raise FetchError(f"cannot download {url}: --offline and not in the cache")
    current = url
    client_options: dict[str, Any] = {"timeout": 60.0, "trust_env": False}
    if options.http_transport is not None:
        # The embedder's transport connects (and checks every hop's address) its own way.
        client_options["transport"] = options.http_transport
    else:
        client_options["verify"] = _ssl_context(options)
    authorization = netrc_authorization(url)
    with httpx.Client(**client_options) as client:
        for _ in range(MAX_REDIRECTS + 1):
            check_url(current)
            sent = dict(headers or {})
            # The credentials are the first URL's host's: never sent to another after a redirect.
            if authorization is not None and same_origin(current, url):
                sent["Authorization"] = authorization
            try:
                with client.stream("GET", current, headers=sent) as resp:
                    if resp.status_code == 304:
                        return Response(304, None, resp.headers.get("etag"), current)
                    if resp.is_redirect:
                        location = resp.headers.get("location", "")
                        current = str(resp.url.join(location))
                        continue
                    if resp.status_code == 404 and missing_ok:
                        return Response(404, None, None, current)
                    if resp.status_code in (401, 403, 404):
                        raise FetchError(
                            f"downloading {url}: HTTP {resp.status_code}: "
                            + access_hint(current, sent="Authorization" in sent)
                        )
                    if resp.status_code != 200:
                        raise FetchError(f"downloading {url}: HTTP {resp.status_code}")
                    declared = resp.headers.get("content-length")
                    if declared and declared.isdigit() and int(declared) > max_bytes:
                        raise FetchError(
                            f"downloading {url}: {declared} bytes is over the limit of "
                            f"{max_bytes} bytes"
                        )
                    size = 0
                    chunks: list[bytes] = []
                    for chunk in resp.iter_bytes(CHUNK):
                        size += len(chunk)
                        if size > max_bytes:
                            raise FetchError(
                                f"downloading {url}: over the limit of {max_bytes} bytes"
                            )
                        if sink is not None:
                            sink.write(chunk)
                        else:
                            chunks.append(chunk)
                    body = None if sink is not None else b"".join(chunks)
                    headers = dict(resp.headers)
                    return Response(200, body, resp.headers.get("etag"), current, headers)
            except httpx.HTTPError as exc:
                raise FetchError(f"downloading {url}: {exc}") from None
    raise FetchError(f"downloading {url}: more than {MAX_REDIRECTS} redirects")


def read_limited(path: str, max_bytes: int) -> bytes:
    """Read a local file, refusing one over max_bytes."""
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            raise FetchError(f"{path} is {size} bytes, over the limit of {max_bytes} bytes")
        with open(path, "rb") as f:
            return f.read(max_bytes + 1)
    except OSError as exc:
        raise FetchError(f"cannot read {path}: {exc.strerror}") from None


def normalise_sha256(value: str | None) -> str | None:
    """64 lower-case hex digits, or None when the value is not a sha256."""
    if not value:
        return None
    hexdigits = value.lower().removeprefix("sha256:")
    if len(hexdigits) != 64 or any(c not in "0123456789abcdef" for c in hexdigits):
        return None
    return hexdigits


def fetch_blob(
    uri: str, sha256: str | None, *, options: FnOptions, base_dir: str | None = None
) -> str:
    """The cached, verified file for uri; downloads and verifies on a miss.

    Raises FetchError when the digest is missing, malformed or different: nothing is cached.
    """
    expected = normalise_sha256(sha256)
    if expected is None:
        if not sha256:
            raise FetchError(f"{uri}: no sha256 given; refusing to use an unverified download")
        raise FetchError(f"{uri}: sha256 {sha256!r} is not 64 hexadecimal digits")
    blobs = os.path.join(options.cache_root(), "blobs", "sha256")
    final = os.path.join(blobs, expected)
    if os.path.isfile(final) and _file_sha256(final) == expected:
        return final
    os.makedirs(blobs, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=blobs, prefix=".partial-")
    try:
        with os.fdopen(fd, "wb") as sink:
            path = local_path(uri, base_dir)
            if path is not None:
                with open(path, "rb") as src:
                    copied = 0
                    while chunk := src.read(CHUNK):
                        copied += len(chunk)
                        if copied > options.max_download:
                            raise FetchError(
                                f"{uri} is over the limit of {options.max_download} bytes"
                            )
                        sink.write(chunk)
            else:
                http_get(uri, options=options, max_bytes=options.max_download, sink=sink)
        actual = _file_sha256(tmp)
        if actual != expected:
            raise DigestMismatchError(
                f"sha256 mismatch for {uri}: expected {expected}, got {actual}; "
                "nothing was unpacked or run"
            )
        os.replace(tmp, final)
        return final
    except OSError as exc:
        raise FetchError(f"cannot fetch {uri}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def archive_kind(uri: str, blob: str) -> str:
    """'tar', 'zip' or 'file', from the URI's name, else from the content's magic bytes."""
    name = urlsplit(uri).path.lower()
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        return "tar"
    if name.endswith(".zip"):
        return "zip"
    with open(blob, "rb") as f:
        head = f.read(4)
    if head[:2] == b"\x1f\x8b":
        return "tar"
    if head == b"PK\x03\x04":
        return "zip"
    return "file"


def _safe_name(name: str, archive: str) -> str:
    norm = name.replace("\\", "/")
    parts = [p for p in norm.split("/") if p not in ("", ".")]
    if (
        norm.startswith("/")
        or (len(norm) > 1 and norm[1] == ":")
        or ".." in parts
        or "\x00" in norm
    ):
        raise FetchError(f"unsafe path {name!r} in archive {archive}")
    return "/".join(parts)


def _inside(root: str, path: str) -> bool:
    root = os.path.realpath(root)
    path = os.path.realpath(path)
    return path == root or path.startswith(root + os.sep)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


class _Unpacker:
    """Writes archive members below a fresh, empty directory, never through a link.

    Safe by itself, whatever the Python (tarfile's ``filter="data"`` had bypasses before the
    mid-2025 releases, e.g. CVE-2025-4517): every member is placed by walking directory file
    descriptors opened with ``O_NOFOLLOW`` from the destination down, files are created with
    ``O_EXCL | O_NOFOLLOW``, and what was unpacked is tracked here, so that

    - no member is written below a link or a file unpacked earlier, nor twice;
    - a symbolic link's target is relative, may only start with ``..`` components (as many as
      the link's directory is deep; that directory holds no link, so they are exact) and has no
      ``..`` after a name: wherever the links it passes through point, it stays inside (each
      of them does, by the same rule, and a directory never becomes a link later);
    - a hard link names a regular file unpacked earlier.
    """

    def __init__(self, dest: str, uri: str, options: FnOptions) -> None:
        self.uri = uri
        self.options = options
        self.kinds: dict[str, str] = {"": "dir"}  # unpacked path -> "dir" | "file" | "link"
        self.entries = 0
        self.total = 0
        self.max_files = options.max_files
        self.max_bytes = options.max_unpacked
        self.root_fd = os.open(dest, _DIR_FLAGS)

    def close(self) -> None:
        os.close(self.root_fd)

    def count_entry(self) -> None:
        """One more member: refuse archives with over ``max_files`` of them."""
        self.entries += 1
        if self.entries > self.max_files:
            raise FetchError(f"archive {self.uri} has over {self.max_files} entries")

    def _parent_fd(self, name: str, shown: str) -> int:
        """A descriptor of ``name``'s directory, made as needed; the caller closes it."""
        fd = os.dup(self.root_fd)
        path = ""
        try:
            for part in name.split("/")[:-1]:
                path = f"{path}/{part}" if path else part
                kind = self.kinds.get(path)
                if kind is None:
                    os.mkdir(part, 0o755, dir_fd=fd)
                    self._record(path, "dir")
                elif kind != "dir":
                    raise FetchError(
                        f"{shown!r} in archive {self.uri} lies below the {kind} {path!r}"
                    )
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _claim(self, name: str, shown: str, kind: str) -> bool:
        """Record ``name`` as ``kind``; False when it is a directory seen before."""
        if not name and kind != "dir":
            raise FetchError(f"unsafe path {shown!r} in archive {self.uri}")
        before = self.kinds.get(name)
        if before is not None:
            if before == "dir" and kind == "dir":
                return False
            raise FetchError(f"archive {self.uri} holds {shown!r} twice")
        self._record(name, kind)
        return True

    def _record(self, name: str, kind: str) -> None:
        """Note that ``name`` now exists as ``kind`` (a layered unpacker tracks more)."""
        self.kinds[name] = kind

    def directory(self, name: str, shown: str) -> None:
        """A directory member."""
        if not self._claim(name, shown, "dir"):
            return
        fd = self._parent_fd(name, shown)
        try:
            os.mkdir(os.path.basename(name), 0o755, dir_fd=fd)
        finally:
            os.close(fd)

    def file(self, name: str, shown: str, src: Any, mode: int) -> None:
        """A regular file member, copied from the binary stream ``src`` with the size limit."""
        self._claim(name, shown, "file")
        fd = self._parent_fd(name, shown)
        try:
            perm = 0o755 if mode & 0o111 else 0o644
            out = os.open(os.path.basename(name), _NEW_FILE_FLAGS, perm, dir_fd=fd)
        finally:
            os.close(fd)
        with os.fdopen(out, "wb") as sink:
            while chunk := src.read(CHUNK):
                # Counted while copying: the sizes an archive declares can lie.
                self.total += len(chunk)
                if self.total > self.max_bytes:
                    raise FetchError(
                        f"archive {self.uri} unpacks to over the limit of {self.max_bytes} bytes"
                    )
                sink.write(chunk)

    def symlink(self, name: str, shown: str, target: str) -> None:
        """A symbolic link whose target provably stays inside, wherever later links point."""
        parts = [p for p in target.split("/") if p not in ("", ".")]
        ups = 0
        while ups < len(parts) and parts[ups] == "..":
            ups += 1
        if not target:
            raise FetchError(f"link {shown!r} in archive {self.uri} has an empty target")
        if target.startswith("/") or ups > name.count("/"):
            raise FetchError(f"link {shown!r} in archive {self.uri} points outside it")
        if ".." in parts[ups:]:
            raise FetchError(
                f"link {shown!r} in archive {self.uri} has '..' after a name in its target "
                f"{target!r} (only leading '..' are allowed)"
            )
        self._claim(name, shown, "link")
        fd = self._parent_fd(name, shown)
        try:
            os.symlink("/".join(parts) or ".", os.path.basename(name), dir_fd=fd)
        finally:
            os.close(fd)

    def hardlink(self, name: str, shown: str, target: str) -> None:
        """A hard link to a regular file unpacked earlier (tar names it from the root)."""
        try:
            source = _safe_name(target, self.uri)
        except FetchError:
            raise FetchError(f"link {shown!r} in archive {self.uri} points outside it") from None
        if self.kinds.get(source) != "file":
            raise FetchError(
                f"hard link {shown!r} in archive {self.uri} does not name a file unpacked before it"
            )
        self._claim(name, shown, "file")
        src_fd = self._parent_fd(source, shown)
        try:
            dst_fd = self._parent_fd(name, shown)
            try:
                os.link(
                    os.path.basename(source),
                    os.path.basename(name),
                    src_dir_fd=src_fd,
                    dst_dir_fd=dst_fd,
                    follow_symlinks=False,
                )
            finally:
                os.close(dst_fd)
        finally:
            os.close(src_fd)


def unpack_tar(blob: str, dest: str, uri: str, options: FnOptions) -> None:
    """Unpack the tar archive ``blob`` (any compression tarfile reads) into the empty directory
    ``dest`` with the hardened unpacker; ``uri`` names it in errors."""
    try:
        with tarfile.open(blob, "r:*") as tar:
            out = _Unpacker(dest, uri, options)
            try:
                # Member by member: nothing of tarfile's extraction (or its filters) is used.
                for m in tar:
                    out.count_entry()
                    name = _safe_name(m.name, uri)
                    if m.isdir():
                        out.directory(name, m.name)
                    elif m.isfile():
                        src = tar.extractfile(m)
                        assert src is not None  # a regular file always has a stream
                        with src:
                            out.file(name, m.name, src, m.mode)
                    elif m.issym():
                        out.symlink(name, m.name, m.linkname)
                    elif m.islnk():
                        out.hardlink(name, m.name, m.linkname)
                    else:
                        raise FetchError(f"archive {uri} holds a special file {m.name!r}")
            finally:
                out.close()
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
        raise FetchError(f"cannot unpack {uri}: {exc}") from None


def _unpack_zip(blob: str, dest: str, uri: str, options: FnOptions) -> None:
    try:
        with zipfile.ZipFile(blob) as zf:
            infos = zf.infolist()
            if len(infos) > options.max_files:
                raise FetchError(f"archive {uri} has over {options.max_files} entries")
            out = _Unpacker(dest, uri, options)
            try:
                for info in infos:
                    name = _safe_name(info.filename, uri)
                    mode = info.external_attr >> 16
                    if stat.S_ISLNK(mode):
                        raise FetchError(f"archive {uri} holds a symbolic link {info.filename!r}")
                    if info.is_dir():
                        out.directory(name, info.filename)
                        continue
                    if stat.S_IFMT(mode) not in (0, stat.S_IFREG):
                        raise FetchError(f"archive {uri} holds a special file {info.filename!r}")
                    with zf.open(info) as src:
                        out.file(name, info.filename, src, mode)
            finally:
                out.close()
    # RuntimeError: an encrypted member; NotImplementedError: an unknown compression method.
    except (
        zipfile.BadZipFile,
        OSError,
        EOFError,
        zlib.error,
        NotImplementedError,
        RuntimeError,
    ) as exc:
        raise FetchError(f"cannot unpack {uri}: {exc}") from None


def unpacked(blob: str, uri: str, digest: str, bin_name: str, *, options: FnOptions) -> str:
    """The directory the verified blob unpacks to (cached under exec/<digest>)."""
    root = os.path.join(options.cache_root(), "exec")
    final = os.path.join(root, digest)
    if os.path.isdir(final):
        return final
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=root, prefix=".partial-")
    try:
        kind = archive_kind(uri, blob)
        if kind == "tar":
            unpack_tar(blob, tmp, uri, options)
        elif kind == "zip":
            _unpack_zip(blob, tmp, uri, options)
        else:
            target = os.path.join(tmp, _safe_name(bin_name, uri))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(blob, target)
            os.chmod(target, 0o755)
        try:
            os.rename(tmp, final)
        except OSError:
            if not os.path.isdir(final):  # another build won the race: fine; else re-raise
                raise
        return final
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def exec_binary(platform: dict[str, Any], *, options: FnOptions, base_dir: str | None) -> str:
    """Fetch, verify, unpack and locate a catalog exec platform's ``bin``."""
    uri = platform["uri"]
    blob = fetch_blob(uri, platform.get("sha256"), options=options, base_dir=base_dir)
    digest = os.path.basename(blob)
    root = unpacked(blob, uri, digest, platform["bin"], options=options)
    path = os.path.join(root, _safe_name(platform["bin"], uri))
    if not _inside(root, path):
        raise FetchError(f"bin {platform['bin']!r} points outside the download {uri}")
    if not os.path.isfile(path):
        raise FetchError(f"bin {platform['bin']!r} is not a file in the download {uri}")
    if not os.access(path, os.X_OK):
        os.chmod(path, os.stat(path).st_mode | 0o755)
    return path
