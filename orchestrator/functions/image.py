"""Function images for the builtin container runtime: pull, verify, unpack into a cached rootfs.

An image runs only when pinned by digest (``image@sha256:…`` or the catalog's ``sha256``). The
manifest (or image index, from which this machine's platform is chosen), the platform's
manifest, its config and every layer are checked against the digest that names them before they
are kept in ``<cache>/images/blobs/sha256/``; each layer's uncompressed stream must also match
the config's ``diff_ids``. Layers are applied in order, with OCI whiteouts (``.wh.<name>``) and
opaque whiteouts (``.wh..wh..opq``) honoured, into ``<cache>/images/rootfs/<manifest hex>/``,
renamed into place only when complete. The unpacker is the exec archives' one (never through a
link, nothing outside, links that provably stay inside, hard links to files unpacked before),
extended to let a later layer replace or delete what an earlier one made; device nodes and
FIFOs are skipped; the entry count and the bytes written are limited per image. A warm start
reads three small verified files from the cache and touches no network.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO

from orchestrator.functions.fetch import (
    CHUNK,
    FetchError,
    _safe_name,
    _Unpacker,
    normalise_sha256,
)
from orchestrator.functions.oci import (
    INDEX_TYPES,
    MANIFEST_TYPES,
    MAX_MANIFEST_BYTES,
    ImageRef,
    RegistryClient,
    parse_image,
)
from orchestrator.functions.options import FnOptions

NOBODY = (65534, 65534)
GZIP_LAYERS = (
    "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
)
PLAIN_LAYERS = ("application/vnd.oci.image.layer.v1.tar",)
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"


@dataclass(frozen=True)
class Image:
    """A verified, unpacked image: where its rootfs is and how its config says to run it."""

    ref: ImageRef  # pinned: ref.digest is what was asked for (an index or a manifest)
    manifest_digest: str  # this platform's manifest
    rootfs: str
    argv: list[str]  # Entrypoint + Cmd
    env: dict[str, str]
    workdir: str
    user: tuple[int, int]  # (uid, gid) to run as: the image's user, or nobody for root


def image_pinned(image: str, sha256: str | None) -> ImageRef:
    """The image reference pinned to its digest; refuses a tag without one."""
    ref = parse_image(image)
    expected = normalise_sha256(sha256)
    if sha256 and expected is None:
        raise FetchError(f"image {image}: sha256 {sha256!r} is not 64 hexadecimal digits")
    if expected is not None:
        if ref.digest and ref.digest != f"sha256:{expected}":
            raise FetchError(
                f"image {image} names digest {ref.digest} but its sha256 says sha256:{expected}; "
                "refusing it"
            )
        return ref.with_digest(f"sha256:{expected}")
    if ref.digest is None:
        raise FetchError(
            f"image {image} has a tag but no digest: the builtin runtime runs only pinned images "
            "(image@sha256:<digest>, or the catalog's sha256)"
        )
    return ref


class _Cache:
    """Verified blobs of images, fetched from the registry only on a miss."""

    def __init__(self, ref: ImageRef, options: FnOptions) -> None:
        self.ref = ref
        self.options = options
        self.root = options.image_cache_root()
        self.blobs = os.path.join(self.root, "blobs", "sha256")
        self._client: RegistryClient | None = None

    def client(self) -> RegistryClient:
        if self._client is None:
            self._client = RegistryClient(self.ref, options=self.options)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _cached(self, digest: str, max_bytes: int) -> bytes | None:
        path = os.path.join(self.blobs, digest.removeprefix("sha256:"))
        try:
            with open(path, "rb") as f:
                data = f.read(max_bytes + 1)
        except FileNotFoundError:
            return None
        if len(data) > max_bytes or "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            return None  # damaged: fetch it again
        return data

    def _store(self, digest: str, data: bytes) -> None:
        os.makedirs(self.blobs, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.blobs, prefix=".partial-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(self.blobs, digest.removeprefix("sha256:")))

    def manifest(self, digest: str) -> dict[str, Any]:
        """The manifest or index named by ``digest``, verified."""
        data = self._cached(digest, MAX_MANIFEST_BYTES)
        if data is None:
            data, _media_type, _ = self.client().manifest(digest)  # checked against digest
            self._store(digest, data)
        try:
            doc = json.loads(data)
        except ValueError:
            raise FetchError(f"image {self.ref}: manifest {digest} is not JSON") from None
        if not isinstance(doc, dict):
            raise FetchError(f"image {self.ref}: manifest {digest} is not a JSON object")
        if doc.get("schemaVersion") != 2:
            raise FetchError(
                f"image {self.ref}: manifest {digest} has schemaVersion "
                f"{doc.get('schemaVersion')!r}; only OCI and docker v2 (schemaVersion 2) images "
                "can be run"
            )
        return doc

    def small_blob(self, desc: Any) -> bytes:
        """A config blob, verified."""
        digest, size = _descriptor(desc, self.ref)
        if size > MAX_MANIFEST_BYTES:
            raise FetchError(
                f"image {self.ref}: config {digest} is over {MAX_MANIFEST_BYTES} bytes"
            )
        data = self._cached(digest, MAX_MANIFEST_BYTES)
        if data is None:
            sink = io.BytesIO()
            self.client().blob(digest, size, sink)  # checked: size and digest
            data = sink.getvalue()
            self._store(digest, data)
        return data

    def layer(self, desc: dict[str, Any]) -> str:
        """The cached file of a layer, downloaded and verified on a miss."""
        digest, size = _descriptor(desc, self.ref)
        final = os.path.join(self.blobs, digest.removeprefix("sha256:"))
        if os.path.isfile(final) and os.path.getsize(final) == size:
            return final  # verified when stored; its diff_id is checked again as it unpacks
        if size > self.options.max_download:
            raise FetchError(
                f"image {self.ref}: layer {digest} is {size} bytes, over the limit of "
                f"{self.options.max_download} bytes"
            )
        os.makedirs(self.blobs, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.blobs, prefix=".partial-")
        try:
            with os.fdopen(fd, "wb") as sink:
                self.client().blob(digest, size, sink)
            os.replace(tmp, final)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return final


def _descriptor(desc: Any, ref: ImageRef) -> tuple[str, int]:
    if not isinstance(desc, dict):
        raise FetchError(f"image {ref}: a descriptor is not an object")
    digest, size = desc.get("digest"), desc.get("size")
    if (
        not isinstance(digest, str)
        or normalise_sha256(digest) is None
        or not digest.startswith("sha256:")
    ):
        raise FetchError(f"image {ref}: descriptor digest {digest!r} is not sha256:<64 hex>")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise FetchError(f"image {ref}: descriptor {digest} has no valid size")
    return digest, size


def _media_type(doc: dict[str, Any]) -> str:
    media_type = doc.get("mediaType")
    if isinstance(media_type, str) and media_type:
        return media_type
    if "manifests" in doc:
        return INDEX_TYPES[0]
    return MANIFEST_TYPES[0]


def select_platform(index: dict[str, Any], ref: ImageRef, os_arch: tuple[str, str]) -> str:
    """The digest of the index entry for (os, architecture); an error names what there is."""
    entries = index.get("manifests")
    if not isinstance(entries, list):
        raise FetchError(f"image {ref}: the image index has no manifests list")
    offered = []
    for entry in entries:
        platform = entry.get("platform") if isinstance(entry, dict) else None
        if not isinstance(platform, dict):
            continue
        pair = (platform.get("os"), platform.get("architecture"))
        offered.append(f"{pair[0]}/{pair[1]}")
        if pair == os_arch and entry.get("mediaType", MANIFEST_TYPES[0]) in MANIFEST_TYPES:
            return _descriptor(entry, ref)[0]
    raise FetchError(
        f"image {ref} has no {os_arch[0]}/{os_arch[1]} variant (it offers "
        f"{', '.join(offered) or 'none'})"
    )


def image_prepare(image: str, sha256: str | None, *, options: FnOptions) -> Image:
    """Pull (or find cached), verify and unpack a pinned image for this machine's platform."""
    from orchestrator.functions.resolve import host_platform

    ref = image_pinned(image, sha256)
    assert ref.digest is not None
    cache = _Cache(ref, options)
    try:
        top = cache.manifest(ref.digest)
        manifest_digest = ref.digest
        if _media_type(top) in INDEX_TYPES:
            manifest_digest = select_platform(top, ref, host_platform())
            manifest = cache.manifest(manifest_digest)
        else:
            manifest = top
        if _media_type(manifest) not in MANIFEST_TYPES:
            raise FetchError(
                f"image {ref}: unsupported manifest media type {_media_type(manifest)!r}"
            )
        try:
            config = json.loads(cache.small_blob(manifest.get("config")))
        except ValueError:
            raise FetchError(f"image {ref}: its config is not JSON") from None
        if not isinstance(config, dict):
            raise FetchError(f"image {ref}: its config is not a JSON object")
        rootfs = _rootfs(cache, manifest, manifest_digest, config)
    finally:
        cache.close()
    return _image(ref, manifest_digest, rootfs, config)


