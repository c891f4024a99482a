"""``krm create``: write a new kustomization file in the current directory (kustomize create)."""

from __future__ import annotations

import os

from orchestrator.edit.commands import EditError, _glob_with_loader, _slice_to_map
from orchestrator.edit.kustfile import FILE_NAMES, KustFileError, KustomizationFile

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


def _is_resource_file(path: str) -> bool:
    """Whether ``path`` holds Kubernetes objects as kustomize's resource factory reads them."""
    from orchestrator.accumulator import resources_from_bytes
    from orchestrator.errors import KrmError

    try:
        with open(path, "rb") as f:
            resources_from_bytes(f.read(), source=path)
    except (KrmError, OSError, RecursionError, ValueError):
        return False
    return True


def detect_resources(base: str, recursive: bool) -> list[str]:
    """Files of ``base`` that hold resources; with ``recursive``, subdirectories too, a
    directory with a kustomization file counting as one entry (Go's ``filepath.Walk`` order)."""
    paths: list[str] = []

    def walk(directory: str) -> None:
        for name in sorted(os.listdir(directory)):
            path = os.path.normpath(os.path.join(directory, name))
            if os.path.isdir(path):
                if not recursive:
                    continue
                if any(os.path.exists(os.path.join(path, n)) for n in FILE_NAMES):
                    paths.append(path)
                    continue
                walk(path)
            elif _is_resource_file(path):
                paths.append(path)

    walk(base)
    return paths


def _to_map(text: str, kind: str) -> dict[str, str]:
    return _slice_to_map(text.split(","), kind) if text else {}


def create(
    *,
    resources: str = "",
    namespace: str = "",
    annotations: str = "",
    labels: str = "",
    nameprefix: str = "",
    namesuffix: str = "",
    autodetect: bool = False,
    recursive: bool = False,
) -> None:
    """``kustomize create``: the flags' values in a new ``kustomization.yaml``."""
    found: list[str] = []
    if resources:
        found = _glob_with_loader(resources.split(","), False)
    try:
        KustomizationFile()
    except KustFileError:
        pass  # none (or several): go on, as kustomize does
    else:
        raise EditError("kustomization file already exists")
    # kustomize checks these after creating an empty file, which it then leaves behind;
    # krm checks them first so that a refused command writes nothing.
    annotation_map = _to_map(annotations, "annotation")
    label_map = _to_map(labels, "label")
    if autodetect:
        for path in detect_resources(".", recursive):
            if path not in found:
                found.append(path)
    with open("kustomization.yaml", "w", encoding="utf-8"):
        pass
    kf = KustomizationFile()
    data: dict[str, Any] = kf.read()
    data.update(
        resources=found,
        namespace=namespace,
        namePrefix=nameprefix,
        nameSuffix=namesuffix,
        commonAnnotations=annotation_map,
        commonLabels=label_map,
    )
    kf.write(data)
