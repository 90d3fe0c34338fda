package run

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/docketgo/docket/domain/value"
)

// ErrCorruptRun is wrapped by Decode failures: the bytes are not a run
// document this codec wrote, or the run they describe breaks a durable
// invariant (then ErrInvalidRun matches too).
var ErrCorruptRun = errors.New("corrupt run document")

// formatVersion names the document layout; Decode accepts only this one.
const formatVersion = 1

// Encode serializes the run document deterministically (equal runs, equal
// bytes) for storage; Decode is its inverse and validates the result.
//
// The bytes are canonical JSON (RFC 8785 style, as value.Canonical writes
// it) of the run's map form: snake_case keys, integers as JSON integers,
// floats with a fraction, timestamps as RFC 3339 strings with six fractional
// digits, absent optional fields as null, except that a channel leaves out
// a nil barrier set and a nil value. Nil and empty containers of the
// run's own fields are written differently (null versus [] or {}) so Decode
// restores exactly the run it was given. Encode refuses a run that fails
// Validate, so nothing invalid is ever stored.
func Encode(r *Run) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return EncodeValidated(r)
}

// EncodeValidated is Encode for a run that has passed Validate and not
// changed since (a store that has just checked the proposal holding it):
// it writes the same bytes without validating the run a second time. A
// value that is not portable still fails.
func EncodeValidated(r *Run) ([]byte, error) {
	// The document is written into a pooled buffer and copied out once at
	// its final size: a state holding a long history would otherwise be
	// regrown from a few kilobytes, copy after copy, on every commit.
	scratch := value.GetScratch()
	defer scratch.Release()
	b, err := AppendValidated(scratch.B, r)
	scratch.B = b
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// AppendValidated appends EncodeValidated's document of r to dst, for a
// caller that keeps its own (pooled) buffer; on error dst is returned
// unchanged in length.
func AppendValidated(dst []byte, r *Run) ([]byte, error) {
	var keys [32]string // the key stack of a document without deep values
	w := writer{b: dst, keys: keys[:0]}
	w.run(r)
	if w.err != nil {
		return w.b[:len(dst)], w.err
	}
	return w.b, nil
}

// writer emits canonical JSON for an already validated run, appending to a
// byte slice. Object keys are written in sorted order by hand; portable
// values are written as value.Canonical writes them (tests hold the two to
// the same bytes).
type writer struct {
	b   []byte
	err error // a non-portable value slipped past validation
	// keys is a stack of the sorted keys of the objects being written,
	// innermost last (see sortedKeys): a document holds an object per
	// answered interrupt, and a key slice each would cost an allocation
	// per interrupt at every commit.
	keys []string
}

// sortedKeys pushes m's keys in canonical order onto w.keys and returns
// them with the mark popKeys takes once the object is written. Objects
// written meanwhile push above them, so the returned keys stay intact.
func sortedKeys[V any](w *writer, m map[string]V) (keys []string, mark int) {
	mark = len(w.keys)
	w.keys = appendCanonicalKeys(w.keys, m)
	return w.keys[mark:], mark
}

func (w *writer) popKeys(mark int) { w.keys = w.keys[:mark] }

func (w *writer) raw(s string) { w.b = append(w.b, s...) }

func (w *writer) key(first bool, k string) {
	if !first {
		w.b = append(w.b, ',')
	}
	w.str(k)
	w.b = append(w.b, ':')
}

func (w *writer) str(s string) { w.b = value.AppendString(w.b, s) }

func (w *writer) optStr(s string) {
	if s == "" {
		w.raw("null")
		return
	}
	w.str(s)
}

func (w *writer) int(n int64) { w.b = strconv.AppendInt(w.b, n, 10) }

func (w *writer) time(t time.Time) {
	if t.IsZero() {
		w.raw("null")
		return
	}
	w.b = append(w.b, '"')
	w.b = appendTimestamp(w.b, t)
	w.b = append(w.b, '"')
}

// value writes a portable value canonically.
func (w *writer) value(v any) {
	switch x := v.(type) {
	case nil:
		w.raw("null")
	case bool:
		w.b = strconv.AppendBool(w.b, x)
	case string:
		w.str(x)
	case int64:
		w.int(x)
	case float64:
		w.float(x)
	case []any:
		w.b = append(w.b, '[')
		for i, e := range x {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.value(e)
		}
		w.b = append(w.b, ']')
	case map[string]any:
		w.b = append(w.b, '{')
		keys, mark := sortedKeys(w, x)
		for i, k := range keys {
			w.key(i == 0, k)
			w.value(x[k])
		}
		w.popKeys(mark)
		w.b = append(w.b, '}')
	default:
		if w.err == nil {
			w.err = fmt.Errorf("%w: unsupported type %T", value.ErrNotPortable, v)
		}
		w.raw("null")
	}
}

// float writes f as ECMAScript prints numbers, keeping a fraction on
// integral values so they read back as floats. In the usual range that is
// Go's shortest fixed notation; value.FormatFloat handles the rest.
func (w *writer) float(f float64) {
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		w.b = strconv.AppendFloat(w.b, f, 'f', -1, 64)
		if f == math.Trunc(f) {
			w.b = append(w.b, ".0"...)
		}
		return
	}
	s, err := value.FormatFloat(f)
	if err != nil && w.err == nil {
		w.err = err
	}
	w.raw(s)
}