def _rootfs(
    cache: _Cache, manifest: dict[str, Any], manifest_digest: str, config: dict[str, Any]
) -> str:
    ref = cache.ref
    root = os.path.join(cache.root, "rootfs")
    final = os.path.join(root, manifest_digest.removeprefix("sha256:"))
    if os.path.isdir(final):
        return os.path.join(final, "rootfs")
    layers = manifest.get("layers")
    diff_ids = (config.get("rootfs") or {}).get("diff_ids") if isinstance(config, dict) else None
    if not isinstance(layers, list) or not isinstance(diff_ids, list):
        raise FetchError(f"image {ref}: the manifest or config lists no layers")
    if len(layers) != len(diff_ids):
        raise FetchError(
            f"image {ref}: {len(layers)} layers but {len(diff_ids)} diff_ids in its config"
        )
    paths = [(desc, cache.layer(desc)) for desc in layers]  # everything verified first
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=root, prefix=".partial-")
    try:
        os.mkdir(os.path.join(tmp, "rootfs"), 0o755)
        out = _LayerUnpacker(os.path.join(tmp, "rootfs"), str(ref), cache.options)
        try:
            for (desc, path), diff_id in zip(paths, diff_ids, strict=True):
                _apply_layer(out, path, desc, str(diff_id), ref)
        finally:
            out.close()
        try:
            os.rename(tmp, final)
        except OSError:
            if not os.path.isdir(final):  # another build won the race: fine; else re-raise
                raise
        return os.path.join(final, "rootfs")
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


