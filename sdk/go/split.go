package herald

import (
	"encoding/json"
	"fmt"
)

// splitObject splits a JSON object into its members' names and value texts
// (slices of data, not copies) in one pass that checks the structure
// (strings, escapes, nesting, separators) without decoding the values:
// encoding/json would scan the whole text twice (validate, then decode) and
// copy every value, which under GOOS=wasip1 costs more than the handler's
// own work. A value left unread is checked in full when it is decoded. A
// name that appears twice is refused, as the Rust SDK's view refuses it.
func splitObject(data []byte) (map[string]json.RawMessage, error) {
	s := scanner{data: data}
	s.space()
	if s.peek() == 'n' && s.literal("null") {
		s.space()
		if s.at != len(data) {
			return nil, s.fail("text after the value")
		}
		return nil, nil
	}
	if !s.consume('{') {
		return nil, s.fail("expected an object")
	}
	fields := make(map[string]json.RawMessage, 8)
	s.space()
	if s.consume('}') {
		return fields, s.end()
	}
	for {
		s.space()
		name, err := s.name()
		if err != nil {
			return nil, err
		}
		s.space()
		if !s.consume(':') {
			return nil, s.fail("expected ':' after a member's name")
		}
		s.space()
		start := s.at
		if err := s.skipValue(0); err != nil {
			return nil, err
		}
		if _, seen := fields[name]; seen {
			return nil, fmt.Errorf("duplicate field `%s`", name)
		}
		fields[name] = data[start:s.at]
		s.space()
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			return fields, s.end()
		}
		return nil, s.fail("expected ',' or '}' after a member")
	}
}

// maxDepth bounds nesting, as encoding/json does (10,000).
const maxDepth = 10000

type scanner struct {
	data []byte
	at   int
}

func (s *scanner) peek() byte {
	if s.at < len(s.data) {
		return s.data[s.at]
	}
	return 0
}

func (s *scanner) consume(c byte) bool {
	if s.peek() == c {
		s.at++
		return true
	}
	return false
}

func (s *scanner) space() {
	for s.at < len(s.data) {
		switch s.data[s.at] {
		case ' ', '\t', '\n', '\r':
			s.at++
		default:
			return
		}
	}
}

func (s *scanner) literal(word string) bool {
	if len(s.data)-s.at >= len(word) && string(s.data[s.at:s.at+len(word)]) == word {
		s.at += len(word)
		return true
	}
	return false
}

func (s *scanner) fail(what string) error {
	if s.at >= len(s.data) {
		return fmt.Errorf("invalid JSON: %s, at the end of the text", what)
	}
	return fmt.Errorf("invalid JSON: %s, at offset %d (%q)", what, s.at, s.data[s.at])
}

func (s *scanner) end() error {
	s.space()
	if s.at != len(s.data) {
		return s.fail("text after the object")
	}
	return nil
}

// name reads a member's name: its text as is when it has no escapes, else
// decoded by encoding/json.
func (s *scanner) name() (string, error) {
	start := s.at
	escaped, err := s.skipString()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(s.data[start+1 : s.at-1]), nil
	}
	var name string
	if err := json.Unmarshal(s.data[start:s.at], &name); err != nil {
		return "", fmt.Errorf("invalid JSON: a member's name: %w", err)
	}
	return name, nil
}

// skipString passes a string; true if it has escapes.
func (s *scanner) skipString() (bool, error) {
	if !s.consume('"') {
		return false, s.fail("expected a string")
	}
	escaped := false
	for s.at < len(s.data) {
		c := s.data[s.at]
		switch {
		case c == '"':
			s.at++
			return escaped, nil
		case c == '\\':
			escaped = true
			s.at += 2
		case c < 0x20:
			return false, s.fail("a control character in a string")
		default:
			s.at++
		}
	}
	return false, s.fail("an unterminated string")
}

// skipValue passes one value at nesting depth.
func (s *scanner) skipValue(depth int) error {
	if depth > maxDepth {
		return s.fail("nested too deeply")
	}
	switch c := s.peek(); {
	case c == '"':
		_, err := s.skipString()
		return err
	case c == '{':
		s.at++
		s.space()
		if s.consume('}') {
			return nil
		}
		for {
			s.space()
			if _, err := s.skipString(); err != nil {
				return err
			}
			s.space()
			if !s.consume(':') {
				return s.fail("expected ':' after a member's name")
			}
			s.space()
			if err := s.skipValue(depth + 1); err != nil {
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
	case c == '[':
		s.at++
		s.space()
		if s.consume(']') {
			return nil
		}
		for {
			s.space()
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			s.space()
			if s.consume(',') {
				continue
			}
			if s.consume(']') {
				return nil
			}
			return s.fail("expected ',' or ']' after an element")
		}
	case c == 't':
		if s.literal("true") {
			return nil
		}
	case c == 'f':
		if s.literal("false") {
			return nil
		}
	case c == 'n':
		if s.literal("null") {
			return nil
		}
	case c == '-' || (c >= '0' && c <= '9'):
		for s.at < len(s.data) && isNumberByte(s.data[s.at]) {
			s.at++
		}
		return nil
	}
	return s.fail("expected a value")
}

// isNumberByte: a byte a JSON number may hold (checked in full when the
// value is decoded).
func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