// portableMap keeps nil (null) apart from empty ({}).
func (w *writer) portableMap(m map[string]any) {
	if m == nil {
		w.raw("null")
		return
	}
	w.value(m)
}

func (w *writer) strings(s []string) {
	if s == nil {
		w.raw("null")
		return
	}
	w.b = append(w.b, '[')
	for i, e := range s {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(e)
	}
	w.b = append(w.b, ']')
}

// object writes a map of records with keys in canonical order.
func object[V any](w *writer, m map[string]V, each func(V)) {
	if m == nil {
		w.raw("null")
		return
	}
	w.b = append(w.b, '{')
	keys, mark := sortedKeys(w, m)
	for i, k := range keys {
		w.key(i == 0, k)
		each(m[k])
	}
	w.popKeys(mark)
	w.b = append(w.b, '}')
}

func (w *writer) run(r *Run) {
	w.b = append(w.b, '{')
	w.key(true, "active_tasks")
	object(w, r.ActiveTasks, w.task)
	w.key(false, "changed_channels")
	w.strings(r.ChangedChannels)
	w.key(false, "channels")
	w.channels(r)
	w.key(false, "checkpoint_seq")
	w.int(r.CheckpointSeq)
	w.key(false, "event_seq")
	w.int(r.EventSeq)
	w.key(false, "failure")
	w.failure(r.Failure)
	w.key(false, "finished_at")
	w.time(r.FinishedAt)
	w.key(false, "format_version")
	w.int(formatVersion)
	w.key(false, "graph_hash")
	w.str(r.GraphHash)
	w.key(false, "graph_id")
	w.str(r.GraphID)
	w.key(false, "id")
	w.str(r.ID)
	w.key(false, "input")
	w.portableMap(r.Input)
	w.key(false, "interrupts")
	object(w, r.Interrupts, w.interrupt)
	w.key(false, "metadata")
	w.portableMap(r.Metadata)
	w.key(false, "output")
	w.portableMap(r.Output)
	w.key(false, "pending_nodes")
	w.strings(r.PendingNodes)
	w.key(false, "pending_writes")
	if r.PendingWrites == nil {
		w.raw("null")
	} else {
		w.b = append(w.b, '[')
		for i, pw := range r.PendingWrites {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.pendingWrite(pw)
		}
		w.b = append(w.b, ']')
	}
	w.key(false, "started_at")
	w.time(r.StartedAt)
	w.key(false, "status")
	w.str(string(r.Status))
	w.key(false, "step")
	w.int(int64(r.Step))
	w.key(false, "timers")
	object(w, r.Timers, w.timer)
	w.key(false, "updated_at")
	w.time(r.UpdatedAt)
	w.b = append(w.b, '}')
}

// channels writes each channel with its barrier set, if any.
func (w *writer) channels(r *Run) {
	if r.Channels == nil {
		w.raw("null")
		return
	}
	w.b = append(w.b, '{')
	if !byteOrderIsCanonical(r.Channels) {
		keys, mark := sortedKeys(w, r.Channels.Map())
		for i, k := range keys {
			c, _ := r.Channels.Get(k)
			w.key(i == 0, k)
			w.channel(c, r.BarrierSeen[k])
		}
		w.popKeys(mark)
		w.b = append(w.b, '}')
		return
	}
	// The list is in ID order already: nothing to sort.
	for i := range r.Channels {
		c := &r.Channels[i]
		w.key(i == 0, c.ID)
		var seen []string
		if r.BarrierSeen != nil {
			seen = r.BarrierSeen[c.ID]
		}
		w.channel(*c, seen)
	}
	w.b = append(w.b, '}')
}

