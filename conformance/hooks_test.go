package conformance_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// gatedStore puts an admission gate in front of a memory store, standing
// in for the PostgreSQL gate row so CLAIM-012 runs in this module.
type gatedStore struct {
	*memory.Store
	mu     sync.Mutex
	reason string
	leaky  bool // a broken gate that admits anyway
}

func (g *gatedStore) ClaimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	g.mu.Lock()
	reason := g.reason
	g.mu.Unlock()
	if reason == "" {
		return g.Store.ClaimDue(ctx, r)
	}
	if g.leaky {
		_, _ = g.Store.ClaimDue(ctx, r)
	}
	return nil, &ports.ClaimPolicyUnavailableError{Reason: reason}
}

func (g *gatedStore) Close(_ context.Context, reason string) (func(), error) {
	if reason == ports.UnavailableLockContention {
		return nil, ports.ErrUnsupported
	}
	g.mu.Lock()
	g.reason = reason
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.reason = ""
		g.mu.Unlock()
	}, nil
}

func gatedFactory(leaky bool) conformance.Factory {
	return func(conformance.T) conformance.Adapter {
		clock := conformance.NewManualClock(conformance.ReferenceTime)
		g := &gatedStore{Store: memory.New(memory.Options{Clock: clock}), leaky: leaky}
		return conformance.Adapter{Backend: g, Clock: clock, AdmissionGate: g}
	}
}

// statusProbe emulates schema guards over a memory store: it rejects every
// direct write and counts unfinished runs through the ports.
type statusProbe struct {
	backend ports.Backend
	lenient bool // accepts tampering: the storage has no guards
}

var errRejected = errors.New("rejected by the schema")

func (p statusProbe) BreakQueueShape(context.Context, string, conformance.QueueShape) error {
	if p.lenient {
		return nil
	}
	return errRejected
}

func (p statusProbe) TamperAccounting(context.Context, ports.OwnerScope, conformance.Tampering) error {
	if p.lenient {
		return nil
	}
	return errRejected
}

func (p statusProbe) UnfinishedCount(ctx context.Context, owner ports.OwnerScope) (int64, error) {
	page, err := p.backend.ListRuns(ctx, owner, ports.ListRunsParams{Limit: ports.MaxPageLimit,
		Statuses: []run.Status{run.StatusRunning, run.StatusWaiting}})
	if err != nil {
		return 0, err
	}
	return int64(len(page.Runs)), nil
}

func probedFactory(lenient bool) conformance.Factory {
	return func(conformance.T) conformance.Adapter {
		clock := conformance.NewManualClock(conformance.ReferenceTime)
		store := memory.New(memory.Options{Clock: clock})
		return conformance.Adapter{Backend: store, Clock: clock, SchemaProbe: statusProbe{backend: store, lenient: lenient}}
	}
}

func TestOptionalHooksRunTheirInvariants(t *testing.T) {
	t.Parallel()
	features := quickFeatures
	features.AdmissionGate = true
	features.SchemaGuards = true
	cases := []struct {
		name     string
		factory  conformance.Factory
		pass     []string
		mustFail []string
	}{
		{"working gate", gatedFactory(false), []string{"CLAIM-012"}, nil},
		{"gate that admits while closed", gatedFactory(true), nil, []string{"CLAIM-012"}},
		{"guarded schema", probedFactory(false), []string{"SCHEMA-001", "SCHEMA-002"}, nil},
		{"unguarded schema", probedFactory(true), nil, []string{"SCHEMA-001", "SCHEMA-002"}},
	}
	for _, c := range cases {
		report := conformance.RunStandalone(t.Context(), features, c.factory)
		for _, id := range c.pass {
			if res, _ := report.Result(id); res.Status != conformance.StatusPass {
				t.Errorf("%s: %s is %s, want pass: %v", c.name, id, res.Status, res.Messages)
			}
		}
		for _, id := range c.mustFail {
			if !slices.Contains(report.Failed(), id) {
				t.Errorf("%s: %s must fail (failed: %v)", c.name, id, report.Failed())
			}
		}
	}
}

func TestMissingHooksFailInsteadOfPassing(t *testing.T) {
	t.Parallel()
	features := quickFeatures
	features.AdmissionGate = true
	features.SchemaGuards = true
	report := conformance.RunStandalone(t.Context(), features, memoryFactory)
	for _, id := range []string{"CLAIM-012", "SCHEMA-001", "SCHEMA-002"} {
		if !slices.Contains(report.Failed(), id) {
			t.Errorf("%s must fail when its feature is on but the hook is missing", id)
		}
	}
}
