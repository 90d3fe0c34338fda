package ports_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func moment(status run.Status, d run.Disposition) *run.Moment {
	return &run.Moment{Run: &run.Run{ID: "r", Status: status}, Disposition: d}
}

func TestScheduleOfPairsDispositionsWithStatuses(t *testing.T) {
	t.Parallel()
	at := t0.Add(time.Minute)
	tests := []struct {
		name    string
		status  run.Status
		d       run.Disposition
		claimed bool
		want    ports.Schedule
		invalid bool
	}{
		{"continue keeps a claimed run's claim", run.StatusRunning, run.Disposition{Kind: run.DispositionContinue}, true, ports.Schedule{Kind: ports.ScheduleRetainClaim}, false},
		{"continue without a claim wakes immediately", run.StatusRunning, run.Disposition{Kind: run.DispositionContinue}, false, ports.Schedule{Kind: ports.ScheduleImmediate}, false},
		{"immediate releases with a wake", run.StatusRunning, run.Disposition{Kind: run.DispositionImmediate}, true, ports.Schedule{Kind: ports.ScheduleImmediate}, false},
		{"at wakes at its time", run.StatusRunning, run.Disposition{Kind: run.DispositionAt, At: at}, true, ports.Schedule{Kind: ports.ScheduleAt, At: at}, false},
		{"external parks a waiting run", run.StatusWaiting, run.Disposition{Kind: run.DispositionExternal}, true, ports.Schedule{Kind: ports.ScheduleExternal}, false},
		{"terminal ends a done run", run.StatusDone, run.Disposition{Kind: run.DispositionTerminal}, false, ports.Schedule{Kind: ports.ScheduleTerminal}, false},
		{"external with status running is invalid", run.StatusRunning, run.Disposition{Kind: run.DispositionExternal}, true, ports.Schedule{}, true},
		{"terminal with status running is invalid", run.StatusRunning, run.Disposition{Kind: run.DispositionTerminal}, true, ports.Schedule{}, true},
		{"continue with status waiting is invalid", run.StatusWaiting, run.Disposition{Kind: run.DispositionContinue}, true, ports.Schedule{}, true},
		{"at without a time is invalid", run.StatusRunning, run.Disposition{Kind: run.DispositionAt}, true, ports.Schedule{}, true},
		{"an unknown disposition is invalid", run.StatusRunning, run.Disposition{Kind: "later"}, true, ports.Schedule{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ports.ScheduleOf(moment(tt.status, tt.d), tt.claimed)
			if tt.invalid {
				assert.ErrorIs(t, err, ports.ErrInvalidCommit)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestScheduleWakeAndAnnouncement(t *testing.T) {
	t.Parallel()
	imm := ports.Schedule{Kind: ports.ScheduleImmediate}
	assert.Equal(t, t0, imm.WakeAt(t0))
	assert.True(t, imm.Announces(t0))

	due := ports.Schedule{Kind: ports.ScheduleAt, At: t0}
	assert.True(t, due.Announces(t0), "an at-wake exactly at the store clock is due")
	assert.False(t, due.Announces(t0.Add(-time.Microsecond)), "a future at-wake is not announced")
	assert.Equal(t, t0, due.WakeAt(t0.Add(time.Hour)))

	for _, k := range []ports.ScheduleKind{ports.ScheduleRetainClaim, ports.ScheduleExternal, ports.ScheduleTerminal} {
		s := ports.Schedule{Kind: k}
		assert.False(t, s.Announces(t0), k)
		assert.True(t, s.WakeAt(t0).IsZero(), k)
	}
}

func event(seq int64, payload map[string]any) run.Event {
	return run.Event{RunID: "r", Seq: seq, Type: run.EventNodeCompleted, Timestamp: t0, Payload: payload}
}

func TestNormalizeEvents(t *testing.T) {
	t.Parallel()
	got, err := ports.NormalizeEvents("r", []run.Event{event(2, nil), event(1, map[string]any{"a": int64(1)}), event(2, map[string]any{})})
	require.NoError(t, err)
	require.Len(t, got, 2, "identical duplicates collapse")
	assert.Equal(t, []int64{1, 2}, []int64{got[0].Seq, got[1].Seq})

	_, err = ports.NormalizeEvents("r", []run.Event{event(1, map[string]any{"a": int64(1)}), event(1, map[string]any{"a": 1.0})})
	var conflict *ports.EventConflictError
	require.True(t, errors.As(err, &conflict), "different content at one seq conflicts")
	assert.Equal(t, int64(1), conflict.Seq)

	nano := event(1, nil)
	nano.Timestamp = t0.Add(999 * time.Nanosecond)
	got, err = ports.NormalizeEvents("r", []run.Event{nano})
	require.NoError(t, err)
	assert.Equal(t, t0, got[0].Timestamp, "timestamps are cut to microseconds")

	inOrder := []run.Event{event(1, nil), event(2, nil), event(3, nil)}
	got, err = ports.NormalizeEvents("r", inOrder)
	require.NoError(t, err)
	assert.Equal(t, inOrder, got, "events already in order and in microseconds come back as they are")
	late := slices.Clone(inOrder)
	late[2].Timestamp = t0.Add(time.Nanosecond)
	got, err = ports.NormalizeEvents("r", late)
	require.NoError(t, err)
	assert.Equal(t, t0, got[2].Timestamp, "an in-order event is still cut to microseconds")
	assert.Equal(t, t0.Add(time.Nanosecond), late[2].Timestamp, "the input is not modified")
	local := slices.Clone(inOrder)
	local[0].Timestamp = t0.In(time.FixedZone("x", 3600))
	got, err = ports.NormalizeEvents("r", local)
	require.NoError(t, err)
	assert.Equal(t, time.UTC, got[0].Timestamp.Location(), "timestamps are made UTC")

	bad := []struct {
		name string
		edit func(*run.Event)
	}{
		{"foreign run", func(e *run.Event) { e.RunID = "other" }},
		{"zero seq", func(e *run.Event) { e.Seq = 0 }},
		{"no timestamp", func(e *run.Event) { e.Timestamp = time.Time{} }},
		{"unknown type", func(e *run.Event) { e.Type = "node_exploded" }},
		{"negative step", func(e *run.Event) { e.Step = -1 }},
	}
	for _, b := range bad {
		e := event(1, nil)
		b.edit(&e)
		_, err := ports.NormalizeEvents("r", []run.Event{e})
		assert.ErrorIs(t, err, ports.ErrInvalidCommit, b.name)
		// The same event behind a valid one, in order and out of it.
		if e.Seq > 0 {
			e.Seq = 6
		}
		for _, events := range [][]run.Event{{event(1, nil), e}, {event(9, nil), e}} {
			_, err := ports.NormalizeEvents("r", events)
			assert.ErrorIs(t, err, ports.ErrInvalidCommit, b.name)
		}
	}
}

func TestValidateMomentRejectsMalformedProposals(t *testing.T) {
	t.Parallel()
	valid := func() *run.Moment {
		r := &run.Run{ID: "r", GraphID: "g", GraphHash: "h", Status: run.StatusRunning, StartedAt: t0, UpdatedAt: t0}
		return run.Propose(nil, r, nil, run.CheckpointRunInitialized, run.Disposition{Kind: run.DispositionImmediate}, t0)
	}
	require.NoError(t, ports.ValidateMoment(valid()))
	tests := []struct {
		name string
		edit func(*run.Moment)
	}{
		{"nil run", func(m *run.Moment) { m.Run = nil }},
		{"empty id", func(m *run.Moment) { m.Run.ID = "" }},
		{"empty graph hash", func(m *run.Moment) { m.Run.GraphHash = "" }},
		{"created status", func(m *run.Moment) { m.Run.Status = run.StatusCreated }},
		{"checkpoint seq zero", func(m *run.Moment) { m.Run.CheckpointSeq = 0 }},
		{"unknown checkpoint type", func(m *run.Moment) { m.CheckpointType = "step_skipped" }},
		{"invalid durable shape", func(m *run.Moment) { m.Run.UpdatedAt = time.Time{} }},
		{"event of another run", func(m *run.Moment) { m.Events[0].RunID = "x" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := valid()
			tt.edit(m)
			assert.ErrorIs(t, ports.ValidateMoment(m), ports.ErrInvalidCommit)
		})
	}
	assert.ErrorIs(t, ports.ValidateMoment(nil), ports.ErrInvalidCommit)
}