// byteOrderIsCanonical reports whether the channels' byte order is the
// canonical (UTF-16) order of their IDs: it is unless an ID holds a
// character from U+E000 up (see appendCanonicalKeys).
func byteOrderIsCanonical(cs Channels) bool {
	for i := range cs {
		id := cs[i].ID
		for j := 0; j < len(id); j++ {
			if id[j] >= 0xEE {
				return false
			}
		}
	}
	return true
}

// channel leaves out a nil barrier set and a nil value: most channels
// have neither, and every commit writes every channel of the run, so the
// two keys would be a third of a typical document (and of its WAL).
func (w *writer) channel(c Channel, barrierSeen []string) {
	w.b = append(w.b, '{')
	first := true
	if barrierSeen != nil {
		w.key(true, "barrier_seen")
		w.strings(barrierSeen)
		first = false
	}
	if c.Value != nil {
		w.key(first, "value")
		w.value(c.Value)
		first = false
	}
	w.key(first, "version")
	w.int(c.Version)
	w.b = append(w.b, '}')
}

func (w *writer) failure(f *Failure) {
	if f == nil {
		w.raw("null")
		return
	}
	w.b = append(w.b, '{')
	w.key(true, "code")
	w.str(f.Code)
	w.key(false, "details")
	w.portableMap(f.Details)
	w.key(false, "message")
	w.str(f.Message)
	w.key(false, "node_id")
	w.optStr(f.NodeID)
	w.b = append(w.b, '}')
}

func (w *writer) task(t TaskState) {
	w.b = append(w.b, '{')
	w.key(true, "attempt")
	w.int(int64(t.Attempt))
	w.key(false, "deadline_at")
	w.time(t.DeadlineAt)
	w.key(false, "failures")
	if t.Failures == nil {
		w.raw("null")
	} else {
		w.b = append(w.b, '[')
		for i, f := range t.Failures {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, '{')
			w.key(true, "attempt")
			w.int(int64(f.Attempt))
			w.key(false, "reason")
			w.str(f.Reason)
			w.b = append(w.b, '}')
		}
		w.b = append(w.b, ']')
	}
	w.key(false, "idempotency_key")
	w.str(t.IdempotencyKey)
	w.key(false, "input_hash")
	w.str(t.InputHash)
	w.key(false, "metadata")
	w.portableMap(t.Metadata)
	w.key(false, "node_id")
	w.str(t.NodeID)
	w.key(false, "snapshot")
	w.portableMap(t.Snapshot)
	w.key(false, "source_versions")
	object(w, t.SourceVersions, w.int)
	w.key(false, "started_at")
	w.time(t.StartedAt)
	w.key(false, "status")
	w.str(t.Status)
	w.key(false, "step")
	w.int(int64(t.Step))
	w.key(false, "task_id")
	w.str(t.TaskID)
	w.b = append(w.b, '}')
}

func (w *writer) pendingWrite(pw PendingWrite) {
	w.b = append(w.b, '{')
	w.key(true, "attempt")
	w.int(int64(pw.Attempt))
	w.key(false, "kind")
	w.str(pw.Kind)
	w.key(false, "node_id")
	w.str(pw.NodeID)
	w.key(false, "task_id")
	w.str(pw.TaskID)
	w.key(false, "value")
	w.value(pw.Value)
	w.b = append(w.b, '}')
}

func (w *writer) interrupt(in Interrupt) {
	w.b = append(w.b, '{')
	w.key(true, "created_at")
	w.time(in.CreatedAt)
	w.key(false, "id")
	w.str(in.ID)
	w.key(false, "metadata")
	w.portableMap(in.Metadata)
	w.key(false, "node_id")
	w.str(in.NodeID)
	w.key(false, "resolved_at")
	w.time(in.ResolvedAt)
	w.key(false, "resume_channel")
	w.str(in.ResumeChannel)
	w.key(false, "schema")
	w.portableMap(in.Schema)
	w.key(false, "status")
	w.str(in.Status)
	w.b = append(w.b, '}')
}

