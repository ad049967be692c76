#!/usr/bin/env bash
# Builds the jitgemm Python package into OUTDIR as a self-contained folder:
# the package, libjitgemm.so, and the shared libraries it needs that a bare
# CUDA machine lacks (Abseil, xxHash, hiredis, libcrypto), so that on a GPU
# machine with the CUDA 13 runtime and PyTorch
#   PYTHONPATH=OUTDIR python3 examples/pytorch/seed003_small_m_linear.py
# works with nothing installed. Uses pip and scikit-build-core, as
# `pip install ./python` does; the CMake build directory is kept in
# build/python-package between runs (ccache is used when present).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: python/build_local.sh OUTDIR}
python=${PYTHON:-python3}
export PATH="/usr/local/cuda/bin:$PATH"
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_ARGS="${CMAKE_ARGS:-} -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
fi
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/jitgemm" "$out"/jitgemm-*.dist-info
"$python" -m pip install --quiet --no-deps --target "$out" \
  -C build-dir="$top/build/python-package" "$top/python"
lib="$out/jitgemm/lib"
# One copy of the library under its SONAME is all the loader needs.
rm -f "$lib/libjitgemm.so" "$lib/libjitgemm.so.0.1.0"
rm -rf "$lib/cmake" "$out/jitgemm/include"
ldd "$lib/libjitgemm.so.0" | awk '/=> \//{print $3}' | grep -E 'libabsl|libxxhash|libcrypto|libhiredis' |
  sort -u | while read -r dep; do cp -L "$dep" "$lib/"; done
strip --strip-debug "$lib"/*.so* 2>/dev/null || true
if ldd "$lib/libjitgemm.so.0" | grep -q "not found"; then
  echo "warning: libjitgemm.so.0 still misses libraries here:" >&2
  ldd "$lib/libjitgemm.so.0" | grep "not found" >&2
fi
du -sh "$out"
