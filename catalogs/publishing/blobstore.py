"""Every stored byte of the registry, by content address, in Django's default storage.

Catalog versions, revocation lists, OCI manifests and blobs and mirrored runtime artifacts are
all kept as ``blobs/sha256/<hex>`` (``BLOB_PREFIX``), whatever row refers to them; an OCI upload
in progress is ``uploads/<uuid>``. The storage is local files (MEDIA_ROOT) by default, or an
S3-compatible object store with ``STORAGE_BACKEND=s3`` (django-storages): this module only uses
the Django storage API, so both behave the same.

The rule that keeps the database and the store consistent: bytes are written, and verified
(size and digest), *before* the row naming them commits. A crash in between leaves an object
no row references; ``storage_garbage_collect`` removes those after a grace period
(``BLOB_GC_GRACE_MINUTES``). A row therefore never names missing bytes, and a failed write
raises ``StorageError`` before anything is recorded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import IO

from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, default_storage
from django.utils import timezone

from catalogs.exceptions import StorageError

logger = logging.getLogger(__name__)

UPLOAD_PREFIX = "uploads"
_CHUNK = 1024 * 1024
# Objects larger than this are looked up before they are written (and not written again when
# already stored and young); smaller ones are simply written.
_ASK_FIRST_ABOVE = 256 * 1024


def blob_prefix() -> str:
    """Where content-addressed objects live in the default storage."""
    return str(settings.MIRROR_BLOB_PREFIX)


def blob_name(digest: str) -> str:
    """The storage name of the bytes ``sha256:<hex>``."""
    return f"{blob_prefix()}/{digest.removeprefix('sha256:')}"


def sha256_digest(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


def _refresh_after() -> timedelta:
    # An object this old may be collected soon if nothing refers to it yet: write it again
    # (or touch it) so that the row about to name it is committed well within the grace period.
    return timedelta(minutes=settings.BLOB_GC_GRACE_MINUTES) / 2


def _fresh(name: str, size: int) -> bool:
    """Whether ``name`` holds ``size`` bytes and is young enough to be left as it is."""
    storage = default_storage
    try:
        if storage.size(name) != size:
            return False
        if isinstance(storage, FileSystemStorage):
            os.utime(storage.path(name))  # touched: a local refresh costs nothing
            return True
        return bool(storage.get_modified_time(name) > timezone.now() - _refresh_after())
    except FileNotFoundError:
        return False


def _write(name: str, handle: IO[bytes], size: int) -> None:
    """Write ``handle`` to exactly ``name`` (replacing it), then check the stored size."""
    storage = default_storage
    try:
        if isinstance(storage, FileSystemStorage):
            # Written beside the target and renamed: a reader never sees half a file.
            target = storage.path(name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as out:
                    while chunk := handle.read(_CHUNK):
                        out.write(chunk)
                os.chmod(tmp, 0o644)
                os.replace(tmp, target)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        else:
            if not getattr(storage, "file_overwrite", False) and storage.exists(name):
                # Content-addressed: same bytes. Deleted first so no backend renames the copy
                # (S3Storage with file_overwrite, as STORAGE_BACKEND=s3 sets it, overwrites).
                storage.delete(name)
            saved = storage.save(name, File(handle, name=os.path.basename(name)))
            if saved != name:
                raise StorageError(f"the object store saved {name} as {saved}")
        stored = storage.size(name)
    except StorageError:
        raise
    except Exception as exc:  # noqa: BLE001  (any backend error: say which object, and why)
        raise StorageError(f"Could not write {name} to the object store: {exc}") from exc
    if stored != size:
        raise StorageError(f"The object store kept {stored} bytes of {name}, expected {size}.")


def blob_put(*, content: bytes, digest: str | None = None) -> str:
    """Store ``content`` by its sha256 (checked against ``digest`` if given); its digest.

    Call it before creating the row that names the digest, inside or before its transaction.
    """
    actual = sha256_digest(content)
    if digest is not None and digest != actual:
        raise StorageError(f"content does not match its digest {digest} (it is {actual})")
    name = blob_name(actual)
    # A small object is rewritten rather than first asked about: one PUT costs what a HEAD does.
    small = len(content) <= _ASK_FIRST_ABOVE and not isinstance(default_storage, FileSystemStorage)
    if small or not _fresh(name, len(content)):
        _write(name, ContentFile(content), len(content))
    return actual


def blob_put_file(*, path: str, digest: str, size: int) -> str:
    """Store a verified scratch file as the blob ``digest``; its storage name."""
    name = blob_name(digest)
    if _fresh(name, size):
        return name
    with open(path, "rb") as handle:
        _write(name, handle, size)
    return name


def blob_read(digest: str) -> bytes | None:
    """The bytes stored under ``digest``, or None when the store has no such object."""
    return storage_read(blob_name(digest))


def storage_read(name: str) -> bytes | None:
    """The bytes of object ``name``, or None when it does not exist."""
    try:
        with default_storage.open(name, "rb") as handle:
            return bytes(handle.read())
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001
        raise StorageError(f"Could not read {name} from the object store: {exc}") from exc


def blob_open(digest: str) -> IO[bytes]:
    """An open file of the blob ``digest`` (FileNotFoundError when missing)."""
    return default_storage.open(blob_name(digest), "rb")  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- uploads


def upload_name(upload_id: str) -> str:
    return f"{UPLOAD_PREFIX}/{upload_id}"


def upload_write(*, upload_id: str, content: bytes) -> None:
    """Replace the bytes of upload session ``upload_id`` so far."""
    _write(upload_name(upload_id), ContentFile(content), len(content))


def upload_read(*, upload_id: str, size: int) -> bytes:
    """The first ``size`` bytes of an upload (a write whose row update was lost is cut off)."""
    if size == 0:
        return b""
    data = storage_read(upload_name(upload_id))
    if data is None or len(data) < size:
        raise StorageError(f"The object store lost upload {upload_id}.")
    return data[:size]


def upload_delete(upload_id: str) -> None:
    try:
        default_storage.delete(upload_name(upload_id))
    except Exception:  # noqa: BLE001  (left for the garbage collection)
        logger.warning("could not delete upload %s; the GC will", upload_id, exc_info=True)


# ----------------------------------------------------------------------------- GC


@dataclass(frozen=True)
class StorageCollection:
    """What a garbage collection found: names deleted, unreferenced ones kept (young), and the
    database rows it removed (stale OCI upload sessions, uploaded blobs no manifest names)."""

    deleted: list[str]
    kept_young: list[str]
    sessions: int = 0
    oci_blobs: int = 0


def _listed(prefix: str) -> list[str]:
    try:
        _, names = default_storage.listdir(prefix)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if not n.startswith(".tmp-"))


def _modified(name: str) -> datetime | None:
    try:
        return default_storage.get_modified_time(name)  # type: ignore[no-any-return]
    except FileNotFoundError:
        return None


def storage_garbage_collect(
    *,
    referenced_names: Iterable[str],
    is_referenced: object,
    live_uploads: Iterable[str],
    grace: timedelta,
    dry_run: bool = False,
) -> tuple[list[str], list[str]]:
    """Delete objects under the blob and upload prefixes not in ``referenced_names`` (or, for
    uploads, ``live_uploads``) and older than ``grace``; ``is_referenced(name)`` is asked again
    right before each delete (a row may have committed meanwhile). Returns (deleted, kept young).
    """
    check = is_referenced if callable(is_referenced) else (lambda name: False)
    referenced = set(referenced_names)
    live = {upload_name(u) for u in live_uploads}
    cutoff = timezone.now() - grace
    candidates = [f"{blob_prefix()}/{n}" for n in _listed(blob_prefix())]
    candidates += [f"{UPLOAD_PREFIX}/{n}" for n in _listed(UPLOAD_PREFIX)]
    deleted, young = [], []
    for name in candidates:
        if name in referenced or name in live:
            continue
        modified = _modified(name)
        if modified is None:
            continue
        if modified > cutoff:
            young.append(name)
            continue
        if check(name):
            continue
        if not dry_run:
            default_storage.delete(name)
        deleted.append(name)
    return deleted, young
