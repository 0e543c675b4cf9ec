#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian packages sandboxd needs to build, run and test.
# Idempotent: does nothing when everything is installed.
set -euo pipefail

PACKAGES=(
  # build
  gcc make meson ninja-build pkg-config clang-format
  libmicrohttpd-dev libcurl4-openssl-dev libjansson-dev libseccomp-dev libyaml-dev
  libsodium-dev uthash-dev libcmocka-dev libhttp-parser-dev
  # the state store in PostgreSQL (--state-store): libpq to build; the server for the tests
  # and benchmarks, which start their own in a temporary directory
  libpq-dev postgresql
  # fuzz targets (make build-fuzz): clang and its libFuzzer/sanitizer runtimes
  clang libclang-rt-14-dev
  # the interpreter inside the jail and the libraries templates use there
  python3 python3-jinja2 python3-jsonschema python3-yaml
  # data work in the jail (the datascience profile); they pull in BLAS, fonts and their data
  python3-numpy python3-pandas python3-matplotlib
  # the code interpreter's display formatter (E2B's runCode results; docs/E2B.md)
  python3-ipython
  # tests and benchmarks
  python3-pytest python3-pyflakes valgrind curl wrk bubblewrap util-linux procps iproute2 nodejs npm
  python3-jupyter-client python3-ipykernel python3-fastapi python3-uvicorn
  # the console in a real browser (tests/node/console.mjs drives it with puppeteer-core)
  chromium
  # deployment: the local HAProxy cluster, the container image (make image) and its test
  haproxy podman runc mmdebstrap python3-dnslib
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
# nodejs from another repository may bundle npm; accept any working npm.
if [[ " ${missing[*]} " == *" npm "* ]] && command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]}"
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "deps: installing ${missing[*]}"
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=(sudo); else
    echo "deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  "${SUDO[@]}" apt-get update -q
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
