//go:build wasip1

// Package cabi is the runtime of the generated bindings (internal/wit): the
// component model's canonical ABI for the standard Go toolchain's
// GOOS=wasip1 GOARCH=wasm, whose pointers are 64-bit in Go and 32-bit in
// linear memory. Values cross the boundary as uint32 addresses; memory is
// read and written at the canonical ABI's (32-bit) offsets, never through Go
// struct layouts.
//
// Memory the host writes into (cabi_realloc) is ordinary Go heap memory,
// held by a pin list until the generated code has lifted it (Release); a
// lifted string or slice points into that memory, so Go's (non-moving)
// collector keeps it alive for as long as the plugin holds the value.
package cabi

import (
	"math"
	"runtime"
	"unsafe"
)

// preinit serves cabi_realloc before the Go runtime has finished
// initializing: the WASI preview1 adapter allocates its state and its stack
// (64 KiB each) through the main module's cabi_realloc while `_initialize`
// is still running, when the Go heap cannot be used yet. It lives in the
// data segment and is never freed, as the adapter expects.
var preinit [256 << 10]byte

var preinitUsed uintptr

// ready is set by init, which runs at the end of `_initialize`, once the
// heap and the scheduler work.
var ready bool

func init() {
	// Allocation profiling only costs time in a plugin, and keeps the
	// allocator in cabi_realloc free of extra work.
	runtime.MemProfileRate = 0
	ready = true
}

// pins holds the allocations the host asked for (export arguments, import
// results) until the generated code has lifted them.
var pins []unsafe.Pointer

// procPin and procUnpin keep the collector from starting (or assisting)
// inside cabi_realloc: a GC cycle reads the clocks, and the component model
// forbids calling any import from inside a realloc. The runtime supports
// linking to them (go.dev/issue/67401).
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// setClockPaused is the WASI preview1 adapter's switch (wasmtime 48's
// reactor adapter, bytecodealliance/wasmtime#13563): while paused, its
// clock_time_get answers the monotonic clock from the last value read
// instead of calling wasi:clocks/monotonic-clock. The allocator itself reads
// that clock when a heap growth makes it scavenge (mheap.allocSpan calls
// nanotime), which procPin does not prevent; inside cabi_realloc that call
// would trap ("cannot leave component instance"). `herald plugin build`
// componentizes with an adapter that exports it.
//
//go:wasmimport wasi_snapshot_preview1 adapter_monotonic_clock_set_paused
func setClockPaused(paused uint32)

//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	if align == 0 {
		align = 1
	}
	if !ready {
		base := uintptr(unsafe.Pointer(&preinit[0]))
		addr := (base + preinitUsed + uintptr(align) - 1) &^ (uintptr(align) - 1)
		end := addr - base + uintptr(newSize)
		if end > uintptr(len(preinit)) {
			panic("cabi_realloc: out of pre-initialization memory")
		}
		preinitUsed = end
		if oldSize > 0 {
			copy(unsafe.Slice((*byte)(ptr(uint32(addr))), newSize), unsafe.Slice((*byte)(ptr(oldPtr)), min(oldSize, newSize)))
		}
		return uint32(addr)
	}
	procPin()
	setClockPaused(1)
	addr := allocPinned(newSize, align)
	if oldSize > 0 && newSize > 0 {
		copy(unsafe.Slice((*byte)(ptr(addr)), newSize), unsafe.Slice((*byte)(ptr(oldPtr)), min(oldSize, newSize)))
	}
	setClockPaused(0)
	procUnpin()
	return addr
}

// mallocgc is the runtime's allocator, which the runtime keeps open to
// linking (its comment lists the packages that do and promises not to
// change its signature). With no type the memory holds no pointers (the
// collector never scans it) and needzero false leaves it as it was: every
// byte of an allocation the host asks for is written by the host before
// the plugin reads it, so clearing it first (4 KB for a 4 KB object, on
// every call) is wasted.
//
//go:linkname mallocgc runtime.mallocgc
func mallocgc(size uintptr, typ unsafe.Pointer, needzero bool) unsafe.Pointer

func allocPinned(size, align uint32) uint32 {
	if size == 0 {
		return align
	}
	// Rounded up to 8 bytes, so 8-aligned: enough for any canonical ABI
	// type.
	p := mallocgc(uintptr(size+7)&^7, nil, false)
	pins = append(pins, p)
	return uint32(uintptr(p))
}

// Release drops the pins of every host allocation so far. The generated
// code calls it once it has lifted what the host wrote: lifted values keep
// the memory they point into alive by themselves.
func Release() {
	clear(pins)
	pins = pins[:0]
}

// Keep holds Go memory handed to the host (lowered arguments, return areas)
// for as long as the host may read it.
type Keep struct {
	bufs    [][]uint64
	strings []string
	bytes   [][]byte
}

// Alloc returns the address of size zeroed bytes aligned to align (at most
// 8), kept alive by k.
func (k *Keep) Alloc(size, align uint32) uint32 {
	if size == 0 {
		return align
	}
	buf := make([]uint64, (size+7)/8)
	k.bufs = append(k.bufs, buf)
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
}

// returnArea is where an export writes its results for the host to read
// after it returns. One area serves every export: the component model never
// enters an instance twice at once, and the host has read the results of
// one export before it calls the next.
var returnArea [8]uint64

// Return returns the address of an export's return area of size bytes
// aligned to align (at most 8): returnArea, or an allocation k keeps for a
// larger one. Its bytes are not cleared: the canonical ABI reads only
// what the export writes.
func (k *Keep) Return(size, align uint32) uint32 {
	if size <= uint32(unsafe.Sizeof(returnArea)) {
		return uint32(uintptr(unsafe.Pointer(&returnArea)))
	}
	return k.Alloc(size, align)
}

