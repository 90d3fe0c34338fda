package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docketgo/docket/app/graphcache"
	"github.com/docketgo/docket/app/internal/runid"
	"github.com/docketgo/docket/app/vehicle"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/domain/value"
	"github.com/docketgo/docket/ports"
)

// Client is the facade of one owner scope: the tenantless scope
// (Engine's embedded client) or one tenant (Engine.Tenant). Rows of other
// scopes are invisible: reading or signalling them is ErrNotFound.
type Client struct {
	e     *Engine
	scope ports.OwnerScope
	err   error // set when the scope is not allowed in this tenant mode
}

func (c *Client) owner() (ports.OwnerScope, error) {
	if c.err != nil {
		return ports.Scope{}, fmt.Errorf("%w: %v", ErrInvalidTenant, c.err)
	}
	return c.scope, nil
}

// SaveGraph compiles g against the engine's nodes and stores the
// resulting effective document as an immutable version. Saving the same
// content again is idempotent and returns the same reference. A graph
// that does not compile returns a *graph.CompileError (errors.Is
// graph.ErrInvalidGraph) with every diagnostic. Warnings (a cycle
// without a superstep limit, a dead-end node, …) neither stop a save nor
// are returned: see them with graph.Verify (in a test, say) or
// `docket graph validate --any-nodes`. SaveGraphVersion also reports when
// the version was published.
func (c *Client) SaveGraph(ctx context.Context, g *graph.Graph) (GraphRef, error) {
	v, err := c.SaveGraphVersion(ctx, g)
	if err != nil {
		return GraphRef{}, err
	}
	return v.Ref, nil
}

// SaveGraphVersion is SaveGraph returning the stored version: its
// reference and the time it was first published, which a re-save of the
// same content keeps (as ListGraphVersions and LatestGraphRef report it).
func (c *Client) SaveGraphVersion(ctx context.Context, g *graph.Graph) (*ports.GraphVersion, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	compiled, err := graph.Compile(g, c.e.cfg.Nodes, graph.Options{Profile: graph.ProfilePublish})
	if err != nil {
		return nil, err
	}
	sctx, cancel := c.e.storeCall(ctx)
	defer cancel()
	return c.e.backend.SaveGraph(sctx, owner, ports.SaveGraphParams{Graph: compiled.Effective, Hash: compiled.Hash})
}

// FetchGraph returns a stored effective document.
func (c *Client) FetchGraph(ctx context.Context, ref GraphRef) (*graph.Graph, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	if err := checkRef(ref); err != nil {
		return nil, err
	}
	ctx, cancel := c.e.storeCall(ctx)
	defer cancel()
	return c.e.backend.FetchGraph(ctx, owner, ref)
}

// LatestGraphRef returns the newest version of graphID.
func (c *Client) LatestGraphRef(ctx context.Context, graphID string) (*ports.GraphVersion, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	if graphID == "" {
		return nil, fmt.Errorf("%w: graph id is empty", ErrInvalidOptions)
	}
	ctx, cancel := c.e.storeCall(ctx)
	defer cancel()
	return c.e.backend.FetchLatestGraphRef(ctx, owner, graphID)
}

// ListGraphVersions pages graphID's versions newest first. A zero Limit
// means 100.
func (c *Client) ListGraphVersions(ctx context.Context, graphID string, p ports.ListGraphVersionsParams) (*ports.GraphVersionPage, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	if graphID == "" {
		return nil, fmt.Errorf("%w: graph id is empty", ErrInvalidOptions)
	}
	if p.Limit == 0 {
		p.Limit = ports.DefaultRunPageLimit
	}
	ctx, cancel := c.e.storeCall(ctx)
	defer cancel()
	return c.e.backend.ListGraphVersions(ctx, owner, graphID, p)
}

// StartOption configures StartRun.
type StartOption func(*startOptions)

type startOptions struct {
	runID          string
	idempotencyKey string
	keyed          bool // WithIdempotencyKey was given, even with an empty key
	metadata       map[string]any
}

