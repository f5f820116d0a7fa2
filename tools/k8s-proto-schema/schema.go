package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Field describes one Go struct field as the transcoder needs it. The JSON
// keys are short and written in this order; zero values are left out.
type Field struct {
	// Name is the JSON name; empty for an inline field.
	Name string `json:"n,omitempty"`
	// Number is the protobuf field number; 0 when the field has no
	// protobuf tag and so is never on the wire.
	Number int `json:"p,omitempty"`
	// Type is a scalar name, a special type name, or "m:" and a message id.
	Type string `json:"t"`
	// Container is "list" for a slice, "map" for a map with string keys,
	// and empty for a single value.
	Container string `json:"c,omitempty"`
	// Pointer is set when the Go field is a pointer.
	Pointer bool `json:"ptr,omitempty"`
	// Omit is "empty", "zero" or "empty+zero" after the json tag's
	// omitempty and omitzero options.
	Omit string `json:"o,omitempty"`
	// Inline is set for an embedded struct whose fields encoding/json
	// writes into the enclosing object.
	Inline bool `json:"i,omitempty"`
}

// Kind ties a group, version and kind to the message id of its Go type.
type Kind struct {
	Group, Version, Kind, Message string
}

// Schema is what the generator produces.
type Schema struct {
	// Source names the Kubernetes modules the schema was generated from.
	Source string
	// Kinds lists the fully supported kinds, sorted by group, version, kind.
	Kinds []Kind
	// Messages holds the fields of every struct the kinds and the extra
	// roots reach, by message id.
	Messages map[string][]Field
	// Unsupported gives, by message id, why a reachable struct does not
	// fit the model.
	Unsupported map[string]string
	// Dropped has one line for each kind left out, with the reason.
	Dropped []string
	// Notes has one line for each oddity that is supported but worth
	// knowing about, such as a protobuf tag without a label.
	Notes []string
}

// ExtraRoots are messages described even when no kind reaches them: the
// status of error answers and the envelope of watch events.
var ExtraRoots = []reflect.Type{
	reflect.TypeFor[metav1.Status](),
	reflect.TypeFor[metav1.WatchEvent](),
}

// special maps the types that marshal themselves, both to JSON and to
// protobuf, to the names the transcoder knows them by.
var special = map[reflect.Type]string{
	reflect.TypeFor[metav1.Time]():          "time",
	reflect.TypeFor[metav1.MicroTime]():     "microtime",
	reflect.TypeFor[metav1.Duration]():      "duration",
	reflect.TypeFor[resource.Quantity]():    "quantity",
	reflect.TypeFor[intstr.IntOrString]():   "intorstring",
	reflect.TypeFor[runtime.RawExtension](): "rawextension",
	reflect.TypeFor[metav1.FieldsV1]():      "fieldsv1",
}

// typeMeta is embedded, without a protobuf tag, in every top-level object:
// the kind and apiVersion come from the protobuf envelope instead.
var typeMeta = reflect.TypeFor[metav1.TypeMeta]()

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// MessageID names a struct type (or another named type): its package
// path, a dot and its name.
func MessageID(t reflect.Type) string {
	if t.Name() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// Generate describes every kind registered in scheme whose Go type is a
// struct from a k8s.io/api package, and the extra roots.
func Generate(scheme *runtime.Scheme) (*Schema, error) {
	source, err := sourceVersions()
	if err != nil {
		return nil, err
	}
	w := newWalker()
	var candidates []Kind
	for gvk, t := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		if t.Kind() != reflect.Struct || !strings.HasPrefix(t.PkgPath(), "k8s.io/api/") {
			continue
		}
		candidates = append(candidates, Kind{gvk.Group, gvk.Version, gvk.Kind, w.message(t)})
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Kind < b.Kind
	})
	var roots []string
	for _, t := range ExtraRoots {
		roots = append(roots, w.message(t))
	}
	w.checkFlattened()

	bad := w.unsupportedClosure()
	s := &Schema{
		Source:      source,
		Messages:    map[string][]Field{},
		Unsupported: map[string]string{},
		Notes:       w.notes,
	}
	for id, reasons := range w.problems {
		s.Unsupported[id] = strings.Join(reasons, "; ")
	}
	for _, root := range roots {
		if bad[root] {
			return nil, fmt.Errorf("the extra root %s is not supported: %s", root, w.why(root))
		}
		w.collect(root, s.Messages)
	}
	sort.Strings(s.Notes)
	for _, k := range candidates {
		if bad[k.Message] {
			s.Dropped = append(s.Dropped, fmt.Sprintf("dropped %s: %s", kindName(k), w.why(k.Message)))
			continue
		}
		s.Kinds = append(s.Kinds, k)
		w.collect(k.Message, s.Messages)
	}
	return s, nil
}