func (w *writer) timer(t Timer) {
	w.b = append(w.b, '{')
	w.key(true, "fires_at")
	w.time(t.FiresAt)
	w.key(false, "kind")
	w.str(t.Kind)
	w.b = append(w.b, '}')
}

// canonicalKeys returns m's keys in the order canonical JSON sorts object
// keys: by UTF-16 code units, which is byte order unless a key mixes
// characters above U+FFFF with characters from U+E000 to U+FFFF.
func canonicalKeys[V any](m map[string]V) []string {
	return appendCanonicalKeys(make([]string, 0, len(m)), m)
}

// appendCanonicalKeys appends m's keys to dst in canonicalKeys' order.
func appendCanonicalKeys[V any](dst []string, m map[string]V) []string {
	start := len(dst)
	for k := range m {
		dst = append(dst, k)
	}
	keys := dst[start:]
	slices.Sort(keys)
	// Byte order and UTF-16 order differ only between characters from
	// U+E000 (lead byte 0xEE) up and characters above U+FFFF.
	for _, k := range keys {
		for i := 0; i < len(k); i++ {
			if k[i] >= 0xEE {
				slices.SortFunc(keys, compareUTF16)
				return dst
			}
		}
	}
	return dst
}

func compareUTF16(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) || (a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf) {
		return strings.Compare(a, b)
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i-- // back to the start of the rune the strings differ in
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	if c := compareFirstUnit(ra, rb); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// compareFirstUnit orders two runes by their UTF-16 encoding.
func compareFirstUnit(a, b rune) int {
	unit := func(r rune) rune {
		if r >= 0x10000 {
			hi, _ := utf16.EncodeRune(r)
			return hi
		}
		return r
	}
	if c := int(unit(a)) - int(unit(b)); c != 0 {
		return c
	}
	return int(a) - int(b)
}

// Decode parses bytes written by Encode and validates the run. Errors wrap
// ErrCorruptRun; a run that breaks an invariant also matches ErrInvalidRun.
//
// The document is read in place: its records become the run's structs
// directly, and only its portable values (inputs, state, metadata,
// schemas) are built as maps. A run is decoded at every claim, and a long
// session's answered interrupts, kept for its life, would otherwise cost
// a map and a boxed string per field each.
func Decode(b []byte) (*Run, error) {
	d := &reader{}
	d.s.Reset(b, documentWords, documentLevels)
	defer d.s.Release()
	r := d.run()
	err := d.s.Err()
	if err == nil {
		err = d.err
	}
	if err == nil {
		err = d.s.End()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptRun, otherFormat(b, err))
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptRun, err)
	}
	return r, nil
}

// otherFormat is the error to report for a document that failed to read
// with err: a document of another format version says so, rather than
// naming the first of its records whose layout changed with the version
// (the scan meets active_tasks and channels before format_version), so a
// worker older than the document reads why it cannot resume the run.
// Only a failed decode pays for the second reading.
func otherFormat(b []byte, err error) error {
	doc, derr := value.DecodeJSONEnvelope(b, documentWords, documentLevels)
	m, _ := doc.(map[string]any)
	if v, ok := m["format_version"].(int64); derr == nil && ok && v != formatVersion {
		return fmt.Errorf("format_version: unsupported format version %d", v)
	}
	return err
}

// reader reads a run document into a run. The first error wins (a shape
// error in err, a syntax error in the scanner's); reading stops there.
type reader struct {
	s   value.Scanner
	err error
	// level counts the document's containers around the next value, for
	// the depth of the portable values read there.
	level int
}

func (d *reader) ok() bool { return d.err == nil && d.s.Err() == nil }

func (d *reader) failf(path, format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
}

// mismatch reports that the value at path is not what was wanted, naming
// what it is (read for that; a syntax error in it is reported instead).
func (d *reader) mismatch(path, want string) {
	v := d.s.Value(d.level)
	if d.s.Err() == nil {
		d.failf(path, "%s, got %s", want, kindOf(v))
	}
}

// docPath is where a value sits in the document, for an error to name. It
// is formatted only when an error is reported: reading a valid document
// builds no path strings (a run's channels alone would cost two
// allocations each).
type docPath struct {
	base  string // the enclosing path, formatted; the whole path for a record key
	entry string // a map entry's key, when kind is entryPath
	index int    // a list element's index, when kind is indexPath
	kind  uint8
}

