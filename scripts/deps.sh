#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install the Debian 12 packages wharf needs to build, run and test. Idempotent:
# only missing packages are installed, so a second run is a no-op.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev llvm
  clang-format-14 clang-tidy-14
  libmicrohttpd-dev libcurl4-openssl-dev libssl-dev libfabric-dev libfabric-bin
  libsqlite3-dev libjansson-dev libexpat1-dev libisal-dev libinih-dev libsystemd-dev
  postgresql-15 postgresql-client-15 libpq-dev
  python3 python3-pytest python3-numpy python3-torch python3-boto3 python3-matplotlib
  python3-venv python3-fsspec python3-mypy patchelf
  awscli s3cmd rclone nginx-light curl
  help2man debhelper prometheus
  chromium chromium-driver python3-selenium
)
[ "${1:-}" = "--list" ] && { printf '%s\n' "${PKGS[@]}"; exit 0; }

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# nginx-light's package starts a system nginx on :80; the bench starts its own on loopback.
if command -v systemctl >/dev/null 2>&1; then $SUDO systemctl disable --now nginx >/dev/null 2>&1 || true; fi
$SUDO service nginx stop >/dev/null 2>&1 || true
# prometheus's package starts a system Prometheus on :9090; tests/ops starts its own on loopback.
if command -v systemctl >/dev/null 2>&1; then $SUDO systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 || true; fi
