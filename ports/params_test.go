package ports_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// invalidField returns the Field of err's *InvalidArgumentError, or "".
func invalidField(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	require.ErrorIs(t, err, ports.ErrInvalidArgument)
	var invalid *ports.InvalidArgumentError
	require.True(t, errors.As(err, &invalid))
	return invalid.Field
}

func TestParamsValidationNamesTheOffendingField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		err   error
		field string // "" when the params are valid
	}{
		{"run page at the limit bounds", ports.ListRunsParams{Limit: ports.MaxPageLimit}.Validate(), ""},
		{"run page limit zero", ports.ListRunsParams{}.Validate(), "Limit"},
		{"run page limit above the maximum", ports.ListRunsParams{Limit: ports.MaxPageLimit + 1}.Validate(), "Limit"},
		{"run page with an unknown status", ports.ListRunsParams{Limit: 1, Statuses: []run.Status{"paused"}}.Validate(), "Statuses"},
		{"run cursor without a run id", ports.ListRunsParams{Limit: 1, Before: &ports.RunCursor{StartedAt: t0}}.Validate(), "Before"},
		{"event page from the start", ports.ListEventsParams{Limit: 1}.Validate(), ""},
		{"event page after a negative seq", ports.ListEventsParams{AfterSeq: -1, Limit: 1}.Validate(), "AfterSeq"},
		{"event page limit zero", ports.ListEventsParams{}.Validate(), "Limit"},
		{"prune batch", ports.PruneParams{Before: t0, BatchSize: 1}.Validate(), ""},
		{"prune without a cutoff", ports.PruneParams{BatchSize: 1}.Validate(), "Before"},
		{"prune batch zero", ports.PruneParams{Before: t0}.Validate(), "BatchSize"},
		{"version page", ports.ListGraphVersionsParams{Limit: 1}.Validate(), ""},
		{"version page limit zero", ports.ListGraphVersionsParams{}.Validate(), "Limit"},
		{"version cursor without a hash", ports.ListGraphVersionsParams{Limit: 1, Before: &ports.GraphCursor{PublishedAt: t0}}.Validate(), "Before"},
		{"graph prune", ports.PruneGraphsParams{Keep: 1, BatchSize: 1}.Validate(), ""},
		{"graph prune keeping nothing", ports.PruneGraphsParams{BatchSize: 1}.Validate(), "Keep"},
		{"graph prune batch zero", ports.PruneGraphsParams{Keep: 1}.Validate(), "BatchSize"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.field, invalidField(t, tt.err), tt.name)
	}
}

func TestValidateInsertAcceptsOnlyTheInitializedShape(t *testing.T) {
	t.Parallel()
	initialized := func() ports.InsertRunParams {
		r := &run.Run{ID: "r", GraphID: "g", GraphHash: "h", Status: run.StatusRunning, StartedAt: t0, UpdatedAt: t0}
		m := run.Propose(nil, r, nil, run.CheckpointRunInitialized, run.Disposition{Kind: run.DispositionImmediate}, t0)
		return ports.InsertRunParams{Moment: m, WakeAt: t0}
	}
	events, err := ports.ValidateInsert(initialized())
	require.NoError(t, err)
	assert.Len(t, events, len(initialized().Moment.Events))

	for name, edit := range map[string]func(*ports.InsertRunParams){
		"no first wake":        func(p *ports.InsertRunParams) { p.WakeAt = time.Time{} },
		"a later checkpoint":   func(p *ports.InsertRunParams) { p.Moment.CheckpointType = run.CheckpointStepCommitted },
		"a waiting run":        func(p *ports.InsertRunParams) { p.Moment.Run.Status = run.StatusWaiting },
		"a malformed proposal": func(p *ports.InsertRunParams) { p.Moment.Run.GraphID = "" },
	} {
		p := initialized()
		edit(&p)
		_, err := ports.ValidateInsert(p)
		assert.ErrorIs(t, err, ports.ErrInvalidCommit, name)
	}
}