// kindName writes a kind as group/version Kind, "core" standing for "".
func kindName(k Kind) string {
	group := k.Group
	if group == "" {
		group = "core"
	}
	return group + "/" + k.Version + " " + k.Kind
}

// sourceVersions names the k8s.io/api and k8s.io/apimachinery versions this
// binary was built with.
func sourceVersions() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", fmt.Errorf("no build information to read the k8s.io module versions from")
	}
	versions := map[string]string{}
	for _, dep := range info.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		versions[dep.Path] = dep.Version
	}
	var parts []string
	for _, path := range []string{"k8s.io/api", "k8s.io/apimachinery"} {
		version, ok := versions[path]
		if !ok {
			return "", fmt.Errorf("the build information does not name %s", path)
		}
		parts = append(parts, path+" "+version)
	}
	return strings.Join(parts, ", ") + " (tools/k8s-proto-schema)", nil
}

// walker visits struct types by reflection, recording each one's fields,
// the messages they name, and any way the struct does not fit the model.
type walker struct {
	types    map[string]reflect.Type
	fields   map[string][]Field
	refs     map[string][]string
	problems map[string][]string
	notes    []string
}

func newWalker() *walker {
	return &walker{
		types:    map[string]reflect.Type{},
		fields:   map[string][]Field{},
		refs:     map[string][]string{},
		problems: map[string][]string{},
	}
}

// problem records why message id does not fit the model.
func (w *walker) problem(id, format string, args ...any) {
	w.problems[id] = append(w.problems[id], fmt.Sprintf(format, args...))
}

// message visits struct type t, once, and returns its message id.
func (w *walker) message(t reflect.Type) string {
	id := MessageID(t)
	if _, seen := w.types[id]; seen {
		return id
	}
	w.types[id] = t
	if t.Name() == "" {
		w.problem(id, "an unnamed struct type")
	}
	if customJSON(t) {
		w.problem(id, "%s has its own JSON marshalling", t.Name())
	}
	fields := []Field{}
	var wires []onWire
	for i := range t.NumField() {
		f, wire, ok := w.field(id, t.Field(i))
		if !ok {
			continue
		}
		fields = append(fields, f)
		if wire != nil {
			wire.index = i
			wire.field = f
			wires = append(wires, *wire)
		}
	}
	w.fields[id] = fields
	w.checkNumbers(id)
	if _, ok := w.problems[id]; !ok {
		w.checkWire(id, t, wires)
	}
	return id
}

