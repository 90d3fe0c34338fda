package value

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// DecodeJSON parses one JSON document into a portable-shaped value.
// Numbers written with a fraction or an exponent become float64, all
// others int64, so integers and floats keep their identity. Keys starting
// with "$" are kept (callers that accept them, such as the graph codec,
// interpret them; use Check to reject them). It refuses what a portable
// value cannot be and encoding/json would let through or quietly change:
// trailing data, duplicate object keys, text that is not UTF-8 (raw, or a
// lone surrogate escape), numbers out of their Go type's range, nesting
// deeper than MaxDepth. It parses without reflection, since a run is
// decoded at every claim.
func DecodeJSON(b []byte) (any, error) { return DecodeJSONWords(b, nil) }

// DecodeJSONWords is DecodeJSON for documents whose strings are often one
// of a few words: a string equal to a key of words is returned as that
// key's value, so it allocates nothing. The map must not change while it
// is used.
func DecodeJSONWords(b []byte, words map[string]string) (any, error) {
	return decodeJSON(b, words, 0)
}

// DecodeJSONEnvelope is DecodeJSONWords for a document that holds
// portable values below up to envelope levels of its own structure (a run
// document, an event payload): those levels do not count toward MaxDepth,
// so every value Check accepts reads back from the document that stored it.
func DecodeJSONEnvelope(b []byte, words map[string]string, envelope int) (any, error) {
	return decodeJSON(b, words, max(envelope, 0))
}

func decodeJSON(b []byte, words map[string]string, envelope int) (any, error) {
	stack := memberStacks.Get().(*[]member)
	p := parser{b: b, members: (*stack)[:0], words: words}
	defer func() {
		// Only a stack of ordinary size goes back: one document of huge
		// objects must not keep its stack alive for every later parse.
		if cap(p.members) <= maxPooledMembers {
			if p.err != nil {
				// A failed parse leaves members on the stack; an object
				// clears its own only once built.
				clear(p.members[:cap(p.members)])
			}
			*stack = p.members[:0]
			memberStacks.Put(stack)
		}
	}()
	p.space()
	v := p.value(-envelope)
	if p.err == nil {
		p.space()
		if p.i < len(p.b) {
			p.fail("unexpected data after the document")
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	return v, nil
}

// memberStacks recycles the parsers' member stacks: a run is decoded at
// every claim, and its stack regrew from nothing each time.
var memberStacks = sync.Pool{New: func() any {
	s := make([]member, 0, 32)
	return &s
}}

// maxPooledMembers bounds the stacks memberStacks keeps.
const maxPooledMembers = 4096

type parser struct {
	b     []byte
	i     int
	err   error
	words map[string]string // strings returned without allocating
	// recent, when set, holds the short strings read so far, so one
	// read again (a key every record repeats) allocates nothing.
	recent *recentStrings
	buf    []byte // scratch for strings with escapes
	// members holds the members of the objects being parsed, innermost
	// last.
	members []member
}

func (p *parser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("decode json: offset %d: %s", p.i, fmt.Sprintf(format, args...))
	}
}

func (p *parser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) any {
	if p.err != nil {
		return nil
	}
	if depth > MaxDepth {
		p.fail("nesting deeper than %d", MaxDepth)
		return nil
	}
	if p.i >= len(p.b) {
		p.fail("unexpected end of input")
		return nil
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		if p.recent != nil {
			return p.recentValue()
		}
		return p.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true", true)
	case c == 'f':
		return p.literal("false", false)
	case c == 'n':
		return p.literal("null", nil)
	default:
		p.fail("unexpected character %q", c)
		return nil
	}
}

func (p *parser) literal(word string, v any) any {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		p.fail("invalid literal")
		return nil
	}
	p.i += len(word)
	return v
}

func (p *parser) object(depth int) any {
	p.i++ // {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return map[string]any{}
	}
	// The members wait on the parser's stack (a nested object's above
	// them) so the map is made once, at its final size.
	base := len(p.members)
	defer func() { p.members = p.members[:base] }()
	for p.err == nil {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			p.fail("want an object key")
			return nil
		}
		k := p.string()
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			p.fail("want ':' after an object key")
			return nil
		}
		p.i++
		p.space()
		v := p.value(depth + 1)
		if p.err != nil {
			return nil
		}
		p.members = append(p.members, member{key: k, value: v})
		if p.separator('}', "object") {
			return p.build(p.members[base:])
		}
	}
	return nil
}

// member is one key and value of an object being parsed.
type member struct {
	key   string
	value any
}

// build makes the map of an object's members; a key given twice is an
// error.
func (p *parser) build(members []member) any {
	m := make(map[string]any, len(members))
	for _, e := range members {
		m[e.key] = e.value
	}
	if len(m) != len(members) {
		seen := make(map[string]bool, len(members))
		for _, e := range members {
			if seen[e.key] {
				p.fail("duplicate key %q", e.key)
				break
			}
			seen[e.key] = true
		}
		return nil
	}
	clear(members) // the stack keeps no value alive
	return m
}

// separator reads what follows a member or an element: ',' (more
// follow) or closing, which ends the container (true). Anything else is
// a failure, which the caller's loop sees in p.err.
func (p *parser) separator(closing byte, container string) bool {
	p.space()
	if p.i >= len(p.b) {
		p.fail("unterminated %s", container)
		return false
	}
	switch p.b[p.i] {
	case ',':
		p.i++
	case closing:
		p.i++
		return true
	default:
		p.fail("want ',' or '%c' in an %s", closing, container)
	}
	return false
}

