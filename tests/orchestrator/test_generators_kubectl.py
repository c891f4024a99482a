"""Differential tests: our generators + hash against the real ``kubectl kustomize`` (v5.5.0).

Seeded random literals, env files and file contents (text, unicode, binary, long) are written
to tmp_path, built once by kubectl per seed, and every generated object must equal ours.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.errors import ValidationError
from orchestrator.filters import configmapgenerator, hash, secretgenerator
from orchestrator.filters.generatorutil import fold_nel

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (the oracle) is not installed")

_KEY_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
# Everything that stresses the encoders: quotes, '=', '#', '$', HTML characters (Go's json
# escapes them), JS line separators, control characters, non-ASCII, astral characters.
_VALUE_CHARS = (
    "abcXYZ019 \t'\"=#$<>&\\/:,.{}[]!%*|-"
    "\x01\x1f\x85\x85  \u00e9\u00a0\u2028\u2029\u65e5\u672c\U0001f600\ufeff"
)


def kubectl_build(path: Path) -> list[dict[str, Any]]:
    """Run the oracle; every scalar comes back as its YAML text (BaseLoader)."""
    proc = subprocess.run(
        [KUBECTL, "kustomize", str(path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return [doc for doc in yaml.load_all(proc.stdout, Loader=yaml.BaseLoader) if doc]


def as_text(value: Any) -> Any:
    """Our object with scalars as YAML text, to compare with the BaseLoader view of kubectl's.

    kustomize's output step folds NEL (U+0085) in every string (the writer's job, not the
    generator's: the hash is computed on the raw value), so that is applied here too.
    """
    if isinstance(value, str):
        return fold_nel(value)
    if isinstance(value, dict):
        return {k: as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_text(v) for v in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _key(rng: random.Random, used: set[str]) -> str:
    while True:
        key = rng.choice("abcdefghijklmnopqrstuvwxyzABC") + "".join(
            rng.choice(_KEY_CHARS) for _ in range(rng.randint(0, 12))
        )
        if key not in used:
            used.add(key)
            return key


def _text(rng: random.Random, low: int = 0, high: int = 30, newlines: bool = False) -> str:
    chars = _VALUE_CHARS + ("\n\r" if newlines else "")
    return "".join(rng.choice(chars) for _ in range(rng.randint(low, high)))


def _env_file(rng: random.Random, used: set[str]) -> bytes:
    lines = []
    for _ in range(rng.randint(0, 8)):
        kind = rng.random()
        if kind < 0.15:
            lines.append("# " + _text(rng))
        elif kind < 0.25:
            lines.append(rng.choice(["", "   ", "\t"]))
        elif kind < 0.35:
            lines.append(_key(rng, used))  # KEY without '=': empty value
        else:
            value = _text(rng).replace("\r", "")
            indent = rng.choice(["", "", " ", "\t "])
            lines.append(f"{indent}{_key(rng, used)}={value}")
    ending = rng.choice(["\n", "\r\n"])
    text = ending.join(lines) + rng.choice(["", ending])
    data = text.encode("utf-8")
    if rng.random() < 0.3:
        data = b"\xef\xbb\xbf" + data
    return data


def _file_content(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.25:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))  # binary
    if kind < 0.35:
        return b""
    if kind < 0.5:
        return ("x" * rng.randint(60, 200)).encode()  # long: base64 line breaks
    return _text(rng, 0, 120, newlines=True).encode("utf-8")


def _generator(
    rng: random.Random, gdir: Path, index: int, kind: str
) -> tuple[dict[str, Any], dict[str, bytes]]:
    used: set[str] = set()
    files: dict[str, bytes] = {}
    args: dict[str, Any] = {"name": f"{kind.lower()}-{index}"}
    literals = []
    for _ in range(rng.randint(0, 5)):
        value = _text(rng, newlines=rng.random() < 0.3)
        if rng.random() < 0.2:
            quote = rng.choice("'\"")
            value = quote + value + quote
        literals.append(f"{_key(rng, used)}={value}")
    if literals:
        args["literals"] = literals
    envs = []
    for e in range(rng.randint(0, 2)):
        name = f"g{index}-{e}.env"
        files[name] = _env_file(rng, used)
        envs.append(name)
    if envs:
        if len(envs) == 1 and rng.random() < 0.5:
            args["env"] = envs[0]
        else:
            args["envs"] = envs
    sources = []
    for f in range(rng.randint(0, 3)):
        name = f"sub/g{index}-{f}.dat"
        files[name] = _file_content(rng)
        key = _key(rng, used)
        # With no explicit key the basename is the key; keep it unique too.
        sources.append(f"{key}={name}" if rng.random() < 0.6 else name)
        if "=" not in sources[-1]:
            used.discard(key)
            assert name.rsplit("/", 1)[1] not in used
            used.add(name.rsplit("/", 1)[1])
    if sources:
        args["files"] = sources
    if kind == "Secret" and rng.random() < 0.3:
        args["type"] = rng.choice(["kubernetes.io/tls", "Opaque", "example.com/custom"])
    if rng.random() < 0.4:
        options: dict[str, Any] = {}
        if rng.random() < 0.5:
            options["labels"] = {"tier": _text(rng, 1, 8).strip() or "x", "local": "yes"}
        if rng.random() < 0.5:
            options["annotations"] = {"note": _text(rng, 0, 20)}
        if rng.random() < 0.3:
            options["disableNameSuffixHash"] = True
        if rng.random() < 0.3:
            options["immutable"] = True
        args["options"] = options
    for name, data in files.items():
        (gdir / name).parent.mkdir(parents=True, exist_ok=True)
        (gdir / name).write_bytes(data)
    return args, files


def _sanitize_labels(args: dict[str, Any]) -> None:
    # Label values pass through kubectl untouched but must be YAML-safe strings; keep them simple.
    labels = (args.get("options") or {}).get("labels")
    if labels:
        # "v" prefix: Go's YAML 1.1 reader would take a bare "y" or "n" for a boolean.
        labels["tier"] = "v" + "".join(c for c in labels["tier"] if c.isascii() and c.isalnum())


@pytest.mark.parametrize("seed", range(12))
def test_random_generators_match_kubectl(tmp_path, seed):
    rng = random.Random(seed)
    kust: dict[str, Any] = {"configMapGenerator": [], "secretGenerator": []}
    if rng.random() < 0.5:
        kust["generatorOptions"] = {"labels": {"global": "g", "local": "no"}}
        if rng.random() < 0.3:
            kust["generatorOptions"]["annotations"] = {"global-note": "hi"}
    all_files: dict[str, bytes] = {}
    for i in range(8):
        for kind, key in (("ConfigMap", "configMapGenerator"), ("Secret", "secretGenerator")):
            args, files = _generator(rng, tmp_path, i, kind)
            _sanitize_labels(args)
            kust[key].append(args)
            all_files.update(files)
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kust, allow_unicode=False))
    actual = {(d["kind"], d["metadata"]["name"]): d for d in kubectl_build(tmp_path)}

    ours = []
    for key, module in (
        ("configMapGenerator", configmapgenerator),
        ("secretGenerator", secretgenerator),
    ):
        for args in kust[key]:
            res = module.generate(
                args, options=kust.get("generatorOptions"), read_file=all_files.__getitem__
            )
            if res.needs_hash:
                res.rename(name=f"{res.name}-{hash.content_hash(res.obj)}")
            ours.append(res)
    assert len(actual) == len(ours)
    for res in ours:
        key = (res.kind, res.name)
        assert key in actual, f"{key} not in kubectl output {sorted(actual)}"
        assert as_text(res.obj) == actual[key], key


def test_behavior_merge_and_replace_across_overlay_match_kubectl(tmp_path):
    rng = random.Random(99)
    base, overlay = tmp_path / "base", tmp_path / "overlay"
    base.mkdir()
    overlay.mkdir()
    base_k: dict[str, Any] = {"configMapGenerator": [], "secretGenerator": []}
    over_k: dict[str, Any] = {
        "resources": ["../base"],
        "configMapGenerator": [],
        "secretGenerator": [],
    }
    files: dict[str, bytes] = {}
    behaviors = ["merge", "replace", "merge", "create"]
    for i, behavior in enumerate(behaviors):
        for kind, key in (("ConfigMap", "configMapGenerator"), ("Secret", "secretGenerator")):
            args, fb = _generator(rng, base, i, kind)
            _sanitize_labels(args)
            base_k[key].append(args)
            files.update({f"base/{k}": v for k, v in fb.items()})
            o_args, fo = _generator(rng, overlay, i + 100, kind)
            _sanitize_labels(o_args)
            if behavior != "create":
                o_args["name"] = args["name"]
                o_args["behavior"] = behavior
            over_k[key].append(o_args)
            files.update({f"overlay/{k}": v for k, v in fo.items()})
    (base / "kustomization.yaml").write_text(yaml.safe_dump(base_k))
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(over_k))
    actual = {(d["kind"], d["metadata"]["name"]): d for d in kubectl_build(overlay)}

    generated = {}
    for key, module in (
        ("configMapGenerator", configmapgenerator),
        ("secretGenerator", secretgenerator),
    ):
        for args in base_k[key]:
            res = module.generate(args, options=None, read_file=lambda p: files[f"base/{p}"])
            generated[(res.kind, res.name)] = res
        for args in over_k[key]:
            res = module.generate(args, options=None, read_file=lambda p: files[f"overlay/{p}"])
            if res.behavior == "create":
                generated[(res.kind, res.name)] = res
            else:
                module.merge_into(generated[(res.kind, res.name)], res)
    assert len(actual) == len(generated)
    for res in generated.values():
        if res.needs_hash:
            res.rename(name=f"{res.name}-{hash.content_hash(res.obj)}")
        key = (res.kind, res.name)
        assert key in actual, f"{key} not in kubectl output {sorted(actual)}"
        assert as_text(res.obj) == actual[key], key


@pytest.mark.parametrize("char", ["\x7f", "\x80", "\x9f", "\ufffe", "\uffff"])
def test_unreadable_characters_in_arguments_fail_like_kubectl(tmp_path, char):
    args = {"name": "c", "literals": [f"a=x{char}y"]}
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({"configMapGenerator": [args]}, allow_unicode=True), encoding="utf-8"
    )
    proc = subprocess.run([KUBECTL, "kustomize", str(tmp_path)], capture_output=True, text=True)
    message = "builtin ConfigMapGenerator marshal: yaml: control characters are not allowed"
    assert proc.returncode != 0
    assert message in proc.stderr
    with pytest.raises(ValidationError) as err:
        configmapgenerator.generate(args, options=None, read_file=lambda p: b"")
    assert err.value.message == message


@pytest.mark.parametrize("char", ["\x85", "\xa0", "\ufeff", "\u2028", "\U0001f600", "\x01"])
def test_readable_characters_in_arguments_pass_like_kubectl(tmp_path, char):
    args = {"name": "c", "literals": [f"a=x{char}y"]}
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({"configMapGenerator": [args]}, allow_unicode=True), encoding="utf-8"
    )
    (doc,) = kubectl_build(tmp_path)
    res = configmapgenerator.generate(args, options=None, read_file=lambda p: b"")
    res.rename(name=f"c-{hash.content_hash(res.obj)}")
    assert as_text(res.obj) == doc


def test_unreadable_characters_in_configmap_data_fail_but_not_in_secrets(tmp_path):
    # DEL (and C1 controls) cannot pass kustomize's YAML round trips as text; base64 can.
    (tmp_path / "a.env").write_bytes(b"A=x\x7fy\n")
    secret = {"name": "s", "envs": ["a.env"]}
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({"secretGenerator": [secret]}))
    (doc,) = kubectl_build(tmp_path)
    res = secretgenerator.generate(
        secret, options=None, read_file=lambda p: (tmp_path / p).read_bytes()
    )
    res.rename(name=f"s-{hash.content_hash(res.obj)}")
    assert as_text(res.obj) == doc

    cm = {"name": "c", "envs": ["a.env"]}
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({"configMapGenerator": [cm]}))
    proc = subprocess.run([KUBECTL, "kustomize", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "yaml: control characters are not allowed" in proc.stderr
    with pytest.raises(ValidationError) as err:
        configmapgenerator.generate(
            cm, options=None, read_file=lambda p: (tmp_path / p).read_bytes()
        )
    assert err.value.message == (
        "configMapGenerator 'c': data key 'A': yaml: control characters are not allowed"
    )


ENV_FILES = {
    "weird-keys.env": b"export A=1\nB =2\nC= 3\n  D=4  \n#E=5\n F#=6\n",
    "carriage-returns.env": b"A=x\ry\r\nB=z\r\r\nC=\r\n",
    "bom-only.env": b"\xef\xbb\xbf",
    "bom-comment.env": b"\xef\xbb\xbf# c\nA=1",
    "empty.env": b"",
    "equals.env": b"A==\nB=a=b\nC\n=D\n",
    "quotes.env": b"A='x'\nB=\"y\"\nC='z\"\n",
    "unicode.env": "K\u00e9=\u65e5\u672c\nL=\u2028\u2029<&>\n\u00a0M=x\n".encode(),
}


@pytest.mark.parametrize("name", sorted(ENV_FILES))
def test_env_file_edge_cases_match_kubectl(tmp_path, name):
    (tmp_path / name).write_bytes(ENV_FILES[name])
    args = {"name": "c", "envs": [name]}
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({"configMapGenerator": [args], "secretGenerator": [dict(args, name="s")]})
    )
    actual = {d["kind"]: d for d in kubectl_build(tmp_path)}
    read = lambda p: (tmp_path / p).read_bytes()  # noqa: E731
    for module, secret_args in (
        (configmapgenerator, args),
        (secretgenerator, dict(args, name="s")),
    ):
        res = module.generate(secret_args, options=None, read_file=read)
        res.rename(name=f"{res.name}-{hash.content_hash(res.obj)}")
        assert as_text(res.obj) == actual[res.kind]


def test_unknown_behavior_builds_like_create_in_kubectl(tmp_path):
    args = {"name": "c", "behavior": "upsert", "literals": ["a=1"]}
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({"configMapGenerator": [args]}))
    (doc,) = kubectl_build(tmp_path)
    res = configmapgenerator.generate(args, options=None, read_file=lambda p: b"")
    assert res.behavior == "create"
    res.rename(name=f"c-{hash.content_hash(res.obj)}")
    assert as_text(res.obj) == doc
