"""Hostile inputs for the engine's entry points, made at test time (nothing large committed).

YAML texts are given as the value of one field at a known depth, so each test can place them in a
resource, a kustomization, a patch, a Composition, a function's output or a catalog. Archives are
written to a path and their sha256 returned, as a catalog's exec runtime would name them.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# ----------------------------------------------------------------------------- YAML values


def nested_flow(levels: int, opener: str = "[") -> str:
    """``levels`` nested flow sequences (``[[[]]]``) or mappings (``{a: {a: {}}}``), one line."""
    if opener == "[":
        return "[" * levels + "]" * levels
    return "{a: " * (levels - 1) + "{}" + "}" * (levels - 1)


def nested_block(levels: int, indent: int) -> str:
    """``levels`` nested block sequences, written compactly (``- - - x``) after a newline.

    ``indent`` is the column (0-based) of the field the value belongs to; compact sequences
    grow by two characters a level, so 100,000 levels stay a 200 KB line.
    """
    return "\n" + " " * indent + "- " * levels + "x"


def nested_block_mappings(levels: int, indent: int) -> str:
    """``levels`` nested block mappings, one a line, each one space deeper (quadratic size)."""
    lines = [" " * (indent + 1 + i) + "a:" for i in range(levels - 1)]
    return "\n" + "\n".join(lines) + "\n" + " " * (indent + levels) + "a: x"


def alias_bomb(levels: int = 9, width: int = 9, indent: int = 2) -> str:
    """The "billion laughs": each anchor a list of ``width`` aliases of the one before."""
    pad = " " * indent
    lines = [f"{pad}l0: &l0 [lol]"]
    for i in range(1, levels + 1):
        lines.append(f"{pad}l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "\n" + "\n".join(lines)


def anchors_in_use(indent: int = 2) -> str:
    """Anchors and aliases as real files use them (shared env, merge keys): must keep working."""
    pad = " " * indent
    return (
        f"\n{pad}base: &base {{cpu: 100m, memory: 64Mi}}"
        f"\n{pad}env: &env [{{name: A, value: '1'}}, {{name: B, value: '2'}}]"
        f"\n{pad}first: {{<<: *base, memory: 128Mi}}"
        f"\n{pad}second: *env"
        f"\n{pad}third: *env"
    )


# ----------------------------------------------------------------------------- archives


def sha256_of(path: Path | str) -> str:
    """Hex sha256 of a file."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass
class Member:
    """One tar member: a file (``data``), directory, symbolic or hard link, or special file."""

    name: str
    kind: bytes = tarfile.REGTYPE
    data: bytes = b""
    link: str = ""
    mode: int = 0o755


def file(name: str, data: bytes = b"x") -> Member:
    """A regular file member."""
    return Member(name, tarfile.REGTYPE, data)


def directory(name: str) -> Member:
    """A directory member."""
    return Member(name, tarfile.DIRTYPE)


def symlink(name: str, target: str) -> Member:
    """A symbolic link member."""
    return Member(name, tarfile.SYMTYPE, link=target)


def hardlink(name: str, target: str) -> Member:
    """A hard link member (tar names its target from the archive's root)."""
    return Member(name, tarfile.LNKTYPE, link=target)


def make_tar(path: Path, members: list[Member]) -> str:
    """Write a .tar.gz of exactly these members, in this order; returns its sha256."""
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for m in members:
            info = tarfile.TarInfo(m.name)
            info.type = m.kind
            info.linkname = m.link
            info.mode = m.mode
            info.size = len(m.data) if m.kind == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(m.data) if info.size else None)
    return sha256_of(path)


