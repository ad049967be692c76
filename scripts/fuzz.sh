#!/usr/bin/env bash
# Fuzzes the parsers that read untrusted bytes (RELIABILITY 17, docs/fuzzing.md):
# builds the libFuzzer targets of tests/fuzz with clang, ASan and UBSan in a
# build directory of their own, then runs each for N seconds, one after the
# other, starting from the checked-in seed corpus. Prints executions, rate and
# coverage per target. Exit status 1 if any target crashed, leaked, hung, ran
# out of memory or broke a property; the input that did it is saved under
# <build>/fuzz-artifacts/<target>/.
#
# Usage: scripts/fuzz.sh [seconds] [target...]
#   seconds  per target, default 60
#   target   manifest cache_entry tuning_record bundle_manifest kernel_binary remote_value (default: all)
# Environment:
#   JITGEMM_FUZZ_BUILD_DIR  build directory (default: <repo>/build-fuzz)
#   JITGEMM_FUZZ_FLAGS      extra libFuzzer flags, e.g. "-jobs=2 -workers=2"
#
# Inputs that add coverage accumulate in <build>/fuzz-corpus/<target>/, so a
# second run carries on where the first stopped; the checked-in corpus is only
# read (see docs/fuzzing.md for merging finds back into it).
set -uo pipefail

readonly kAllTargets=(manifest cache_entry tuning_record bundle_manifest kernel_binary remote_value)
seconds=${1:-60}
if ! [[ ${seconds} =~ ^[0-9]+$ ]] || ((seconds == 0)); then
  echo "usage: $0 [seconds] [target...]   (seconds: a positive integer)" >&2
  exit 2
fi
shift $(($# > 0 ? 1 : 0))
targets=("$@")
((${#targets[@]})) || targets=("${kAllTargets[@]}")
for t in "${targets[@]}"; do
  case " ${kAllTargets[*]} " in
    *" ${t} "*) ;;
    *) echo "unknown target '${t}'; one of: ${kAllTargets[*]}" >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
build=${JITGEMM_FUZZ_BUILD_DIR:-${root}/build-fuzz}

# --- clang with libFuzzer -----------------------------------------------------
have_libfuzzer() {
  command -v clang++ >/dev/null 2>&1 || return 1
  local lib
  lib=$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)
  [[ -f ${lib} ]] && return 0
  # Debian keeps compiler-rt under the resource directory.
  lib="$(clang++ -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-x86_64.a"
  [[ -f ${lib} ]]
}
if ! have_libfuzzer; then
  echo "== installing clang and compiler-rt (libFuzzer) from Debian"
  sudo=""
  ((EUID == 0)) || sudo="sudo"
  if ! { ${sudo} apt-get update -qq && ${sudo} apt-get install -y -qq clang libclang-rt-dev; }; then
    echo "could not install clang and libclang-rt-dev" >&2
    exit 2
  fi
  have_libfuzzer || { echo "clang++ has no libFuzzer runtime" >&2; exit 2; }
fi

# --- build --------------------------------------------------------------------
echo "== configuring ${build} ($(clang++ --version | head -1))"
# fuzzer-no-link instruments every library for coverage; the fuzzers add
# -fsanitize=fuzzer themselves (tests/fuzz/CMakeLists.txt).
mkdir -p "${build}"
CC=clang CXX=clang++ cmake -S "${root}" -B "${build}" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DJITGEMM_BUILD_FUZZERS=ON \
  "-DJITGEMM_SANITIZE=address;undefined;fuzzer-no-link" >"${build}/configure.log" 2>&1 ||
  { cat "${build}/configure.log" >&2; echo "configure failed" >&2; exit 2; }
build_targets=()
for t in "${targets[@]}"; do build_targets+=("${t}_fuzzer"); done
echo "== building ${build_targets[*]}"
ninja -C "${build}" "${build_targets[@]}" || { echo "build failed" >&2; exit 2; }

# --- run ----------------------------------------------------------------------
# A UBSan report stops the run (and so counts as a crash); leaks are checked
# at exit of every input that allocated.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

fuzz_stat() {  # fuzz_stat NAME LOG: the value of libFuzzer's "stat::NAME:" line
  sed -n "s/^stat::$1: *//p" "$2" | tail -1
}

failed=()
summary=()
for t in "${targets[@]}"; do
  work="${build}/fuzz-corpus/${t}"
  artifacts="${build}/fuzz-artifacts/${t}/"
  log="${build}/fuzz-logs/${t}.log"
  mkdir -p "${work}" "${artifacts}" "$(dirname "${log}")"
  flags=(-max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024
         -print_final_stats=1 -artifact_prefix="${artifacts}")
  dict="${root}/tests/fuzz/dict/${t}.dict"
  [[ -f ${dict} ]] && flags+=(-dict="${dict}")
  # shellcheck disable=SC2206  # JITGEMM_FUZZ_FLAGS is split on purpose
  flags+=(${JITGEMM_FUZZ_FLAGS:-})
  echo "== ${t}_fuzzer for ${seconds}s (log: ${log})"
  start=$(date +%s)
  "${build}/tests/fuzz/${t}_fuzzer" "${flags[@]}" "${work}" "${root}/tests/fuzz/corpus/${t}" \
    >"${log}" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - start))
  execs=$(fuzz_stat number_of_executed_units "${log}")
  rate=$(fuzz_stat average_exec_per_sec "${log}")
  rss=$(fuzz_stat peak_rss_mb "${log}")
  # The last status line: "#N  DONE  cov: C ft: F corp: U/S ...".
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' "${log}" | tail -1)
  row=$(printf '%-14s %4ss  execs %-10s %6s/s  rss %4s MB  %s' "${t}" "${elapsed}" \
        "${execs:-?}" "${rate:-?}" "${rss:-?}" "${cov:-}")
  if ((rc != 0)); then
    failed+=("${t}")
    row+="  FAILED (exit ${rc})"
    echo "-- ${t}: libFuzzer exited ${rc}; the report:"
    grep -E -A25 '==[0-9]+==ERROR|runtime error|property violated|Test unit written|deadly signal|timeout|out-of-memory' \
      "${log}" | head -60
    echo "-- inputs saved:"
    find "${artifacts}" -type f -newermt "@${start}" -printf '   %p\n'
  fi
  summary+=("${row}")
  echo "${row}"
done

echo
echo "== summary (${seconds}s per target; logs in ${build}/fuzz-logs)"
printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]} (reproduce: <build>/tests/fuzz/<target>_fuzzer <artifact>)"
  exit 1
fi
echo "no crash, leak, hang or broken property"
