"""sha256 for the build's start-up path, without loading OpenSSL when it is not loaded yet.

``import hashlib`` loads OpenSSL's libcrypto, about 2.5 ms of a small build's ~30 ms, to hash a
few kilobytes (generated resources' names, the build cache's entries). CPython's own sha256
module gives the same digests; a Python built without it (some FIPS builds) uses hashlib.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


# From this many bytes OpenSSL's sha256 repays loading it: CPython's own hashes ~3.2 ms a MiB
# here, OpenSSL's ~0.5-0.9 (a 12 MB build output: 38 ms against 10).
LARGE = 1 << 20
_hashed = 0  # bytes passed to sha256() so far in this process (updates not counted)


def sha256(data: bytes = b"") -> Any:
    """A sha256 hash object: OpenSSL's once hashlib is loaded anyway or the process has hashed
    a MiB (``data`` included: a build cache hashes every file a build reads, and a tree of
    CRDs of a few hundred kB each adds up), else CPython's own."""
    global _hashed
    _hashed += len(data)
    if "hashlib" not in sys.modules and _hashed < LARGE:
        try:
            import _sha256  # type: ignore[import-not-found]
        except ImportError:
            pass
        else:
            return _sha256.sha256(data)
    import hashlib

    return hashlib.sha256(data)
