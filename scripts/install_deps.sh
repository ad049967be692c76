#!/usr/bin/env bash
# Installs the build dependencies from Debian's packages (root or sudo).
# The CUDA 13 toolkit itself is expected at /usr/local/cuda or on PATH.
set -euo pipefail
pkgs=(cmake ninja-build g++ libabsl-dev libxxhash-dev nlohmann-json3-dev libssl-dev libgtest-dev
      libgmock-dev python3 libhiredis-dev redis-server)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${missing[@]}"
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "error: the CUDA 13 toolkit was not found (nvcc); install it first" >&2
  exit 1
fi
