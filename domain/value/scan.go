package value

// Scanner reads one JSON document a piece at a time, for a decoder that
// knows the document's layout (a run document): it reads the layout's
// own objects, keys, strings and integers in place and builds portable
// values only where the layout holds them, so fixed-layout records cost
// no map of their own. It is as strict as DecodeJSON (its errors read
// alike), except for what only the caller knows how to check: a key
// given twice in an object it reads with Key, and the depth of the
// containers it opens with Object and Array (Value checks the depth of
// what it reads against MaxDepth).
//
// The first error sticks: later reads return zero values and false. A
// read that returns false without an error found something else (a
// null, a string where an integer was wanted) and consumed nothing, so
// the caller may read it some other way, such as with Value.
type Scanner struct {
	p        parser
	envelope int
	stack    *[]member // from memberStacks, returned by Release
	recent   recentStrings
	// opened is set when an object or array has just been opened, and
	// cleared once a member or element of it has been read: it tells a
	// first member from one that must follow a comma.
	opened bool
}

// NewScanner returns a scanner of b. Strings equal to a key of words are
// returned as that key's value, as DecodeJSONWords does, and a short
// string read again (an object key every record repeats) is returned as
// the string read before, so it allocates nothing; envelope is the
// number of the document's own levels, which do not count toward
// MaxDepth (see DecodeJSONEnvelope). Call Release when done.
func NewScanner(b []byte, words map[string]string, envelope int) *Scanner {
	s := &Scanner{}
	s.Reset(b, words, envelope)
	return s
}

// Reset makes s a scanner of b, as NewScanner does, for a scanner held
// in a larger value.
func (s *Scanner) Reset(b []byte, words map[string]string, envelope int) {
	s.Release()
	s.stack = memberStacks.Get().(*[]member)
	s.recent = recentStrings{}
	s.p = parser{b: b, members: (*s.stack)[:0], words: words, recent: &s.recent}
	s.envelope = max(envelope, 0)
	s.opened = false
	s.p.space()
}

// Release gives the scanner's scratch space back for other parses; the
// scanner reads nothing more until Reset.
func (s *Scanner) Release() {
	if s.stack == nil {
		return
	}
	if cap(s.p.members) <= maxPooledMembers {
		clear(s.p.members[:cap(s.p.members)])
		*s.stack = s.p.members[:0]
		memberStacks.Put(s.stack)
	}
	s.stack = nil
	s.recent = recentStrings{}
	s.p = parser{err: s.p.err}
}

// Err is the first syntax error met, or nil.
func (s *Scanner) Err() error { return s.p.err }

// End checks that nothing but white space follows the document and
// returns the first error met.
func (s *Scanner) End() error {
	if s.p.err == nil {
		s.p.space()
		if s.p.i < len(s.p.b) {
			s.p.fail("unexpected data after the document")
		}
	}
	return s.p.err
}

// Peek returns the first byte of the next value ('{', '[', '"', 'n', a
// digit...), or 0 at the end of the input or after an error.
func (s *Scanner) Peek() byte {
	if s.p.err != nil || s.p.i >= len(s.p.b) {
		return 0
	}
	return s.p.b[s.p.i]
}

// at reports whether the next value starts with c.
func (s *Scanner) at(c byte) bool {
	return s.p.err == nil && s.p.i < len(s.p.b) && s.p.b[s.p.i] == c
}

// read marks a value as read: the next member needs a comma before it.
func (s *Scanner) read() {
	s.opened = false
	s.p.space()
}

// Null reads a null, reporting whether the next value is one.
func (s *Scanner) Null() bool {
	if !s.at('n') {
		return false
	}
	s.p.literal("null", nil)
	s.read()
	return s.p.err == nil
}

// Object opens an object, reporting whether the next value is one; its
// members are then read with Key until Key reports the end.
func (s *Scanner) Object() bool {
	if !s.at('{') {
		return false
	}
	s.p.i++
	s.p.space()
	s.opened = true
	return true
}

