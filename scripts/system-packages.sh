#!/usr/bin/env bash
# Installs the Debian packages the test suite talks to, when they are missing:
#   docker-registry  a real OCI registry for the mirroring tests
#   skopeo           a real OCI client for the registry's /v2/ endpoint tests (and pushes the
#                    builtin container runtime's test images)
#   umoci            builds the builtin container runtime's test images (OCI layouts)
#   busybox          busybox-static: the one static program those test images hold
#   chromium         the browser the web UI tests drive (with chromium-driver)
#   git              git sources for the mirroring tests
#   bwrap            bubblewrap, the jail of the builtin container runtime and of the trial
#                    sandbox (orchestrator/functions/jail.py, used by catalogs/review/sandbox.py)
#   setpriv          util-linux: run as root, the jail starts bwrap as nobody with it
#   nginx            the deployed serving path in front of gunicorn (tests/deploy/test_nginx.py,
#                    bench/serve_catalog.py run deploy/nginx/krm-registry.conf.template)
#   wrk              the HTTP load generator of the serving benchmarks (their parser's tests)
#   zsh, fish        the shells `krm completion` writes scripts for (their tests run them)
# kubectl (the kustomize oracle) is part of this project's machine image; its absence is reported.
set -euo pipefail

declare -A need=([docker-registry]=docker-registry [skopeo]=skopeo [umoci]=umoci [busybox]=busybox-static [chromium]="chromium chromium-driver" [git]=git [bwrap]=bubblewrap [setpriv]=util-linux [nginx]=nginx-light [wrk]=wrk [zsh]=zsh [fish]=fish)
missing=()
for cmd in "${!need[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=(${need[$cmd]})
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "==> installing Debian packages: ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v kubectl >/dev/null 2>&1; then
    echo "warning: kubectl is not on PATH; the differential tests against kustomize will fail" >&2
fi
