#!/usr/bin/env bash
# Builds the GPU test and bench binaries and gathers them, with the shared
# libraries they need that a bare CUDA machine lacks (Abseil, xxHash), into one
# folder (default .carry/) that can be copied to a GPU machine and run there
# with scripts/gpu_session.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
out=${1:-$top/.carry}
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=(gpu_test jitgemm)
for t in jitgemm-bench jitgemm-warmup jitgemm-cache jitgemm-latency cublas_backend_test \
         bench_support_test bench_activation_kernel_test bench_glu_kernel_test grouped_mlp; do
  if ninja -C "$build" -t targets all 2>/dev/null | grep -q "^$t:"; then targets+=("$t"); fi
done
cmake --build "$build" --target "${targets[@]}" -j"$(nproc)"
rm -rf "$out"
mkdir -p "$out/lib"
for bin in $(find "$build" -type f -perm -u+x \( -name gpu_test -o -name 'jitgemm-*' -o -name '*gpu_test' -o -name cublas_backend_test \
    -o -name 'bench_*_test' -o -name grouped_mlp \) ! -path '*CMakeFiles*'); do
  cp "$bin" "$out/"
done
cp -P "$build"/api/libjitgemm.so* "$out/lib/"
for f in "$out"/*; do
  [ -f "$f" ] || continue
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3}' | grep -E 'libabsl|libxxhash|libjitgemm|libgtest|libgmock|libcrypto|libhiredis' || true
done | sort -u | while read -r lib; do cp -L "$lib" "$out/lib/"; done
# Debug info is not needed there and would push the folder past what travels.
find "$out" -type f \( -perm -u+x -o -name '*.so*' \) -exec strip --strip-debug {} + 2>/dev/null || true
# Debian's redis-server and the libraries it needs beyond the C runtime, for
# scripts/remote_cache_demo.sh (the GPU machine has neither the package nor a
# network). Its libraries go to lib/redis/, used for it alone. The binary
# decides by its name to be the server, so it keeps that name.
if redis=$(command -v redis-server); then
  mkdir -p "$out/lib/redis"
  cp -L "$redis" "$out/redis-server"
  ldd "$redis" | awk '/=> \//{print $3}' |
    grep -vE '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$out/lib/redis/"; done
else
  echo "warning: redis-server not found; the carry cannot run scripts/remote_cache_demo.sh" >&2
fi
cp "$top/scripts/remote_cache_demo.sh" "$out/"
cp "$top/scripts/gpu_session.sh" "$out/"
cp -r "$top/examples/manifests" "$out/"
du -sh "$out"