class _HashingReader:
    """A read-only stream that hashes what passes through (a layer's diff_id)."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.hash = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.hash.update(data)
        return data

    def drain(self) -> None:
        while self.read(CHUNK):
            pass


def _apply_layer(
    out: _LayerUnpacker, path: str, desc: dict[str, Any], diff_id: str, ref: ImageRef
) -> None:
    digest = desc["digest"]
    media_type = desc.get("mediaType", GZIP_LAYERS[0])
    label = f"layer {digest} of image {ref}"
    if media_type not in GZIP_LAYERS + PLAIN_LAYERS:
        raise FetchError(f"{label}: unsupported layer media type {media_type!r}")
    out.next_layer(f"{ref} (layer {digest})")
    try:
        with open(path, "rb") as raw:
            stream: Any = gzip.GzipFile(fileobj=raw) if media_type in GZIP_LAYERS else raw
            reader = _HashingReader(stream)
            with tarfile.open(fileobj=reader, mode="r|") as tar:  # type: ignore[call-overload]
                for m in tar:
                    _apply_member(out, tar, m, label)
            reader.drain()
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise FetchError(f"cannot unpack {label}: {exc}") from None
    if "sha256:" + reader.hash.hexdigest() != diff_id:
        raise FetchError(
            f"{label}: its content does not match the config's diff_id {diff_id}; refusing it"
        )


def _apply_member(
    out: _LayerUnpacker, tar: tarfile.TarFile, m: tarfile.TarInfo, label: str
) -> None:
    out.count_entry()
    name = _safe_name(m.name, out.uri)
    parent, _, base = name.rpartition("/")
    if base.startswith(WHITEOUT):
        if base == OPAQUE:
            out.opaque(parent)
        elif not base.startswith(WHITEOUT + WHITEOUT):  # other .wh..wh. names: aufs metadata
            out.whiteout(f"{parent}/{base[len(WHITEOUT) :]}" if parent else base[len(WHITEOUT) :])
        return
    if m.isdir():
        out.directory(name, m.name)
    elif m.isreg():
        if m.size > out.max_bytes - out.total:
            raise FetchError(
                f"{label}: {m.name!r} is {m.size} bytes; the image would unpack to over the "
                f"limit of {out.max_bytes} bytes"
            )
        src = tar.extractfile(m)
        assert src is not None  # a regular file always has a stream
        with src:
            out.file(name, m.name, src, m.mode)
    elif m.issym():
        out.symlink(name, m.name, m.linkname)
    elif m.islnk():
        out.hardlink(name, m.name, m.linkname)
    elif m.ischr() or m.isblk() or m.isfifo():
        return  # device nodes and FIFOs are not made: the jail has its own /dev
    else:
        raise FetchError(f"{label} holds a special file {m.name!r}")


class _LayerUnpacker(_Unpacker):
    """The archive unpacker, across layers: a later layer may replace or delete (whiteouts)
    what an earlier one made, never what it made itself, and never through a link."""

    def __init__(self, dest: str, uri: str, options: FnOptions) -> None:
        super().__init__(dest, uri, options)
        self.max_files = options.max_image_files
        self.max_bytes = options.max_image_bytes
        self.children: dict[str, set[str]] = {"": set()}
        self.touched: set[str] = set()  # made by this layer, and their parents

    def next_layer(self, uri: str) -> None:
        """Start the next layer (named ``uri`` in messages)."""
        self.uri = uri
        self.touched = set()

    def _touch(self, name: str) -> None:
        path = name
        while path not in self.touched:
            self.touched.add(path)
            if not path:
                break
            path = path.rpartition("/")[0]

    def _record(self, name: str, kind: str) -> None:
        super()._record(name, kind)
        parent, _, base = name.rpartition("/")
        self.children.setdefault(parent, set()).add(base)
        if kind == "dir":
            self.children.setdefault(name, set())
        self._touch(name)

    def _claim(self, name: str, shown: str, kind: str) -> bool:
        before = self.kinds.get(name)
        if before is not None and name and name not in self.touched:  # an earlier layer's
            if before == "dir" and kind == "dir":
                self._touch(name)
                return False
            self._remove(name)
        return super()._claim(name, shown, kind)

    def _remove(self, name: str) -> None:
        """Delete ``name`` (a whole tree for a directory) from disk and from the records."""
        kind = self.kinds[name]
        fd = self._parent_fd(name, name)  # its parents exist, as directories
        try:
            base = name.rpartition("/")[2]
            if kind == "dir":
                shutil.rmtree(base, dir_fd=fd)
            else:
                os.unlink(base, dir_fd=fd)
        finally:
            os.close(fd)
        stack = [name]
        while stack:
            path = stack.pop()
            if self.kinds.pop(path, None) == "dir":
                stack.extend(f"{path}/{c}" for c in self.children.pop(path, ()))
        parent, _, base = name.rpartition("/")
        self.children.get(parent, set()).discard(base)

    def _remove_lower(self, directory: str) -> None:
        """Delete what earlier layers made below ``directory``; keep this layer's entries."""
        stack = [directory]
        while stack:
            current = stack.pop()
            for child in list(self.children.get(current, ())):
                path = f"{current}/{child}" if current else child
                if path not in self.touched:
                    self._remove(path)
                elif self.kinds.get(path) == "dir":
                    stack.append(path)

    def whiteout(self, name: str) -> None:
        """``.wh.<name>``: hide what earlier layers made at ``name``."""
        kind = self.kinds.get(name)
        if kind is None or not name:
            return  # nothing of that name (nothing is ever recorded below a link)
        if name in self.touched:
            if kind == "dir":
                self._remove_lower(name)
            return
        self._remove(name)

    def opaque(self, directory: str) -> None:
        """``.wh..wh..opq``: hide everything earlier layers made inside ``directory``."""
        if self.kinds.get(directory) != "dir":
            return
        self._touch(directory)
        self._remove_lower(directory)