// The kinds of docPath.
const (
	plainPath uint8 = iota
	entryPath
	indexPath
)

func (p docPath) String() string {
	switch p.kind {
	case entryPath:
		return p.base + "[" + strconv.Quote(p.entry) + "]"
	case indexPath:
		return p.base + "[" + strconv.Itoa(p.index) + "]"
	}
	return p.base
}

// at is the path of the record key k at p.
func (p docPath) at(k string) string {
	if path := p.String(); path != "" {
		return path + "." + k
	}
	return k
}

// layout is the keys of a record of the document, sorted as Encode
// writes them.
type layout struct {
	keys     []string
	optional uint32 // bit i set: keys[i] may be left out (read as null)
}

func newLayout(keys []string, optional ...string) *layout {
	if len(keys) > 32 || !slices.IsSorted(keys) {
		panic("run: a record layout holds at most 32 sorted keys")
	}
	l := &layout{keys: keys}
	for _, k := range optional {
		l.optional |= 1 << slices.Index(keys, k)
	}
	return l
}

// index finds k among the layout's keys, trying guess first: Encode
// writes them in order.
func (l *layout) index(k []byte, guess int) int {
	if guess < len(l.keys) && l.keys[guess] == string(k) {
		return guess
	}
	for i, key := range l.keys {
		if key == string(k) {
			return i
		}
	}
	return -1
}

// fields reads the record at p, whose keys must be exactly l's (optional
// ones may be left out), calling field with each key when its value is
// next. It reports whether the whole record was read.
func (d *reader) fields(p docPath, l *layout, field func(key string)) bool {
	if !d.s.Object() {
		d.mismatch(p.String(), "want an object")
		return false
	}
	d.level++
	var seen uint32
	var unknown string // the first unknown key in sorted order
	hasUnknown, next := false, 0
	for d.ok() {
		k, more := d.s.Key()
		if !more {
			break
		}
		i := l.index(k, next)
		if i < 0 {
			if !hasUnknown || string(k) < unknown {
				unknown, hasUnknown = string(k), true
			}
			d.s.Value(d.level)
			continue
		}
		if seen&(1<<i) != 0 {
			d.failf(p.String(), "duplicate key %q", l.keys[i])
			break
		}
		seen |= 1 << i
		next = i + 1
		field(l.keys[i])
	}
	d.level--
	if !d.ok() {
		return false
	}
	for i, k := range l.keys {
		if seen&(1<<i) == 0 && l.optional&(1<<i) == 0 {
			d.failf(p.String(), "missing key %q", k)
			return false
		}
	}
	if hasUnknown {
		d.failf(p.String(), "unknown key %q", unknown)
		return false
	}
	return true
}

func (d *reader) str(p docPath, k string) string {
	s, ok := d.s.String()
	if !ok {
		d.mismatch(p.at(k), "want a string")
	}
	return s
}

func (d *reader) optStr(p docPath, k string) string {
	if d.s.Null() {
		return ""
	}
	return d.str(p, k)
}

// name reads a string that names a node or a channel, reusing the string
// of a name read recently.
func (d *reader) name(p docPath, k string) string {
	b, ok := d.s.Text()
	if !ok {
		d.mismatch(p.at(k), "want a string")
		return ""
	}
	return d.s.Intern(b)
}

// key reads a string that should equal the key of the entry at p (a
// record's own ID), reusing the key's string when it does.
func (d *reader) key(p docPath, k string) string {
	b, ok := d.s.Text()
	if !ok {
		d.mismatch(p.at(k), "want a string")
		return ""
	}
	if string(b) == p.entry {
		return p.entry
	}
	return string(b)
}

func (d *reader) int64(p docPath, k string) int64 {
	n, ok := d.s.Int()
	if !ok {
		d.mismatch(p.at(k), "want an integer")
	}
	return n
}

func (d *reader) int(p docPath, k string) int {
	n := d.int64(p, k)
	if int64(int(n)) != n {
		d.failf(p.at(k), "integer %d overflows int", n)
	}
	return int(n)
}

func (d *reader) time(p docPath, k string) time.Time {
	if d.s.Null() {
		return time.Time{}
	}
	b, ok := d.s.Text()
	if !ok {
		d.mismatch(p.at(k), "want a timestamp string")
		return time.Time{}
	}
	t, err := parseTimestamp(b)
	if err != nil || t.IsZero() {
		d.failf(p.at(k), "invalid timestamp %q", b)
		return time.Time{}
	}
	return t
}

