#!/usr/bin/env bash
# One visit to a GPU machine: GPU tests, compute-sanitizer over a subset, and
# the benchmark table. Run from the repository root with the carry folder made
# by scripts/make_carry.sh:   bash .carry/gpu_session.sh [tests|sanitize|bench|mlp|regimes|all]...
# (`regimes` is not part of `all`: issue 20's figures, cold caches, ~10 min.)
# Logs go to $OUT (or ./gpu-logs), and all of them into $OUT/all-logs.tgz;
# a short summary is printed last.
# `sanitize` sizes: SANITIZE_PROBLEMS (plan-level random problems, 120),
# SANITIZE_SM90_PROBLEMS and SANITIZE_GATED_PROBLEMS (40 each; the latter for
# the cuBLAS route's, sm80's and small_m's gated tests), SANITIZE_STAGED_PROBLEMS
# (sm80 problems with rows on 2 bytes, 40) and RACECHECK_LIMIT_S (seconds the
# sm90 racecheck may take, 1200).
set -u
carry=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH="$carry/lib:${LD_LIBRARY_PATH:-}"
export JITGEMM_CACHE_DIR=${JITGEMM_CACHE_DIR:-/tmp/jitgemm-cache}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(all)
summary=()
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1
summary+=("gpu: $(cat "$out/gpu.txt")")
want() { for s in "${steps[@]}"; do [ "$s" = all ] || [ "$s" = "$1" ] && return 0; done; return 1; }