// field describes struct field sf of message owner, with what its protobuf
// tag says about the wire when it has one; false when encoding/json leaves
// the field out.
func (w *walker) field(owner string, sf reflect.StructField) (Field, *onWire, bool) {
	jsonTag := sf.Tag.Get("json")
	protoTag, hasProto := sf.Tag.Lookup("protobuf")
	if jsonTag == "-" {
		if hasProto {
			w.problem(owner, "field %s is on the wire but json:\"-\" leaves it out", sf.Name)
		}
		return Field{}, nil, false
	}
	name, options, _ := strings.Cut(jsonTag, ",")
	if !validJSONName(name) {
		name = ""
	}
	base := sf.Type
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	inline := false
	switch {
	case sf.Anonymous:
		if !sf.IsExported() && base.Kind() != reflect.Struct {
			return Field{}, nil, false
		}
		inline = name == "" && base.Kind() == reflect.Struct
	case !sf.IsExported():
		if hasProto {
			w.problem(owner, "unexported field %s is on the wire", sf.Name)
		}
		return Field{}, nil, false
	}
	if name == "" && !inline {
		name = sf.Name
	}
	label := name
	if inline {
		label = sf.Name + " (inline)"
	}

	f, wire, err := w.describe(sf.Type)
	if err != nil {
		w.problem(owner, "field %s is %v", label, err)
		return Field{}, nil, false
	}
	f.Inline = inline
	if !inline {
		f.Name = name
	}
	opts := strings.Split(options, ",")
	empty, zero := hasOption(opts, "omitempty"), hasOption(opts, "omitzero")
	switch {
	case empty && zero:
		f.Omit = "empty+zero"
	case empty:
		f.Omit = "empty"
	case zero:
		f.Omit = "zero"
	}
	if hasOption(opts, "string") {
		w.problem(owner, "field %s has the json \"string\" option", label)
	}
	if !inline && hasOption(opts, "inline") {
		w.problem(owner, "field %s is tagged inline, which encoding/json ignores on a named field", label)
	}
	if inline {
		if f.Pointer {
			w.problem(owner, "field %s is an inline pointer", label)
		}
		if !strings.HasPrefix(f.Type, "m:") {
			w.problem(owner, "field %s is inline but not a message", label)
		}
	}

	if !hasProto {
		switch {
		case inline && sf.Type == typeMeta:
		case inline:
			w.problem(owner, "inline field %s has no protobuf tag", label)
		case !omittedWhenZero(sf.Type, empty, zero):
			w.problem(owner, "field %s has no protobuf tag, yet JSON writes it", label)
		default:
			w.notes = append(w.notes, fmt.Sprintf("%s: field %s has no protobuf tag (its JSON is omitted)", owner, label))
		}
		return f, nil, true
	}
	number, tagWire, err := w.checkProtoTag(owner, label, protoTag, f)
	if err != nil {
		w.problem(owner, "field %s: %v", label, err)
		return f, nil, true
	}
	f.Number = number
	return f, &onWire{wire: wire, tagWire: tagWire}, true
}

// describe gives the type, container and pointer parts of a field of Go
// type t, and the protobuf wire type its values (a map's values, a list's
// items) must have.
func (w *walker) describe(t reflect.Type) (Field, string, error) {
	var f Field
	if t.Kind() == reflect.Pointer {
		f.Pointer = true
		t = t.Elem()
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			return f, "", fmt.Errorf("a pointer to a %s (%s)", t.Kind(), t)
		}
	}
	if _, ok := special[t]; !ok && !isBytes(t) {
		switch t.Kind() {
		case reflect.Slice:
			if err := ownProtobuf(t); err != nil {
				return f, "", fmt.Errorf("of type %v", err)
			}
			f.Container = "list"
			t = t.Elem()
			switch {
			case t.Kind() == reflect.Pointer:
				return f, "", fmt.Errorf("a slice of pointers (%s)", t)
			case t.Kind() == reflect.Slice && !isBytes(t):
				return f, "", fmt.Errorf("a slice of slices (%s)", t)
			case t.Kind() == reflect.Map:
				return f, "", fmt.Errorf("a slice of maps (%s)", t)
			}
		case reflect.Map:
			if err := ownProtobuf(t); err != nil {
				return f, "", fmt.Errorf("of type %v", err)
			}
			if t.Key().Kind() != reflect.String {
				return f, "", fmt.Errorf("a map with %s keys (%s)", t.Key().Kind(), t)
			}
			f.Container = "map"
			t = t.Elem()
			switch {
			case t.Kind() == reflect.Pointer:
				return f, "", fmt.Errorf("a map of pointers (%s)", t)
			case t.Kind() == reflect.Slice && !isBytes(t):
				if err := ownProtobuf(t); err != nil {
					return f, "", fmt.Errorf("a map of slices: %v", err)
				}
				return f, "", fmt.Errorf("a map of slices (%s)", t)
			case t.Kind() == reflect.Map:
				return f, "", fmt.Errorf("a map of maps (%s)", t)
			}
		}
	}
	name, wire, err := w.value(t)
	f.Type = name
	return f, wire, err
}

