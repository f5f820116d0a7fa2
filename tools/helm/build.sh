#!/usr/bin/env bash
# Builds the pinned helm (tools/helm/go.mod) into target/tools/helm, or leaves
# it if it is newer than go.mod, go.sum and main.go. Go's build cache makes a
# rebuild after `cargo clean` quick; a cold build compiles Helm and client-go.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${CARGO_TARGET_DIR:-$root/target}/tools/helm"
go="$(command -v go || echo /usr/local/go/bin/go)"
mkdir -p "$(dirname "$out")"
# One build at a time: .ci/run starts one in the background while cargo
# compiles, and the chart's tests wait here for it instead of building
# helm a second time beside it.
exec 9>"$out.lock"
flock 9
if [[ -x "$out" && "$out" -nt "$here/go.mod" && "$out" -nt "$here/go.sum" && "$out" -nt "$here/main.go" ]]; then
  exit 0
fi
cd "$here"
# -mod=readonly: go.sum is committed; a build never rewrites it.
GOFLAGS="-mod=readonly -buildvcs=false" "$go" build -trimpath -o "$out.tmp" .
mv "$out.tmp" "$out"