// String returns the address and length of s's bytes, kept alive by k.
func (k *Keep) String(s string) (uint32, uint32) {
	if len(s) == 0 {
		return 1, 0
	}
	k.strings = append(k.strings, s)
	return uint32(uintptr(unsafe.Pointer(unsafe.StringData(s)))), uint32(len(s))
}

// Bytes returns the address and length of b's bytes, kept alive by k.
func (k *Keep) Bytes(b []byte) (uint32, uint32) {
	if len(b) == 0 {
		return 1, 0
	}
	k.bytes = append(k.bytes, b)
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), uint32(len(b))
}

// Done lets the collector have everything k held. k keeps its lists'
// capacity: the export's Keep lives for the instance, and its next call
// then appends without growing them.
func (k *Keep) Done() {
	runtime.KeepAlive(k.bufs)
	runtime.KeepAlive(k.strings)
	runtime.KeepAlive(k.bytes)
	clear(k.bufs)
	clear(k.strings)
	clear(k.bytes)
	k.bufs, k.strings, k.bytes = k.bufs[:0], k.strings[:0], k.bytes[:0]
}

// exportKeep holds what the last export returned until the next export
// starts: the host reads the return area after the export has returned.
var exportKeep Keep

// BeginExport starts an export call: what the previous one returned is no
// longer read by the host.
func BeginExport() *Keep {
	exportKeep.Done()
	return &exportKeep
}

// ptr turns a linear-memory address into a pointer. (Through memory rather
// than unsafe.Pointer(uintptr(addr)), which vet rightly flags in ordinary
// Go: here addresses are what the canonical ABI passes.)
func ptr(addr uint32) unsafe.Pointer {
	a := uintptr(addr)
	return *(*unsafe.Pointer)(unsafe.Pointer(&a))
}

// U8 reads a byte at addr.
func U8(addr uint32) uint8 { return *(*uint8)(ptr(addr)) }

// U16 reads a little-endian u16 at addr.
func U16(addr uint32) uint16 { return *(*uint16)(ptr(addr)) }

// U32 reads a little-endian u32 at addr.
func U32(addr uint32) uint32 { return *(*uint32)(ptr(addr)) }

// U64 reads a little-endian u64 at addr.
func U64(addr uint32) uint64 { return *(*uint64)(ptr(addr)) }

// F32 reads an f32 at addr.
func F32(addr uint32) float32 { return *(*float32)(ptr(addr)) }

// F64 reads an f64 at addr.
func F64(addr uint32) float64 { return *(*float64)(ptr(addr)) }

// PutU8 writes a byte at addr.
func PutU8(addr uint32, v uint8) { *(*uint8)(ptr(addr)) = v }

// PutU16 writes a u16 at addr.
func PutU16(addr uint32, v uint16) { *(*uint16)(ptr(addr)) = v }

// PutU32 writes a u32 at addr.
func PutU32(addr uint32, v uint32) { *(*uint32)(ptr(addr)) = v }

// PutU64 writes a u64 at addr.
func PutU64(addr uint32, v uint64) { *(*uint64)(ptr(addr)) = v }

// PutF32 writes an f32 at addr.
func PutF32(addr uint32, v float32) { *(*float32)(ptr(addr)) = v }

// PutF64 writes an f64 at addr.
func PutF64(addr uint32, v float64) { *(*float64)(ptr(addr)) = v }

// String lifts a string the host wrote at addr (no copy: the string keeps the
// host's allocation alive).
func String(addr, n uint32) string {
	if n == 0 {
		return ""
	}
	return unsafe.String((*byte)(ptr(addr)), n)
}

// Bytes lifts a list<u8> the host wrote at addr (no copy).
func Bytes(addr, n uint32) []byte {
	if n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(ptr(addr)), n)
}

// Bool lowers a bool to its flat i32.
func Bool(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// Float32bits and friends convert between joined flat slots (variants) and
// their cases' own types.
func Float32bits(f float32) uint32 { return math.Float32bits(f) }

// Float32frombits converts an i32 slot back to an f32 case.
func Float32frombits(b uint32) float32 { return math.Float32frombits(b) }

// Float64bits converts an f64 case to an i64 slot.
func Float64bits(f float64) uint64 { return math.Float64bits(f) }

// Float64frombits converts an i64 slot back to an f64 case.
func Float64frombits(b uint64) float64 { return math.Float64frombits(b) }

// Result is a WIT result<T, E>: Err is meaningful when IsErr, Ok otherwise.
// A result without an ok (or err) type uses struct{}.
type Result[T, E any] struct {
	Ok    T
	Err   E
	IsErr bool
}

// OK is a successful Result.
func OK[T, E any](v T) Result[T, E] { return Result[T, E]{Ok: v} }

// Err is a failed Result.
func Err[T, E any](e E) Result[T, E] { return Result[T, E]{Err: e, IsErr: true} }

// Tuple2 is a WIT tuple<A, B>.
type Tuple2[A, B any] struct {
	F0 A
	F1 B
}

// Tuple3 is a WIT tuple<A, B, C>.
type Tuple3[A, B, C any] struct {
	F0 A
	F1 B
	F2 C
}

// Tuple4 is a WIT tuple<A, B, C, D>.
type Tuple4[A, B, C, D any] struct {
	F0 A
	F1 B
	F2 C
	F3 D
}
