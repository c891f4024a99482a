"""ReplicaCountTransformer: the ``replicas:`` field."""

from __future__ import annotations

from orchestrator.errors import KrmError, ValidationError
from orchestrator.filters.base import PluginContext, apply_spec, field_specs, scalar_text
from orchestrator.resource import ResMap

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


class ReplicaCountTransformer:
    """Set the replica count of the resources named ``replica.name``."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        rep = config.get("replica") or {}
        if not isinstance(rep, dict):
            raise ValidationError(f"replica must be a map, got {rep!r}", file=ctx.source)
        self.name = scalar_text(rep.get("name") or "")
        count = rep.get("count", 0)
        if isinstance(count, bool) or not isinstance(count, int):
            raise ValidationError(
                f"replicas: count of {self.name!r} must be an integer, got {count!r}",
                file=ctx.source,
            )
        self.count = count
        self.specs = field_specs(config, ctx)
        self.source = ctx.source

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        found = False
        for fs in self.specs:
            for res in resmap:
                names = {name for _, name in res.previous} | {res.name}
                if self.name not in names or not fs.selects(res.gvk):
                    continue
                found = True
                apply_spec(res, fs, lambda _v: self.count, "scalar")
        if not found:
            gvks = " ".join(
                ".".join([fs.kind or "[noKind]", fs.version or "[noVer]", fs.group or "[noGrp]"])
                for fs in self.specs
            )
            raise KrmError(
                f"resource with name {self.name} does not match a config with the following "
                f"GVK [{gvks}]",
                file=self.source,
            )
