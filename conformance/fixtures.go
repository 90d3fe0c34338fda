package conformance

import (
	"time"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

// The fixture graph: one input, one state field, one node between $start
// and $finish. The node's implementation never runs: checks settle its
// activation with the results they need.
const (
	fixtureGraphID = "conformance-graph"
	fixtureNode    = "ask"
	fixtureField   = "answer"
)

type fixtureGraphs struct {
	main *graph.Compiled // the graph every fixture run uses
	alt  *graph.Compiled // a second version of the same graph id
	err  error
}

// anyImplementation accepts every node implementation with any config.
type anyImplementation struct{}

func (anyImplementation) ConfigSchema(string) (*schema.Schema, bool) { return nil, true }

func compileFixture(description string) (*graph.Compiled, error) {
	return compileFixtureAs(fixtureGraphID, description)
}

// compileFixtureAs compiles the fixture graph under another graph id.
func compileFixtureAs(graphID, description string) (*graph.Compiled, error) {
	g, err := graph.New(graphID).
		Description(description).
		Input("topic", schema.String()).
		State(fixtureField, schema.String()).
		Node(fixtureNode, "conformance.ask").
		Edge("start_to_ask", graph.Start, fixtureNode).
		Edge("ask_to_finish", fixtureNode, graph.Finish).
		Output(fixtureField, fixtureField).
		Build()
	if err != nil {
		return nil, err
	}
	return graph.Compile(g, anyImplementation{}, graph.Options{Profile: graph.ProfilePublish})
}

func (h *harness) graphs() *fixtureGraphs {
	h.fixturesOnce.Do(func() {
		f := &fixtureGraphs{}
		f.main, f.err = compileFixture("conformance fixture")
		if f.err == nil {
			f.alt, f.err = compileFixture("conformance fixture, second version")
		}
		h.fixtures = f
	})
	if h.fixtures.err != nil {
		h.Fatalf("compiling the fixture graph: %v", h.fixtures.err)
	}
	return h.fixtures
}

// publish saves the fixture graph under owner (idempotent) and returns it.
func (h *harness) publish(owner ports.OwnerScope) *graph.Compiled {
	h.Helper()
	c := h.graphs().main
	_, err := h.b.SaveGraph(h.ctx, owner, ports.SaveGraphParams{Graph: c.Effective, Hash: c.Hash})
	h.must(err, "SaveGraph(%s)", owner)
	return c
}

// initMoment is the real run_initialized moment of a fresh run.
func (h *harness) initMoment(runID string, startedAt time.Time) *run.Moment {
	h.Helper()
	m, err := superstep.Start(h.graphs().main, superstep.StartParams{
		RunID: runID,
		Input: map[string]any{"topic": runID},
	}, superstep.Env{Now: startedAt})
	h.must(err, "superstep.Start(%s)", runID)
	return m
}

// runOpts shape a fixture run.
type runOpts struct {
	id        string
	startedAt time.Time // default t0
	wakeAt    time.Time // default t0
}

// insert publishes the graph in owner and inserts a fresh run due at t0
// (or as opts say). It returns the stored run.
func (h *harness) insert(owner ports.OwnerScope, opts ...runOpts) *run.Run {
	h.Helper()
	var o runOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.id == "" {
		o.id = h.id("run")
	}
	if o.startedAt.IsZero() {
		o.startedAt = t0
	}
	if o.wakeAt.IsZero() {
		o.wakeAt = t0
	}
	h.publish(owner)
	m := h.initMoment(o.id, o.startedAt)
	r, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: o.wakeAt})
	h.must(err, "InsertRun(%s, %s)", owner, o.id)
	h.sameRun(r, m.Run, "InsertRun(%s) result", o.id)
	return r
}

// insertClaimed inserts a tenantless run due at t0 and claims it at t0.
func (h *harness) insertClaimed() (*run.Run, ports.Lease) {
	h.Helper()
	r := h.insert(ports.Tenantless())
	return r, h.claimOne(t0, r.ID)
}