if want tests; then
  start=$(date +%s)
  "$carry/gpu_test" --gtest_color=no > "$out/gpu_test.log" 2>&1
  rc=$?
  summary+=("gpu_test rc=$rc ($(( $(date +%s) - start )) s): $(grep -E '^\[  (PASSED|FAILED) ' "$out/gpu_test.log" | tr '\n' ' ')")
  summary+=("  $(grep -m1 'random problems:' "$out/gpu_test.log")")
  summary+=("  $(grep -m1 'cublas gated:' "$out/gpu_test.log")")
  summary+=("  $(grep 'gated random problems:' "$out/gpu_test.log" | tr '\n' ' ')")
  summary+=("  $(grep -m1 'staged-load problems:' "$out/gpu_test.log")")
  summary+=("  $(grep -m1 'edge-chunk problems:' "$out/gpu_test.log")")
  summary+=("  $(grep 'wide ping-pong tiles:' "$out/gpu_test.log" | tr '\n' ' ')")
  for t in "$carry"/*gpu_test "$carry"/cublas_backend_test; do
    [ -x "$t" ] && [ "$(basename "$t")" != gpu_test ] || continue
    "$t" --gtest_color=no > "$out/$(basename "$t").log" 2>&1
    summary+=("$(basename "$t") rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$out/$(basename "$t").log" | tr '\n' ' ')")
  done
  # jitgemm-bench's own GPU pieces (its baselines, activation kernel, timer);
  # their other tests need the source tree and ran in CI.
  for t in "$carry"/bench_*_test; do
    [ -x "$t" ] || continue
    "$t" --gtest_color=no --gtest_filter='*Gpu*' > "$out/$(basename "$t").log" 2>&1
    summary+=("$(basename "$t") rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$out/$(basename "$t").log" | tr '\n' ' ')")
  done
fi
if want sanitize; then
  # A few hundred launches keep memcheck inside the visit; racecheck on the capture/PDL tests.
  JITGEMM_TEST_PROBLEMS=${SANITIZE_PROBLEMS:-120} JITGEMM_SM90_PROBLEMS=${SANITIZE_SM90_PROBLEMS:-40} \
    JITGEMM_GATED_PROBLEMS=${SANITIZE_GATED_PROBLEMS:-40} \
    JITGEMM_SM80_GATED_PROBLEMS=${SANITIZE_GATED_PROBLEMS:-40} \
    JITGEMM_SMALL_M_GATED_PROBLEMS=${SANITIZE_GATED_PROBLEMS:-40} \
    JITGEMM_SM80_STAGED_PROBLEMS=${SANITIZE_STAGED_PROBLEMS:-40} \
    compute-sanitizer --tool memcheck --leak-check full \
    --error-exitcode 3 "$carry/gpu_test" --gtest_color=no > "$out/memcheck.log" 2>&1
  summary+=("memcheck rc=$?: $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -1)")
  compute-sanitizer --tool racecheck --error-exitcode 3 "$carry/gpu_test" --gtest_color=no \
    --gtest_filter='PlanGpuTest.*' > "$out/racecheck.log" 2>&1
  summary+=("racecheck rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/racecheck.log" | tail -1)")
  # Shared-memory hazards of the TMA / wgmma pipeline, the staged epilogue and
  # the cluster split's hand-over (its few- or several-tiles test). Not
  # the random tests nor the large cluster splits, on which racecheck stalls
  # (several tiles a cluster with a ring's worth of k slices a split,
  # docs/kernels.md); memcheck above covers them. A time
  # limit keeps the visit's summary coming whatever the tool does.
  JITGEMM_SM90_PROBLEMS=${SANITIZE_SM90_PROBLEMS:-40} timeout "${RACECHECK_LIMIT_S:-1200}" \
    compute-sanitizer --tool racecheck --error-exitcode 3 "$carry/gpu_test" --gtest_color=no \
    --gtest_filter='Sm90FamilyGpuTest.*-Sm90FamilyGpuTest.ClusterSplitsMatch*:Sm90FamilyGpuTest.Random*' \
    > "$out/racecheck_sm90.log" 2>&1
  summary+=("racecheck sm90 rc=$? (124: stopped at ${RACECHECK_LIMIT_S:-1200} s): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/racecheck_sm90.log" | tail -1)")
fi
if want latency && [ -x "$carry/jitgemm-latency" ]; then
  # First process compiles and tunes into a fresh cache; the second is a
  # deployed process with everything cached.
  lat_cache=$(mktemp -d)
  for run in cold warm; do
    JITGEMM_CACHE_DIR=$lat_cache "$carry/jitgemm-latency" "$carry/manifests/seed002_004_gemm_bias_relu.json" \
      > "$out/latency_$run.log" 2>&1
    summary+=("latency $run rc=$?")
  done
  # Gated problems, each output checked against float64 (B holds 2N columns).
  JITGEMM_CACHE_DIR=$lat_cache "$carry/jitgemm-latency" --verify "$carry/manifests/gated_small.json" \
    > "$out/latency_gated_verify.log" 2>&1
  summary+=("latency --verify gated rc=$?")
fi
if want bench && [ -x "$carry/jitgemm-bench" ]; then
  "$carry/jitgemm-bench" --csv "$out/bench.csv" ${BENCH_ARGS:-} > "$out/bench.log" 2>&1
  summary+=("bench rc=$?")
fi
# Issue 20: auto against cuBLASLt's first choice in both regimes, and the
# cost of choosing with a cold cache (compiles included: no jit column
# compiles the kernels before the auto plan). Not part of `all`.
has_step() { for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
if has_step regimes && [ -x "$carry/jitgemm-bench" ]; then
  cold=$(mktemp -d)
  JITGEMM_CACHE_DIR=$cold "$carry/jitgemm-bench" --suite=${REGIME_SUITES:-regimes,S1,S2,S3,S6} \
    --impls=cublas_mm,auto --tuning=fast --regimes --csv "$out/regimes.csv" > "$out/regimes.log" 2>&1
  summary+=("regimes bench rc=$?")
  # Cold Plan::Create of every auto row: worst and median (ms).
  summary+=("cold Plan::Create over the suites (ms): $(awk -F, 'NR==1{for(i=1;i<=NF;i++)if($i=="plan_create_ms")c=i;next}
    $9=="auto"&&$c!=""{print $c}' "$out/regimes.csv" | sort -g | awk '{v[NR]=$1}END{if(NR)printf "n=%d median=%s worst=%s", NR, v[int((NR+1)/2)], v[NR]}')")
  cost=$(mktemp -d)
  JITGEMM_CACHE_DIR=$cost "$carry/jitgemm-latency" --tuning=fast "$carry/manifests/tuning_cost.json" \
    > "$out/tuning_cost.log" 2>&1
  summary+=("tuning cost (cold, jitgemm-latency) rc=$?")
fi
if want mlp; then
  # Issue 16: seed 001's grouped SwiGLU MLP as two plans, then the MLP suite.
  if [ -x "$carry/grouped_mlp" ]; then
    "$carry/grouped_mlp" > "$out/grouped_mlp.log" 2>&1
    summary+=("grouped_mlp rc=$?: $(grep -E 'us per MLP' "$out/grouped_mlp.log")")
  fi
  if [ -x "$carry/jitgemm-bench" ]; then
    "$carry/jitgemm-bench" --suite=mlp ${MLP_ARGS:-} > "$out/mlp.log" 2>&1
    summary+=("mlp bench rc=$?")
  fi
fi
# The device tool brings back at most 8 files from $OUT, the first in name
# order: one archive of every log, named to sort first.
tar czf "$out/all-logs.tgz" -C "$out" --exclude=all-logs.tgz . 2>/dev/null
echo "==== summary"
printf '%s\n' "${summary[@]}"
[ -f "$out/latency_warm.log" ] && { echo "==== latency (warm cache)"; cat "$out/latency_warm.log"; }
[ -f "$out/bench.log" ] && { echo "==== bench"; grep -E '^\| |^- ' "$out/bench.log" | cut -c1-220; }
[ -f "$out/regimes.log" ] && { echo "==== regimes"; grep -E '^\| |^- ' "$out/regimes.log" | cut -c1-260; }
[ -f "$out/tuning_cost.log" ] && { echo "==== cold Plan::Create"; cat "$out/tuning_cost.log"; }
[ -f "$out/mlp.log" ] && { echo "==== mlp"; grep -E '^\| |^  ' "$out/mlp.log" | cut -c1-260; }
grep -E 'Failure|FAILED|error' "$out/gpu_test.log" 2>/dev/null | head -20
exit 0