// portableMap reads a map of portable values, null meaning nil.
func (d *reader) portableMap(p docPath, k string) map[string]any {
	if d.s.Null() {
		return nil
	}
	if d.s.Peek() != '{' {
		d.mismatch(p.at(k), "want an object or null")
		return nil
	}
	m, _ := d.s.Value(d.level).(map[string]any)
	return m
}

// strings reads a list of names, null meaning nil.
func (d *reader) strings(p docPath, k string) []string {
	if d.s.Null() {
		return nil
	}
	n := room[string](d, d.s.Len(), 0)
	if !d.s.Array() {
		d.mismatch(p.at(k), "want a list of strings or null")
		return nil
	}
	out := make([]string, 0, n)
	d.level++
	defer func() { d.level-- }()
	for d.s.Element() {
		b, ok := d.s.Text()
		if !ok {
			d.mismatch(fmt.Sprintf("%s[%d]", p.at(k), len(out)), "want a string")
			return nil
		}
		out = append(out, d.s.Intern(b))
	}
	return out
}

// room bounds n, the entries Len counted ahead in a container, by what
// the rest of the document can hold: room for an entry (a V and a key of
// keySize bytes) takes at most four of the bytes left to read. Len counts
// the commas of a corrupt "{,,,,}" as entries, and a megabyte of them
// made room for a million records (hundreds of megabytes) before the
// first one failed to read. A valid document's entries are longer than
// that, so its containers are still made at their final size.
func room[V any](d *reader, n int, keySize uintptr) int {
	var v V
	size := int(unsafe.Sizeof(v) + keySize)
	return min(n, 4*d.s.Remaining()/max(size, 1))
}

// each reads an object of records keyed by ID, null meaning nil.
func each[V any](d *reader, p docPath, k string, read func(path docPath) V) map[string]V {
	var out map[string]V
	entries[V](d, p, k, unsafe.Sizeof(""), func(n int) { out = make(map[string]V, n) }, func(id string, path docPath) {
		before := len(out)
		out[id] = read(path)
		if len(out) == before {
			d.failf(path.base, "duplicate key %q", id)
		}
	})
	return out
}

// entries reads an object keyed by ID, null meaning absent: open is told
// how many entries of V (with keys of keySize) to make room for once the
// object begins, then entry reads each one in document order.
func entries[V any](d *reader, p docPath, k string, keySize uintptr, open func(n int), entry func(id string, path docPath)) {
	if d.s.Null() {
		return
	}
	n := room[V](d, d.s.Len(), keySize)
	if !d.s.Object() {
		d.mismatch(p.at(k), "want an object or null")
		return
	}
	open(n)
	base := p.at(k) // no allocation for the run's own keys
	d.level++
	defer func() { d.level-- }()
	for d.ok() {
		key, more := d.s.Key()
		if !more {
			break
		}
		id := string(key)
		entry(id, docPath{base: base, entry: id, kind: entryPath})
	}
}

// list reads a list of records, null meaning nil.
func list[V any](d *reader, p docPath, k string, read func(path docPath) V) []V {
	if d.s.Null() {
		return nil
	}
	n := room[V](d, d.s.Len(), 0)
	if !d.s.Array() {
		d.mismatch(p.at(k), "want a list or null")
		return nil
	}
	out := make([]V, 0, n)
	base := p.at(k)
	d.level++
	defer func() { d.level-- }()
	for d.ok() && d.s.Element() {
		out = append(out, read(docPath{base: base, index: len(out), kind: indexPath}))
	}
	return out
}

var runLayout = newLayout([]string{"active_tasks", "changed_channels", "channels", "checkpoint_seq",
	"event_seq", "failure", "finished_at", "format_version", "graph_hash", "graph_id", "id",
	"input", "interrupts", "metadata", "output", "pending_nodes", "pending_writes",
	"started_at", "status", "step", "timers", "updated_at"})

