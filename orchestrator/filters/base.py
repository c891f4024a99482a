"""What every builtin plugin gets: its config plus a context (field specs, file reader)."""

from __future__ import annotations

from orchestrator import fieldspec
from orchestrator.errors import KrmError, ValidationError
from orchestrator.fieldspec import FieldSpec, TransformerConfig
from orchestrator.resource import Resource
from orchestrator.yamlscalar import scalar_text as scalar_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class PluginContext:
    """Where a plugin runs: the kustomization's directory, its file reader and configs."""

    def __init__(
        self,
        tconfig: TransformerConfig,
        read_file: Callable[[str], bytes],
        root: str = ".",
        source: str | None = None,
        schema: Any = None,
        warnings: list[str] | None = None,
        options: Any = None,
    ) -> None:
        self.tconfig = tconfig
        self.read_file = read_file
        self.root = root
        self.source = source
        self.schema = schema
        self.warnings: list[str] = warnings if warnings is not None else []
        self.options = options


def field_specs(config: dict[str, Any], ctx: PluginContext) -> list[FieldSpec]:
    """The ``fieldSpecs`` of a plugin config (YAML maps, or FieldSpecs from the build)."""
    items = config.get("fieldSpecs") or []
    if all(isinstance(i, FieldSpec) for i in items):
        return list(items)
    return fieldspec.parse(items, source=ctx.source)


def string_map(value: Any, what: str, source: str | None) -> dict[str, str]:
    """A map[string]string field (values coerced to text like Go's YAML unmarshal)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(f"{what} must be a map of strings, got {value!r}", file=source)
    return {str(k): scalar_text(v) for k, v in value.items()}


def apply_spec(
    res: Resource,
    spec: FieldSpec,
    setter: Callable[[Any], Any],
    create_kind: str | None,
    *,
    selected: bool = False,
) -> None:
    """Run fieldspec.apply on a resource, turning path errors into KrmErrors.

    ``selected`` says the caller already matched the spec's GVK selector.
    """
    try:
        if selected:
            fieldspec.apply_selected(res.obj, spec, setter, create_kind=create_kind)
        else:
            fieldspec.apply(res.obj, spec, setter, create_kind=create_kind)
    except fieldspec.FieldPathError as exc:
        raise KrmError(
            f"considering field '{spec.path}': {exc}", file=res.source, resource=res.describe()
        ) from None