// value names a single value's type and the protobuf wire type it needs.
func (w *walker) value(t reflect.Type) (string, string, error) {
	if name, ok := special[t]; ok {
		return name, "bytes", nil
	}
	if t.Kind() == reflect.Struct {
		return "m:" + w.message(t), "bytes", nil
	}
	if t.Name() != "" && t.PkgPath() != "" {
		if customJSON(t) {
			return "", "", fmt.Errorf("of type %s, which has its own JSON marshalling", MessageID(t))
		}
		if err := ownProtobuf(t); err != nil {
			return "", "", fmt.Errorf("of type %v", err)
		}
	}
	if isBytes(t) {
		return "bytes", "bytes", nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return "bool", "varint", nil
	case reflect.Int32:
		return "int32", "varint", nil
	case reflect.Int64, reflect.Int:
		return "int64", "varint", nil
	case reflect.Uint32:
		return "uint32", "varint", nil
	case reflect.Uint64, reflect.Uint:
		return "uint64", "varint", nil
	case reflect.Float32:
		return "float32", "fixed32", nil
	case reflect.Float64:
		return "float64", "fixed64", nil
	case reflect.String:
		return "string", "bytes", nil
	}
	return "", "", fmt.Errorf("a %s (%s)", t.Kind(), t)
}

// checkProtoTag reads the field number and wire type from a protobuf
// struct tag such as "bytes,1,opt,name=metadata". Tags are not always
// right: their wire type is checked against what the generated Marshal
// writes (see checkWire), and a label that disagrees with the Go type is
// only noted, since the Go type decides the JSON and the wire form of a
// repeated field is that of its items.
func (w *walker) checkProtoTag(owner, label, tag string, f Field) (int, string, error) {
	parts := strings.Split(tag, ",")
	if len(parts) < 2 {
		return 0, "", fmt.Errorf("the protobuf tag %q has no field number", tag)
	}
	number, err := strconv.Atoi(parts[1])
	if err != nil || number <= 0 {
		return 0, "", fmt.Errorf("the protobuf tag %q has no valid field number", tag)
	}
	switch parts[0] {
	case "varint", "fixed64", "fixed32", "bytes":
	default:
		return 0, "", fmt.Errorf("the protobuf tag %q has the wire type %s", tag, parts[0])
	}
	repeated := f.Container != ""
	labelled := false
	for _, part := range parts[2:] {
		switch part {
		case "rep", "opt", "req":
			labelled = true
			if (part == "rep") != repeated {
				w.notes = append(w.notes, fmt.Sprintf("%s: field %s: the protobuf tag %q has the label %s, but the Go type is a %s",
					owner, label, tag, part, container(f)))
			}
		case "packed":
			w.notes = append(w.notes, fmt.Sprintf("%s: field %s is tagged packed (%s)", owner, label, tag))
		}
	}
	if !labelled {
		w.notes = append(w.notes, fmt.Sprintf("%s: field %s: the protobuf tag %q has no label", owner, label, tag))
	}
	return number, parts[0], nil
}

// container names a field's container for messages.
func container(f Field) string {
	if f.Container == "" {
		return "single value"
	}
	return f.Container
}

// checkNumbers reports a protobuf field number used twice in message id.
func (w *walker) checkNumbers(id string) {
	seen := map[int]string{}
	for _, f := range w.fields[id] {
		if f.Number == 0 {
			continue
		}
		if other, dup := seen[f.Number]; dup {
			w.problem(id, "fields %s and %s share protobuf number %d", other, f.Name, f.Number)
		}
		seen[f.Number] = f.Name
	}
}