def make_zip(path: Path, entries: list[tuple[str, bytes, int]]) -> str:
    """Write a .zip of (name, data, unix mode with file type) entries; returns its sha256."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            zf.writestr(info, data)
    return sha256_of(path)


def long_chain_members(dest: str) -> list[Member]:
    """The CVE-2025-4517 archive: symlinks whose resolved path outgrows PATH_MAX.

    ``os.path.realpath`` (which tarfile's "data" filter relies on) stops resolving once the
    path is too long, so a link at the end of the chain can point anywhere; Python before the
    mid-2025 fixes (3.11.7 here) extracts it and writes ``escape/…`` outside ``dest``.
    """
    steps = "abcdefghijklmnop"
    path_max = os.pathconf(os.path.dirname(dest) or "/", "PC_PATH_MAX")
    component = "d" * ((path_max - len(dest) - 1) // (len(steps) + 1))
    members: list[Member] = []
    path = ""
    for step in steps:
        members.append(directory(os.path.join(path, component)))
        members.append(symlink(os.path.join(path, step), component))
        path = os.path.join(path, component)
    link = os.path.join(*steps, "l" * 254)
    members.append(symlink(link, os.path.join(*[".."] * len(steps))))
    members.append(symlink("escape", os.path.join(link, "..")))
    members.append(hardlink("flaglink", "escape/flag"))
    members.append(file("flaglink", b"overwritten"))
    members.append(file("escape/newfile", b"new"))
    return members


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every path below root (links not followed): file bytes, link targets, "dir"."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = "-> " + os.readlink(p)
            elif os.path.isdir(p):
                out[rel] = "dir"
            else:
                out[rel] = Path(p).read_bytes()
    return out


Maker = Callable[[Path], list[Member]]


# ------------------------------------------------------------------------- paths out of the root

# What a hostile kustomization tries to copy into the build output: a kubeconfig (YAML, so it
# parses as an OpenAPI document or a configuration) and a git-credentials line (the first line
# a parse error would quote). Tests look for the tokens anywhere krm wrote.
PRIVATE_FILES = {
    "kubeconfig.yaml": "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n"
    "  user: {token: SECRET-kubeconfig-token}\n",
    "git-credentials": "https://alice:SECRET-git-token@github.com\n",
}
SECRETS = ("SECRET-kubeconfig-token", "SECRET-git-token")

STARLARK_FN = (
    "apiVersion: example.com/v1\nkind: Fn\nmetadata:\n  name: f\n  annotations:\n"
    "    config.kubernetes.io/function: |\n      starlark:\n        {how}\n"
)
# Copies ctx.open_api() into a ConfigMap of the output.
OPEN_API_TO_CONFIGMAP = (
    'ctx.resource_list["items"].append({"apiVersion": "v1", "kind": "ConfigMap", '
    '"metadata": {"name": "loot"}, "data": {"schema": json.encode(ctx.open_api())}})\n'
)


@dataclass
class RootEscape:
    """A base (``app/base``, under the overlay ``app``) whose kustomization names ``{out}``:
    a file of ``PRIVATE_FILES`` outside both roots, by absolute path. ``files`` are written
    into the base; ``overlay`` is added to the overlay's kustomization."""

    base: str
    out: str = "kubeconfig.yaml"
    files: dict[str, str] | None = None
    overlay: str = ""


ROOT_ESCAPES: dict[str, RootEscape] = {
    # The overlay sets the schema, so the base's openapi: is not read for the schema; a
    # starlark function then reads it through ctx.open_api().
    "openapi-read-by-starlark-after-parent-schema": RootEscape(
        "resources: [r.yaml]\nopenapi: {path: '{out}'}\ntransformers: [fn.yaml]\n",
        files={
            "fn.yaml": STARLARK_FN.format(how="path: fn.star"),
            "fn.star": OPEN_API_TO_CONFIGMAP,
        },
        overlay="openapi: {version: v1.21.2}\n",
    ),
    # kubectl kustomize v5.5.0 refuses this one too (checked): the file is read even though
    # the schema was set already.
    "openapi-after-parent-schema": RootEscape(
        "resources: [r.yaml]\nopenapi: {path: '{out}'}\n", overlay="openapi: {version: v1.21.2}\n"
    ),
    "openapi": RootEscape("resources: [r.yaml]\nopenapi: {path: '{out}'}\n"),
    "crds": RootEscape("resources: [r.yaml]\ncrds: ['{out}']\n"),
    "resources": RootEscape("resources: [r.yaml, '{out}']\n"),
    "configMapGenerator-files": RootEscape("configMapGenerator:\n- name: c\n  files: ['{out}']\n"),
    "configMapGenerator-envs": RootEscape(
        "configMapGenerator:\n- name: c\n  envs: ['{out}']\n", out="git-credentials"
    ),
    "secretGenerator-files": RootEscape("secretGenerator:\n- name: s\n  files: ['{out}']\n"),
    "patches": RootEscape("resources: [r.yaml]\npatches:\n- path: '{out}'\n"),
    "patchesStrategicMerge": RootEscape("resources: [r.yaml]\npatchesStrategicMerge: ['{out}']\n"),
    "replacements": RootEscape("resources: [r.yaml]\nreplacements:\n- path: '{out}'\n"),
    "configurations": RootEscape("resources: [r.yaml]\nconfigurations: ['{out}']\n"),
    "transformers-file": RootEscape("resources: [r.yaml]\ntransformers: ['{out}']\n"),
    "starlark-path": RootEscape(
        "resources: [r.yaml]\ntransformers: [fn.yaml]\n",
        out="git-credentials",
        files={"fn.yaml": STARLARK_FN.format(how="path: '{out}'")},
    ),
    "starlark-url-file": RootEscape(
        "resources: [r.yaml]\ntransformers: [fn.yaml]\n",
        out="git-credentials",
        files={"fn.yaml": STARLARK_FN.format(how="url: 'file://{out}'")},
    ),
    "starlark-path-symlink": RootEscape(
        "resources: [r.yaml]\ntransformers: [fn.yaml]\n",
        out="git-credentials",
        files={"fn.yaml": STARLARK_FN.format(how="path: link.star"), "link.star": "-> {out}"},
    ),
    "helm-valuesFile": RootEscape(
        "helmCharts:\n- name: chart\n  valuesFile: '{out}'\n", files={"charts/chart/x": ""}
    ),
}
