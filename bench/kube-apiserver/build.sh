#!/usr/bin/env bash
# Builds a real kube-apiserver (v1.36.3) and etcd (3.6.16) from the Go
# module proxy into $STATE/bin (default: target/kube-apiserver at the
# checkout's root). About 6 minutes on two cores the first time.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
STATE="${STATE:-$HERE/../../target/kube-apiserver}"
mkdir -p "$STATE/bin"
VERSION=v1.36.3
flags=""
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  flags+=" -X $pkg.gitVersion=$VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=36"
  flags+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=go-module-proxy-$VERSION"
done
(cd "$HERE/etcd" && go build -o "$STATE/bin/etcd" go.etcd.io/etcd/server/v3)
(cd "$HERE/apiserver" && go build -ldflags "$flags" -o "$STATE/bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
echo "$STATE/bin"
