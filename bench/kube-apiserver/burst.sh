#!/usr/bin/env bash
# Write → handler latency under a burst (issue 32, item 3) on the real API
# server start.sh runs: `herald run` with one latency-probe against
# client-go's typed informer and handler (bench/clientgo --mode=latency),
# each a process of its own, one after the other on the same write
# schedule (bench/clientgo --mode=write: merge patches stamping the write
# time, then the flush Pod). ROUNDS rounds (default 3) per RATES entry
# (default "1000 5000" writes/s asked, for SECONDS each, default 5) over
# PODS Pods (default 1000) of bench/data/pod-4k.json in namespace
# `burst`, loaded first unless there. One JSON line per contender per round.
# KUBECONFIG_FILE overrides the kubeconfig ($STATE/kubeconfig). Needs
# `cargo build --release -p herald` and the wasm plugins.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
STATE="${STATE:-$REPO/target/kube-apiserver}"
KUBECONFIG="${KUBECONFIG_FILE:-$STATE/kubeconfig}"
ROUNDS="${ROUNDS:-3}"
RATES="${RATES:-1000 5000}"
SECONDS_EACH="${SECONDS:-5}"
PODS="${PODS:-1000}"
HERALD="${HERALD:-$REPO/target/release/herald}"
WORK="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/plugins"
cp "$REPO/target/wasm/wasm32-wasip2/release/latency_probe.wasm" "$WORK/plugins/"
(cd "$REPO/bench/clientgo" && go build -o "$WORK/clientgo" .)
go_() { (cd "$REPO/bench/clientgo" && "$WORK/clientgo" --kubeconfig "$KUBECONFIG" "$@"); }

# No controller-manager runs: the namespace's ServiceAccounts are made here.
token="$(awk -F'token: ' '/token:/ {print $2}' "$KUBECONFIG")"
server="$(awk '/server:/ {print $2}' "$KUBECONFIG")"
api() { curl -ksf -o /dev/null -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
api -X POST "$server/api/v1/namespaces" -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"burst"}}' || true
for sa in default web-frontend; do
  api -X POST "$server/api/v1/namespaces/burst/serviceaccounts" \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"$sa\"}}" || true
done
go_ --mode=load --namespace burst --pods "$PODS" --pod-file ../data/pod-4k.json \
  --managed-fields=false >/dev/null

write() {
  go_ --mode=write --namespace burst --pods "$PODS" --pod-file ../data/pod-4k.json \
    --rate "$1" --duration "${SECONDS_EACH}s"
}

# The write → entry latencies the probe logged (JSON log), as p50/p99/max.
summarise() {
  python3 -c '
import json, sys
values = []
for line in open(sys.argv[1]):
    try:
        message = json.loads(line)["fields"]["message"]
    except (ValueError, KeyError, TypeError):
        continue
    if message.startswith("latencies "):
        values += [int(v) for v in message[len("latencies "):].split(",") if v]
values.sort()
pick = lambda q: values[min(len(values) - 1, int(q / 100 * len(values)))] / 1e6
print(json.dumps({"count": len(values), "p50_ms": pick(50), "p99_ms": pick(99), "max_ms": values[-1] / 1e6}))
' "$1"
}

herald_phase() {
  local rate=$1 port=$((20000 + RANDOM % 10000)) pid written
  cat >"$WORK/herald.yaml" <<EOF
pluginDir: $WORK/plugins
listen: 127.0.0.1:$port
log:
  format: json
  pluginLinesPerSecond: 1000000
  pluginBurst: 1000000
EOF
  XDG_CACHE_HOME="$WORK/cache" "$HERALD" run --config "$WORK/herald.yaml" \
    --kubeconfig "$KUBECONFIG" >/dev/null 2>"$WORK/herald.log" &
  pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"; do
    kill -0 "$pid" 2>/dev/null || { tail -5 "$WORK/herald.log" >&2; exit 1; }
    sleep 0.05
  done
  written="$(write "$rate")"
  until grep -q '"message":"flushed ' "$WORK/herald.log"; do
    kill -0 "$pid" 2>/dev/null || { tail -5 "$WORK/herald.log" >&2; exit 1; }
    sleep 0.05
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "{\"contender\":\"herald\",\"asked\":$rate,\"writer\":$written,\"latency\":$(summarise "$WORK/herald.log")}"
}

clientgo_phase() {
  local rate=$1 pid written
  go_ --mode=latency --namespace burst --content-type protobuf --duration 5m >"$WORK/clientgo.out" &
  pid=$!
  until [ -s "$WORK/clientgo.out" ]; do
    kill -0 "$pid" 2>/dev/null || exit 1
    sleep 0.05
  done
  written="$(write "$rate")"
  wait "$pid"
  echo "{\"contender\":\"client-go\",\"asked\":$rate,\"writer\":$written,\"latency\":$(tail -1 "$WORK/clientgo.out")}"
}

herald_phase 100 >/dev/null  # compiles the probe into the artifact cache
for rate in $RATES; do
  for round in $(seq 1 "$ROUNDS"); do
    clientgo_phase "$rate"
    herald_phase "$rate"
  done
done
