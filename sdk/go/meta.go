package herald

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unsafe"
)

// readMeta decodes an object's metadata (its JSON text: an object or null)
// into m with the view's scanner, as encoding/json would decode it into a
// MetaView but without its reflection, which under GOOS=wasip1 cost a view
// two thirds of its time. Member names match exactly (as Kubernetes writes
// them); fields MetaView does not hold, managedFields among them, are
// checked and skipped; a member given twice takes its last value.
//
// Strings without escapes share data's memory (the view keeps data and
// never changes it), so reading the metadata allocates only its maps and
// slices.
func readMeta(data []byte, m *MetaView) error {
	s := scanner{data: data}
	s.space()
	if err := s.meta(m); err != nil {
		return err
	}
	return s.end()
}

// meta reads the metadata that starts here into m (see readMeta).
func (s *scanner) meta(m *MetaView) error {
	if s.null() {
		return nil
	}
	return s.members(func(name string) error {
		var err error
		switch name {
		case "name":
			m.Name, err = s.stringValue()
		case "generateName":
			m.GenerateName, err = s.stringValue()
		case "namespace":
			m.Namespace, err = s.stringValue()
		case "uid":
			m.UID, err = s.stringValue()
		case "resourceVersion":
			m.ResourceVersion, err = s.stringValue()
		case "generation":
			m.Generation, err = s.int64Value()
		case "creationTimestamp":
			m.CreationTimestamp, err = s.stringValue()
		case "deletionTimestamp":
			m.DeletionTimestamp, err = s.stringValue()
		case "labels":
			m.Labels, err = s.stringMap()
		case "annotations":
			m.Annotations, err = s.stringMap()
		case "ownerReferences":
			m.OwnerReferences, err = s.owners()
		case "finalizers":
			m.Finalizers, err = s.strings()
		default:
			return s.skipValue(0)
		}
		if err != nil {
			return fmt.Errorf("`%s`: %w", name, err)
		}
		return nil
	})
}

// members reads an object member by member: each name (decoded), then
// field, which must read its value.
func (s *scanner) members(field func(name string) error) error {
	if !s.consume('{') {
		return s.fail("expected an object")
	}
	s.space()
	if s.consume('}') {
		return nil
	}
	for {
		s.space()
		name, err := s.text()
		if err != nil {
			return err
		}
		s.space()
		if !s.consume(':') {
			return s.fail("expected ':' after a member's name")
		}
		s.space()
		if err := field(name); err != nil {
			return err
		}
		s.space()
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			return nil
		}
		return s.fail("expected ',' or '}' after a member")
	}
}

// elements reads an array element by element (element reads each value);
// false if the value is null.
func (s *scanner) elements(element func() error) (bool, error) {
	if s.null() {
		return false, nil
	}
	if !s.consume('[') {
		return false, s.fail("expected an array")
	}
	s.space()
	if s.consume(']') {
		return true, nil
	}
	for {
		s.space()
		if err := element(); err != nil {
			return false, err
		}
		s.space()
		if s.consume(',') {
			continue
		}
		if s.consume(']') {
			return true, nil
		}
		return false, s.fail("expected ',' or ']' after an element")
	}
}

// null passes a null, if that is what comes next.
func (s *scanner) null() bool {
	return s.peek() == 'n' && s.literal("null")
}

// stringValue reads a string, "" for null (see text).
func (s *scanner) stringValue() (string, error) {
	if s.null() {
		return "", nil
	}
	return s.text()
}

// text reads a string. One without escapes shares the scanner's data; one
// with escapes is decoded by encoding/json.
func (s *scanner) text() (string, error) {
	start := s.at
	escaped, err := s.skipString()
	if err != nil {
		return "", err
	}
	if !escaped {
		text := s.data[start+1 : s.at-1]
		return unsafe.String(unsafe.SliceData(text), len(text)), nil
	}
	var text string
	if err := json.Unmarshal(s.data[start:s.at], &text); err != nil {
		return "", fmt.Errorf("invalid JSON: a string: %w", err)
	}
	return text, nil
}

// int64Value reads an integer (0 for null); a fraction, an exponent or a
// value out of range is an error, as encoding/json makes it for an int64.
func (s *scanner) int64Value() (int64, error) {
	if s.null() {
		return 0, nil
	}
	start := s.at
	for s.at < len(s.data) && isNumberByte(s.data[s.at]) {
		s.at++
	}
	text := s.data[start:s.at]
	if len(text) == 0 {
		return 0, s.fail("expected an integer")
	}
	n, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(text), len(text)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("expected an integer, found %s", strconv.Quote(string(text)))
	}
	return n, nil
}

// boolValue reads true or false (false for null).
func (s *scanner) boolValue() (bool, error) {
	switch {
	case s.literal("true"):
		return true, nil
	case s.literal("false"), s.null():
		return false, nil
	}
	return false, s.fail("expected true or false")
}

// stringMap reads an object of strings (nil for null).
func (s *scanner) stringMap() (map[string]string, error) {
	if s.null() {
		return nil, nil
	}
	m := make(map[string]string, 4)
	err := s.members(func(name string) error {
		value, err := s.stringValue()
		if err != nil {
			return fmt.Errorf("`%s`: %w", name, err)
		}
		m[name] = value
		return nil
	})
	return m, err
}

// strings reads an array of strings (nil for null).
func (s *scanner) strings() ([]string, error) {
	list := []string{}
	found, err := s.elements(func() error {
		text, err := s.stringValue()
		list = append(list, text)
		return err
	})
	if !found {
		list = nil
	}
	return list, err
}

// owners reads metadata.ownerReferences (nil for null).
func (s *scanner) owners() ([]OwnerView, error) {
	list := []OwnerView{}
	found, err := s.elements(func() error {
		list = append(list, OwnerView{})
		owner := &list[len(list)-1]
		if s.null() {
			return nil
		}
		return s.members(func(name string) error {
			var err error
			switch name {
			case "apiVersion":
				owner.APIVersion, err = s.stringValue()
			case "kind":
				owner.Kind, err = s.stringValue()
			case "name":
				owner.Name, err = s.stringValue()
			case "uid":
				owner.UID, err = s.stringValue()
			case "controller":
				owner.Controller, err = s.boolValue()
			default:
				return s.skipValue(0)
			}
			if err != nil {
				return fmt.Errorf("`%s`: %w", name, err)
			}
			return nil
		})
	})
	if !found {
		list = nil
	}
	return list, err
}
