"""Typed engine errors: each carries the file and the resource it is about.

The CLI prints ``str(error)`` as one line (plus context) and exits 1; a traceback
is shown only with ``--debug``.
"""

from __future__ import annotations


class KrmError(Exception):
    """Base class of every error the engine reports to a user."""

    def __init__(self, message: str, *, file: str | None = None, resource: str | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.resource = resource

    def __str__(self) -> str:
        parts = []
        if self.file:
            parts.append(str(self.file))
        if self.resource:
            parts.append(self.resource)
        prefix = ": ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message


class YamlError(KrmError):
    """A YAML document could not be parsed (message includes line and column)."""


class LoadError(KrmError):
    """A file or directory could not be loaded (missing, not a kustomization, restricted)."""


class ValidationError(KrmError):
    """A kustomization, component or catalog document breaks its schema or a stated rule."""


class ResourceConflictError(KrmError):
    """Two resources with the same id, or a merge/replace that finds no or several targets."""


class PatchError(KrmError):
    """A patch could not be applied, or its target does not exist."""


class NotSupportedError(KrmError):
    """A feature that this engine does not implement (yet)."""