// checkFlattened reports messages in which two fields, counting those that
// inline fields bring in, have the same JSON name: encoding/json then
// applies its precedence rules, which the transcoder does not follow.
func (w *walker) checkFlattened() {
	ids := sortedKeys(w.fields)
	for _, id := range ids {
		seen := map[string]bool{}
		var dups []string
		var walk func(id string, depth int)
		walk = func(id string, depth int) {
			if depth > 32 {
				return
			}
			for _, f := range w.fields[id] {
				if f.Inline {
					walk(strings.TrimPrefix(f.Type, "m:"), depth+1)
					continue
				}
				if seen[f.Name] {
					dups = append(dups, f.Name)
				}
				seen[f.Name] = true
			}
		}
		walk(id, 0)
		if len(dups) > 0 {
			w.problem(id, "inlining gives more than one field the JSON name(s) %s", strings.Join(dups, ", "))
		}
	}
}

// references lists the message ids the fields of message id name.
func (w *walker) references(id string) []string {
	var out []string
	for _, f := range w.fields[id] {
		if ref, ok := strings.CutPrefix(f.Type, "m:"); ok {
			out = append(out, ref)
		}
	}
	return out
}

// unsupportedClosure gives the messages that have a problem or reach one.
func (w *walker) unsupportedClosure() map[string]bool {
	bad := map[string]bool{}
	for id := range w.problems {
		bad[id] = true
	}
	for changed := true; changed; {
		changed = false
		for id := range w.fields {
			if bad[id] {
				continue
			}
			for _, ref := range w.references(id) {
				if bad[ref] {
					bad[id] = true
					changed = true
					break
				}
			}
		}
	}
	return bad
}

// why explains, by the shortest path of messages, how message id reaches
// an unsupported one.
func (w *walker) why(id string) string {
	from := map[string]string{id: ""}
	queue := []string{id}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		if reasons, ok := w.problems[at]; ok {
			path := []string{at}
			for back := from[at]; back != ""; back = from[back] {
				path = append([]string{back}, path...)
			}
			return strings.Join(path, " -> ") + ": " + strings.Join(reasons, "; ")
		}
		for _, ref := range w.references(at) {
			if _, seen := from[ref]; !seen {
				from[ref] = at
				queue = append(queue, ref)
			}
		}
	}
	return "no unsupported message found"
}

// collect copies message id, and every message it reaches, into out.
func (w *walker) collect(id string, out map[string][]Field) {
	if _, done := out[id]; done {
		return
	}
	out[id] = w.fields[id]
	for _, ref := range w.references(id) {
		w.collect(ref, out)
	}
}

// customJSON reports whether encoding/json would call a marshalling method
// of t (or *t) rather than write its fields or value itself.
func customJSON(t reflect.Type) bool {
	if _, ok := special[t]; ok {
		return false
	}
	for _, u := range []reflect.Type{t, reflect.PointerTo(t)} {
		if u.Implements(jsonMarshaler) || u.Implements(textMarshaler) {
			return true
		}
	}
	return false
}

// ownProtobuf reports a named non-struct type with its own protobuf
// Marshal method: on the wire it is a message (ExtraValue, for example, is
// a message wrapping "items"), not the repeated field its Go type suggests.
func ownProtobuf(t reflect.Type) error {
	if t.Name() == "" {
		return nil
	}
	for _, u := range []reflect.Type{t, reflect.PointerTo(t)} {
		if _, ok := u.MethodByName("Marshal"); ok {
			return fmt.Errorf("%s, a named %s with its own protobuf Marshal (a wrapper message on the wire)", MessageID(t), t.Kind())
		}
	}
	return nil
}

// isBytes reports a slice of bytes, which encoding/json writes as base64.
func isBytes(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8
}

// omittedWhenZero reports whether encoding/json leaves out the zero value
// of a field of type t with the given options.
func omittedWhenZero(t reflect.Type, empty, zero bool) bool {
	if zero {
		return true
	}
	if !empty {
		return false
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Array:
		return false
	}
	return true
}

// hasOption reports whether a json tag's options include option.
func hasOption(options []string, option string) bool {
	for _, o := range options {
		if o == option {
			return true
		}
	}
	return false
}

// validJSONName reports whether encoding/json accepts name from a tag; it
// falls back to the Go field name otherwise.
func validJSONName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) {
			continue
		}
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}

// sortedKeys gives a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