// Key reads the key of the object's next member and the colon after it,
// returning the key's text (valid until the next read), or false at the
// end of the object, which it closes.
func (s *Scanner) Key() ([]byte, bool) {
	if !s.next('}', "object") {
		return nil, false
	}
	if !s.at('"') {
		s.p.fail("want an object key")
		return nil, false
	}
	k := s.p.stringBytes()
	s.p.space()
	if s.p.err == nil && (s.p.i >= len(s.p.b) || s.p.b[s.p.i] != ':') {
		s.p.fail("want ':' after an object key")
	}
	if s.p.err != nil {
		return nil, false
	}
	s.p.i++
	s.p.space()
	return k, true
}

// Array opens an array, reporting whether the next value is one; its
// elements are then read, each after Element reports one.
func (s *Scanner) Array() bool {
	if !s.at('[') {
		return false
	}
	s.p.i++
	s.p.space()
	s.opened = true
	return true
}

// Element reports whether the array has another element, or closes it.
func (s *Scanner) Element() bool { return s.next(']', "array") }

// next passes the separator before a container's next member or element,
// reporting whether there is one; at closing it closes the container.
func (s *Scanner) next(closing byte, container string) bool {
	if s.p.err != nil {
		return false
	}
	if s.p.i >= len(s.p.b) {
		s.p.fail("unterminated %s", container)
		return false
	}
	if s.p.b[s.p.i] == closing {
		s.p.i++
		s.read()
		return false
	}
	if s.opened {
		s.opened = false
		return true
	}
	if s.p.b[s.p.i] != ',' {
		s.p.fail("want ',' or '%c' in an %s", closing, container)
		return false
	}
	s.p.i++
	s.p.space()
	return true
}

// String reads a string, reporting whether the next value is one.
func (s *Scanner) String() (string, bool) {
	if !s.at('"') {
		return "", false
	}
	str := s.p.string()
	s.read()
	return str, s.p.err == nil
}

// Text reads a string without allocating, as String does, returning its
// text, valid until the next read.
func (s *Scanner) Text() ([]byte, bool) {
	if !s.at('"') {
		return nil, false
	}
	b := s.p.stringBytes()
	s.read()
	return b, s.p.err == nil
}

// Intern returns b as a string, without allocating when b is one of the
// words or a short string read recently (object keys and string values
// included): a name a document repeats is held once.
func (s *Scanner) Intern(b []byte) string { return s.p.text(b) }

// Int reads an integer, reporting whether the next value is one (a
// number with a fraction or an exponent is a float, not read).
func (s *Scanner) Int() (int64, bool) {
	if s.p.err != nil || s.p.i >= len(s.p.b) {
		return 0, false
	}
	if c := s.p.b[s.p.i]; c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	start := s.p.i
	n, ok := s.p.number().(int64)
	if !ok {
		if s.p.err == nil {
			s.p.i = start // a float, left for the caller
		}
		return 0, false
	}
	s.read()
	return n, true
}

// Value reads the next value as DecodeJSON would, as a portable value
// enclosed by level of the document's own containers.
func (s *Scanner) Value(level int) any {
	if s.p.err != nil {
		return nil
	}
	v := s.p.value(level - s.envelope)
	s.read()
	if s.p.err != nil {
		return nil
	}
	return v
}

// Remaining is the number of bytes of the document not read yet: it
// bounds what the containers still to read can hold, for a decoder that
// sizes them with Len.
func (s *Scanner) Remaining() int { return len(s.p.b) - s.p.i }

// Len counts the members of the object or the elements of the array
// that starts the next value, without reading them, so a decoder can
// size what it reads them into. It is 0 for anything else, and it does
// not check the container's syntax (reading it does): it counts the
// commas of "[,,,]" as entries, so a decoder bounds the room it makes
// by Remaining before reading a single entry.
func (s *Scanner) Len() int {
	if s.p.err != nil || s.p.i >= len(s.p.b) || (s.p.b[s.p.i] != '{' && s.p.b[s.p.i] != '[') {
		return 0
	}
	b := s.p.b[s.p.i:]
	n, depth, empty := 0, 0, true
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			empty = false
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if depth == 1 {
				empty = false
			}
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				if !empty {
					n++
				}
				return n
			}
		case ',':
			if depth == 1 {
				n++
			}
		case ' ', '\t', '\n', '\r':
		default:
			empty = false
		}
	}
	return n
}
