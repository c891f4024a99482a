"""The MkDocs site builds strictly, the CLI page is the real help, and every command in it parses.

Running every documented command needs servers and registries, so each `krm …`, `python -m
orchestrator …` and `manage.py …` line of the docs' (and README's) shell blocks is parsed by the
real command's argument parser: a renamed subcommand or flag fails here.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class
from django.core.management.base import CommandError

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SHELL_BLOCK = re.compile(r"^```(?:sh|bash|console|shell)\n(.*?)^```", re.M | re.S)


def _load_cli_reference():
    return load_script("scripts/cli_reference.py", "cli_reference")


def _shell_lines(path: Path) -> list[str]:
    lines: list[str] = []
    for block in SHELL_BLOCK.findall(path.read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip():
                lines.append(line)
    return lines


def _documented_commands() -> list[tuple[str, list[str]]]:
    """(where, argv) of every krm / manage.py command in the docs and README."""
    found = []
    for path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        for line in _shell_lines(path):
            words = shlex.split(line, comments=True)
            # The command ends where a pipe or a redirection begins.
            cut = [i for i, w in enumerate(words) if w in ("|", ">", ">>", "<", "&&", ";")]
            words = words[: cut[0]] if cut else words
            if not words:
                continue
            where = f"{path.relative_to(ROOT)}: {line.strip()}"
            if words[0].endswith("krm"):
                found.append((where, words))
            elif "manage.py" in words:
                found.append((where, words[words.index("manage.py") :]))
            elif words[:3] == [words[0], "-m", "orchestrator"] and "python" in words[0]:
                found.append((where, ["krm", *words[3:]]))
    return found


def check_command(argv: list[str]) -> None:
    """Parse argv with the real parser of `krm` or of the management command; raise if invalid."""
    if argv[0].endswith("krm"):
        from orchestrator.cli import _parser

        try:
            _parser().parse_args(argv[1:])
        except SystemExit as exc:
            if exc.code:
                raise AssertionError(f"krm refuses {argv[1:]}") from None
        return
    name, args = argv[1], argv[2:]
    commands = get_commands()
    if name not in commands:
        raise AssertionError(f"no management command {name!r}")
    parser = load_command_class(commands[name], name).create_parser("manage.py", name)
    try:
        parser.parse_args(args)
    except (CommandError, SystemExit) as exc:
        raise AssertionError(f"manage.py {name} refuses {args}: {exc}") from None


def test_mkdocs_build_is_strict_and_every_link_resolves(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    for page in ["guide/platform", "guide/developer", "guide/function-author", "guide/operator"]:
        assert (tmp_path / "site" / page / "index.html").is_file()
    for page in ["catalog-format", "cli", "api", "operations", "composition", "oci"]:
        assert (tmp_path / "site" / page / "index.html").is_file()


def test_cli_reference_matches_the_real_help():
    expected = _load_cli_reference().render()
    assert (DOCS / "cli.md").read_text() == expected, (
        "docs/cli.md is stale: run .venv/bin/python scripts/cli_reference.py"
    )


def test_docs_show_commands_of_every_kind():
    argvs = [argv for _, argv in _documented_commands()]
    krm = {a[1] for a in argvs if a[0].endswith("krm")}
    manage = {a[1] for a in argvs if a[0] == "manage.py"}
    assert {"build", "view", "fn"} <= krm
    assert {"import_catalog", "sync_source", "migrate", "createsuperuser"} <= manage


@pytest.mark.parametrize(("where", "argv"), _documented_commands(), ids=lambda v: str(v)[:80])
def test_documented_command_parses(where, argv):
    check_command(argv)


def test_documented_scripts_exist():
    scripts = set()
    for path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        for line in _shell_lines(path):
            words = shlex.split(line, comments=True)
            scripts.update(w for w in words[:1] if w.startswith(("scripts/", ".ci/")))
    assert "scripts/serve.sh" in scripts
    missing = sorted(s for s in scripts if not (ROOT / s).is_file())
    assert missing == []


@pytest.mark.parametrize(
    "argv",
    [
        ["krm", "build", ".", "--no-such-flag"],
        ["krm", "biuld", "."],
        ["krm", "build", "--reorder", "sideways"],
        ["manage.py", "import_catalog", "catalog.yaml"],  # --publisher and --catalog are required
        ["manage.py", "sync_source", "upstream", "--progress"],
        ["manage.py", "no_such_command"],
    ],
)
def test_a_wrong_command_is_caught(argv):
    with pytest.raises(AssertionError):
        check_command(argv)
