"""Events of publishing, for the apps above it (see ``catalogs.events``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catalogs.publishing.models import Catalog, CatalogVersion, Publisher


@dataclass(frozen=True)
class CatalogWriteRequested:
    """A new version of ``catalog`` is about to be published (checked again under the row lock).

    ``context`` is what the caller passed as the publishing context (a mirror's running sync run,
    or None); a subscriber that owns such a context refuses writes that lack it by raising.
    """

    catalog: Catalog
    context: Any


@dataclass(frozen=True)
class CatalogVersionPublished:
    """``version`` was published, inside the publishing transaction.

    ``content`` is the served bytes; ``oci_manifest`` the manifest an OCI push sent, if any.
    """

    version: CatalogVersion
    content: bytes
    oci_manifest: bytes | None


@dataclass(frozen=True)
class CatalogVersionSignatureRequested:
    """A version that has no signature yet (published before signing existed) is being served."""

    version: CatalogVersion


@dataclass(frozen=True)
class CatalogVersionDeprecationChanged:
    """``version`` was deprecated (its ``deprecation`` holds the message) or no longer is."""

    version: CatalogVersion


@dataclass(frozen=True)
class VisibilityChanged:
    """``publisher`` or one of its catalogs became public or private, in the transaction."""

    publisher: Publisher


@dataclass(frozen=True)
class CatalogLatestChanged:
    """An owner made ``version`` (an older one) the latest of its catalog, in the transaction."""

    version: CatalogVersion
