#!/usr/bin/env bash
# Start-up of `herald run` (one no-op plugin; reading protobuf, its default,
# and JSON, `cache.protobuf: false`) against client-go's informer
# (bench/clientgo: JSON and protobuf, watch-list on), on the real API server
# start.sh runs, ROUNDS interleaved rounds (default 5), one JSON line each.
# Loads PODS Pods (default 10000) of bench/data/pod-16k.json, with the
# managedFields of three managers, into namespace `bench` first, unless they
# are there. Needs `cargo build --release -p herald` and the wasm plugins
# (`cargo test -p herald-tests --no-run` builds them).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-5}"
PODS="${PODS:-10000}"
cp "$REPO/target/wasm/wasm32-wasip2/release/noop.wasm" "$WORK/plugins/"
pod_namespace bench
stored=$(curl -ksf -H "Authorization: Bearer $TOKEN" "$SERVER/api/v1/namespaces/bench/pods?limit=1" |
  python3 -c 'import json, sys; page = json.load(sys.stdin); print(len(page["items"]) + page["metadata"].get("remainingItemCount", 0))')
[ "$stored" -gt "$PODS" ] || clientgo --mode=load --namespace bench --pods "$PODS" \
  --pod-file ../data/pod-16k.json >&2 2>/dev/null

printf 'cache:\n  protobuf: true\n' >"$WORK/protobuf.yaml"
printf 'cache:\n  protobuf: false\n' >"$WORK/json.yaml"

# `herald run` reading $1 (protobuf or json), from spawn until /readyz.
herald() {
  local port=$((20000 + RANDOM % 10000)) start end pid
  start=$(date +%s%N)
  XDG_CACHE_HOME="$WORK/cache" RUST_LOG=warn "$HERALD" run --config "$WORK/$1.yaml" \
    --kubeconfig "$KUBECONFIG" --plugins "$WORK/plugins" --listen "127.0.0.1:$port" \
    >/dev/null 2>"$WORK/herald.err" &
  pid=$!
  herald_ready "$port" "$pid" "$WORK/herald.err"
  end=$(date +%s%N)
  local hwm ticks cached
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  cached=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^herald_cache_objects/ {s += $2} END {print s}')
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "{\"contender\":\"herald $1\",\"synced_ms\":$(((end - start) / 1000000)),\"peak_rss_kib\":$hwm,\"cpu_ms\":$((ticks * 1000 / $(getconf CLK_TCK))),\"objects\":$cached}"
}
herald json >/dev/null  # compiles the plugin into the artifact cache, as a restart finds it
for round in $(seq 1 "$ROUNDS"); do
  for content in protobuf json; do
    herald "$content"
  done
  for content in protobuf json; do
    echo "{\"contender\":\"client-go $content\",$(clientgo --watch-list=true \
      --content-type "$content" 2>/dev/null | cut -c2-)"
  done
done
