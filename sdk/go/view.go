package herald

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"unsafe"
)

// ObjectView is an object read lazily: its apiVersion, kind and metadata
// decoded, every other top-level field (spec, status, data, ...) kept as
// undecoded JSON until the handler asks for it, in the type it chooses.
//
// Decoding a whole k8s.io/api object builds every field: a 4 KB Pod is
// hundreds of strings, maps and slices, most of which a handler never
// reads. A view scans the text once and builds only the metadata:
//
//	pod, err := event.View()
//	app := pod.Metadata.Labels["app"]
//	var status corev1.PodStatus
//	found, err := pod.Status(&status) // decoded now, and only the status
type ObjectView struct {
	APIVersion string
	Kind       string
	Metadata   MetaView
	fields     map[string]json.RawMessage
}

// MetaView is an object's metadata (managedFields and the fields listed
// nowhere here are skipped).
type MetaView struct {
	Name              string            `json:"name"`
	GenerateName      string            `json:"generateName"`
	Namespace         string            `json:"namespace"`
	UID               string            `json:"uid"`
	ResourceVersion   string            `json:"resourceVersion"`
	Generation        int64             `json:"generation"`
	CreationTimestamp string            `json:"creationTimestamp"`
	DeletionTimestamp string            `json:"deletionTimestamp"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
	OwnerReferences   []OwnerView       `json:"ownerReferences"`
	Finalizers        []string          `json:"finalizers"`
}

// OwnerView is one of metadata.ownerReferences.
type OwnerView struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Controller bool   `json:"controller"`
}

// Controller is the owner reference marked controller, or nil.
func (m *MetaView) Controller() *OwnerView {
	for i := range m.OwnerReferences {
		if m.OwnerReferences[i].Controller {
			return &m.OwnerReferences[i]
		}
	}
	return nil
}

// IsBeingDeleted says whether deletion was requested (deletionTimestamp is
// set while finalizers hold the object).
func (m *MetaView) IsBeingDeleted() bool { return m.DeletionTimestamp != "" }

// ParseView reads an object's JSON text lazily. It fails if the text is not
// a JSON object or its metadata is malformed.
func ParseView(text string) (*ObjectView, error) { return readView(text, "object") }

func readView(text, what string) (*ObjectView, error) {
	v := &ObjectView{}
	// The view reads text's memory in place, and never writes it (a Go
	// string's memory never changes): no copy of the object.
	if err := v.read(unsafe.Slice(unsafe.StringData(text), len(text))); err != nil {
		return nil, fmt.Errorf("reading the %s: %w", what, err)
	}
	return v, nil
}

// UnmarshalJSON reads an object, so that views can sit in other types.
func (v *ObjectView) UnmarshalJSON(data []byte) error {
	// encoding/json may reuse data once this returns: keep a copy.
	return v.read(bytes.Clone(data))
}

// read splits data (which the view keeps, and never writes) into its
// top-level fields and decodes apiVersion, kind and metadata.
func (v *ObjectView) read(data []byte) error {
	fields, err := splitObject(data, &v.Metadata)
	if err != nil {
		return err
	}
	if fields == nil {
		return fmt.Errorf("expected a Kubernetes object, found null")
	}
	for _, name := range [...]string{"apiVersion", "kind"} {
		raw, ok := fields[name]
		if !ok {
			continue
		}
		delete(fields, name)
		text, err := plainString(raw)
		if err != nil {
			return fmt.Errorf("`%s`: %w", name, err)
		}
		if name == "kind" {
			v.Kind = text
		} else {
			v.APIVersion = text
		}
	}
	delete(fields, "metadata") // decoded by the split
	v.fields = fields
	return nil
}

// plainString decodes a JSON string (or null, as ""): without escapes
// straight from its text, else through encoding/json.
func plainString(raw []byte) (string, error) {
	if bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw[1:len(raw)-1], '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var text string
	err := json.Unmarshal(raw, &text)
	return text, err
}

// Spec decodes `spec` into out (a k8s.io/api spec type such as
// corev1.PodSpec, or a struct with only the fields read); false if the
// object has no spec or it is null.
func (v *ObjectView) Spec(out any) (bool, error) { return v.Field("spec", out) }

// Status decodes `status` into out (see Spec).
func (v *ObjectView) Status(out any) (bool, error) { return v.Field("status", out) }

// Field decodes any other top-level field into out, e.g. a ConfigMap's
// `data` into a map[string]string; false if absent or null.
func (v *ObjectView) Field(name string, out any) (bool, error) {
	raw := v.fields[name]
	if raw == nil || bytes.Equal(raw, []byte("null")) {
		return false, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return false, fmt.Errorf("decoding `%s`: %w", name, err)
	}
	return true, nil
}

// Raw is a top-level field's JSON text, undecoded ("" if absent): cheap to
// compare, as in old.Raw("spec") != new.Raw("spec").
func (v *ObjectView) Raw(name string) string { return string(v.fields[name]) }

// FieldNames are the top-level fields other than apiVersion, kind and
// metadata, sorted.
func (v *ObjectView) FieldNames() []string {
	names := make([]string, 0, len(v.fields))
	for name := range v.fields {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
