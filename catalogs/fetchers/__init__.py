"""Remote fetchers behind one interface, registered by URL scheme: https, git and oci."""

from catalogs.fetchers import git, https, oci  # noqa: F401  (registers the fetchers)
from catalogs.fetchers.base import (
    CATALOG_LAYER_MEDIA_TYPE,
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
    "CATALOG_LAYER_MEDIA_TYPE",
    "CosignSignature",
    "Fetched",
    "FetchOptions",
    "Limits",
    "check_destination",
    "fetch",
    "fetcher_for",
    "register",
]
