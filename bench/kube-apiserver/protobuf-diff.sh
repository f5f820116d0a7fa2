#!/usr/bin/env bash
# Herald's protobuf reading against a real kube-apiserver, byte for byte:
# creates objects of every built-in kind the server serves (objects.yaml,
# cluster-objects.yaml), then for every resource it can list asks for the
# list twice at one resourceVersion, as JSON and as protobuf, and has
# `protobuf-diff` (bench/src/bin) check that Herald's transcoder writes the
# server's JSON from its protobuf. Prints one line per resource and a
# summary; exits non-zero when any differs. The answers are kept in
# $OUT (default target/protobuf-diff) for a look or for testdata.
#
#   bench/kube-apiserver/start.sh
#   bench/kube-apiserver/protobuf-diff.sh
#
# KUBECONFIG_FILE: another server's kubeconfig than start.sh's (a static
# token, as start.sh writes).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
KUBECONFIG="${KUBECONFIG_FILE:-$REPO/target/kube-apiserver/kubeconfig}"
TOKEN="$(awk -F'token: ' '/token:/ {print $2}' "$KUBECONFIG")"
SERVER="$(awk '/server:/ {print $2}' "$KUBECONFIG")"
OUT="${OUT:-$REPO/target/protobuf-diff}"
NS=herald-protobuf-diff

kubectl() { command kubectl --kubeconfig "$KUBECONFIG" "$@"; }
# A 429 means the watch cache has not caught up with the resourceVersion
# yet. Not curl's own User-Agent: the server pretty-prints JSON for it.
get() { curl -ksSf -A herald-protobuf-diff --retry 10 --retry-delay 1 -H "Authorization: Bearer $TOKEN" "$@"; }

kubectl apply -f "$HERE/cluster-objects.yaml" >/dev/null
kubectl apply -n "$NS" -f "$HERE/objects.yaml" >/dev/null
echo "server $(get "$SERVER/version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gitVersion"])'), objects applied"

rm -rf "$OUT"
mkdir -p "$OUT"
# Every served group version's resources an informer can follow (list and
# watch; not subresources), as
# "API-path resource" lines, from discovery.
resources() {
  python3 - "$SERVER" "$TOKEN" <<'PY'
import json, ssl, sys, urllib.request
server, token = sys.argv[1], sys.argv[2]
context = ssl._create_unverified_context()
def get(path):
    request = urllib.request.Request(server + path, headers={"Authorization": "Bearer " + token})
    return json.load(urllib.request.urlopen(request, context=context))
bases = ["/api/v1"] + ["/apis/" + v["groupVersion"] for g in get("/apis")["groups"] for v in g["versions"]]
for base in bases:
    for r in get(base)["resources"]:
        if "/" not in r["name"] and {"list", "watch"} <= set(r.get("verbs", [])):
            print(base, r["name"])
PY
}
resources | while read -r base resource; do
  version="${base#/api/}"; version="${version#/apis/}"
  name="${version//\//_}.$resource"
  get -H 'Accept: application/json' "$SERVER$base/$resource" -o "$OUT/$name.json"
  rv="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"].get("resourceVersion",""))' "$OUT/$name.json")"
  # The same snapshot, where the list has one (componentstatuses has none).
  at=""
  [ -n "$rv" ] && at="?resourceVersion=$rv&resourceVersionMatch=Exact"
  headers="$(get -D - -o "$OUT/$name.pb" -H 'Accept: application/vnd.kubernetes.protobuf, application/json' \
    "$SERVER$base/$resource$at")"
  if ! grep -qi '^content-type: application/vnd.kubernetes.protobuf' <<<"$headers"; then
    echo "json-only $name (the server answers it only as JSON)"
    rm -f "$OUT/$name.pb"
  fi
done
cargo run -q --release -p herald-bench --bin protobuf-diff -- "$OUT"
