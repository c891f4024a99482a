"""Remote fetchers behind one interface, registered by URL scheme: https, git and oci."""

from catalogs.mirroring.fetchers import git, https, oci  # noqa: F401  (registers the fetchers)
from catalogs.mirroring.fetchers.base import (
    CosignSignature,
    Fetched,
    FetchOptions,
    Limits,
    check_destination,
    fetch,
    fetcher_for,
    register,
)

__all__ = [
    "CosignSignature",
    "Fetched",
    "FetchOptions",
    "Limits",
    "check_destination",
    "fetch",
    "fetcher_for",
    "register",
]
