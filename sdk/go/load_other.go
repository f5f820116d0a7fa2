//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package herald

import "encoding/binary"

// load32 and load64 read little-endian words at b[i:] (see load_le.go: on
// the other architectures, through encoding/binary).
func load32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[i:]) }

func load64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }
