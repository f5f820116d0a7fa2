#!/usr/bin/env bash
# Start-up of `herald run` (one no-op plugin) against client-go's informer
# (bench/clientgo: JSON and protobuf, watch-list on), on the real API server
# start.sh runs, ROUNDS interleaved rounds (default 5), one JSON line each.
# Loads PODS Pods (default 10000) of bench/data/pod-16k.json, with the
# managedFields of three managers, into namespace `bench` first, unless they
# are there. Needs `cargo build --release -p herald` and the wasm plugins
# (`cargo test -p herald-tests --no-run` builds them).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
STATE="${STATE:-$REPO/target/kube-apiserver}"
KUBECONFIG="$STATE/kubeconfig"
ROUNDS="${ROUNDS:-5}"
PODS="${PODS:-10000}"
HERALD="${HERALD:-$REPO/target/release/herald}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/plugins"
cp "$REPO/target/wasm/wasm32-wasip2/release/noop.wasm" "$WORK/plugins/"
(cd "$REPO/bench/clientgo" && go build -o "$WORK/clientgo" .)
token="$(awk -F'token: ' '/token:/ {print $2}' "$KUBECONFIG")"
server="$(awk '/server:/ {print $2}' "$KUBECONFIG")"
api() { curl -ksf -o /dev/null -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
api -X POST "$server/api/v1/namespaces" -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}' || true
for sa in default web-frontend; do
  api -X POST "$server/api/v1/namespaces/bench/serviceaccounts" \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"$sa\"}}" || true
done
stored=$(curl -ksf -H "Authorization: Bearer $token" "$server/api/v1/namespaces/bench/pods?limit=1" |
  python3 -c 'import json, sys; page = json.load(sys.stdin); print(len(page["items"]) + page["metadata"].get("remainingItemCount", 0))')
[ "$stored" -gt "$PODS" ] || (cd "$REPO/bench/clientgo" && "$WORK/clientgo" --mode=load --kubeconfig "$KUBECONFIG" \
  --namespace bench --pods "$PODS" --pod-file ../data/pod-16k.json 2>/dev/null) >&2

herald() {
  local port=$((20000 + RANDOM % 10000)) start end pid
  start=$(date +%s%N)
  XDG_CACHE_HOME="$WORK/cache" RUST_LOG=warn "$HERALD" run --kubeconfig "$KUBECONFIG" \
    --plugins "$WORK/plugins" --listen "127.0.0.1:$port" >/dev/null 2>"$WORK/herald.err" &
  pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"; do
    kill -0 "$pid" 2>/dev/null || { cat "$WORK/herald.err" >&2; exit 1; }
    sleep 0.002
  done
  end=$(date +%s%N)
  local hwm ticks cached
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  cached=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^herald_cache_objects/ {s += $2} END {print s}')
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "{\"contender\":\"herald\",\"synced_ms\":$(((end - start) / 1000000)),\"peak_rss_kib\":$hwm,\"cpu_ms\":$((ticks * 1000 / $(getconf CLK_TCK))),\"objects\":$cached}"
}
herald >/dev/null  # compiles the plugin into the artifact cache, as a restart finds it
for round in $(seq 1 "$ROUNDS"); do
  herald
  for content in protobuf json; do
    echo "{\"contender\":\"client-go $content\",$("$WORK/clientgo" --kubeconfig "$KUBECONFIG" \
      --watch-list=true --content-type "$content" 2>/dev/null | cut -c2-)"
  done
done
