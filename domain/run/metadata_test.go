package run

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/docketgo/docket/domain/value"
)

// newTextGenerator draws IDs and free text, including strings JSON must
// escape. Each test builds its own: rapid's generators are not safe to
// share between parallel tests.
func newTextGenerator() *rapid.Generator[string] {
	return rapid.OneOf(rapid.StringMatching(`[a-z][a-z0-9_:-]{0,8}`), rapid.String(),
		rapid.SampledFrom([]string{"é", "\u2028", "a\"b\\c", "tab\t", "\x00"}))
}

func genCheckpointMetadata(t *rapid.T, genText *rapid.Generator[string]) *CheckpointMetadata {
	m := &CheckpointMetadata{
		Seq:             rapid.Int64Range(1, 1<<62).Draw(t, "seq"),
		Type:            rapid.SampledFrom(checkpointTypes).Draw(t, "type"),
		GraphStep:       rapid.IntRange(0, 1<<40).Draw(t, "graph step"),
		WakeDisposition: rapid.SampledFrom(dispositionKinds).Draw(t, "disposition"),
	}
	if m.WakeDisposition != DispositionContinue {
		m.ParkReason = genText.Draw(t, "reason")
	}
	attempt := rapid.IntRange(1, 1<<30)
	m.NodeAttempts = make([]NodeAttempt, rapid.IntRange(0, 4).Draw(t, "attempts"))
	for i := range m.NodeAttempts {
		m.NodeAttempts[i] = NodeAttempt{TaskID: genText.Draw(t, "task"), NodeID: genText.Draw(t, "node"),
			Attempted: attempt.Draw(t, "attempted"), Outcome: genText.Draw(t, "outcome"),
			NextScheduledAttempt: rapid.OneOf(rapid.Just(0), attempt).Draw(t, "next")}
	}
	if rapid.Bool().Draw(t, "active") {
		a := &ActiveSuperstep{GraphStep: rapid.IntRange(0, 1<<40).Draw(t, "active step")}
		a.Tasks = make([]ScheduledTask, rapid.IntRange(0, 3).Draw(t, "tasks"))
		for i := range a.Tasks {
			a.Tasks[i] = ScheduledTask{TaskID: genText.Draw(t, "task"), NodeID: genText.Draw(t, "node"),
				ScheduledAttempt: attempt.Draw(t, "scheduled"), IdempotencyKey: genText.Draw(t, "key")}
		}
		a.PendingAttempts = make([]PendingAttempt, rapid.IntRange(0, 3).Draw(t, "pending"))
		for i := range a.PendingAttempts {
			a.PendingAttempts[i] = PendingAttempt{TaskID: genText.Draw(t, "task"), NodeID: genText.Draw(t, "node"),
				Attempted: attempt.Draw(t, "attempted"), Kind: genText.Draw(t, "kind"), IdempotencyKey: genText.Draw(t, "key")}
		}
		m.ActiveSuperstep = a
	}
	return m
}

var (
	checkpointTypes = []CheckpointType{CheckpointRunInitialized, CheckpointStepCommitted, CheckpointRetryScheduled,
		CheckpointInterruptRequested, CheckpointInterruptResolved, CheckpointRunCompleted, CheckpointRunFailed, CheckpointRunCancelled}
	dispositionKinds = []DispositionKind{DispositionContinue, DispositionImmediate, DispositionAt, DispositionExternal, DispositionTerminal}
)

// The typed metadata is a faithful stand-in for its wire form: the direct
// encoder writes the canonical bytes of Map, and parsing those bytes back
// gives an equal value, which is what a store relies on when it writes one
// and reads the other.
func TestCheckpointMetadataWireFormRoundTrips(t *testing.T) {
	t.Parallel()
	genText := newTextGenerator()
	rapid.Check(t, func(t *rapid.T) {
		m := genCheckpointMetadata(t, genText)
		wire := m.Map()
		require.NoError(t, value.Check(wire))
		canonical, err := value.Canonical(wire)
		require.NoError(t, err)
		require.Equal(t, string(canonical), string(m.AppendCanonical(nil)))

		decoded, err := value.DecodeJSON(canonical)
		require.NoError(t, err)
		parsed, err := ParseCheckpointMetadata(decoded.(map[string]any))
		require.NoError(t, err)
		require.True(t, m.Equal(parsed), "parsed %+v, want %+v", parsed, m)
		require.Equal(t, m, parsed, "lists parse as non-nil, as the runtime builds them")

		b, err := json.Marshal(struct{ Metadata *CheckpointMetadata }{m})
		require.NoError(t, err)
		outer, err := value.DecodeJSON(b)
		require.NoError(t, err)
		require.True(t, value.Equal(wire, outer.(map[string]any)["Metadata"]), "encoding/json writes the wire form")
		var back struct{ Metadata *CheckpointMetadata }
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, m, back.Metadata)

		c := m.Clone()
		require.True(t, m.Equal(c))
		if len(c.NodeAttempts) > 0 {
			c.NodeAttempts[0].Outcome += "x"
			require.False(t, m.Equal(c), "a clone does not share its attempts")
		}
	})
}

