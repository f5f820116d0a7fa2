#!/usr/bin/env bash
# Stop kube-apiserver then etcd started by start.sh (by pid file only).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="${STATE:-$HERE/../../target/kube-apiserver}"
RUN="$ROOT/run"
for p in kube-apiserver etcd; do
  f="$RUN/$p.pid"
  [[ -f "$f" ]] || { echo "$p: no pid file"; continue; }
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for i in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; echo "$p: killed -9 ($pid)"; else echo "$p: stopped ($pid)"; fi
  else
    echo "$p: not running (stale pid $pid)"
  fi
  rm -f "$f"
done
# Optional: ./stop.sh --wipe  also deletes the etcd data (fresh cluster next start).
if [[ "${1:-}" == "--wipe" ]]; then rm -rf "$ROOT/data/etcd"; echo "etcd data wiped"; fi
