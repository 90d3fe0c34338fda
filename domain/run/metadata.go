package run

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/docketgo/docket/domain/value"
)

// CheckpointMetadata is what a checkpoint records about its transition: the
// same value on the checkpoint, its moment and its checkpoint_committed
// event. Its wire form (Map, AppendCanonical) is the string-keyed map of
// the checkpoint metadata keys; the runtime builds the typed value because
// it builds one for every transition and most are never read as a map.
//
// A CheckpointMetadata the runtime proposed is read-only and shared by the
// moment, its checkpoint and its final event; use Clone before changing one.
type CheckpointMetadata struct {
	Seq             int64           // checkpoint_seq
	Type            CheckpointType  // checkpoint_type
	GraphStep       int             // graph_step: the proposed run's step
	WakeDisposition DispositionKind // wake_disposition
	// ParkReason is the park's reason; the wire form holds null instead
	// when WakeDisposition is continue.
	ParkReason string
	// ActiveSuperstep is nil (null) when the proposed run has no active
	// tasks and no pending writes.
	ActiveSuperstep *ActiveSuperstep
	NodeAttempts    []NodeAttempt // the attempts this moment settled
}

// ActiveSuperstep lists the proposed run's open superstep: its scheduled
// tasks and every pending write, each sorted by (node, task).
type ActiveSuperstep struct {
	GraphStep       int
	Tasks           []ScheduledTask
	PendingAttempts []PendingAttempt
}

// ScheduledTask is an active task of the proposed run.
type ScheduledTask struct {
	TaskID           string
	NodeID           string
	ScheduledAttempt int
	IdempotencyKey   string
}

// PendingAttempt is a pending write of the proposed run.
type PendingAttempt struct {
	TaskID         string
	NodeID         string
	Attempted      int
	Kind           string // WriteUpdate or WriteInterrupt
	IdempotencyKey string
}

// NodeAttempt is one attempt a moment settled: a completed, failed or
// interrupted node event, or a pending write the moment added.
type NodeAttempt struct {
	TaskID    string
	NodeID    string
	Attempted int
	Outcome   string // OutcomeCompleted, OutcomeFailed, ...
	// NextScheduledAttempt is the task's next attempt in the proposed run,
	// 0 (null) when none is scheduled.
	NextScheduledAttempt int
}

// Checkpoint metadata keys.
const (
	keyActiveSuperstep      = "active_superstep"
	keyCheckpointSeq        = "checkpoint_seq"
	keyCheckpointType       = "checkpoint_type"
	keyGraphStep            = "graph_step"
	keyNodeAttempts         = "node_attempts"
	keyParkReason           = "park_reason"
	keyWakeDisposition      = "wake_disposition"
	keyTasks                = "tasks"
	keyPendingAttempts      = "pending_attempts"
	keyTaskID               = "task_id"
	keyNodeID               = "node_id"
	keyScheduledAttempt     = "scheduled_attempt"
	keyIdempotencyKey       = "idempotency_key"
	keyAttempted            = "attempted"
	keyKind                 = "kind"
	keyOutcome              = "outcome"
	keyNextScheduledAttempt = "next_scheduled_attempt"
)

// Map returns the wire form of m: a fresh portable map. A nil m is the
// empty map of an event that is not a checkpoint.
func (m *CheckpointMetadata) Map() map[string]any {
	if m == nil {
		return map[string]any{}
	}
	var reason any
	if m.WakeDisposition != DispositionContinue {
		reason = m.ParkReason
	}
	var active any
	if a := m.ActiveSuperstep; a != nil {
		active = map[string]any{keyGraphStep: int64(a.GraphStep),
			keyTasks: wireList(a.Tasks, (*ScheduledTask).wire), keyPendingAttempts: wireList(a.PendingAttempts, (*PendingAttempt).wire)}
	}
	attempts := wireList(m.NodeAttempts, (*NodeAttempt).wire)
	return map[string]any{
		keyCheckpointSeq:   m.Seq,
		keyCheckpointType:  string(m.Type),
		keyGraphStep:       int64(m.GraphStep),
		keyParkReason:      reason,
		keyWakeDisposition: string(m.WakeDisposition),
		keyActiveSuperstep: active,
		keyNodeAttempts:    attempts,
	}
}

