package vehicle_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/app/vehicle"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/ports"
)

// record is one ended span or one emitted fact, with the name of the span
// it happened in.
type record struct {
	name   string
	parent string
	labels map[string]string
	result string
	m      ports.Measurements
}

// recorder is a ports.Telemetry that keeps every span and fact.
type recorder struct {
	mu      sync.Mutex
	records []record
}

type spanKey struct{}

func labelMap(labels []ports.Label) map[string]string {
	out := map[string]string{}
	for _, l := range labels {
		out[l.Key] = l.Value
	}
	return out
}

func parentOf(ctx context.Context) string {
	name, _ := ctx.Value(spanKey{}).(string)
	return name
}

func (r *recorder) StartSpan(ctx context.Context, op string, labels ...ports.Label) (context.Context, ports.Span) {
	s := &recordedSpan{r: r, rec: record{name: op, parent: parentOf(ctx), labels: labelMap(labels)}}
	return context.WithValue(ctx, spanKey{}, op), s
}

func (r *recorder) Emit(ctx context.Context, name string, m ports.Measurements, labels ...ports.Label) {
	r.add(record{name: name, parent: parentOf(ctx), labels: labelMap(labels), m: m})
}

func (r *recorder) Committed(ctx context.Context, _ ports.CommittedFact) {
	r.add(record{name: ports.FactLifecycleCommitted, parent: parentOf(ctx)})
}

func (r *recorder) add(rec record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
}

func (r *recorder) named(name string) []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []record
	for _, rec := range r.records {
		if rec.name == name {
			out = append(out, rec)
		}
	}
	return out
}

// waitNamed waits until n records called name exist (a node that outlives
// its deadline ends its span after the drive returns).
func (r *recorder) waitNamed(t *testing.T, name string, n int) []record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := r.named(name); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d %s records", n, name)
		}
		time.Sleep(time.Millisecond)
	}
}

type recordedSpan struct {
	r   *recorder
	rec record
}

func (s *recordedSpan) End(result string, _ ports.Measurements) {
	s.rec.result = result
	s.r.add(s.rec)
}

func TestADriveReportsItsMomentsAndAttemptsAsNestedSpans(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	tel := &recorder{}
	lease := f.claim(t)
	out := f.vehicle(t, f.store, func(c *vehicle.Config) {
		c.Telemetry = tel
		c.AfterCommit = func(ctx context.Context, _ ports.OwnerScope, _ *run.Moment) {
			tel.Committed(ctx, ports.CommittedFact{})
		}
	}).Drive(context.Background(), lease)
	require.Equal(t, vehicle.Parked, out.Kind)

	vehicles := tel.named(ports.FactVehicle)
	require.Len(t, vehicles, 1)
	assert.Equal(t, map[string]string{
		"run_id": f.runID, "graph_id": "g", "graph_hash": lease.GraphHash, "claim_attempt": "1",
	}, vehicles[0].labels)
	assert.Equal(t, ports.ResultOK, vehicles[0].result)

	moments := tel.named(ports.FactMoment)
	require.Len(t, moments, 1, "one moment span per commit (the completion is fused with the step)")
	for _, m := range moments {
		assert.Equal(t, ports.FactVehicle, m.parent)
		assert.Equal(t, f.runID, m.labels["run_id"])
		assert.Equal(t, ports.ResultOK, m.result)
		assert.Equal(t, "2", m.labels["checkpoint_seq"], "the first checkpoint the moment proposes")
	}
	require.Len(t, tel.named(ports.FactLifecycleCommitted), 2, "after-commit work runs once per checkpoint")
	for _, c := range tel.named(ports.FactRunStoreCommit) {
		assert.Equal(t, ports.FactMoment, c.parent)
	}
	for _, c := range tel.named(ports.FactLifecycleCommitted) {
		assert.Equal(t, ports.FactMoment, c.parent, "after-commit work runs in the moment's span")
	}
	attempts := tel.named(ports.FactNodeAttempt)
	require.Len(t, attempts, 1)
	a := attempts[0]
	assert.Equal(t, ports.FactMoment, a.parent)
	assert.Equal(t, ports.ResultOK, a.result)
	assert.Equal(t, f.runID, a.labels["run_id"])
	assert.Equal(t, "n", a.labels["node"])
	assert.Equal(t, "1", a.labels["attempt"])
	assert.Equal(t, "0", a.labels["step"])
	assert.Contains(t, a.labels["task_id"], f.runID)
	for _, rec := range tel.records {
		assert.NotContains(t, rec.labels, "claim_token")
		for _, v := range rec.labels {
			assert.NotEqual(t, lease.Token.Reveal(), v, "no token in %s", rec.name)
		}
	}
}

