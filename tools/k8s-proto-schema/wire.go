package main

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Protobuf wire types, by the names protobuf struct tags use.
var wireNames = map[uint64]string{0: "varint", 1: "fixed64", 2: "bytes", 5: "fixed32"}

// marshaler is the generated protobuf encoder of a Kubernetes type.
type marshaler interface {
	Marshal() ([]byte, error)
}

// onWire is what the generator expects of one field on the wire.
type onWire struct {
	// index is the field's index in its Go struct.
	index int
	// field is the schema entry.
	field Field
	// wire is the wire type of one value (a list item, a map value).
	wire string
	// tagWire is the wire type the protobuf struct tag claims.
	tagWire string
}

// checkWire marshals samples of struct t with its generated protobuf code,
// one field set at a time, and checks each field's number and wire type on
// the wire against the schema. It is the wire, not the struct tag, that the
// transcoder reads, and a few tags are wrong.
func (w *walker) checkWire(id string, t reflect.Type, expected []onWire) {
	if _, ok := reflect.New(t).Interface().(marshaler); !ok {
		w.problem(id, "%s has no protobuf Marshal method", t.Name())
		return
	}
	known := map[int]bool{}
	for _, e := range expected {
		known[e.field.Number] = true
	}
	seen := map[int]bool{}
	record := func(keys []key) {
		for _, k := range keys {
			seen[k.number] = true
		}
	}
	zero, err := marshalKeys(reflect.New(t))
	if err != nil {
		w.problem(id, "marshalling the zero value: %v", err)
		return
	}
	record(zero)
	for _, e := range expected {
		value := reflect.New(t)
		sample(value.Elem().Field(e.index))
		keys, err := marshalKeys(value)
		if err != nil {
			w.problem(id, "marshalling a sample of field %s: %v", e.label(), err)
			continue
		}
		record(keys)
		var got []key
		for _, k := range keys {
			if k.number == e.field.Number {
				got = append(got, k)
			}
		}
		if len(got) == 0 {
			w.problem(id, "field %s: Marshal does not write field number %d", e.label(), e.field.Number)
			continue
		}
		w.checkKey(id, e, got[0])
	}
	var extra []string
	for number := range seen {
		if !known[number] {
			extra = append(extra, fmt.Sprint(number))
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		w.problem(id, "Marshal writes field number(s) %s, which no JSON field has", strings.Join(extra, ", "))
	}
}

// checkKey compares one written field with what the schema expects.
func (w *walker) checkKey(id string, e onWire, got key) {
	label := e.label()
	switch e.field.Container {
	case "map":
		if got.wire != "bytes" {
			w.problem(id, "field %s: a map entry written as %s", label, got.wire)
			return
		}
		entry, err := readKeys(got.payload)
		if err != nil {
			w.problem(id, "field %s: reading a map entry: %v", label, err)
			return
		}
		wires := map[int]string{}
		for _, k := range entry {
			wires[k.number] = k.wire
		}
		if wires[1] != "bytes" || wires[2] != e.wire {
			w.problem(id, "field %s: a map entry with key %q and value %q, want bytes and %s", label, wires[1], wires[2], e.wire)
			return
		}
	case "list":
		if got.wire == "bytes" && e.wire != "bytes" {
			w.notes = append(w.notes, fmt.Sprintf("%s: field %s is written packed", id, label))
		} else if got.wire != e.wire {
			w.problem(id, "field %s: items written as %s, but the Go type needs %s", label, got.wire, e.wire)
			return
		}
	default:
		if got.wire != e.wire {
			w.problem(id, "field %s: written as %s, but the Go type needs %s", label, got.wire, e.wire)
			return
		}
	}
	if e.tagWire != "" && e.tagWire != got.wire {
		w.notes = append(w.notes, fmt.Sprintf("%s: field %s: the protobuf tag says %s, but Marshal writes %s as the Go type needs",
			id, label, e.tagWire, got.wire))
	}
}

// label names the field in messages.
func (e onWire) label() string {
	if e.field.Inline {
		return strings.TrimPrefix(e.field.Type, "m:") + " (inline)"
	}
	return e.field.Name
}

// sample sets v, a zero field, to a value its generated Marshal writes:
// a non-nil pointer, a one-item slice or map, a non-empty scalar. Generated
// code always writes non-pointer messages, so a struct is left zero.
func sample(v reflect.Value) {
	t := v.Type()
	switch t.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
	case reflect.Slice:
		s := reflect.MakeSlice(t, 1, 1)
		sample(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMapWithSize(t, 1)
		key := reflect.New(t.Key()).Elem()
		sample(key)
		item := reflect.New(t.Elem()).Elem()
		sample(item)
		m.SetMapIndex(key, item)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	}
}

// key is one field as written: its number, wire type and, for
// length-delimited fields, its bytes.
type key struct {
	number  int
	wire    string
	payload []byte
}

// marshalKeys runs the generated Marshal of ptr (a pointer to a struct)
// and reads the top-level fields it writes.
func marshalKeys(ptr reflect.Value) (keys []key, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Marshal panicked: %v", r)
		}
	}()
	data, err := ptr.Interface().(marshaler).Marshal()
	if err != nil {
		return nil, err
	}
	return readKeys(data)
}

// readKeys splits protobuf bytes into fields, without looking inside.
func readKeys(data []byte) ([]key, error) {
	var keys []key
	for len(data) > 0 {
		tag, n := varint(data)
		if n == 0 {
			return nil, fmt.Errorf("a truncated field key")
		}
		data = data[n:]
		k := key{number: int(tag >> 3), wire: wireNames[tag&7]}
		switch tag & 7 {
		case 0:
			_, n = varint(data)
			if n == 0 {
				return nil, fmt.Errorf("a truncated varint")
			}
		case 1:
			n = 8
		case 5:
			n = 4
		case 2:
			size, m := varint(data)
			if m == 0 || uint64(len(data)-m) < size {
				return nil, fmt.Errorf("a truncated length-delimited field")
			}
			k.payload = data[m : m+int(size)]
			n = m + int(size)
		default:
			return nil, fmt.Errorf("wire type %d", tag&7)
		}
		if n > len(data) {
			return nil, fmt.Errorf("a truncated field")
		}
		data = data[n:]
		keys = append(keys, k)
	}
	return keys, nil
}

// varint reads a base-128 varint, giving its value and length (0 when
// data ends first).
func varint(data []byte) (uint64, int) {
	var value uint64
	for i, b := range data {
		if i == 10 {
			return 0, 0
		}
		value |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return value, i + 1
		}
	}
	return 0, 0
}