func (t *ScheduledTask) wire() map[string]any {
	return map[string]any{
		keyTaskID:           t.TaskID,
		keyNodeID:           t.NodeID,
		keyScheduledAttempt: int64(t.ScheduledAttempt),
		keyIdempotencyKey:   t.IdempotencyKey,
	}
}

func (p *PendingAttempt) wire() map[string]any {
	return map[string]any{
		keyTaskID:         p.TaskID,
		keyNodeID:         p.NodeID,
		keyAttempted:      int64(p.Attempted),
		keyKind:           p.Kind,
		keyIdempotencyKey: p.IdempotencyKey,
	}
}

func (a *NodeAttempt) wire() map[string]any {
	var next any
	if a.NextScheduledAttempt != 0 {
		next = int64(a.NextScheduledAttempt)
	}
	return map[string]any{
		keyTaskID:               a.TaskID,
		keyNodeID:               a.NodeID,
		keyAttempted:            int64(a.Attempted),
		keyOutcome:              a.Outcome,
		keyNextScheduledAttempt: next,
	}
}

// wireList is the wire form of a list of items (never nil).
func wireList[T any](items []T, wire func(*T) map[string]any) []any {
	out := make([]any, len(items))
	for i := range items {
		out[i] = wire(&items[i])
	}
	return out
}

// AppendCanonical appends the canonical encoding of m's wire form (the
// bytes value.AppendCanonical writes for m.Map(), "{}" for a nil m) to dst
// without building the map: stores encode the metadata of every event they
// write. Keys are written in canonical (UTF-16, here ASCII) order.
func (m *CheckpointMetadata) AppendCanonical(dst []byte) []byte {
	if m == nil {
		return append(dst, "{}"...)
	}
	dst = append(dst, `{"active_superstep":`...)
	if a := m.ActiveSuperstep; a == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, `{"graph_step":`...)
		dst = strconv.AppendInt(dst, int64(a.GraphStep), 10)
		dst = append(dst, `,"pending_attempts":`...)
		dst = appendList(dst, a.PendingAttempts, appendPendingAttempt)
		dst = append(dst, `,"tasks":`...)
		dst = appendList(dst, a.Tasks, appendScheduledTask)
		dst = append(dst, '}')
	}
	dst = appendIntField(dst, keyCheckpointSeq, m.Seq)
	dst = appendField(dst, keyCheckpointType, string(m.Type))
	dst = appendIntField(dst, keyGraphStep, int64(m.GraphStep))
	dst = append(dst, `,"node_attempts":`...)
	dst = appendList(dst, m.NodeAttempts, appendNodeAttempt)
	dst = append(dst, `,"park_reason":`...)
	if m.WakeDisposition == DispositionContinue {
		dst = append(dst, "null"...)
	} else {
		dst = value.AppendString(dst, m.ParkReason)
	}
	dst = appendField(dst, keyWakeDisposition, string(m.WakeDisposition))
	return append(dst, '}')
}

// The element encoders write their keys in canonical order.

func appendPendingAttempt(dst []byte, p *PendingAttempt) []byte {
	dst = append(dst, `{"attempted":`...)
	dst = strconv.AppendInt(dst, int64(p.Attempted), 10)
	dst = appendField(dst, keyIdempotencyKey, p.IdempotencyKey)
	dst = appendField(dst, keyKind, p.Kind)
	dst = appendField(dst, keyNodeID, p.NodeID)
	dst = appendField(dst, keyTaskID, p.TaskID)
	return append(dst, '}')
}

func appendScheduledTask(dst []byte, t *ScheduledTask) []byte {
	dst = append(dst, `{"idempotency_key":`...)
	dst = value.AppendString(dst, t.IdempotencyKey)
	dst = appendField(dst, keyNodeID, t.NodeID)
	dst = appendIntField(dst, keyScheduledAttempt, int64(t.ScheduledAttempt))
	dst = appendField(dst, keyTaskID, t.TaskID)
	return append(dst, '}')
}

func appendNodeAttempt(dst []byte, a *NodeAttempt) []byte {
	dst = append(dst, `{"attempted":`...)
	dst = strconv.AppendInt(dst, int64(a.Attempted), 10)
	dst = append(dst, `,"next_scheduled_attempt":`...)
	if a.NextScheduledAttempt == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, int64(a.NextScheduledAttempt), 10)
	}
	dst = appendField(dst, keyNodeID, a.NodeID)
	dst = appendField(dst, keyOutcome, a.Outcome)
	dst = appendField(dst, keyTaskID, a.TaskID)
	return append(dst, '}')
}