// moment proposes the next transition of r by hand (run.Propose): status
// unchanged, run metadata and one channel_updated event carrying variant.
// Each moment is stamped a distinct microsecond after the store clock, so
// two proposals never share an event (the checkpoint fact included) and a
// stored event always identifies the proposal that wrote it.
func (h *harness) moment(r *run.Run, variant string, d run.Disposition) *run.Moment {
	next := r.Clone()
	now := h.clock.Now().Add(time.Duration(h.counter.Add(1)) * time.Microsecond)
	next.UpdatedAt = now
	next.Metadata = map[string]any{"conformance_variant": variant}
	ctype := run.CheckpointStepCommitted
	if d.Kind == run.DispositionAt {
		ctype = run.CheckpointRetryScheduled
	}
	events := []run.Event{{
		Type:      run.EventChannelUpdated,
		Step:      r.Step,
		ChannelID: graph.StatePrefix + fixtureField,
		Payload:   map[string]any{"variant": variant},
	}}
	return run.Propose(r, next, events, ctype, d, now)
}

func continueMoment(h *harness, r *run.Run, variant string) *run.Moment {
	return h.moment(r, variant, run.Disposition{Kind: run.DispositionContinue})
}

func immediateMoment(h *harness, r *run.Run, variant string) *run.Moment {
	return h.moment(r, variant, run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonDrainBudget})
}

func atMoment(h *harness, r *run.Run, variant string, wake time.Time) *run.Moment {
	return h.moment(r, variant, run.Disposition{Kind: run.DispositionAt, At: wake, Reason: run.ReasonRetryBackoff})
}

// executeStep plans r's next superstep, which must execute the fixture node.
func (h *harness) executeStep(r *run.Run) superstep.Step {
	h.Helper()
	step, err := superstep.Advance(h.graphs().main, r, superstep.Env{Now: h.clock.Now()})
	h.must(err, "superstep.Advance(%s)", r.ID)
	if step.Kind != superstep.Execute || len(step.Activations) != 1 {
		h.Fatalf("superstep.Advance(%s): want one activation, got kind %d with %d", r.ID, step.Kind, len(step.Activations))
	}
	return step
}

// barrierMoment is the real continue moment of the fixture node answering.
func (h *harness) barrierMoment(r *run.Run, answer string) *run.Moment {
	h.Helper()
	step := h.executeStep(r)
	m, err := superstep.Settle(h.graphs().main, r, step, []superstep.Result{{
		Outcome: superstep.OutcomeUpdate,
		Update:  map[string]any{fixtureField: answer},
	}}, superstep.Env{Now: h.clock.Now()})
	h.must(err, "superstep.Settle(%s)", r.ID)
	return m
}

// waitingMoment is the real external park of the fixture node interrupting.
func (h *harness) waitingMoment(r *run.Run) *run.Moment {
	h.Helper()
	step := h.executeStep(r)
	m, err := superstep.Settle(h.graphs().main, r, step, []superstep.Result{{
		Outcome:   superstep.OutcomeInterrupt,
		Interrupt: &superstep.InterruptRequest{ID: "conformance-interrupt", ResumeChannel: fixtureField},
	}}, superstep.Env{Now: h.clock.Now()})
	h.must(err, "superstep.Settle(%s) with an interrupt", r.ID)
	if m.Run.Status != run.StatusWaiting || m.Disposition.Kind != run.DispositionExternal {
		h.Fatalf("interrupt moment: want waiting/external, got %s/%s", m.Run.Status, m.Disposition.Kind)
	}
	return m
}

// cancelMoment is the real terminal moment of cancelling r.
func (h *harness) cancelMoment(r *run.Run) *run.Moment {
	h.Helper()
	m, err := superstep.Cancel(r, superstep.Env{Now: h.clock.Now()})
	h.must(err, "superstep.Cancel(%s)", r.ID)
	if m == nil {
		h.Fatalf("superstep.Cancel(%s) proposed nothing", r.ID)
	}
	return m
}

// withDisposition returns a copy of m with another disposition (to build
// schedule/status mismatches).
func withDisposition(m *run.Moment, d run.Disposition) *run.Moment {
	c := *m
	c.Disposition = d
	return &c
}
