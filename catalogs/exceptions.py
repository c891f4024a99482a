"""Domain errors raised by services; ``catalogs.api.handlers`` maps each to one HTTP status."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProblemDetail:
    """One problem in a submitted document: where (path, line, column) and what."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return {
            "path": self.path,
            "message": self.message,
            "line": self.line,
            "column": self.column,
        }


class RegistryError(Exception):
    """Base of every error a service reports to a user."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class NotAllowedError(RegistryError):
    """The acting user may not do this (not an owner of the publisher, nor staff)."""


class ReservedNameError(NotAllowedError):
    """A publisher slug kept for the registry itself (RESERVED_PUBLISHER_SLUGS, the mirrors')."""


class NotFoundError(RegistryError):
    """A publisher, catalog or version that does not exist."""


class AlreadyExistsError(RegistryError):
    """A publisher slug or catalog name that is already taken."""


class StateConflictError(RegistryError):
    """A request the object's current state does not allow (409): a role upload for a
    publisher without keys of its own, a role version that is not newer than the one served."""


class InvalidCatalogError(RegistryError):
    """A catalog document that cannot be published; ``problems`` lists every reason."""

    def __init__(self, message: str, problems: list[ProblemDetail] | list[dict]):
        super().__init__(message)
        self.problems = [
            p if isinstance(p, ProblemDetail) else ProblemDetail(**p) for p in problems
        ]
        # Celery rebuilds a task's exception from its args, sent as JSON: keep them plain data.
        self.args = (message, [p.as_dict() for p in self.problems])


class InvalidInputError(RegistryError):
    """A request argument that is malformed (bad slug, unknown user name); ``field`` names the
    input it is about, when one is (forms show the error on that field, the API says it)."""

    def __init__(self, message: str, field: str = ""):
        super().__init__(message)
        self.field = field


# --- Mirroring. A sync run records ``message`` of any of these as its one reason. ---


class QuotaExceededError(RegistryError):
    """A per-user or per-publisher quota or rate limit is used up (429); the message names the
    setting."""


class SyncError(RegistryError):
    """A mirror sync that cannot complete; nothing it did is kept."""


class FetchError(SyncError):
    """The upstream could not be read: network, HTTP status, timeout, size limit, bad reference."""


class DestinationRefusedError(FetchError):
    """A URL or redirect points at a host or network the mirror may not contact."""


class DigestMismatchError(SyncError):
    """Upstream content does not match a pinned or declared digest."""


class SignatureError(SyncError):
    """A required signature is missing, invalid, or made by another key or identity."""


class SyncInProgressError(AlreadyExistsError):
    """Another run of the same source is queued or running (a conflict, like AlreadyExists)."""


class MirrorCatalogReadOnlyError(RegistryError):
    """A publish into a mirror's catalog from anywhere but a running sync of its source."""


class StorageError(RegistryError):
    """The object store refused or lost bytes: nothing that would name them was recorded."""
