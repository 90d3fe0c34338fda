package postgres

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/value"
	"github.com/docketgo/docket/ports"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// eventArrays are a moment's events as parallel typed arrays, the shape
// the statements unnest (one array parameter per column, whatever the
// number of events). Slices pgx has no direct plan for are FlatArrays, so
// they encode without reflection.
type eventArrays struct {
	seqs       []int64
	types      []string
	steps      []int32
	nodeIDs    pgtype.FlatArray[*string]
	channelIDs pgtype.FlatArray[*string]
	taskIDs    pgtype.FlatArray[*string]
	payloads   pgtype.FlatArray[[]byte]
	metadata   pgtype.FlatArray[[]byte]
	occurred   []time.Time
}

// args returns the arrays in statement order.
func (a eventArrays) args() []any {
	return []any{a.seqs, a.types, a.steps, a.nodeIDs, a.channelIDs, a.taskIDs, a.payloads, a.metadata, a.occurred}
}

// newEventArrays has room for n events. Columns of one element type share
// one allocation, each capped at its own part, so an append past n
// reallocates instead of writing into the next column.
func newEventArrays(n int) eventArrays {
	texts := make(pgtype.FlatArray[*string], 3*n)
	docs := make(pgtype.FlatArray[[]byte], 2*n)
	return eventArrays{
		seqs: make([]int64, 0, n), types: make([]string, 0, n), steps: make([]int32, 0, n),
		nodeIDs: texts[0:0:n], channelIDs: texts[n : n : 2*n], taskIDs: texts[2*n : 2*n : 3*n],
		payloads: docs[0:0:n], metadata: docs[n : n : 2*n], occurred: make([]time.Time, 0, n),
	}
}

// encodedEvents are a write's normalized events with their payloads and
// metadata encoded: the rest of their columns are the events' own fields,
// laid out only as the statement's arrays (eventArrays.add).
type encodedEvents struct {
	events []run.Event
	docs   [][]byte // event i's payload at 2i, its metadata at 2i+1
}

// batchEvents lays the events of a batch's writes end to end, each array
// allocated once, with the ord (batch index) of the write each belongs to.
func batchEvents[T any](batch []*pending[T], encoded func(T) encodedEvents) (eventArrays, []int32) {
	total := 0
	for _, p := range batch {
		total += len(encoded(p.args).events)
	}
	ords := make([]int32, 0, total)
	events := newEventArrays(total)
	for i, p := range batch {
		e := encoded(p.args)
		events.add(e)
		for range e.events {
			ords = append(ords, int32(i))
		}
	}
	return events, ords
}

// add appends e's events to the arrays. The text columns point at the
// events' own fields, which the write holds unchanged until it is sent.
func (a *eventArrays) add(e encodedEvents) {
	for i := range e.events {
		ev := &e.events[i]
		a.seqs = append(a.seqs, ev.Seq)
		a.types = append(a.types, string(ev.Type))
		a.steps = append(a.steps, int32(ev.Step))
		a.nodeIDs = append(a.nodeIDs, optTextOf(&ev.NodeID))
		a.channelIDs = append(a.channelIDs, optTextOf(&ev.ChannelID))
		a.taskIDs = append(a.taskIDs, optTextOf(&ev.TaskID))
		a.payloads = append(a.payloads, e.docs[2*i])
		a.metadata = append(a.metadata, e.docs[2*i+1])
		a.occurred = append(a.occurred, ports.Micros(ev.Timestamp))
	}
}

// encodeEvents turns normalized events into the statements' arrays
// (encodeEventDocs).
func encodeEvents(runID string, events []run.Event) (eventArrays, error) {
	e, err := encodeEventDocs(runID, events)
	if err != nil {
		return eventArrays{}, err
	}
	a := newEventArrays(len(events))
	a.add(e)
	return a, nil
}

