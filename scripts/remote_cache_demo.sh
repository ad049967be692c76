#!/usr/bin/env bash
# The remote cache tier on a GPU machine (issue 18), from the carry folder that
# scripts/make_carry.sh makes (it holds redis-server and its libraries):
#
#   bash .carry/remote_cache_demo.sh [manifest.json ...]   (default: the seed manifests)
#
# 1. starts redis-server on a free loopback port (own config, no persistence,
#    stopped at the end) and makes a fleet secret;
# 2. "machine A" (its own empty cache root) plans and runs every manifest:
#    compiles and tunes, publishing kernels and decisions to Redis;
# 3. "machine B" (another empty cache root) with the same Redis: must plan
#    everything with 0 NVRTC compiles; first plan + first run per manifest;
# 4. machine B again with no remote and no JITGEMM_NVRTC_VERSION (a warm disk
#    cache, as after step 3): first plan + first run, and whether NVRTC was
#    opened (it must not be).
# Prints a summary at the end; logs go to $OUT (or ./remote-demo-logs).
# DEMO_SEED_ROOT (optional): see below.
set -u
carry=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/remote-demo-logs}
mkdir -p "$out"
export LD_LIBRARY_PATH="$carry/lib:${LD_LIBRARY_PATH:-}"
unset JITGEMM_NVRTC_VERSION JITGEMM_REMOTE_CACHE JITGEMM_REMOTE_CACHE_SECRET_FILE
manifests=("$@")
[ ${#manifests[@]} -eq 0 ] && manifests=("$carry"/manifests/*.json)
work=$(mktemp -d)
redis="$carry/redis-server"
[ -x "$redis" ] || redis=$(command -v redis-server) || { echo "no redis-server" >&2; exit 1; }

port=""
for try in 1 2 3 4 5 6 7 8; do
  p=$((20000 + RANDOM % 30000))
  # A port something answers on is taken.
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "no free port" >&2; exit 1; }
cat > "$work/redis.conf" <<CONF
bind 127.0.0.1
port $port
save ""
appendonly no
daemonize no
dir $work
logfile $work/redis.log
CONF
LD_LIBRARY_PATH="$carry/lib/redis:${LD_LIBRARY_PATH}" "$redis" "$work/redis.conf" &
redis_pid=$!
cleanup() { kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; cp "$work/redis.log" "$out/" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/secret"
remote=(JITGEMM_REMOTE_CACHE="redis://127.0.0.1:$port/0" JITGEMM_REMOTE_CACHE_SECRET_FILE="$work/secret")
for i in $(seq 50); do
  env "${remote[@]}" JITGEMM_CACHE_DIR="$work/a" "$carry/jitgemm-cache" remote stats >/dev/null 2>&1 && break
  sleep 0.1
done

summary=()
first_row() { awk -F'|' '$3 ~ /^ *[0-9.]+ *$/ {gsub(/ /,"",$2); gsub(/ /,"",$5); print $2 " create+run " $5 " ms"; exit}' "$1"; }
run_latency() {  # label log env...
  local label=$1 log=$2; shift 2
  env "$@" "$carry/jitgemm-latency" "$m" > "$log" 2>&1
  local rc=$?
  local compiles opened
  compiles=$(grep -oE 'NVRTC compiles in this process: [0-9]+' "$log" | grep -oE '[0-9]+$')
  opened=$(grep -oE 'NVRTC opened in this process: [a-z]+' "$log" | awk '{print $NF}')
  summary+=("$label $(basename "$m"): rc=$rc compiles=${compiles:-?} nvrtc_opened=${opened:-?}; first $(first_row "$log")")
}
# DEMO_SEED_ROOT: a cache root warmed ahead (jitgemm-warmup --arch=sm_90a) that
# machine A starts from and pushes, so that A only tunes (the GPU time goes to
# timing, not compiling); B still starts empty.
if [ -n "${DEMO_SEED_ROOT:-}" ]; then
  mkdir -p "$work/a" && cp -r "$DEMO_SEED_ROOT/." "$work/a/"
  env "${remote[@]}" JITGEMM_CACHE_DIR="$work/a" "$carry/jitgemm-cache" remote push \
    > "$out/a-push.log" 2>&1
  summary+=("A pushed its warmed root: rc=$? $(tail -1 "$out/a-push.log")")
fi
for m in "${manifests[@]}"; do
  run_latency "A cold+redis" "$out/a-$(basename "$m").log" "${remote[@]}" JITGEMM_CACHE_DIR="$work/a"
done
env "${remote[@]}" JITGEMM_CACHE_DIR="$work/a" "$carry/jitgemm-cache" remote stats > "$out/remote-stats.txt" 2>&1
summary+=("redis after A: $(tr '\n' ' ' < "$out/remote-stats.txt")")
for m in "${manifests[@]}"; do
  run_latency "B empty disk, warm redis" "$out/b-$(basename "$m").log" "${remote[@]}" JITGEMM_CACHE_DIR="$work/b"
done
for m in "${manifests[@]}"; do
  run_latency "B warm disk, no variables" "$out/b-disk-$(basename "$m").log" JITGEMM_CACHE_DIR="$work/b"
done
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
