"""secretGenerator: build a Secret (base64 data, type Opaque by default), like kustomize."""

from __future__ import annotations

from orchestrator.errors import ValidationError
from orchestrator.filters import generatorutil
from orchestrator.filters.generatorutil import merge_into
from orchestrator.resource import Resource

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["generate", "merge_into"]

WHAT = "secretGenerator"


def generate(
    args: dict[str, Any],
    *,
    options: dict[str, Any] | None,
    read_file: Callable[[str], bytes],
    namespace: str | None = None,
    strict: bool = True,
) -> Resource:
    """Make the Secret of one ``secretGenerator`` entry (hash suffix not yet applied).

    ``strict=False`` ignores unknown fields, as kustomize does for a ``generators:`` plugin config.
    """
    # kustomize hands the arguments to its plugin through a JSON/YAML round trip.
    args = generatorutil.fold_nel(args)
    name, behavior = generatorutil.check_args(args, WHAT, strict=strict)
    options = generatorutil.fold_nel(options)
    secret_type = args.get("type") or "Opaque"
    if not isinstance(secret_type, str):
        raise ValidationError(f"{WHAT} {name!r}: type must be a string")
    opts = generatorutil.merge_options(args.get("options"), options, f"{WHAT} {name!r}")
    generatorutil.check_marshallable(args, opts, WHAT)
    pairs = generatorutil.load_pairs(args, read_file, WHAT)
    obj = generatorutil.make_base("Secret", name, args.get("namespace") or namespace, opts)
    obj["type"] = secret_type
    obj["data"] = {
        key: generatorutil.base64_lines(
            value if isinstance(value := pairs[key], bytes) else value.encode("utf-8")
        )
        for key in sorted(pairs)
    }
    if opts["immutable"]:
        obj["immutable"] = True
    return Resource(
        obj=obj,
        source=f"{WHAT} {name}",
        behavior=behavior,
        needs_hash=not opts["disableNameSuffixHash"],
    )
