#!/usr/bin/env bash
# The main job. With a GPU: the benchmark suite against cuBLAS, written to
# bench/results/. Without one: an offline warm-up of the cache for sm_90a from
# the seed workloads' manifests, so a deployment starts with zero compiles.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/install_deps.sh"
export PATH="/usr/local/cuda/bin:$PATH"
build=${BUILD_DIR:-$top/build}
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJITGEMM_BUILD_TESTS=OFF
cmake --build "$build" -j"$(nproc)"
if nvidia-smi -L >/dev/null 2>&1; then
  mkdir -p "$top/bench/results"
  out="$top/bench/results/$(date +%Y-%m-%d)-$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '_').csv"
  "$build/tools/jitgemm-bench" --suite=S1,S2,S6,chain --csv="$out" "$@"
  echo "results: $out"
else
  echo "no GPU found: warming the cache for sm_90a instead (JITGEMM_CACHE_DIR=${JITGEMM_CACHE_DIR:-default})"
  "$build/tools/jitgemm-warmup" --arch=sm_90a "$top"/examples/manifests/*.json "$@"
fi
