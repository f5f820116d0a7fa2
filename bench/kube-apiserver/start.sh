#!/usr/bin/env bash
# Start a real etcd + kube-apiserver on loopback, in the background.
# Usage: STATE=dir ./start.sh (default state: target/kube-apiserver); prints the kubeconfig path
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="${STATE:-$HERE/../../target/kube-apiserver}"
BIN="$ROOT/bin"
DATA="$ROOT/data"
RUN="$ROOT/run"
ETCD_CLIENT_PORT="${ETCD_CLIENT_PORT:-23791}"
ETCD_PEER_PORT="${ETCD_PEER_PORT:-23801}"
APISERVER_PORT="${APISERVER_PORT:-16443}"
TOKEN="${K8S_ADMIN_TOKEN:-admin-token-herald-bench-0123456789}"

mkdir -p "$DATA/etcd" "$DATA/certs" "$RUN"
chmod 700 "$DATA/etcd"

for p in etcd kube-apiserver; do
  if [[ -f "$RUN/$p.pid" ]] && kill -0 "$(cat "$RUN/$p.pid")" 2>/dev/null; then
    echo "$p already running (pid $(cat "$RUN/$p.pid")); run $ROOT/stop.sh first" >&2
    exit 1
  fi
done

# Service-account signing key pair (generated once).
if [[ ! -f "$DATA/sa.key" ]]; then
  openssl genrsa -out "$DATA/sa.key" 2048 2>/dev/null
  openssl rsa -in "$DATA/sa.key" -pubout -out "$DATA/sa.pub" 2>/dev/null
fi

# Static token file: token,user,uid,"group1,group2"
printf '%s,admin,admin-uid,"system:masters"\n' "$TOKEN" > "$DATA/tokens.csv"
chmod 600 "$DATA/tokens.csv"

# Kubeconfig (token auth, self-signed serving cert -> skip verify).
cat > "$ROOT/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: herald-bench
  cluster:
    server: https://127.0.0.1:${APISERVER_PORT}
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: ${TOKEN}
contexts:
- name: herald-bench
  context:
    cluster: herald-bench
    user: admin
    namespace: default
current-context: herald-bench
KC

# --- etcd ---
nohup "$BIN/etcd" \
  --name herald-bench \
  --data-dir "$DATA/etcd" \
  --listen-client-urls "http://127.0.0.1:${ETCD_CLIENT_PORT}" \
  --advertise-client-urls "http://127.0.0.1:${ETCD_CLIENT_PORT}" \
  --listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster "herald-bench=http://127.0.0.1:${ETCD_PEER_PORT}" \
  --listen-metrics-urls "" \
  --log-level warn \
  > "$RUN/etcd.log" 2>&1 &
echo $! > "$RUN/etcd.pid"

for i in $(seq 1 60); do
  if curl -fsS "http://127.0.0.1:${ETCD_CLIENT_PORT}/health" 2>/dev/null | grep -q '"health":"true"'; then break; fi
  if ! kill -0 "$(cat "$RUN/etcd.pid")" 2>/dev/null; then echo "etcd died; see $RUN/etcd.log" >&2; tail -20 "$RUN/etcd.log" >&2; exit 1; fi
  sleep 0.5
done

# --- kube-apiserver ---
nohup "$BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:${ETCD_CLIENT_PORT}" \
  --bind-address 127.0.0.1 \
  --advertise-address 127.0.0.1 \
  --secure-port "${APISERVER_PORT}" \
  --cert-dir "$DATA/certs" \
  --token-auth-file "$DATA/tokens.csv" \
  --authorization-mode RBAC \
  --service-account-issuer "https://kubernetes.default.svc.cluster.local" \
  --service-account-key-file "$DATA/sa.pub" \
  --service-account-signing-key-file "$DATA/sa.key" \
  --service-cluster-ip-range 10.0.0.0/24 \
  --endpoint-reconciler-type none \
  --v 1 \
  > "$RUN/kube-apiserver.log" 2>&1 &
echo $! > "$RUN/kube-apiserver.pid"

ok=0
for i in $(seq 1 120); do
  if curl -ksf -H "Authorization: Bearer ${TOKEN}" "https://127.0.0.1:${APISERVER_PORT}/readyz" 2>/dev/null | grep -q '^ok'; then ok=1; break; fi
  if ! kill -0 "$(cat "$RUN/kube-apiserver.pid")" 2>/dev/null; then echo "kube-apiserver died; see $RUN/kube-apiserver.log" >&2; tail -30 "$RUN/kube-apiserver.log" >&2; exit 1; fi
  sleep 0.5
done
if [[ $ok != 1 ]]; then
  echo "kube-apiserver not ready after 60s; see $RUN/kube-apiserver.log" >&2
  curl -ks -H "Authorization: Bearer ${TOKEN}" "https://127.0.0.1:${APISERVER_PORT}/readyz?verbose" >&2 || true
  exit 1
fi
# No kube-controller-manager runs, so nothing creates ServiceAccounts; the
# ServiceAccount admission plugin rejects pods whose SA is missing. Create
# default/default once (409 AlreadyExists on later starts is fine).
curl -ks -o /dev/null -H "Authorization: Bearer ${TOKEN}" -H 'Content-Type: application/json' \
  -X POST "https://127.0.0.1:${APISERVER_PORT}/api/v1/namespaces/default/serviceaccounts" \
  -d '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}' || true
echo "etcd pid $(cat "$RUN/etcd.pid") (http://127.0.0.1:${ETCD_CLIENT_PORT}), kube-apiserver pid $(cat "$RUN/kube-apiserver.pid") (https://127.0.0.1:${APISERVER_PORT})" >&2
echo "$ROOT/kubeconfig"