// WithRunID fixes the new run's id (default: generated). A run id that
// already exists anywhere is ErrConflict; one that is not UTF-8 text
// without NUL of at most ports.MaxIDBytes bytes is ErrInvalidOptions. Ids of the form
// WithIdempotencyKey derives ("run_" and 32 lowercase hex digits) are
// reserved for keyed starts and are ErrInvalidOptions here, so no caller
// can take the id of a key, in its scope or another, before the key is
// used.
func WithRunID(id string) StartOption { return func(o *startOptions) { o.runID = id } }

// WithIdempotencyKey makes StartRun idempotent per key within the
// client's scope: the run id is derived from (scope, key), so a repeated
// start with the same key, graph version, input and metadata returns the
// run the first call started (in whatever state it is now) instead of
// starting another. Reusing a key with different parameters is
// ErrIdempotencyKeyReused. The key lives as long as its run: once the
// pruner deletes the run, the key is free again. It cannot be combined
// with WithRunID, which cannot choose a derived id either. An empty key is
// ErrInvalidOptions, not "no key": a key taken from a missing request
// header must not start a run without deduplication; leave the option out
// for a start without a key.
func WithIdempotencyKey(key string) StartOption {
	return func(o *startOptions) { o.idempotencyKey, o.keyed = key, true }
}

// WithMetadata sets the run's application metadata (portable values).
func WithMetadata(m map[string]any) StartOption { return func(o *startOptions) { o.metadata = m } }

// StartRun initializes a run of the stored version ref with input and
// returns it once the initialized run is durably committed (status
// running, checkpoint 1). Driving it is the dispatchers' job.
//
// Errors: ErrInvalidOptions; ErrNotFound (no such version in scope);
// graph.ErrInvalidGraph or ErrGraphMismatch (the stored version does not
// compile on this host); a *RuleError for invalid input or a failing start
// guard; ErrConflict (explicit run id taken); ErrIdempotencyKeyReused.
func (c *Client) StartRun(ctx context.Context, ref GraphRef, input map[string]any, opts ...StartOption) (*run.Run, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	if err := checkRef(ref); err != nil {
		return nil, err
	}
	var o startOptions
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: start option %d is nil", ErrInvalidOptions, i+1)
		}
		opt(&o)
	}
	switch {
	case o.keyed && o.idempotencyKey == "":
		return nil, fmt.Errorf("%w: WithIdempotencyKey: the key is empty (leave the option out to start without one)", ErrInvalidOptions)
	case o.runID != "" && o.keyed:
		return nil, fmt.Errorf("%w: WithRunID and WithIdempotencyKey are exclusive", ErrInvalidOptions)
	}
	if err := runid.Check(o.runID); err != nil {
		return nil, fmt.Errorf("%w: WithRunID: %v", ErrInvalidOptions, err)
	}
	runID := o.runID
	switch {
	case o.keyed:
		runID = runid.FromKey(owner, o.idempotencyKey)
	case runID == "":
		runID = c.e.newID("run_")
	}
	compiled, err := c.e.compiled(ctx, owner, ref)
	if err != nil {
		return nil, err
	}
	now := c.e.now()
	m, err := superstep.Start(compiled, superstep.StartParams{RunID: runID, Input: input, Metadata: o.metadata},
		superstep.Env{Now: now, NewInterruptID: func() string { return c.e.newID("interrupt_") }})
	if err != nil {
		return nil, ruleError("start run", err)
	}
	tctx, span := c.e.cfg.Telemetry.StartSpan(ctx, ports.FactLifecycleTransition,
		ports.Label{Key: ports.LabelOperation, Value: operationStart})
	// Recorded before the insertion, so a commit of the run that lands
	// before StartRun returns is never followed by a stale record; a
	// rested entry can only be an earlier run under the same id.
	var stored *run.Run
	for attempt := 0; ; attempt++ {
		c.e.rested.forget(owner, runID)
		c.e.started.put(owner, runID, startedRun{seq: m.Run.CheckpointSeq, startedAt: m.Run.StartedAt, at: time.Now()})
		ictx, cancel := c.e.storeCall(tctx)
		stored, err = c.e.backend.InsertRun(ictx, owner, ports.InsertRunParams{Moment: m, WakeAt: firstWake(m)})
		cancel()
		if err == nil {
			break
		}
		c.e.started.forget(owner, runID)
		if errors.Is(err, ports.ErrConflict) && o.keyed {
			// A repeat: no transition, and no error when it matches.
			existing, absent, err := c.sameStart(ctx, owner, runID, m, err)
			if absent && attempt == 0 {
				// The run that held the key was pruned since the insert
				// conflicted: the key is free again. (A second absence
				// is an id taken in another scope.)
				continue
			}
			if err == nil {
				span.End(ports.ResultSkipped, nil)
			} else {
				span.End(resultOf(err), nil)
			}
			return existing, err
		}
		span.End(resultOf(err), nil)
		return nil, err
	}
	c.e.afterCommit(tctx, owner, m)
	span.End(ports.ResultOK, nil)
	if dueAt(m, now) {
		// Due at once: a dispatcher without a live subscription polls now
		// rather than at its next poll.
		c.e.nudge()
	}
	return stored, nil
}