func TestCheckFenceClassifiesProposals(t *testing.T) {
	t.Parallel()
	stored := &run.Run{ID: "r", GraphID: "g", GraphHash: "h", StartedAt: t0, CheckpointSeq: 3}
	proposal := func(expected int64, edit func(*run.Run)) *run.Moment {
		r := stored.Clone()
		r.CheckpointSeq = expected + 1
		if edit != nil {
			edit(r)
		}
		return &run.Moment{Run: r}
	}
	assert.NoError(t, ports.CheckFence(stored, proposal(3, nil)), "stored+1 under the same binding")
	assert.ErrorIs(t, ports.CheckFence(stored, proposal(2, nil)), ports.ErrStaleFence, "a sequence behind")
	assert.ErrorIs(t, ports.CheckFence(stored, proposal(4, nil)), ports.ErrInvalidCommit, "a sequence ahead")
	assert.ErrorIs(t, ports.CheckFence(stored, proposal(2, func(r *run.Run) { r.GraphHash = "other" })),
		ports.ErrInvalidCommit, "a changed binding is invalid before the sequence is looked at")
	assert.ErrorIs(t, ports.CheckFence(stored, proposal(3, func(r *run.Run) { r.StartedAt = t0.Add(time.Second) })),
		ports.ErrInvalidCommit, "a changed started_at")
}

func TestStoredGraphRoundTripsAndDetectsCorruption(t *testing.T) {
	t.Parallel()
	g := &graph.Graph{SchemaVersion: graph.SchemaVersion, ID: "g", Metadata: map[string]any{"v": "1"}}
	hash, err := graph.Hash(g)
	require.NoError(t, err)
	doc, err := ports.EncodeGraph(ports.SaveGraphParams{Graph: g, Hash: hash})
	require.NoError(t, err)
	back, err := ports.DecodeGraph(ports.GraphRef{GraphID: "g", Hash: hash}, doc)
	require.NoError(t, err)
	backHash, err := graph.Hash(back)
	require.NoError(t, err)
	assert.Equal(t, hash, backHash, "the stored bytes decode to the saved document")

	_, err = ports.EncodeGraph(ports.SaveGraphParams{Graph: g, Hash: "0000"})
	assert.ErrorIs(t, err, ports.ErrInvalidGraphHash)
	_, err = ports.EncodeGraph(ports.SaveGraphParams{Hash: hash})
	assert.ErrorIs(t, err, ports.ErrInvalidGraph)
	_, err = ports.DecodeGraph(ports.GraphRef{GraphID: "g", Hash: "0000"}, doc)
	assert.ErrorIs(t, err, ports.ErrCorruptGraph, "bytes that do not hash to their key")
	_, err = ports.DecodeGraph(ports.GraphRef{GraphID: "other", Hash: hash}, doc)
	assert.ErrorIs(t, err, ports.ErrCorruptGraph, "bytes naming another graph")
	_, err = ports.DecodeGraph(ports.GraphRef{GraphID: "g", Hash: hash}, []byte(`[1]`))
	assert.ErrorIs(t, err, ports.ErrCorruptGraph, "bytes that are not an object")
}

func TestBroadcasterCoalescesAndClosesOnCancel(t *testing.T) {
	t.Parallel()
	var b ports.Broadcaster
	ctx, cancel := context.WithCancel(context.Background())
	other, cancelOther := context.WithCancel(context.Background())
	defer cancelOther()
	wakes, err := b.Listen(ctx)
	require.NoError(t, err)
	others, err := b.Listen(other)
	require.NoError(t, err)

	b.Announce()
	b.Announce() // coalesced: the channel holds one pending Wake
	assert.Len(t, wakes, 1)
	assert.Len(t, others, 1)

	cancel()
	require.Eventually(t, func() bool {
		select {
		case _, ok := <-wakes:
			return !ok
		default:
			return false
		}
	}, time.Second, time.Millisecond, "a cancelled listener's channel closes after its pending Wake")
	_, err = b.Listen(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}