func TestAttemptSpansSayHowTheAttemptEnded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		call   func(ctx context.Context, in node.Input) (node.Output, error)
		opts   []graph.RecordOption
		result string
	}{
		{"an update", func(context.Context, node.Input) (node.Output, error) {
			return node.Update(map[string]any{"out": "x"}), nil
		}, nil, "ok"},
		{"an interrupt", func(context.Context, node.Input) (node.Output, error) {
			return node.Interrupt(node.InterruptRequest{ResumeChannel: "out", Schema: schema.String()}), nil
		}, nil, "interrupt"},
		{"an error", func(context.Context, node.Input) (node.Output, error) {
			return node.Output{}, errors.New("nope")
		}, nil, "error"},
		{"a return after the deadline", func(ctx context.Context, _ node.Input) (node.Output, error) {
			<-ctx.Done()
			return node.Update(nil), nil
		}, []graph.RecordOption{graph.Timeout(5)}, "timeout"},
		{"a panic", func(context.Context, node.Input) (node.Output, error) {
			panic("node bug")
		}, nil, "crashed"},
		{"an exit", func(context.Context, node.Input) (node.Output, error) {
			runtime.Goexit()
			return node.Output{}, nil
		}, nil, "crashed"},
		{"neither update nor interrupt", func(context.Context, node.Input) (node.Output, error) {
			return node.Output{}, nil
		}, nil, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, single("t.write", tt.opts...))
			tel := &recorder{}
			v := f.vehicle(t, f.store, func(c *vehicle.Config) {
				c.Telemetry = tel
				// This host runs the stored graph's node with the case's code.
				c.Nodes = node.NewRegistry().MustRegister("t.write", node.New(nil, tt.call))
			})
			v.Drive(context.Background(), f.claim(t))
			attempts := tel.waitNamed(t, ports.FactNodeAttempt, 1)
			assert.Equal(t, tt.result, attempts[0].result)
		})
	}
}

func TestAPoisoningHandBackIsReportedWithItsReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	tel := &recorder{}
	v := f.vehicle(t, f.store, func(c *vehicle.Config) {
		c.Telemetry = tel
		c.Nodes = node.NewRegistry() // the stored graph does not compile here
		c.MaxClaimAbandons = 1
	})
	out := v.Drive(context.Background(), f.claim(t))
	require.Equal(t, ports.AbandonRescheduled, out.Abandon)
	assert.Empty(t, tel.named(ports.FactClaimPoisoned), "a rescheduled hand-back poisons nothing")

	f.clock.Set(epoch.Add(time.Hour))
	out = v.Drive(context.Background(), f.claim(t))
	require.Equal(t, vehicle.Abandoned, out.Kind)
	require.Equal(t, ports.AbandonPoisoned, out.Abandon, "the abandons are exhausted")
	poisoned := tel.named(ports.FactClaimPoisoned)
	require.Len(t, poisoned, 1)
	assert.Equal(t, ports.PoisonReasonMaxClaimAbandons, poisoned[0].labels["reason"])
	assert.Equal(t, ports.FactVehicle, poisoned[0].parent)
}

// A claim stamped by a store whose clock leads this host's is still
// reported as held for at least the drive's own time.
func TestClaimHeldIsNeverShorterThanTheDriveWhenTheStoreClockLeads(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	tel := &recorder{}
	lease := f.claim(t)
	lease.ClaimedAt = lease.ClaimedAt.Add(time.Hour) // the database's time, an hour ahead of this host
	out := f.vehicle(t, f.store, func(c *vehicle.Config) { c.Telemetry = tel }).Drive(context.Background(), lease)
	require.Equal(t, vehicle.Parked, out.Kind)
	drains := tel.named(ports.FactVehicleDrain)
	require.Len(t, drains, 1)
	assert.Positive(t, drains[0].m["elapsed_ms"])
	assert.GreaterOrEqual(t, drains[0].m["claim_held_ms"], drains[0].m["elapsed_ms"])
}
