#!/usr/bin/env bash
# Installs dependencies, builds everything and runs the test suite. GPU tests
# skip (and say why) on a machine without a GPU.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/install_deps.sh"
# Every #include must follow the layer graph of docs/architecture.md.
python3 "$top/scripts/check_layers.py" "$top"
export PATH="/usr/local/cuda/bin:$PATH"
build=${BUILD_DIR:-$top/build}
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j"$(nproc)"
# Tests use their own cache directory so a user's cache is never touched.
export JITGEMM_CACHE_DIR="$build/test-cache"
rm -rf "$JITGEMM_CACHE_DIR"
cd "$build"
ctest --output-on-failure -j"$(nproc)" --timeout 900