// encodeEventDocs encodes normalized events (sorted, de-duplicated, µs
// UTC) for a write. Payloads are value.Canonical bytes of the map (nil
// and empty alike as {}), metadata the same bytes of its wire form,
// written without building the map; so byte equality in SQL is content
// equality.
func encodeEventDocs(runID string, events []run.Event) (encodedEvents, error) {
	// Every payload and metadata map is encoded into one pooled buffer and
	// copied out in one piece, which the documents then slice; an empty
	// map (most events' metadata) is the shared "{}".
	type span struct{ start, end int }
	scratch := value.GetScratch()
	defer scratch.Release()
	var (
		buf   = scratch.B
		room  [16]span // a commit's events, most often, without an allocation
		spans = room[:0]
		err   error
	)
	encode := func(m map[string]any) error {
		if len(m) == 0 {
			spans = append(spans, span{-1, -1})
			return nil
		}
		start := len(buf)
		if buf, err = value.AppendCanonical(buf, m); err != nil {
			return err
		}
		spans = append(spans, span{start, len(buf)})
		return nil
	}
	for i := range events {
		e := &events[i]
		if e.Step > math.MaxInt32 {
			return encodedEvents{}, &ports.InvalidCommitError{RunID: runID, Reason: fmt.Sprintf("event %d step %d is out of range", e.Seq, e.Step)}
		}
		if err := encode(e.Payload); err != nil {
			return encodedEvents{}, &ports.InvalidCommitError{RunID: runID, Reason: fmt.Sprintf("event %d payload: %v", e.Seq, err)}
		}
		if e.Metadata == nil {
			spans = append(spans, span{-1, -1})
		} else {
			start := len(buf)
			buf = e.Metadata.AppendCanonical(buf)
			spans = append(spans, span{start, len(buf)})
		}
	}
	scratch.B = buf
	buf = bytes.Clone(buf)
	docs := make([][]byte, len(spans))
	for i, s := range spans {
		if s.start < 0 {
			docs[i] = emptyObject
		} else {
			docs[i] = buf[s.start:s.end:s.end]
		}
	}
	return encodedEvents{events: events, docs: docs}, nil
}

// emptyObject is the encoding of an empty (or nil) map, shared read-only.
var emptyObject = []byte("{}")

// optTextOf is the text column of *s: NULL when *s is "" (absent).
func optTextOf(s *string) *string {
	if *s == "" {
		return nil
	}
	return s
}

func textOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// eventRow is one docket_events row as the reads scan it (nullable, so a
// LEFT JOIN miss scans too).
type eventRow struct {
	seq        *int64
	typ        *string
	step       *int32
	nodeID     *string
	channelID  *string
	taskID     *string
	payload    []byte
	metadata   []byte
	occurredAt *time.Time
}

func (e *eventRow) dest() []any {
	return []any{&e.seq, &e.typ, &e.step, &e.nodeID, &e.channelID, &e.taskID, &e.payload, &e.metadata, &e.occurredAt}
}

// decode returns the event, or a *ports.CorruptError: a stored event is
// never skipped or reported as absent because it cannot be read.
func (e *eventRow) decode(runID string) (run.Event, error) {
	var seq int64
	if e.seq != nil {
		seq = *e.seq
	}
	corrupt := func(format string, args ...any) (run.Event, error) {
		return run.Event{}, &ports.CorruptError{Kind: ports.CorruptEvent, ID: runID, Seq: seq, Err: fmt.Errorf(format, args...)}
	}
	if e.seq == nil || e.typ == nil || e.step == nil || e.occurredAt == nil {
		return corrupt("missing columns")
	}
	typ := run.EventType(*e.typ)
	if !ports.KnownEventType(typ) {
		return corrupt("unknown event type %q", *e.typ)
	}
	if *e.step < 0 {
		return corrupt("negative step %d", *e.step)
	}
	payload, err := decodeMap(e.payload)
	if err != nil {
		return corrupt("payload: %v", err)
	}
	wire, err := decodeMap(e.metadata)
	if err != nil {
		return corrupt("metadata: %v", err)
	}
	metadata, err := run.ParseCheckpointMetadata(wire)
	if err != nil {
		return corrupt("%v", err)
	}
	return run.Event{
		RunID:     runID,
		Seq:       seq,
		Type:      typ,
		Step:      int(*e.step),
		NodeID:    textOf(e.nodeID),
		ChannelID: textOf(e.channelID),
		TaskID:    textOf(e.taskID),
		Timestamp: ports.Micros(*e.occurredAt),
		Payload:   payload,
		Metadata:  metadata,
	}, nil
}

// payloadLevels bounds the levels of an event payload's own structure
// above the portable values it carries (run_completed's outputs map), so
// a value as deep as value.MaxDepth reads back.
const payloadLevels = 4

func decodeMap(b []byte) (map[string]any, error) {
	v, err := value.DecodeJSONEnvelope(b, nil, payloadLevels)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	return m, nil
}

// tokenArg parses a claim token for binding. A missing or malformed token
// can match no stored token, so callers treat !ok as "matches nothing"
// and never send it (PostgreSQL would reject it with 22P02). Only the
// spelling the store hands out is the token: another spelling of the same
// uuid (upper case, braces, a urn) matches nothing, as in every adapter.
func tokenArg(t ports.ClaimToken) (tokenParam, bool) {
	if t.IsZero() {
		return tokenParam{}, false
	}
	raw := t.Reveal()
	u, err := uuid.Parse(raw)
	if err != nil || len(raw) != 36 || strings.ContainsAny(raw, "ABCDEF") {
		return tokenParam{}, false
	}
	return tokenParam{uuid: pgtype.UUID{Bytes: u, Valid: true}}, true
}

// optTime maps the zero time to NULL and normalizes the rest to µs UTC.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	m := ports.Micros(t)
	return &m
}