// sameStart answers a repeated idempotent start with the existing run,
// provided it was started with the same parameters. absent reports that
// no run of runID is visible in scope (the conflict error is returned
// then): a run id collision outside this scope, or a run pruned since the
// insert conflicted.
func (c *Client) sameStart(ctx context.Context, owner ports.OwnerScope, runID string, m *run.Moment, conflict error) (existing *run.Run, absent bool, err error) {
	fctx, cancel := c.e.storeCall(ctx)
	defer cancel()
	existing, err = c.e.backend.FetchRun(fctx, owner, runID)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, true, conflict
	}
	if err != nil {
		return nil, false, err
	}
	want := m.Run
	if existing.GraphID != want.GraphID || existing.GraphHash != want.GraphHash ||
		!value.Equal(existing.Input, want.Input) || !value.Equal(existing.Metadata, want.Metadata) {
		return nil, false, fmt.Errorf("%w: run %q was started with other parameters", ErrIdempotencyKeyReused, runID)
	}
	return existing, false, nil
}

// firstWake is the wake of an initialized run: now for continue and
// immediate, the park time for at.
func firstWake(m *run.Moment) time.Time {
	if m.Disposition.Kind == run.DispositionAt {
		return m.Disposition.At
	}
	return m.ProposedAt
}

// dueAt reports whether a committed moment leaves its run due by now.
func dueAt(m *run.Moment, now time.Time) bool {
	switch m.Disposition.Kind {
	case run.DispositionContinue, run.DispositionImmediate, run.DispositionAt:
		return !firstWake(m).After(now)
	}
	return false
}

// FetchRun returns the last committed run.
func (c *Client) FetchRun(ctx context.Context, runID string) (*run.Run, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.e.storeCall(ctx)
	defer cancel()
	return c.e.backend.FetchRun(ctx, owner, runID)
}

// InspectRun returns the committed run with its operational state (wake,
// claim time, counters, poison), never the claim token.
func (c *Client) InspectRun(ctx context.Context, runID string) (*ports.RunInfo, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.e.storeCall(ctx)
	defer cancel()
	return c.e.backend.InspectRun(ctx, owner, runID)
}

// ListRuns pages run summaries newest first. A zero Limit means 100.
func (c *Client) ListRuns(ctx context.Context, p ports.ListRunsParams) (*ports.RunPage, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	if p.Limit == 0 {
		p.Limit = ports.DefaultRunPageLimit
	}
	ctx, cancel := c.e.storeCall(ctx)
	defer cancel()
	return c.e.backend.ListRuns(ctx, owner, p)
}

// RunFilters narrows FetchLatestRun; an empty field matches any run.
type RunFilters struct {
	GraphID   string
	GraphHash string
	// Statuses, when non-empty, must hold known durable statuses.
	Statuses []run.Status
}