func (d *reader) run() *Run {
	r := &Run{}
	var p docPath // the document itself
	ok := d.fields(p, runLayout, func(k string) {
		switch k {
		case "active_tasks":
			r.ActiveTasks = each(d, p, k, d.task)
		case "changed_channels":
			r.ChangedChannels = d.strings(p, k)
		case "channels":
			r.Channels, r.BarrierSeen = d.channels(p, k)
		case "checkpoint_seq":
			r.CheckpointSeq = d.int64(p, k)
		case "event_seq":
			r.EventSeq = d.int64(p, k)
		case "failure":
			if !d.s.Null() {
				r.Failure = d.failure(docPath{base: k})
			}
		case "finished_at":
			r.FinishedAt = d.time(p, k)
		case "format_version":
			if v := d.int64(p, k); d.ok() && v != formatVersion {
				d.failf(k, "unsupported format version %d", v)
			}
		case "graph_hash":
			r.GraphHash = d.str(p, k)
		case "graph_id":
			r.GraphID = d.str(p, k)
		case "id":
			r.ID = d.str(p, k)
		case "input":
			r.Input = d.portableMap(p, k)
		case "interrupts":
			r.Interrupts = each(d, p, k, d.interrupt)
		case "metadata":
			r.Metadata = d.portableMap(p, k)
		case "output":
			r.Output = d.portableMap(p, k)
		case "pending_nodes":
			r.PendingNodes = d.strings(p, k)
		case "pending_writes":
			r.PendingWrites = list(d, p, k, d.pendingWrite)
		case "started_at":
			r.StartedAt = d.time(p, k)
		case "status":
			r.Status = Status(d.str(p, k))
		case "step":
			r.Step = d.int(p, k)
		case "timers":
			r.Timers = each(d, p, k, d.timer)
		case "updated_at":
			r.UpdatedAt = d.time(p, k)
		}
	})
	if !ok {
		return nil
	}
	return r
}

// channels reads the run's channels, taking their barrier sets apart. A
// document keeps them in canonical key order, a jsonb column in its own:
// the list is sorted by ID when it is not already.
func (d *reader) channels(p docPath, k string) (channels Channels, barrierSeen map[string][]string) {
	entries[Channel](d, p, k, 0, func(n int) { channels = make(Channels, 0, n) }, func(id string, path docPath) {
		c, seen := d.channel(path)
		c.ID = id
		channels = append(channels, c)
		if seen != nil {
			if barrierSeen == nil {
				barrierSeen = make(map[string][]string)
			}
			barrierSeen[id] = seen
		}
	})
	if !channels.sorted() {
		slices.SortStableFunc(channels, compareChannels)
		for i := 1; i < len(channels); i++ {
			if channels[i-1].ID == channels[i].ID {
				d.failf(p.at(k), "duplicate key %q", channels[i].ID)
				break
			}
		}
	}
	return channels, barrierSeen
}

// A channel's barrier set and value may be left out (channel writes them
// only when set; earlier documents write them as null).
var channelLayout = newLayout([]string{"barrier_seen", "value", "version"}, "barrier_seen", "value")

func (d *reader) channel(p docPath) (c Channel, barrierSeen []string) {
	d.fields(p, channelLayout, func(k string) {
		switch k {
		case "barrier_seen":
			barrierSeen = d.strings(p, k)
		case "value":
			c.Value = d.s.Value(d.level)
		case "version":
			c.Version = d.int64(p, k)
		}
	})
	return c, barrierSeen
}

var failureLayout = newLayout([]string{"code", "details", "message", "node_id"})

func (d *reader) failure(p docPath) *Failure {
	f := &Failure{}
	d.fields(p, failureLayout, func(k string) {
		switch k {
		case "code":
			f.Code = d.str(p, k)
		case "details":
			f.Details = d.portableMap(p, k)
		case "message":
			f.Message = d.str(p, k)
		case "node_id":
			f.NodeID = d.optStr(p, k)
		}
	})
	return f
}

var taskLayout = newLayout([]string{"attempt", "deadline_at", "failures", "idempotency_key", "input_hash",
	"metadata", "node_id", "snapshot", "source_versions", "started_at", "status", "step", "task_id"})

