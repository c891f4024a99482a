"""A newcomer's first builds, run as one program inside a network namespace with only loopback
(``tests/catalogs/web/test_demo.py`` starts it under ``bwrap --unshare-net``).

As ``scripts/serve.sh`` does: migrate a fresh SQLite file, ``load_demo``, ``runserver``. Then for
each demo function, what its page says: save the functionConfig snippet under its file name, the
kustomization snippet beside a Deployment, and run the page's build line with ``krm``. Writes
``{kind: {"returncode", "stdout", "stderr", "argv"}}`` as JSON to ``argv[2]``.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
KINDS = ("SetNamespace", "SetLogger", "JavaApplication")
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
"""


def _manage(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"manage.py {args[0]} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read().decode()


def _snippets(page: str) -> dict[str, str]:
    found = re.finditer(r'<code id="([^"]+)"[^>]*>(.*?)</code>', page, re.S)
    return {m.group(1): html.unescape(m.group(2)) for m in found}


def main() -> None:
    work, out = Path(sys.argv[1]), Path(sys.argv[2])
    port = sys.argv[3]
    base = f"http://127.0.0.1:{port}"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DJANGO_SETTINGS_MODULE": "registry.settings.base",
        "DATABASE_URL": f"sqlite:///{work / 'db.sqlite3'}",
        "MEDIA_ROOT": str(work / "media"),
        "KRM_ADDR": f"127.0.0.1:{port}",
        "HOME": str(work / "home"),
        "XDG_CACHE_HOME": str(work / "cache"),
        "XDG_CONFIG_HOME": str(work / "config"),
    }
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    _manage(env, "migrate", "-v0")
    _manage(env, "load_demo")
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runserver", env["KRM_ADDR"], "--noreload"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    results = {}
    try:
        for _ in range(300):
            try:
                _get(f"{base}/c/demo/functions/catalog.yaml")
                break
            except OSError:
                time.sleep(0.1)
        for kind in KINDS:
            page = _get(f"{base}/catalogs/demo/functions/functions/example.com/{kind}/")
            snippets = _snippets(page)
            app = work / "apps" / kind
            app.mkdir(parents=True)
            kustomization = snippets["kustomization"]
            config_file = re.findall(r"^- (\S+\.yaml)$", kustomization, re.M)[-1]
            (app / config_file).write_text(snippets["cfg-use"])
            (app / "kustomization.yaml").write_text(kustomization)
            (app / "deployment.yaml").write_text(DEPLOYMENT)
            line = snippets["build-latest"].split()
            assert line[:3] == ["krm", "build", "."], line
            argv = [sys.executable, "-m", "orchestrator", *line[1:]]
            if kind == "SetNamespace":
                argv += ["--container-runtime", "builtin"]
            proc = subprocess.run(
                argv, cwd=app, env=env, capture_output=True, text=True, timeout=120, check=False
            )
            results[kind] = {
                "returncode": proc.returncode,
                "stdout": proc.stdout,
                "stderr": proc.stderr,
                "argv": argv[3:],
            }
    finally:
        server.terminate()
        server.wait(timeout=10)
        out.write_text(json.dumps(results))


if __name__ == "__main__":
    main()
