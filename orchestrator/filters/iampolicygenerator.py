"""The builtin IAMPolicyGenerator: a GKE Workload Identity service account, as kustomize makes it.

For ``cloud: gke`` it generates a ``ServiceAccount`` named ``kubernetesService.name`` (in
``kubernetesService.namespace`` when given), annotated ``iam.gke.io/gcp-service-account:
<serviceAccount.name>@<serviceAccount.projectId>.iam.gserviceaccount.com``. Like kustomize, the
values are written into a YAML text that is then parsed, so they read as YAML scalars do.
"""

from __future__ import annotations

from orchestrator import yamlio
from orchestrator.errors import NotSupportedError, ValidationError
from orchestrator.filters.base import PluginContext
from orchestrator.resource import Resource

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


def _text(config: dict[str, Any], section: str, key: str, source: str | None) -> str:
    block = config.get(section)
    if block is None:
        return ""
    if not isinstance(block, dict):
        raise ValidationError(f"IAMPolicyGenerator: {section} must be a map", file=source)
    value = block.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError(f"IAMPolicyGenerator: {section}.{key} must be a string", file=source)
    return value


class IAMPolicyGenerator:
    """An IAMPolicyGenerator config (``generators:``)."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        source = ctx.source
        cloud = config.get("cloud")
        if cloud != "gke":
            raise NotSupportedError(
                f"cloud provider {'' if cloud is None else cloud} not supported yet", file=source
            )
        self.source = source
        self.name = _text(config, "kubernetesService", "name", source)
        self.namespace = _text(config, "kubernetesService", "namespace", source)
        self.account = _text(config, "serviceAccount", "name", source)
        self.project = _text(config, "serviceAccount", "projectId", source)

    def generate(self) -> list[Resource]:
        """The ServiceAccount."""
        text = (
            "\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  annotations:\n"
            f"    iam.gke.io/gcp-service-account: {self.account}@{self.project}"
            f".iam.gserviceaccount.com\n  name: {self.name}\n"
        )
        if self.namespace:
            text += f"\n  namespace: {self.namespace}"
        obj = yamlio.load(text, source=self.source)
        if not isinstance(obj, dict) or not (obj.get("metadata") or {}).get("name"):
            raise ValidationError(
                "IAMPolicyGenerator: kubernetesService.name is required", file=self.source
            )
        return [Resource(obj=obj, source=self.source)]
