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
# The Python op tests need PyTorch (about 1 minute and 5 GB from PyPI); a venv
# in the build directory keeps it off the system. JITGEMM_NO_TORCH=1 skips it,
# and the op tests then report a skip.
py_args=()
if [ "${JITGEMM_NO_TORCH:-0}" != 1 ] && python3 -m venv -h >/dev/null 2>&1; then
  venv="$build/pyenv"
  if ! "$venv/bin/python" -c "import torch" >/dev/null 2>&1; then
    python3 -m venv "$venv" && "$venv/bin/pip" install --quiet torch ||
      echo "warning: PyTorch did not install; the Python op tests will skip" >&2
  fi
  [ -x "$venv/bin/python" ] && py_args=(-DJITGEMM_PYTHON="$venv/bin/python")
fi
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DJITGEMM_REQUIRE_REMOTE_CACHE=ON "${py_args[@]}"
cmake --build "$build" -j"$(nproc)"
# The package as a user installs it (pip install ./python, scikit-build-core):
# build it into a folder and import it from there, with no JITGEMM_LIBRARY.
if [ "${JITGEMM_NO_WHEEL:-0}" != 1 ]; then
  pyroot="$build/python-check"
  PYTHON="${venv:-$build}/bin/python"
  [ -x "$PYTHON" ] || PYTHON=python3
  PYTHON="$PYTHON" bash "$top/python/build_local.sh" "$pyroot"
  env -u JITGEMM_LIBRARY JITGEMM_CACHE_DIR="$build/test-cache" PYTHONPATH="$pyroot" "$PYTHON" -c \
    "import jitgemm; s = jitgemm.cache_stats(); print('python package: imports,', jitgemm.library_path(), 'loads, cache', s['mode'])"
fi
# Tests use their own cache directory so a user's cache is never touched.
export JITGEMM_CACHE_DIR="$build/test-cache"
rm -rf "$JITGEMM_CACHE_DIR"
cd "$build"
status=0
ctest --output-on-failure -j"$(nproc)" --timeout 900 || status=$?
# ctest lists a skipped test's name, not why: the reasons, with their counts
# (on a machine without a GPU, the GPU tests' "no CUDA device").
grep -A1 ': Skipped$' Testing/Temporary/LastTest.log 2>/dev/null |
  grep -v -e ': Skipped$' -e '^--$' | sort | uniq -c | sort -rn | sed 's/^ */skipped: /' || true
exit "$status"
