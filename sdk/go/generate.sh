#!/usr/bin/env bash
# Regenerates the Go SDK's bindings, internal/wit/, from the WIT with witgen
# (this SDK's generator; see README.md, "Bindings").
#
#   sdk/go/generate.sh                                   # wit/0.7.0, herald:plugin/plugin@0.7.0
#   sdk/go/generate.sh ../../wit/0.7.0 herald:plugin/plugin@0.7.0
#   sdk/go/generate.sh --check                           # fail if the committed output is stale
#
# Needs Go only: witgen parses the WIT with go.bytecodealliance.org/wit. The
# component type of the world is not generated here: `herald plugin build`
# embeds it from the same wit/ directory when it builds a plugin.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
check=0
if [[ "${1:-}" == "--check" ]]; then check=1; shift; fi
wit="$(cd "${1:-$here/../../wit/0.7.0}" && pwd)"
world="${2:-herald:plugin/plugin@0.7.0}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$here/witgen" && go run . -wit "$wit" -world "$world" -out "$work/wit" -pkg herald.dev/sdk/go/internal/wit)

if [[ $check == 1 ]]; then
  diff -r "$work/wit" "$here/internal/wit" >/dev/null \
    || { echo "generate.sh: internal/wit is stale: run sdk/go/generate.sh" >&2; exit 1; }
  echo "bindings are up to date"
  exit 0
fi
rm -rf "$here/internal/wit"
cp -r "$work/wit" "$here/internal/wit"
echo "generated internal/wit from $world" >&2
