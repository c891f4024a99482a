"""``krm build``'s quick argument parser (no argparse on a plain command line) against argparse.

The quick parser must give exactly argparse's answer for what it accepts, and hand everything
else (help, abbreviations, bad values, repeated paths) to argparse.
"""

from __future__ import annotations

import pytest

from orchestrator import cli

SAME = [
    ["build"],
    ["build", "app"],
    ["build", ""],
    ["build", "app", "-o", "out.yaml"],
    ["build", "-o", "out.yaml", "app"],
    ["build", "--output", "out.yaml", "app"],
    ["build", "--output=out.yaml", "app"],
    ["build", "--output=-odd", "app"],
    ["build", "app", "--load-restrictor", "LoadRestrictionsNone"],
    ["build", "app", "--load-restrictor=LoadRestrictionsNone"],
    ["build", "--reorder", "none", "app", "--reorder=legacy"],
    ["build", "app", "--no-cache", "--debug", "--enable-helm", "--helm-command", "/bin/helm"],
    ["build", "app", "--enable-exec", "--enable-alpha-plugins", "--network", "--offline"],
    ["build", "app", "--skip-schema", "--strict-catalogs", "--results-dir", "res"],
    ["build", "app", "--container-runtime", "podman"],
    ["build", "app", "--trusted-catalog", "a.yaml", "--trusted-catalog=https://x/c.yaml"],
    ["build", "app", "--catalog-key", "k.pub", "--mount", "type=bind,src=a,dst=b"],
    ["build", "app", "-e", "A=1", "--env", "B", "--env=C=3"],
    ["build", "app", "--stack-trace", "--enable-managedby-label", "--as-current-user"],
    ["build", "app", "--network-name", "kind", "--network-name=bridge"],
]

FALLBACK = [
    [],
    ["view", "catalog", "x"],
    ["--debug", "build", "app"],
    ["build", "-h"],
    ["build", "--help"],
    ["build", "a", "b"],
    ["build", "--out", "x"],  # an abbreviation: argparse's to accept
    ["build", "-ox"],
    ["build", "-o"],
    ["build", "-o", "-x"],
    ["build", "--reorder", "sideways"],
    ["build", "--container-runtime=lxc"],
    ["build", "--no-cache=yes"],
    ["build", "-o=x"],
    ["build", "--", "app"],
    ["build", "-"],
]


@pytest.mark.parametrize("argv", SAME, ids=" ".join)
def test_plain_command_lines_parse_as_argparse_parses_them(argv: list[str]) -> None:
    quick = cli._quick_build_args(argv)
    assert quick is not None
    assert vars(quick) == vars(cli._parser().parse_args(argv))


@pytest.mark.parametrize("argv", FALLBACK, ids=" ".join)
def test_anything_else_is_left_to_argparse(argv: list[str]) -> None:
    assert cli._quick_build_args(argv) is None


def test_defaults_are_not_shared_between_parses() -> None:
    first = cli._quick_build_args(["build", "-e", "A=1"])
    second = cli._quick_build_args(["build"])
    assert first is not None and second is not None
    assert first.env == ["A=1"] and second.env == [] and cli._BUILD_DEFAULTS["env"] == []