// FetchLatestRun returns the summary of the newest run (by start time,
// then run id) matching f: the first row ListRuns would return. It is
// ErrNotFound when no run matches.
func (c *Client) FetchLatestRun(ctx context.Context, f RunFilters) (*ports.RunSummary, error) {
	page, err := c.ListRuns(ctx, ports.ListRunsParams{
		Limit:     1,
		GraphID:   f.GraphID,
		GraphHash: f.GraphHash,
		Statuses:  f.Statuses,
	})
	if err != nil {
		return nil, err
	}
	if len(page.Runs) == 0 {
		return nil, fmt.Errorf("%w: no run matches the filters", ErrNotFound)
	}
	latest := page.Runs[0]
	return &latest, nil
}

// ListEvents pages a run's retained events in seq order. A zero Limit
// means 250.
func (c *Client) ListEvents(ctx context.Context, runID string, p ports.ListEventsParams) (*ports.EventPage, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	if p.Limit == 0 {
		p.Limit = ports.DefaultEventPageLimit
	}
	ctx, cancel := c.e.storeCall(ctx)
	defer cancel()
	return c.e.backend.ListEvents(ctx, owner, runID, p)
}

// FetchEvent returns the retained event at seq (> 0).
func (c *Client) FetchEvent(ctx context.Context, runID string, seq int64) (*run.Event, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	if seq < 1 {
		return nil, fmt.Errorf("%w: event seq must be positive", ErrInvalidOptions)
	}
	ctx, cancel := c.e.storeCall(ctx)
	defer cancel()
	return c.e.backend.FetchEvent(ctx, owner, runID, seq)
}

// LatestEvent returns the newest retained event, or nil when the run's
// history is fully pruned.
func (c *Client) LatestEvent(ctx context.Context, runID string) (*run.Event, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.e.storeCall(ctx)
	defer cancel()
	return c.e.backend.FetchLatestEvent(ctx, owner, runID)
}

func checkRef(ref GraphRef) error {
	if ref.GraphID == "" || ref.Hash == "" {
		return fmt.Errorf("%w: the graph reference needs an id and a hash", ErrInvalidOptions)
	}
	return nil
}

// compiled returns the compiled version ref of owner, through the graph
// cache when enabled.
func (e *Engine) compiled(ctx context.Context, owner ports.OwnerScope, ref GraphRef) (*graph.Compiled, error) {
	key := graphcache.Key{Owner: owner, GraphID: ref.GraphID, Hash: ref.Hash}
	var generation string
	if e.cache != nil {
		// Reported like a vehicle's lookup: a start's miss is the cache's
		// miss, which the vehicles' hits that follow would otherwise hide.
		entry, result := e.cache.Lookup(ctx, e.cfg.Telemetry, key)
		if result == graphcache.Hit {
			return entry.Compiled, nil
		}
		generation = e.cache.Generation()
	}
	fctx, span := e.cfg.Telemetry.StartSpan(ctx, ports.FactGraphFetch, ports.Label{Key: ports.LabelGraphID, Value: ref.GraphID})
	sctx, cancel := e.storeCall(fctx)
	doc, err := e.backend.FetchGraph(sctx, owner, ref)
	cancel()
	span.End(resultOf(err), nil)
	if err != nil {
		return nil, err
	}
	compiled, err := vehicle.CompileTraced(ctx, e.cfg.Telemetry, doc, e.cfg.Nodes, e.cfg.MaxSupersteps)
	if err != nil {
		return nil, err
	}
	if compiled.GraphID != ref.GraphID || compiled.Hash != ref.Hash {
		return nil, fmt.Errorf("%w: version %s@%s compiles to %s@%s", ErrGraphMismatch,
			ref.GraphID, ref.Hash, compiled.GraphID, compiled.Hash)
	}
	if e.cache != nil {
		e.cache.PutCompiled(key, generation, compiled)
	}
	return compiled, nil
}

func resultOf(err error) string {
	switch {
	case err == nil:
		return ports.ResultOK
	case errors.Is(err, ports.ErrStaleFence):
		return ports.ResultStaleFence
	}
	return ports.ResultError
}
