"""ImageTagTransformer: the ``images:`` field (new name, tag, digest or tag suffix)."""

from __future__ import annotations

from orchestrator import fieldspec
from orchestrator.errors import ValidationError
from orchestrator.filters.base import PluginContext, apply_spec, field_specs, scalar_text
from orchestrator.lazyre import Literal, Pattern
from orchestrator.resource import ResMap

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    import re
    from typing import Any

# What may follow the image name kustomize matches: a tag, a digest, both or neither.
_TAG_AND_DIGEST = r"(:[a-zA-Z0-9_.{}-]*)?(@sha256:[a-zA-Z0-9_.{}-]*)?$"
_REST = Pattern(_TAG_AND_DIGEST)


def split_image(image: str) -> tuple[str, str, str]:
    """Split ``name[:tag][@digest]`` the way kustomize does (a port in the host is not a tag)."""
    search = image
    slash = image.find("/")
    if slash > 0:
        search = image[slash:]
    else:
        slash = 0
    at = search.find("@")
    colon = search.find(":")
    if colon < 0 and at < 0:
        return image, "", ""
    if at >= 0 and (at < colon or colon < 0):
        at += slash
        return image[:at], "", image[at + 1 :]
    if at >= 0 and colon >= 0:
        at += slash
        colon += slash
        return image[:colon], image[colon + 1 : at], image[at + 1 :]
    colon += slash
    return image[:colon], image[colon + 1 :], ""


class ImageTagTransformer:
    """Rewrite container images whose name matches ``imageTag.name``."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        tag = config.get("imageTag") or {}
        if not isinstance(tag, dict):
            raise ValidationError(f"imageTag must be a map, got {tag!r}", file=ctx.source)
        self.name = scalar_text(tag.get("name") or "")
        self.new_name = scalar_text(tag.get("newName") or "")
        self.new_tag = scalar_text(tag.get("newTag") if tag.get("newTag") is not None else "")
        self.digest = scalar_text(tag.get("digest") or "")
        self.tag_suffix = scalar_text(tag.get("tagSuffix") or "")
        # The name is used as a regular expression, unescaped, as kustomize does; a plain
        # name (nearly all) is matched by hand, its tag and digest by a shipped pattern.
        self.literal = Literal(self.name) if Literal.usable(self.name) else None
        self.pattern: re.Pattern[str] | None = None
        if self.literal is None:
            import re

            try:
                self.pattern = re.compile("^" + self.name + _TAG_AND_DIGEST)
            except re.error as exc:
                raise ValidationError(f"invalid image name {self.name!r}: {exc}", file=ctx.source)
        self.specs = field_specs(config, ctx)

    def _update(self, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if self.literal is not None:
            if not self.literal.match_prefix(value) or _REST.match(value, len(self.name)) is None:
                return value
        elif self.pattern is not None and not self.pattern.match(value):
            return value
        name, tag, digest = split_image(value)
        if self.new_name:
            name = self.new_name
        if self.new_tag and self.digest:
            tag, digest = self.new_tag, self.digest
        elif self.new_tag:
            tag, digest = self.new_tag, ""
        elif self.digest:
            tag, digest = "", self.digest
        elif self.tag_suffix:
            tag, digest = tag + self.tag_suffix, ""
        if tag:
            name += ":" + tag
        if digest:
            name += "@" + digest
        return name

    def _legacy_walk(self, node: Any) -> None:
        # Any containers/initContainers list anywhere in the object (kustomize's legacy filter).
        if isinstance(node, dict):
            for key, value in node.items():
                self._legacy_walk(value)
                if key in ("containers", "initContainers") and isinstance(value, list):
                    for c in value:
                        if isinstance(c, dict) and "image" in c:
                            c["image"] = self._update(c["image"])
        elif isinstance(node, list):
            for el in node:
                self._legacy_walk(el)

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        cache: dict[Any, Any] = {}
        for res in resmap:
            if res.kind == "CustomResourceDefinition":
                continue
            self._legacy_walk(res.obj)
            for fs in fieldspec.select(self.specs, res.gvk, cache):
                apply_spec(res, fs, self._update, None, selected=True)