// timeOf normalizes a scanned nullable timestamp (NULL is the zero time).
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return ports.Micros(*t)
}

// runRow is one docket_runs row as FetchRun, InspectRun and the locking
// reads scan it (runColumns).
type runRow struct {
	id             int64
	runID          string
	tenantID       *string
	state          []byte
	checkpointSeq  int64
	checkpointType *string
	wakeAt         *time.Time
	claimedAt      *time.Time
	attempts       int32
	abandons       int32
	poisonedAt     *time.Time
	poisonReason   *string
	columns        docColumns
}

// docColumns are the row's column copies of document fields, which
// listings, admission and event pages read instead of the document.
type docColumns struct {
	graphID    string
	graphHash  string
	status     string
	step       int32
	eventSeq   int64
	startedAt  time.Time
	updatedAt  time.Time
	finishedAt *time.Time
}

func (r *runRow) dest() []any {
	c := &r.columns
	return []any{&r.id, &r.runID, &r.tenantID, &r.state, &r.checkpointSeq, &r.checkpointType,
		&r.wakeAt, &r.claimedAt, &r.attempts, &r.abandons, &r.poisonedAt, &r.poisonReason,
		&c.graphID, &c.graphHash, &c.status, &c.step, &c.eventSeq, &c.startedAt, &c.updatedAt, &c.finishedAt}
}

// decode returns the committed document, or a *ports.CorruptError when
// the bytes do not decode or disagree with the row's own columns: a
// document that says otherwise than the columns every listing shows is
// not half-read as either.
func (r *runRow) decode() (*run.Run, error) {
	doc, err := r.decodeState()
	if err != nil {
		return nil, err
	}
	c := r.columns
	var diff []string
	differ := func(field string, doc, col any) {
		diff = append(diff, fmt.Sprintf("%s %v, the row says %v", field, doc, col))
	}
	if doc.GraphID != c.graphID || doc.GraphHash != c.graphHash {
		differ("graph", doc.GraphID+"/"+doc.GraphHash, c.graphID+"/"+c.graphHash)
	}
	if string(doc.Status) != c.status {
		differ("status", doc.Status, c.status)
	}
	if int64(doc.Step) != int64(c.step) {
		differ("step", doc.Step, c.step)
	}
	if doc.EventSeq != c.eventSeq {
		differ("event_seq", doc.EventSeq, c.eventSeq)
	}
	if !doc.StartedAt.Equal(c.startedAt) {
		differ("started_at", stamp(doc.StartedAt), stamp(c.startedAt))
	}
	if !doc.UpdatedAt.Equal(c.updatedAt) {
		differ("updated_at", stamp(doc.UpdatedAt), stamp(c.updatedAt))
	}
	if finished := timeOf(c.finishedAt); !doc.FinishedAt.Equal(finished) {
		differ("finished_at", stamp(doc.FinishedAt), stamp(finished))
	}
	if len(diff) > 0 {
		return nil, &ports.CorruptError{Kind: ports.CorruptRun, ID: r.runID,
			Err: fmt.Errorf("state disagrees with the row's columns: %s", strings.Join(diff, "; "))}
	}
	return doc, nil
}

// decodeState decodes the document and checks it against the run id and
// checkpoint_seq columns.
func (r *runRow) decodeState() (*run.Run, error) {
	doc, err := run.Decode(r.state)
	if err != nil {
		return nil, &ports.CorruptError{Kind: ports.CorruptRun, ID: r.runID, Err: err}
	}
	if doc.ID != r.runID || doc.CheckpointSeq != r.checkpointSeq {
		return nil, &ports.CorruptError{Kind: ports.CorruptRun, ID: r.runID,
			Err: fmt.Errorf("state holds run %q at checkpoint_seq %d, the row says %d", doc.ID, doc.CheckpointSeq, r.checkpointSeq)}
	}
	return doc, nil
}

// stamp spells a timestamp for a corruption message ("-" when absent).
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// info is the token-free RunInfo of the row.
func (r *runRow) info() (*ports.RunInfo, error) {
	doc, err := r.decode()
	if err != nil {
		return nil, err
	}
	if (r.poisonedAt == nil) != (r.poisonReason == nil) {
		return nil, &ports.CorruptError{Kind: ports.CorruptRun, ID: r.runID, Err: fmt.Errorf("poison facts are half set")}
	}
	return &ports.RunInfo{
		Run:                  doc,
		Owner:                ownerOf(r.tenantID),
		LatestCheckpointType: run.CheckpointType(textOf(r.checkpointType)),
		WakeAt:               timeOf(r.wakeAt),
		ClaimedAt:            timeOf(r.claimedAt),
		ClaimAttempts:        int(r.attempts),
		ClaimAbandons:        int(r.abandons),
		PoisonedAt:           timeOf(r.poisonedAt),
		PoisonReason:         textOf(r.poisonReason),
	}, nil
}