func (p *parser) array(depth int) any {
	p.i++ // [
	list := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return list
	}
	for p.err == nil {
		p.space()
		v := p.value(depth + 1)
		if p.err != nil {
			return nil
		}
		list = append(list, v)
		if p.separator(']', "array") {
			return list
		}
	}
	return nil
}

// maxWord bounds the strings looked up in a parser's words: longer ones
// (values, messages) are never words and are not hashed for nothing.
const maxWord = 24

// word returns the held copy of b when b is one of the parser's words.
func (p *parser) word(b []byte) (string, bool) {
	if p.words == nil || len(b) > maxWord {
		return "", false
	}
	w, ok := p.words[string(b)] // the conversion does not allocate
	return w, ok
}

// string reads a string starting at its opening quote.
func (p *parser) string() string {
	b := p.stringBytes()
	if p.err != nil {
		return ""
	}
	return p.text(b)
}

// text returns b as a string: a word's or a recent string's copy when it
// is one, else a new string.
func (p *parser) text(b []byte) string {
	if word, ok := p.word(b); ok {
		return word
	}
	if p.recent == nil || len(b) > maxWord {
		return string(b)
	}
	slot := &p.recent.keys[recentSlot(b)]
	if *slot != string(b) {
		*slot = string(b)
	}
	return *slot
}

// recentValue reads a string value starting at its opening quote, as a
// portable value: a short one read before is returned in the same box.
func (p *parser) recentValue() any {
	b := p.stringBytes()
	if p.err != nil || len(b) > maxWord {
		return p.text(b)
	}
	slot := &p.recent.values[recentSlot(b)]
	if s, ok := (*slot).(string); ok && s == string(b) {
		return *slot
	}
	*slot = p.text(b)
	return *slot
}

// recentStrings remembers short strings a parser has read, by a hash of
// their text; a string read later in a slot's place replaces it. Strings
// never change, so sharing them (and their boxes) between the values
// read is safe.
type recentStrings struct {
	keys   [64]string
	values [64]any // boxed strings, so a value read again is not boxed again
}

// recentSlot hashes b (FNV-1a) to a slot of recentStrings.
func recentSlot(b []byte) int {
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return int(h % 64)
}

// stringBytes reads a string starting at its opening quote and returns
// its text without allocating: a slice of the input when the string holds
// no escapes, else of the parser's scratch buffer, valid until the next
// string is read.
func (p *parser) stringBytes() []byte {
	p.i++ // "
	start := p.i
	// Fast path: no escapes.
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start : p.i-1]
		case c == '\\':
			return p.escapedString(start)
		case c < 0x20:
			p.fail("control character in a string")
			return nil
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				p.fail("invalid UTF-8 in a string")
				return nil
			}
			p.i += size
		}
	}
	p.fail("unterminated string")
	return nil
}

// escapedString reads the rest of a string holding an escape into the
// parser's scratch buffer and returns it.
func (p *parser) escapedString(start int) []byte {
	buf := append(p.buf[:0], p.b[start:p.i]...)
	defer func() { p.buf = buf[:0] }()
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return buf
		case c == '\\':
			if p.i+1 >= len(p.b) {
				p.fail("unterminated escape")
				return nil
			}
			e := p.b[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return nil
				}
				if utf16.IsSurrogate(r) {
					// Only a pair is text; a lone half is refused.
					joined := utf8.RuneError
					if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
						p.i += 2
						r2, ok := p.hex4()
						if !ok {
							return nil
						}
						joined = utf16.DecodeRune(r, r2)
					}
					if joined == utf8.RuneError {
						p.fail("a \\u escape holds half of a UTF-16 surrogate pair")
						return nil
					}
					r = joined
				}
				buf = utf8.AppendRune(buf, r)
			default:
				p.fail("invalid escape \\%c", e)
				return nil
			}
		case c < 0x20:
			p.fail("control character in a string")
			return nil
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				p.fail("invalid UTF-8 in a string")
				return nil
			}
			buf = append(buf, p.b[p.i:p.i+size]...)
			p.i += size
		}
	}
	p.fail("unterminated string")
	return nil
}

func (p *parser) hex4() (rune, bool) {
	if len(p.b)-p.i < 4 {
		p.fail("short \\u escape")
		return 0, false
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			p.fail("invalid \\u escape")
			return 0, false
		}
	}
	p.i += 4
	return r, true
}

var errNumber = errors.New("invalid number")

// number reads a JSON number: int64 unless it has a fraction or exponent.
func (p *parser) number() any {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || (p.b[digits] == '0' && p.i-digits > 1) {
		p.fail("%v", errNumber)
		return nil
	}
	float := false
	if p.i < len(p.b) && p.b[p.i] == '.' {
		float = true
		p.i++
		frac := p.i
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
		}
		if p.i == frac {
			p.fail("%v", errNumber)
			return nil
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		float = true
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		exp := p.i
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
		}
		if p.i == exp {
			p.fail("%v", errNumber)
			return nil
		}
	}
	text := p.b[start:p.i]
	if float {
		f, err := strconv.ParseFloat(string(text), 64)
		if err != nil || math.IsInf(f, 0) {
			p.fail("number %s is out of range", text)
			return nil
		}
		return f
	}
	n, ok := parseInt(text)
	if !ok {
		p.fail("integer %s is out of range", text)
		return nil
	}
	return n
}

// parseInt parses an optionally negative run of decimal digits into an
// int64, reporting overflow.
func parseInt(text []byte) (int64, bool) {
	neg := text[0] == '-'
	if neg {
		text = text[1:]
	}
	var u uint64
	for _, c := range text {
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true // -1<<63 wraps to itself
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}
