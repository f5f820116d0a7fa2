#!/usr/bin/env bash
# Write → handler latency under a burst (issue 32, item 3) on the real API
# server start.sh runs: `herald run` with one latency-probe, reading
# protobuf (its default) and JSON (`cache.protobuf: false`), against
# client-go's typed informer and handler (bench/clientgo --mode=latency),
# each a process of its own, one after the other on the same write
# schedule (bench/clientgo --mode=write: merge patches stamping the write
# time, then the flush Pod). ROUNDS rounds (default 3) per RATES entry
# (default "1000 5000" writes/s asked, for WRITE_SECONDS each, default 5) over
# PODS Pods (default 1000) of bench/data/pod-4k.json in namespace
# `burst`, loaded first unless there. One JSON line per contender per round.
# KUBECONFIG_FILE overrides the kubeconfig ($STATE/kubeconfig). Needs
# `cargo build --release -p herald` and the wasm plugins. (Not SECONDS:
# bash keeps its own count of seconds under that name.)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-3}"
RATES="${RATES:-1000 5000}"
WRITE_SECONDS="${WRITE_SECONDS:-5}"
PODS="${PODS:-1000}"
cp "$REPO/target/wasm/wasm32-wasip2/release/latency_probe.wasm" "$WORK/plugins/"
pod_namespace burst
clientgo --mode=load --namespace burst --pods "$PODS" --pod-file ../data/pod-4k.json \
  --managed-fields=false >/dev/null

write() {
  clientgo --mode=write --namespace burst --pods "$PODS" --pod-file ../data/pod-4k.json \
    --rate "$1" --duration "${WRITE_SECONDS}s"
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

# `herald run` at rate $1, reading $2 (protobuf or json).
herald_phase() {
  local rate=$1 encoding=$2 port=$((20000 + RANDOM % 10000)) pid written
  cat >"$WORK/herald.yaml" <<EOF
pluginDir: $WORK/plugins
listen: 127.0.0.1:$port
cache:
  protobuf: $([ "$encoding" = protobuf ] && echo true || echo false)
log:
  format: json
  pluginLinesPerSecond: 1000000
  pluginBurst: 1000000
EOF
  XDG_CACHE_HOME="$WORK/cache" "$HERALD" run --config "$WORK/herald.yaml" \
    --kubeconfig "$KUBECONFIG" >/dev/null 2>"$WORK/herald.log" &
  pid=$!
  herald_ready "$port" "$pid" "$WORK/herald.log"
  written="$(write "$rate")"
  until grep -q '"message":"flushed ' "$WORK/herald.log"; do
    kill -0 "$pid" 2>/dev/null || { tail -5 "$WORK/herald.log" >&2; exit 1; }
    sleep 0.05
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "{\"contender\":\"herald $encoding\",\"asked\":$rate,\"writer\":$written,\"latency\":$(summarise "$WORK/herald.log")}"
}

clientgo_phase() {
  local rate=$1 pid written
  clientgo --mode=latency --namespace burst --content-type protobuf --duration 5m >"$WORK/clientgo.out" &
  pid=$!
  until [ -s "$WORK/clientgo.out" ]; do
    kill -0 "$pid" 2>/dev/null || exit 1
    sleep 0.05
  done
  written="$(write "$rate")"
  wait "$pid"
  echo "{\"contender\":\"client-go\",\"asked\":$rate,\"writer\":$written,\"latency\":$(tail -1 "$WORK/clientgo.out")}"
}

herald_phase 100 json >/dev/null  # compiles the probe into the artifact cache
for rate in $RATES; do
  for round in $(seq 1 "$ROUNDS"); do
    clientgo_phase "$rate"
    herald_phase "$rate" protobuf
    herald_phase "$rate" json
  done
done