// appendList appends items as a JSON list, each written by appendItem.
func appendList[T any](dst []byte, items []T, appendItem func([]byte, *T) []byte) []byte {
	dst = append(dst, '[')
	for i := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendItem(dst, &items[i])
	}
	return append(dst, ']')
}

// appendIntField appends `,"key":n`; key needs no escaping.
func appendIntField(dst []byte, key string, n int64) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, '"', ':')
	return strconv.AppendInt(dst, n, 10)
}

// MarshalJSON writes the wire form, so checkpoints serialized with
// encoding/json carry the spec's keys.
func (m *CheckpointMetadata) MarshalJSON() ([]byte, error) { return m.AppendCanonical(nil), nil }

// UnmarshalJSON reads the wire form strictly (ParseCheckpointMetadata).
func (m *CheckpointMetadata) UnmarshalJSON(b []byte) error {
	v, err := value.DecodeJSON(b)
	if err != nil {
		return err
	}
	w, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("checkpoint metadata: %T, not an object", v)
	}
	parsed, err := ParseCheckpointMetadata(w)
	if err != nil {
		return err
	}
	if parsed == nil {
		return fmt.Errorf("checkpoint metadata: empty object")
	}
	*m = *parsed
	return nil
}

// appendField appends `,"key":"s"`; key needs no escaping.
func appendField(dst []byte, key, s string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, '"', ':')
	return value.AppendString(dst, s)
}

// Equal reports whether m and o hold the same metadata; nil equals only
// nil, and a nil list equals an empty one.
func (m *CheckpointMetadata) Equal(o *CheckpointMetadata) bool {
	if m == nil || o == nil {
		return m == o
	}
	if m.Seq != o.Seq || m.Type != o.Type || m.GraphStep != o.GraphStep ||
		m.WakeDisposition != o.WakeDisposition || !slices.Equal(m.NodeAttempts, o.NodeAttempts) {
		return false
	}
	// The reason of a continue is not part of the wire form.
	if m.WakeDisposition != DispositionContinue && m.ParkReason != o.ParkReason {
		return false
	}
	a, b := m.ActiveSuperstep, o.ActiveSuperstep
	if a == nil || b == nil {
		return a == b
	}
	return a.GraphStep == b.GraphStep && slices.Equal(a.Tasks, b.Tasks) && slices.Equal(a.PendingAttempts, b.PendingAttempts)
}

// Clone returns a deep copy of m (nil for nil).
func (m *CheckpointMetadata) Clone() *CheckpointMetadata {
	if m == nil {
		return nil
	}
	out := *m
	out.NodeAttempts = slices.Clone(m.NodeAttempts)
	if a := m.ActiveSuperstep; a != nil {
		out.ActiveSuperstep = &ActiveSuperstep{
			GraphStep:       a.GraphStep,
			Tasks:           slices.Clone(a.Tasks),
			PendingAttempts: slices.Clone(a.PendingAttempts),
		}
	}
	return &out
}

// ParseCheckpointMetadata reads the wire form of checkpoint metadata (as a
// store decodes it) strictly: every key present with its type, no other
// key, attempts and sequences positive. An empty map is the metadata of an
// event that is not a checkpoint: nil, no error.
func ParseCheckpointMetadata(w map[string]any) (*CheckpointMetadata, error) {
	if len(w) == 0 {
		return nil, nil
	}
	p := wireReader{}
	m := &CheckpointMetadata{
		Seq:             p.positive(w, keyCheckpointSeq),
		Type:            CheckpointType(p.str(w, keyCheckpointType)),
		GraphStep:       int(p.natural(w, keyGraphStep)),
		WakeDisposition: DispositionKind(p.str(w, keyWakeDisposition)),
	}
	if m.WakeDisposition == DispositionContinue {
		p.null(w, keyParkReason)
	} else {
		m.ParkReason = p.str(w, keyParkReason)
	}
	if a, ok := w[keyActiveSuperstep].(map[string]any); ok {
		m.ActiveSuperstep = p.activeSuperstep(a)
	} else {
		p.null(w, keyActiveSuperstep)
	}
	attempts := p.list(w, keyNodeAttempts)
	m.NodeAttempts = make([]NodeAttempt, len(attempts))
	for i, e := range attempts {
		a := p.object(e, keyNodeAttempts, i, keyTaskID, keyNodeID, keyAttempted, keyOutcome, keyNextScheduledAttempt)
		m.NodeAttempts[i] = NodeAttempt{TaskID: p.str(a, keyTaskID), NodeID: p.str(a, keyNodeID), Attempted: int(p.positive(a, keyAttempted)), Outcome: p.str(a, keyOutcome)}
		if a[keyNextScheduledAttempt] != nil {
			m.NodeAttempts[i].NextScheduledAttempt = int(p.positive(a, keyNextScheduledAttempt))
		}
	}
	p.keys(w, "checkpoint metadata", keyCheckpointSeq, keyCheckpointType, keyGraphStep, keyParkReason, keyWakeDisposition, keyActiveSuperstep, keyNodeAttempts)
	if p.err != nil {
		return nil, p.err
	}
	return m, nil
}

