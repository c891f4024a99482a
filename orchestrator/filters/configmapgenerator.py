"""configMapGenerator: build a ConfigMap from literals, files and env files, like kustomize."""

from __future__ import annotations

from orchestrator.filters import generatorutil
from orchestrator.filters.generatorutil import merge_into
from orchestrator.resource import Resource

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["generate", "merge_into"]

WHAT = "configMapGenerator"


def generate(
    args: dict[str, Any],
    *,
    options: dict[str, Any] | None,
    read_file: Callable[[str], bytes],
    namespace: str | None = None,
    strict: bool = True,
) -> Resource:
    """Make the ConfigMap of one ``configMapGenerator`` entry (hash suffix not yet applied).

    ``strict=False`` ignores unknown fields, as kustomize does for a ``generators:`` plugin config.
    """
    # kustomize hands the arguments to its plugin through a JSON/YAML round trip.
    args = generatorutil.fold_nel(args)
    name, behavior = generatorutil.check_args(args, WHAT, strict=strict)
    options = generatorutil.fold_nel(options)
    opts = generatorutil.merge_options(args.get("options"), options, f"{WHAT} {name!r}")
    generatorutil.check_marshallable(args, opts, WHAT)
    pairs = generatorutil.load_pairs(args, read_file, WHAT)
    obj = generatorutil.make_base("ConfigMap", name, args.get("namespace") or namespace, opts)
    data: dict[str, str] = {}
    binary: dict[str, str] = {}
    for key in sorted(pairs):
        value = pairs[key]
        # Non-UTF-8 content cannot live in `data`; kustomize moves it to base64 `binaryData`.
        if isinstance(value, bytes):
            binary[key] = generatorutil.base64_lines(value)
        else:
            generatorutil.check_readable(value, f"{WHAT} {name!r}: data key {key!r}")
            # Kept raw: kustomize hashes it raw; only its final output folds NEL (fold_nel).
            data[key] = value
    if data:
        obj["data"] = data
    if binary:
        obj["binaryData"] = binary
    if opts["immutable"]:
        obj["immutable"] = True
    return Resource(
        obj=obj,
        source=f"{WHAT} {name}",
        behavior=behavior,
        needs_hash=not opts["disableNameSuffixHash"],
    )
