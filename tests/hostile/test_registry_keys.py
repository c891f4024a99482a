"""Private keys stay out of the source tree and out of images built from it.

The embedded default creates its signing key in KRM_DATA_DIR (outside the tree); ``.dockerignore``
keeps any private key an older checkout left behind out of the build context. The context is
computed here with Docker's own rules for ``.dockerignore`` (Go's ``filepath.Match`` plus ``**``,
later lines win, ``!`` re-includes).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pattern(line: str) -> re.Pattern[str]:
    """A .dockerignore pattern as a regular expression over slash-separated relative paths."""
    text = line.strip().lstrip("/")
    out, i = "", 0
    while i < len(text):
        if text.startswith("**", i):
            # "**/" matches any number of directories, including none.
            out += "(?:.*/)?" if text.startswith("**/", i) else ".*"
            i += 3 if text.startswith("**/", i) else 2
        elif text[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif text[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(text[i]), i + 1
    # A pattern that names a directory excludes everything under it.
    return re.compile(f"^{out}(?:/.*)?$")


def _excluded(path: str) -> bool:
    excluded = False
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if _pattern(line.lstrip("!")).match(path):
            excluded = not negate
    return excluded


@pytest.mark.parametrize(
    "path",
    [
        "signing-key.pem",
        "signing-key.pem.1234.tmp",
        "deploy/secrets/tls.key",
        "registry/settings/prod.pem",
        "keys/client.p12",
        ".env",
        "deploy/.env.production",
        "db.sqlite3",
        "db.sqlite3-journal",
    ],
)
def test_private_keys_and_local_secrets_are_not_in_the_build_context(path):
    assert _excluded(path), f"{path} would be copied into the image by COPY . ."


@pytest.mark.parametrize(
    "path", ["manage.py", "catalogs/publishing/services.py", "registry/settings/base.py"]
)
def test_the_code_is_in_the_build_context(path):
    assert not _excluded(path)


def _default_key_file(env: dict[str, str]) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNING_", "KRM_DATA"))}
    clean.pop("XDG_DATA_HOME", None)
    code = "from registry.settings import base; print(base.SIGNING_KEY_FILE)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return result.stdout.strip()


def test_the_development_signing_key_lives_outside_the_tree(tmp_path):
    found = _default_key_file({"HOME": str(tmp_path)})
    assert found == str(tmp_path / ".local/share/krm-registry/signing-key.pem")
    assert not Path(found).resolve().is_relative_to(ROOT)
    assert _default_key_file({"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "x")}) == (
        str(tmp_path / "x/krm-registry/signing-key.pem")
    )
    assert _default_key_file({"KRM_DATA_DIR": str(tmp_path / "d")}) == str(
        tmp_path / "d/signing-key.pem"
    )
