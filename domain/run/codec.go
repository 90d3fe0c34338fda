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
	keys, mark := sortedKeys(w, r.Channels)
	for i, k := range keys {
		w.key(i == 0, k)
		w.channel(r.Channels[k], r.BarrierSeen[k])
	}
	w.popKeys(mark)
	w.b = append(w.b, '}')
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
func Decode(b []byte) (*Run, error) {
	doc, err := value.DecodeJSONEnvelope(b, documentWords, documentLevels)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptRun, err)
	}
	d := &reader{}
	r := d.run(doc)
	if d.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptRun, d.err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptRun, err)
	}
	return r, nil
}

// reader turns the decoded JSON tree back into a run. The first shape
// error wins; later reads return zero values.
type reader struct{ err error }

func (d *reader) failf(path, format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
}

// record is one JSON object of the document whose keys must be exactly
// those of its layout.
type record struct {
	d    *reader
	m    map[string]any
	path docPath
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

// object checks that v is an object with exactly the given keys.
func (d *reader) object(v any, path docPath, keys ...string) (record, bool) {
	return d.objectWithOptional(v, path, keys, nil)
}

// objectWithOptional is object for a record whose optional keys may be
// left out (read as null); any other key is unknown.
func (d *reader) objectWithOptional(v any, path docPath, keys, optional []string) (record, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.failf(path.String(), "want an object, got %s", kindOf(v))
		return record{}, false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			d.failf(path.String(), "missing key %q", k)
			return record{}, false
		}
	}
	present := len(keys)
	for _, k := range optional {
		if _, ok := m[k]; ok {
			present++
		}
	}
	if len(m) != present {
		for _, k := range value.SortedKeys(m) {
			if !slices.Contains(keys, k) && !slices.Contains(optional, k) {
				d.failf(path.String(), "unknown key %q", k)
				break
			}
		}
		return record{}, false
	}
	return record{d: d, m: m, path: path}, true
}

func (o record) at(k string) string {
	path := o.path.String()
	if path == "" {
		return k
	}
	return path + "." + k
}

func (o record) str(k string) string {
	s, ok := o.m[k].(string)
	if !ok {
		o.d.failf(o.at(k), "want a string, got %s", kindOf(o.m[k]))
	}
	return s
}

func (o record) optStr(k string) string {
	if o.m[k] == nil {
		return ""
	}
	return o.str(k)
}

func (o record) int64(k string) int64 {
	n, ok := o.m[k].(int64)
	if !ok {
		o.d.failf(o.at(k), "want an integer, got %s", kindOf(o.m[k]))
	}
	return n
}

func (o record) int(k string) int {
	n := o.int64(k)
	if int64(int(n)) != n {
		o.d.failf(o.at(k), "integer %d overflows int", n)
	}
	return int(n)
}

func (o record) time(k string) time.Time {
	v := o.m[k]
	if v == nil {
		return time.Time{}
	}
	s, ok := v.(string)
	if !ok {
		o.d.failf(o.at(k), "want a timestamp string, got %s", kindOf(v))
		return time.Time{}
	}
	t, err := parseTimestamp(s)
	if err != nil || t.IsZero() {
		o.d.failf(o.at(k), "invalid timestamp %q", s)
		return time.Time{}
	}
	return t
}

// portableMap reads a map of portable values, null meaning nil.
func (o record) portableMap(k string) map[string]any {
	v := o.m[k]
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		o.d.failf(o.at(k), "want an object or null, got %s", kindOf(v))
	}
	return m
}

func (o record) strings(k string) []string {
	v := o.m[k]
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		o.d.failf(o.at(k), "want a list of strings or null, got %s", kindOf(v))
		return nil
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			o.d.failf(fmt.Sprintf("%s[%d]", o.at(k), i), "want a string, got %s", kindOf(e))
			return nil
		}
		out[i] = s
	}
	return out
}

// each reads an object of records keyed by ID, null meaning nil.
func each[V any](o record, k string, read func(v any, path docPath) V) map[string]V {
	v := o.m[k]
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		o.d.failf(o.at(k), "want an object or null, got %s", kindOf(v))
		return nil
	}
	out := make(map[string]V, len(m))
	base := o.at(k) // no allocation for the run's own keys
	for id, e := range m {
		out[id] = read(e, docPath{base: base, entry: id, kind: entryPath})
	}
	return out
}

// list reads a list of records, null meaning nil.
func list[V any](o record, k string, read func(v any, path docPath) V) []V {
	v := o.m[k]
	if v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		o.d.failf(o.at(k), "want a list or null, got %s", kindOf(v))
		return nil
	}
	out := make([]V, len(l))
	base := o.at(k)
	for i, e := range l {
		out[i] = read(e, docPath{base: base, index: i, kind: indexPath})
	}
	return out
}

