#!/usr/bin/env bash
# On a GPU machine with PyTorch: the ops' GPU check and the four seed examples,
# with the jitgemm package on PYTHONPATH (a folder made by python/build_local.sh,
# or an installed package). Logs, tables (CSV) and plots (PNG) go to $OUT (or
# ./pytorch-logs).
#   PYTHONPATH=.carry-py bash examples/pytorch/run_all.sh [check|examples|all]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
export OUT=${OUT:-$PWD/pytorch-logs}
export JITGEMM_CACHE_DIR=${JITGEMM_CACHE_DIR:-/tmp/jitgemm-cache}
mkdir -p "$OUT"
what=${1:-all}
status=0
run() {
  local name=$1
  shift
  local start=$(date +%s)
  python3 "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && status=1
  echo "== $name: rc=$rc, $(( $(date +%s) - start )) s (log: $name.log)"
  tail -n 40 "$OUT/$name.log"
}
if [ "$what" = check ] || [ "$what" = all ]; then
  run gpu_check "$top/python/tests/gpu_check.py"
fi
if [ "$what" = examples ] || [ "$what" = all ]; then
  for s in seed003_small_m_linear seed001_grouped_linear seed002_004_mlp seed000_conv_stack gated_mlp \
           weight_regimes; do
    run "$s" "$top/examples/pytorch/$s.py"
  done
fi
exit $status
