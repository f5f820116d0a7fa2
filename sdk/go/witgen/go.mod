module herald.dev/sdk/go/witgen

go 1.26

require go.bytecodealliance.org v0.7.0

require (
	github.com/coreos/go-semver v0.3.1 // indirect
	github.com/tetratelabs/wazero v1.9.0 // indirect
)