func (d *reader) run(doc any) *Run {
	o, ok := d.object(doc, docPath{}, "active_tasks", "changed_channels", "channels", "checkpoint_seq",
		"event_seq", "failure", "finished_at", "format_version", "graph_hash", "graph_id", "id",
		"input", "interrupts", "metadata", "output", "pending_nodes", "pending_writes",
		"started_at", "status", "step", "timers", "updated_at")
	if !ok {
		return nil
	}
	if v := o.int64("format_version"); d.err == nil && v != formatVersion {
		d.failf("format_version", "unsupported format version %d", v)
		return nil
	}
	r := &Run{
		ID:              o.str("id"),
		GraphID:         o.str("graph_id"),
		GraphHash:       o.str("graph_hash"),
		Status:          Status(o.str("status")),
		Input:           o.portableMap("input"),
		Output:          o.portableMap("output"),
		StartedAt:       o.time("started_at"),
		UpdatedAt:       o.time("updated_at"),
		FinishedAt:      o.time("finished_at"),
		Step:            o.int("step"),
		ChangedChannels: o.strings("changed_channels"),
		PendingNodes:    o.strings("pending_nodes"),
		ActiveTasks:     each(o, "active_tasks", d.task),
		PendingWrites:   list(o, "pending_writes", d.pendingWrite),
		Interrupts:      each(o, "interrupts", d.interrupt),
		Timers:          each(o, "timers", d.timer),
		CheckpointSeq:   o.int64("checkpoint_seq"),
		EventSeq:        o.int64("event_seq"),
		Metadata:        o.portableMap("metadata"),
	}
	r.Channels, r.BarrierSeen = d.channels(o)
	if f := o.m["failure"]; f != nil {
		r.Failure = d.failure(f, docPath{base: "failure"})
	}
	return r
}

// channels reads the run's channels, taking their barrier sets apart.
func (d *reader) channels(o record) (map[string]Channel, map[string][]string) {
	var barrierSeen map[string][]string
	channels := each(o, "channels", func(v any, path docPath) Channel {
		c, seen := d.channel(v, path)
		if seen != nil {
			if barrierSeen == nil {
				barrierSeen = make(map[string][]string)
			}
			barrierSeen[path.entry] = seen
		}
		return c
	})
	return channels, barrierSeen
}

// A channel's barrier set and value may be left out (channel writes them
// only when set; earlier documents write them as null).
var channelKeys, channelOptionalKeys = []string{"version"}, []string{"barrier_seen", "value"}

func (d *reader) channel(v any, path docPath) (c Channel, barrierSeen []string) {
	o, ok := d.objectWithOptional(v, path, channelKeys, channelOptionalKeys)
	if !ok {
		return Channel{}, nil
	}
	return Channel{Value: o.m["value"], Version: o.int64("version")}, o.strings("barrier_seen")
}

func (d *reader) failure(v any, path docPath) *Failure {
	o, ok := d.object(v, path, "code", "details", "message", "node_id")
	if !ok {
		return nil
	}
	return &Failure{Code: o.str("code"), Message: o.str("message"), NodeID: o.optStr("node_id"), Details: o.portableMap("details")}
}

func (d *reader) task(v any, path docPath) TaskState {
	o, ok := d.object(v, path, "attempt", "deadline_at", "failures", "idempotency_key", "input_hash",
		"metadata", "node_id", "snapshot", "source_versions", "started_at", "status", "step", "task_id")
	if !ok {
		return TaskState{}
	}
	return TaskState{
		TaskID:         o.str("task_id"),
		NodeID:         o.str("node_id"),
		Step:           o.int("step"),
		Attempt:        o.int("attempt"),
		Status:         o.str("status"),
		InputHash:      o.str("input_hash"),
		IdempotencyKey: o.str("idempotency_key"),
		Snapshot:       o.portableMap("snapshot"),
		SourceVersions: each(o, "source_versions", d.version),
		StartedAt:      o.time("started_at"),
		DeadlineAt:     o.time("deadline_at"),
		Failures:       list(o, "failures", d.attemptFailure),
		Metadata:       o.portableMap("metadata"),
	}
}

func (d *reader) version(v any, path docPath) int64 {
	n, ok := v.(int64)
	if !ok {
		d.failf(path.String(), "want an integer, got %s", kindOf(v))
	}
	return n
}

func (d *reader) attemptFailure(v any, path docPath) AttemptFailure {
	o, ok := d.object(v, path, "attempt", "reason")
	if !ok {
		return AttemptFailure{}
	}
	return AttemptFailure{Attempt: o.int("attempt"), Reason: o.str("reason")}
}

func (d *reader) pendingWrite(v any, path docPath) PendingWrite {
	o, ok := d.object(v, path, "attempt", "kind", "node_id", "task_id", "value")
	if !ok {
		return PendingWrite{}
	}
	return PendingWrite{TaskID: o.str("task_id"), NodeID: o.str("node_id"), Attempt: o.int("attempt"), Kind: o.str("kind"), Value: o.m["value"]}
}

func (d *reader) interrupt(v any, path docPath) Interrupt {
	o, ok := d.object(v, path, "created_at", "id", "metadata", "node_id", "resolved_at", "resume_channel", "schema", "status")
	if !ok {
		return Interrupt{}
	}
	return Interrupt{
		ID:            o.str("id"),
		NodeID:        o.str("node_id"),
		Status:        o.str("status"),
		ResumeChannel: o.str("resume_channel"),
		Schema:        o.portableMap("schema"),
		CreatedAt:     o.time("created_at"),
		ResolvedAt:    o.time("resolved_at"),
		Metadata:      o.portableMap("metadata"),
	}
}

func (d *reader) timer(v any, path docPath) Timer {
	o, ok := d.object(v, path, "fires_at", "kind")
	if !ok {
		return Timer{}
	}
	return Timer{Kind: o.str("kind"), FiresAt: o.time("fires_at")}
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