func TestCheckpointMetadataOfANonCheckpointEvent(t *testing.T) {
	t.Parallel()
	var m *CheckpointMetadata
	assert.Equal(t, map[string]any{}, m.Map())
	assert.Equal(t, "{}", string(m.AppendCanonical(nil)))
	assert.Nil(t, m.Clone())
	assert.True(t, m.Equal(nil))
	assert.False(t, m.Equal(&CheckpointMetadata{}))
	parsed, err := ParseCheckpointMetadata(map[string]any{})
	require.NoError(t, err)
	assert.Nil(t, parsed)
	var into CheckpointMetadata
	assert.Error(t, json.Unmarshal([]byte(`{}`), &into), "an empty object is no checkpoint's metadata")
	assert.Error(t, json.Unmarshal([]byte(`[]`), &into))
}

func TestParseCheckpointMetadataRejectsWhatTheRuntimeNeverWrites(t *testing.T) {
	t.Parallel()
	valid := func() map[string]any {
		return (&CheckpointMetadata{Seq: 2, Type: CheckpointRetryScheduled, GraphStep: 1, WakeDisposition: DispositionAt,
			ParkReason: ReasonRetryBackoff,
			ActiveSuperstep: &ActiveSuperstep{GraphStep: 1,
				Tasks:           []ScheduledTask{{TaskID: "r:1:a", NodeID: "a", ScheduledAttempt: 2, IdempotencyKey: "r:1:a:2"}},
				PendingAttempts: []PendingAttempt{{TaskID: "r:1:b", NodeID: "b", Attempted: 1, Kind: WriteUpdate, IdempotencyKey: "r:1:b:1"}}},
			NodeAttempts: []NodeAttempt{{TaskID: "r:1:a", NodeID: "a", Attempted: 1, Outcome: OutcomeFailed, NextScheduledAttempt: 2}},
		}).Map()
	}
	_, err := ParseCheckpointMetadata(valid())
	require.NoError(t, err)

	task := func(w map[string]any) map[string]any {
		return w["active_superstep"].(map[string]any)["tasks"].([]any)[0].(map[string]any)
	}
	attempt := func(w map[string]any) map[string]any { return w["node_attempts"].([]any)[0].(map[string]any) }
	broken := map[string]func(w map[string]any){
		"missing key":                    func(w map[string]any) { delete(w, "graph_step") },
		"unknown key":                    func(w map[string]any) { w["extra"] = true },
		"float sequence":                 func(w map[string]any) { w["checkpoint_seq"] = 2.0 },
		"zero sequence":                  func(w map[string]any) { w["checkpoint_seq"] = int64(0) },
		"negative step":                  func(w map[string]any) { w["graph_step"] = int64(-1) },
		"numeric type":                   func(w map[string]any) { w["checkpoint_type"] = int64(1) },
		"null reason of a park":          func(w map[string]any) { w["park_reason"] = nil },
		"reason of a continue":           func(w map[string]any) { w["wake_disposition"] = "continue" },
		"superstep not an object":        func(w map[string]any) { w["active_superstep"] = "x" },
		"attempts not a list":            func(w map[string]any) { w["node_attempts"] = map[string]any{} },
		"attempt not an object":          func(w map[string]any) { w["node_attempts"] = []any{"x"} },
		"attempt missing its outcome":    func(w map[string]any) { delete(attempt(w), "outcome") },
		"zero next attempt":              func(w map[string]any) { attempt(w)["next_scheduled_attempt"] = int64(0) },
		"task with an extra key":         func(w map[string]any) { task(w)["extra"] = nil },
		"task with a string attempt":     func(w map[string]any) { task(w)["scheduled_attempt"] = "2" },
		"superstep without pending list": func(w map[string]any) { delete(w["active_superstep"].(map[string]any), "pending_attempts") },
	}
	for name, breakIt := range broken {
		w := valid()
		breakIt(w)
		_, err := ParseCheckpointMetadata(w)
		assert.Error(t, err, name)
	}
}
