package herald

import (
	"encoding/json"
	"fmt"
	"math/bits"
)

// splitObject splits a JSON object into its members' names and value texts
// (slices of data, not copies) in one pass that checks the structure
// (strings, escapes, nesting, separators) without decoding the values:
// encoding/json would scan the whole text twice (validate, then decode) and
// copy every value, which under GOOS=wasip1 costs more than the handler's
// own work. A value left unread is checked in full when it is decoded. A
// name that appears twice is refused, as the Rust SDK's view refuses it.
// With meta, the member `metadata` is decoded into it in the same pass.
func splitObject(data []byte, meta *MetaView) (map[string]json.RawMessage, error) {
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
		if meta != nil && name == "metadata" {
			if err := s.meta(meta); err != nil {
				return nil, fmt.Errorf("`metadata`: %w", err)
			}
		} else if err := s.skipValue(0); err != nil {
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

func (s *scanner) space() { s.at = skipSpace(s.data, s.at) }

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
	if s.peek() != '"' {
		return false, s.fail("expected a string")
	}
	start := s.at
	end := stringEnd(s.data, start)
	switch {
	case end == unterminated:
		s.at = len(s.data)
		return false, s.fail("an unterminated string")
	case end < 0:
		s.at = -end
		return false, s.fail("a control character in a string")
	}
	s.at = end &^ escapes
	return end&escapes != 0, nil
}

// unterminated is stringEnd's answer for a string without its closing
// quote.
const unterminated = -1 << 62

// escapes is the bit stringEnd sets in its answer for a string that holds
// an escape (no text in a 32-bit memory reaches it), so that a name or a
// value without one is used as it is without a second pass to look.
const escapes = 1 << 40

// stringEnd is the index just past the string that starts (with its
// quote) at i, with the escapes bit set if it holds an escape;
// unterminated if it does not end; minus the index of a control character
// in it. One int, not a pair with an error: this runs for every string of
// every object, and under GOOS=wasip1 a call's every result is a store and
// a load.
func stringEnd(data []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	escaped := 0
	for i++; i < len(data); i++ {
		// Eight bytes at a time while none is a quote, a backslash or a
		// control character (a byte below n leaves its top bit set in
		// b - n where it was clear in b).
		for i+8 <= len(data) {
			w := load64(data, i)
			q, b := w^(ones*'"'), w^(ones*'\\')
			if found := ((w-ones*0x20)&^w | (q-ones)&^q | (b-ones)&^b) & highs; found != 0 {
				// The lowest flag is exact (a borrow only runs upward from
				// a byte that is flagged itself): go straight to it.
				i += bits.TrailingZeros64(found) / 8
				goto special
			}
			i += 8
		}
		if i == len(data) {
			break
		}
		if plainInString[data[i]] {
			continue
		}
	special:
		c := data[i]
		switch c {
		case '"':
			return i + 1 | escaped
		case '\\':
			escaped = escapes
			i++
		default:
			return -i
		}
	}
	return unterminated
}

// plainInString are the bytes a string's scan passes without a look:
// all but the quote, the backslash and control characters.
var plainInString = func() (plain [256]bool) {
	for c := range plain {
		plain[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return plain
}()

// skipValue passes one value at nesting depth, checking its structure. It
// is one loop over the text with the open containers on a stack of its
// own, not a call per value: function calls are dear under GOOS=wasip1,
// and this loop is most of a view's time.
func (s *scanner) skipValue(depth int) error {
	data, i := s.data, s.at
	var (
		small [32]byte
		open  = small[:0] // '{' or '[' for each container entered
		fail  = func(what string) error {
			s.at = i
			return s.fail(what)
		}
	)
value:
	if depth+len(open) > maxDepth {
		return fail("nested too deeply")
	}
	i = skipSpace(data, i)
	if i == len(data) {
		return fail("expected a value")
	}
	switch c := data[i]; {
	case c == '"':
		end := stringEnd(data, i)
		if end < 0 {
			s.at = i
			_, err := s.skipString()
			return err
		}
		i = end &^ escapes
	case c == '{':
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == '}' {
			i++
			break
		}
		open = append(open, '{')
		goto member
	case c == '[':
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == ']' {
			i++
			break
		}
		open = append(open, '[')
		goto value
	case c == 't' || c == 'f' || c == 'n':
		s.at = i
		if !s.literal("true") && !s.literal("false") && !s.literal("null") {
			return s.fail("expected a value")
		}
		i = s.at
	case c == '-' || (c >= '0' && c <= '9'):
		for i < len(data) && isNumberByte(data[i]) {
			i++
		}
	default:
		return fail("expected a value")
	}
next:
	if len(open) == 0 {
		s.at = i
		return nil
	}
	i = skipSpace(data, i)
	if i < len(data) {
		switch top := open[len(open)-1]; data[i] {
		case ',':
			i++
			if top == '{' {
				goto member
			}
			goto value
		case '}', ']':
			if (top == '{') == (data[i] == '}') {
				open = open[:len(open)-1]
				i++
				goto next
			}
		}
	}
	if open[len(open)-1] == '{' {
		return fail("expected ',' or '}' after a member")
	}
	return fail("expected ',' or ']' after an element")
member:
	i = skipSpace(data, i)
	if end := stringEnd(data, i); i == len(data) || data[i] != '"' || end < 0 {
		s.at = i
		_, err := s.skipString()
		return err
	} else {
		i = skipSpace(data, end&^escapes)
	}
	if i == len(data) || data[i] != ':' {
		return fail("expected ':' after a member's name")
	}
	i++
	goto value
}

// skipSpace is the index of the first byte from i on that is not JSON
// whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r') {
		i++
	}
	return i
}

// isNumberByte: a byte a JSON number may hold (checked in full when the
// value is decoded).
func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
