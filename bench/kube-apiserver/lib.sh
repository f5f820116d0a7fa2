# Sourced by compare.sh and burst.sh: where things are, a scratch directory
# removed on exit, bench/clientgo built into it, and the steps both take on
# the real API server start.sh runs.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
STATE="${STATE:-$REPO/target/kube-apiserver}"
# KUBECONFIG_FILE: another server's kubeconfig than start.sh's.
KUBECONFIG="${KUBECONFIG_FILE:-$STATE/kubeconfig}"
# The admin token and address in it, for curl.
TOKEN="$(awk -F'token: ' '/token:/ {print $2}' "$KUBECONFIG")"
SERVER="$(awk '/server:/ {print $2}' "$KUBECONFIG")"
HERALD="${HERALD:-$REPO/target/release/herald}"
WORK="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/plugins"
(cd "$REPO/bench/clientgo" && go build -o "$WORK/clientgo" .)

# bench/clientgo against the server, run where its --pod-file paths start.
clientgo() { (cd "$REPO/bench/clientgo" && "$WORK/clientgo" --kubeconfig "$KUBECONFIG" "$@"); }

# Namespace $1 with the ServiceAccounts the benchmark Pods name: no
# controller-manager runs to make them. Those that exist are left alone.
pod_namespace() {
  local sa
  api() { curl -ksf -o /dev/null -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' "$@"; }
  api -X POST "$SERVER/api/v1/namespaces" \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$1\"}}" || true
  for sa in default web-frontend; do
    api -X POST "$SERVER/api/v1/namespaces/$1/serviceaccounts" \
      -d "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"$sa\"}}" || true
  done
}

# Waits until the `herald run` of pid $2 answers /readyz on port $1; if it
# exits first, shows the end of its log $3 and fails.
herald_ready() {
  until curl -sf -o /dev/null "http://127.0.0.1:$1/readyz"; do
    kill -0 "$2" 2>/dev/null || { tail -5 "$3" >&2; exit 1; }
    sleep 0.002
  done
}
