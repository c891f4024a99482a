"""Collisions: the same group/kind/version defined in more than one trusted catalog.

Resolution takes the first match (KEP-2906). When a later trusted catalog defines the same
function with a *different* runtime, the build says so on stderr, once per function and catalog;
with ``--strict-catalogs`` it is an error naming both. A later catalog that cannot be fetched is
skipped here (it is an error only when a function needs it, as everywhere else).
"""

from __future__ import annotations

import sys
from typing import Any

from orchestrator.errors import KrmError
from orchestrator.functions.options import FunctionError


class CatalogCollisionError(FunctionError):
    """--strict-catalogs: a function resolves in one catalog and is defined differently later."""


def check_later(
    match: Any, later: list[Any], catalogs: Any, group: str, kind: str, version: str
) -> None:
    """Warn (or, strict, raise) about later catalogs defining this GVK with another runtime."""
    store = catalogs.store
    seen: set[tuple[str, ...]] = store.__dict__.setdefault("_collisions_seen", set())
    api_version = f"{group}/{version}" if group else version
    for ref in later:
        keys = catalogs.trust.keys_for(ref) if catalogs.trust is not None else []
        try:
            loaded = store.get(ref, keys)
        except KrmError:
            continue
        other = loaded.catalog.find(group, kind, version)
        if other is None or other[1].runtime == match.version.runtime:
            continue
        message = (
            f"{api_version} {kind} resolves in catalog {match.catalog.ref} but catalog {ref} "
            "also defines it with a different runtime"
        )
        if store.options.strict_catalogs:
            raise CatalogCollisionError(f"{message} (--strict-catalogs)")
        key = (api_version, kind, str(match.catalog.ref), str(ref))
        if key not in seen:
            seen.add(key)
            from orchestrator.terminal import lines

            sys.stderr.write(
                lines(
                    f"Warning: {message}; the first is used (--strict-catalogs makes this an "
                    "error)\n"
                )
            )
