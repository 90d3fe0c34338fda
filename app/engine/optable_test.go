package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

// TestFacadeOperationTable walks the rows of the facade's operation table
// (spec §10) and the documented differences: each call with the problem
// it is given, and the error it must report. Where several problems
// apply at once, the first in the documented order wins.
func TestFacadeOperationTable(t *testing.T) {
	t.Parallel()
	onBackends(t, facadeOperationTable)
}

func facadeOperationTable(t *testing.T, h *harness) {
	ctx := context.Background()
	e := manual(t, h, newKit())
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	irRef, err := e.SaveGraph(ctx, build(t, interruptReview()))
	require.NoError(t, err)
	running, err := e.StartRun(ctx, ref, map[string]any{"value": "a"}, engine.WithRunID("run_taken"))
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, running.Status, "a start returns the initialized run")
	require.Equal(t, int64(1), running.CheckpointSeq)
	cancelled, err := e.StartRun(ctx, irRef, nil)
	require.NoError(t, err)
	cancelled, err = e.CancelRun(ctx, cancelled.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusCancelled, cancelled.Status)

	noTenant := e.Tenant("acme") // tenants are not enabled: every call is ErrInvalidTenant
	missing := engine.GraphRef{GraphID: ref.GraphID, Hash: "0000"}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"SaveGraph nil", func() error { _, err := e.SaveGraph(ctx, nil); return err }, graph.ErrInvalidGraph},
		{"SaveGraph tenant before graph", func() error { _, err := noTenant.SaveGraph(ctx, nil); return err }, engine.ErrInvalidTenant},
		{"FetchGraph empty hash", func() error { _, err := e.FetchGraph(ctx, engine.GraphRef{GraphID: "g"}); return err }, engine.ErrInvalidOptions},
		{"FetchGraph unknown", func() error { _, err := e.FetchGraph(ctx, missing); return err }, engine.ErrNotFound},
		{"FetchGraph tenant before reference", func() error { _, err := noTenant.FetchGraph(ctx, engine.GraphRef{}); return err }, engine.ErrInvalidTenant},
		{"LatestGraphRef empty id", func() error { _, err := e.LatestGraphRef(ctx, ""); return err }, engine.ErrInvalidOptions},
		{"LatestGraphRef unknown", func() error { _, err := e.LatestGraphRef(ctx, "nope"); return err }, engine.ErrNotFound},
		{"ListGraphVersions empty id", func() error { _, err := e.ListGraphVersions(ctx, "", ports.ListGraphVersionsParams{}); return err }, engine.ErrInvalidOptions},
		{"ListGraphVersions limit above 1000", func() error {
			_, err := e.ListGraphVersions(ctx, ref.GraphID, ports.ListGraphVersionsParams{Limit: 1001})
			return err
		}, engine.ErrInvalidArgument},
		{"StartRun empty reference", func() error { _, err := e.StartRun(ctx, engine.GraphRef{GraphID: "g"}, nil); return err }, engine.ErrInvalidOptions},
		{"StartRun unknown version before invalid input", func() error { _, err := e.StartRun(ctx, missing, nil); return err }, engine.ErrNotFound},
		{"StartRun invalid input before a taken run id", func() error {
			_, err := e.StartRun(ctx, ref, map[string]any{}, engine.WithRunID("run_taken"))
			return err
		}, superstep.ErrInvalidInput},
		{"StartRun taken run id", func() error {
			_, err := e.StartRun(ctx, ref, map[string]any{"value": "b"}, engine.WithRunID("run_taken"))
			return err
		}, engine.ErrConflict},
		{"StartRun id and key", func() error {
			_, err := e.StartRun(ctx, ref, nil, engine.WithRunID("x"), engine.WithIdempotencyKey("k"))
			return err
		}, engine.ErrInvalidOptions},
		{"StartRun empty idempotency key", func() error {
			_, err := e.StartRun(ctx, ref, map[string]any{"value": "b"}, engine.WithIdempotencyKey(""))
			return err
		}, engine.ErrInvalidOptions},
		{"AwaitRun negative timeout", func() error { _, err := e.AwaitRun(ctx, running.ID, -time.Millisecond); return err }, engine.ErrInvalidOptions},
		{"AwaitRun nil option", func() error { _, err := e.AwaitRun(ctx, running.ID, 0, nil); return err }, engine.ErrInvalidOptions},
		{"AwaitRun unknown", func() error { _, err := e.AwaitRun(ctx, "run_missing", 0); return err }, engine.ErrNotFound},
		{"AwaitRun running", func() error { _, err := e.AwaitRun(ctx, running.ID, 0); return err }, engine.ErrAwaitTimeout},
		{"FetchRun unknown", func() error { _, err := e.FetchRun(ctx, "run_missing"); return err }, engine.ErrNotFound},
		{"InspectRun unknown", func() error { _, err := e.InspectRun(ctx, "run_missing"); return err }, engine.ErrNotFound},
		{"ListRuns limit above 1000", func() error { _, err := e.ListRuns(ctx, ports.ListRunsParams{Limit: 1001}); return err }, engine.ErrInvalidArgument},
		{"ListRuns status created", func() error {
			_, err := e.ListRuns(ctx, ports.ListRunsParams{Statuses: []run.Status{run.StatusCreated}})
			return err
		}, engine.ErrInvalidArgument},
		{"FetchLatestRun no match", func() error {
			_, err := e.FetchLatestRun(ctx, engine.RunFilters{Statuses: []run.Status{run.StatusFailed}})
			return err
		}, engine.ErrNotFound},
		{"ListEvents unknown", func() error { _, err := e.ListEvents(ctx, "run_missing", ports.ListEventsParams{}); return err }, engine.ErrNotFound},
		{"ListEvents negative after", func() error {
			_, err := e.ListEvents(ctx, running.ID, ports.ListEventsParams{AfterSeq: -1})
			return err
		}, engine.ErrInvalidArgument},
		{"ListEvents limit above 1000", func() error {
			_, err := e.ListEvents(ctx, running.ID, ports.ListEventsParams{Limit: 1001})
			return err
		}, engine.ErrInvalidArgument},
		{"FetchEvent seq 0", func() error { _, err := e.FetchEvent(ctx, running.ID, 0); return err }, engine.ErrInvalidOptions},
		{"FetchEvent unknown run", func() error { _, err := e.FetchEvent(ctx, "run_missing", 1); return err }, engine.ErrNotFound},
		{"FetchEvent unknown seq", func() error { _, err := e.FetchEvent(ctx, running.ID, 99); return err }, engine.ErrNotFound},
		{"LatestEvent unknown", func() error { _, err := e.LatestEvent(ctx, "run_missing"); return err }, engine.ErrNotFound},
		{"ResolveInterrupt unknown run", func() error { _, err := e.ResolveInterrupt(ctx, "run_missing", "i", "x"); return err }, engine.ErrNotFound},
		{"ResolveInterrupt terminal before unknown interrupt", func() error {
			_, err := e.ResolveInterrupt(ctx, cancelled.ID, "interrupt_missing", "x")
			return err
		}, engine.ErrInactiveRun},
		{"ResolveInterrupt unknown interrupt", func() error { _, err := e.ResolveInterrupt(ctx, running.ID, "i", "x"); return err }, engine.ErrNotFound},
		{"CancelRun unknown", func() error { _, err := e.CancelRun(ctx, "run_missing"); return err }, engine.ErrNotFound},
		{"RetryPoisonedRun unknown", func() error { _, err := e.RetryPoisonedRun(ctx, "run_missing"); return err }, engine.ErrNotFound},
		{"RetryPoisonedRun terminal", func() error { _, err := e.RetryPoisonedRun(ctx, cancelled.ID); return err }, engine.ErrInactiveRun},
		{"DrainRuns negative", func() error { _, err := e.DrainRuns(ctx, -1); return err }, engine.ErrInvalidOptions},
		{"FetchRun tenant", func() error { _, err := noTenant.FetchRun(ctx, running.ID); return err }, engine.ErrInvalidTenant},
	}
	for _, tt := range tests {
		assert.ErrorIs(t, tt.call(), tt.want, tt.name)
	}

	// The rows that succeed.
	again, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	assert.Equal(t, ref, again, "re-saving is idempotent")
	versions, err := e.ListGraphVersions(ctx, "nope", ports.ListGraphVersionsParams{})
	require.NoError(t, err)
	assert.Empty(t, versions.Versions, "an unknown graph id is an empty page")
	assert.False(t, versions.HasMore)
	same, err := e.CancelRun(ctx, cancelled.ID)
	require.NoError(t, err)
	assert.Equal(t, cancelled.CheckpointSeq, same.CheckpointSeq, "cancelling a cancelled run is idempotent")
	healthy, err := e.RetryPoisonedRun(ctx, running.ID)
	require.NoError(t, err)
	assert.Equal(t, running.CheckpointSeq, healthy.CheckpointSeq, "retrying a healthy run consumes no seq")
	done, err := e.AwaitRun(ctx, cancelled.ID, 0)
	require.NoError(t, err)
	assert.Equal(t, run.StatusCancelled, done.Status, "a terminal run satisfies a zero-timeout await")
	info, err := e.InspectRun(ctx, running.ID)
	require.NoError(t, err)
	assert.False(t, info.Claimed())
	assert.False(t, info.Poisoned())

	production, err := engine.New(h.config(newKit()))
	require.NoError(t, err)
	_, err = production.DrainRuns(ctx, -1)
	assert.ErrorIs(t, err, engine.ErrTestingModeRequired, "the mode is checked before the limit")
}
