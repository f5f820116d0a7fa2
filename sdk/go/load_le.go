//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package herald

import "unsafe"

// load32 and load64 read little-endian words at b[i:] with one load: the
// scanner and the frame reader run per byte and per field of every
// notification, and under GOOS=wasip1 encoding/binary reads a word a byte
// at a time. These architectures are little-endian and load unaligned
// words; the caller has checked that the word lies inside b.
func load32(b []byte, i int) uint32 { return *(*uint32)(unsafe.Pointer(&b[i])) }

func load64(b []byte, i int) uint64 { return *(*uint64)(unsafe.Pointer(&b[i])) }