func (p *wireReader) activeSuperstep(w map[string]any) *ActiveSuperstep {
	tasks, pending := p.list(w, keyTasks), p.list(w, keyPendingAttempts)
	a := &ActiveSuperstep{GraphStep: int(p.natural(w, keyGraphStep)),
		Tasks: make([]ScheduledTask, len(tasks)), PendingAttempts: make([]PendingAttempt, len(pending))}
	for i, e := range tasks {
		t := p.object(e, keyTasks, i, keyTaskID, keyNodeID, keyScheduledAttempt, keyIdempotencyKey)
		a.Tasks[i] = ScheduledTask{TaskID: p.str(t, keyTaskID), NodeID: p.str(t, keyNodeID),
			ScheduledAttempt: int(p.positive(t, keyScheduledAttempt)), IdempotencyKey: p.str(t, keyIdempotencyKey)}
	}
	for i, e := range pending {
		t := p.object(e, keyPendingAttempts, i, keyTaskID, keyNodeID, keyAttempted, keyKind, keyIdempotencyKey)
		a.PendingAttempts[i] = PendingAttempt{TaskID: p.str(t, keyTaskID), NodeID: p.str(t, keyNodeID),
			Attempted: int(p.positive(t, keyAttempted)), Kind: p.str(t, keyKind), IdempotencyKey: p.str(t, keyIdempotencyKey)}
	}
	p.keys(w, keyActiveSuperstep, keyGraphStep, keyTasks, keyPendingAttempts)
	return a
}

// wireReader reads typed fields from a decoded map, keeping the first
// problem.
type wireReader struct{ err error }

func (p *wireReader) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("checkpoint metadata: "+format, args...)
	}
}

func (p *wireReader) str(w map[string]any, key string) string {
	s, ok := w[key].(string)
	if !ok {
		p.fail("%s is %T, not a string", key, w[key])
	}
	return s
}

func (p *wireReader) natural(w map[string]any, key string) int64 {
	n, ok := w[key].(int64)
	if !ok || n < 0 {
		p.fail("%s is %v, not a natural number", key, w[key])
	}
	return n
}

func (p *wireReader) positive(w map[string]any, key string) int64 {
	n, ok := w[key].(int64)
	if !ok || n < 1 {
		p.fail("%s is %v, not a positive integer", key, w[key])
	}
	return n
}

func (p *wireReader) null(w map[string]any, key string) {
	if v, ok := w[key]; !ok || v != nil {
		p.fail("%s is %v, not null", key, v)
	}
}

func (p *wireReader) list(w map[string]any, key string) []any {
	l, ok := w[key].([]any)
	if !ok {
		p.fail("%s is %T, not a list", key, w[key])
	}
	return l
}

func (p *wireReader) object(e any, list string, i int, keys ...string) map[string]any {
	o, ok := e.(map[string]any)
	if !ok {
		p.fail("%s[%d] is %T, not an object", list, i, e)
		return nil
	}
	p.keys(o, fmt.Sprintf("%s[%d]", list, i), keys...)
	return o
}

// keys fails when w holds a key outside keys or misses one of them.
func (p *wireReader) keys(w map[string]any, where string, keys ...string) {
	for _, k := range keys {
		if _, ok := w[k]; !ok {
			p.fail("%s has no %s", where, k)
		}
	}
	if len(w) != len(keys) {
		p.fail("%s has %d keys, want %d", where, len(w), len(keys))
	}
}