func (d *reader) task(p docPath) (t TaskState) {
	d.fields(p, taskLayout, func(k string) {
		switch k {
		case "attempt":
			t.Attempt = d.int(p, k)
		case "deadline_at":
			t.DeadlineAt = d.time(p, k)
		case "failures":
			t.Failures = list(d, p, k, d.attemptFailure)
		case "idempotency_key":
			t.IdempotencyKey = d.str(p, k)
		case "input_hash":
			t.InputHash = d.str(p, k)
		case "metadata":
			t.Metadata = d.portableMap(p, k)
		case "node_id":
			t.NodeID = d.name(p, k)
		case "snapshot":
			t.Snapshot = d.portableMap(p, k)
		case "source_versions":
			t.SourceVersions = each(d, p, k, d.version)
		case "started_at":
			t.StartedAt = d.time(p, k)
		case "status":
			t.Status = d.str(p, k)
		case "step":
			t.Step = d.int(p, k)
		case "task_id":
			t.TaskID = d.key(p, k)
		}
	})
	return t
}

func (d *reader) version(p docPath) int64 {
	n, ok := d.s.Int()
	if !ok {
		d.mismatch(p.String(), "want an integer")
	}
	return n
}

var attemptFailureLayout = newLayout([]string{"attempt", "reason"})

func (d *reader) attemptFailure(p docPath) (f AttemptFailure) {
	d.fields(p, attemptFailureLayout, func(k string) {
		switch k {
		case "attempt":
			f.Attempt = d.int(p, k)
		case "reason":
			f.Reason = d.str(p, k)
		}
	})
	return f
}

var pendingWriteLayout = newLayout([]string{"attempt", "kind", "node_id", "task_id", "value"})

func (d *reader) pendingWrite(p docPath) (w PendingWrite) {
	d.fields(p, pendingWriteLayout, func(k string) {
		switch k {
		case "attempt":
			w.Attempt = d.int(p, k)
		case "kind":
			w.Kind = d.str(p, k)
		case "node_id":
			w.NodeID = d.name(p, k)
		case "task_id":
			w.TaskID = d.str(p, k)
		case "value":
			w.Value = d.s.Value(d.level)
		}
	})
	return w
}

var interruptLayout = newLayout([]string{"created_at", "id", "metadata", "node_id", "resolved_at",
	"resume_channel", "schema", "status"})

func (d *reader) interrupt(p docPath) (in Interrupt) {
	d.fields(p, interruptLayout, func(k string) {
		switch k {
		case "created_at":
			in.CreatedAt = d.time(p, k)
		case "id":
			in.ID = d.key(p, k)
		case "metadata":
			in.Metadata = d.portableMap(p, k)
		case "node_id":
			in.NodeID = d.name(p, k)
		case "resolved_at":
			in.ResolvedAt = d.time(p, k)
		case "resume_channel":
			in.ResumeChannel = d.name(p, k)
		case "schema":
			in.Schema = d.portableMap(p, k)
		case "status":
			in.Status = d.str(p, k)
		}
	})
	return in
}

var timerLayout = newLayout([]string{"fires_at", "kind"})

func (d *reader) timer(p docPath) (t Timer) {
	d.fields(p, timerLayout, func(k string) {
		switch k {
		case "fires_at":
			t.FiresAt = d.time(p, k)
		case "kind":
			t.Kind = d.str(p, k)
		}
	})
	return t
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// documentWords are the run document's keys and its fixed values
// (statuses, kinds, timer and write kinds), each held once, so decoding a
// document allocates no string for them: a run is decoded at every claim,
// and these words are most of its strings.
// documentLevels bounds the levels of the run document's own structure
// above a portable value (three at most: active_tasks, a task, its
// snapshot), so a value as deep as value.MaxDepth reads back.
const documentLevels = 8

var documentWords = func() map[string]string {
	words := []string{
		// keys
		"active_tasks", "attempt", "barrier_seen", "changed_channels", "channels", "checkpoint_seq", "code",
		"created_at", "deadline_at", "details", "event_seq", "failure", "failures", "finished_at", "fires_at",
		"format_version", "graph_hash", "graph_id", "id", "idempotency_key", "input", "input_hash", "interrupts",
		"kind", "message", "metadata", "node_id", "output", "pending_nodes", "pending_writes", "reason",
		"resolved_at", "resume_channel", "schema", "snapshot", "source_versions", "started_at", "status", "step",
		"task_id", "timers", "updated_at", "value", "version",
		// values
		string(StatusRunning), string(StatusWaiting), string(StatusDone), string(StatusFailed), string(StatusCancelled),
		TaskRetryScheduled, WriteUpdate, WriteInterrupt, InterruptOpen, InterruptResolved, TimerRetry,
	}
	m := make(map[string]string, len(words))
	for _, w := range words {
		m[w] = w
	}
	return m
}()