def _ids(rootfs: str, relpath: str, name: str) -> int | None:
    """The numeric id of ``name`` in the image's /etc/passwd or /etc/group, or None."""
    try:
        with open(os.path.join(rootfs, relpath), encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.rstrip("\n").split(":")
                if len(fields) > 2 and fields[0] == name and fields[2].isdigit():
                    return int(fields[2])
    except OSError:
        return None
    return None


def image_user(user: str, rootfs: str, ref: ImageRef) -> tuple[int, int]:
    """(uid, gid) for the config's ``User``: nobody for root or none, else the image's user."""
    if not user:
        return NOBODY
    name, _, group = user.partition(":")
    uid = int(name) if name.isdigit() else _ids(rootfs, "etc/passwd", name)
    if uid is None:
        raise FetchError(f"image {ref}: user {name!r} is not in the image's /etc/passwd")
    if uid == 0:
        return NOBODY
    if group:
        gid = int(group) if group.isdigit() else _ids(rootfs, "etc/group", group)
        if gid is None:
            raise FetchError(f"image {ref}: group {group!r} is not in the image's /etc/group")
    elif not name.isdigit():
        gid = _passwd_gid(rootfs, name)
    else:
        gid = uid
    return uid, 65534 if gid == 0 else gid


def _passwd_gid(rootfs: str, name: str) -> int:
    try:
        with open(os.path.join(rootfs, "etc/passwd"), encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.rstrip("\n").split(":")
                if len(fields) > 3 and fields[0] == name and fields[3].isdigit():
                    return int(fields[3])
    except OSError:
        pass
    return 65534


def _image(ref: ImageRef, manifest_digest: str, rootfs: str, config: dict[str, Any]) -> Image:
    cfg = config.get("config") or {}
    if not isinstance(cfg, dict):
        raise FetchError(f"image {ref}: its config's config is not an object")
    entrypoint = cfg.get("Entrypoint") or []
    cmd = cfg.get("Cmd") or []
    if not isinstance(entrypoint, list) or not isinstance(cmd, list):
        raise FetchError(f"image {ref}: Entrypoint and Cmd must be lists")
    argv = [str(a) for a in entrypoint + cmd]
    if not argv:
        raise FetchError(f"image {ref} has neither Entrypoint nor Cmd: nothing to run")
    env: dict[str, str] = {}
    for entry in cfg.get("Env") or []:
        key, eq, value = str(entry).partition("=")
        if key and eq:
            env[key] = value
    workdir = str(cfg.get("WorkingDir") or "/")
    if not workdir.startswith("/"):
        workdir = "/" + workdir
    user = image_user(str(cfg.get("User") or ""), rootfs, ref)
    return Image(ref, manifest_digest, rootfs, argv, env, workdir, user)
