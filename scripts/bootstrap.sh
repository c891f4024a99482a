#!/usr/bin/env bash
# Creates .venv and installs the project into it. Usage: scripts/bootstrap.sh [dev]
# Re-installs only when the requirement files changed (a stamp file records their hash).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
want="requirements.txt"
[ "${1:-}" = "dev" ] && want="requirements-dev.txt"

if [ ! -x .venv/bin/python ]; then
    echo "==> creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
fi

stamp=".venv/.installed-$(basename "$want" .txt)"
digest=$(cat requirements*.txt pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$digest" ]; then
    echo "==> installing $want into .venv"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$want"
    # "compat" editable mode: a .pth path entry instead of setuptools' import finder, which
    # imports pathlib and friends at every interpreter start (about 6% of a small krm build).
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e . \
        --config-settings editable_mode=compat
    # Python 3.11's venv module installs setuptools, whose distutils-precedence.pth imports a
    # module at every interpreter start (~0.5 ms of each krm run). Nothing installed here
    # needs it at run time (pip builds packages in isolated environments), and Python 3.12's
    # venvs leave it out: so do we, unless a requirement asks for it.
    if .venv/bin/python -m pip show setuptools 2>/dev/null | grep -qx "Required-by: *"; then
        .venv/bin/python -m pip uninstall --quiet --yes setuptools
    fi
    echo "$digest" > "$stamp"
fi
