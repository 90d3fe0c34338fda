package postgres_test

import (
	"testing"

	"github.com/docketgo/docket/adapters/postgres/pgconformance"
	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
)

// factory gives every invariant a fresh schema, its own pool and a manual
// store clock (the suite drives the columns PostgreSQL would stamp with
// CURRENT_TIMESTAMP or clock_timestamp()); caller-clock columns follow the
// times the suite passes.
func factory(simple bool) conformance.Factory { return policyFactory(simple, nil, false) }

// policyFactory is factory for a store running policy (nil: claim.Legacy),
// on a pool whose sessions plan every statement generically when
// genericPlans.
func policyFactory(simple bool, policy claim.Policy, genericPlans bool) conformance.Factory {
	return func(t conformance.T) conformance.Adapter {
		tb, ok := t.(testing.TB)
		if !ok {
			t.Fatalf("the PostgreSQL factory needs a testing.TB, got %T", t)
		}
		clock := conformance.NewManualClock(conformance.ReferenceTime)
		env := newEnv(tb, envOptions{simple: simple, clock: clock, listen: !simple, policy: policy, genericPlans: genericPlans})
		return conformance.Adapter{
			Backend:       env.store,
			Clock:         clock,
			AdmissionGate: pgconformance.Gate(env.pool, env.schema, env.mode, env.session.Set),
			SchemaProbe:   pgconformance.Probe(env.pool, env.schema),
		}
	}
}

// TestConformance runs the suite under every configuration the adapter's
// behaviour could depend on. Sessions that plan every statement
// generically (as PostgreSQL's plan cache may after five executions) once
// pruned a commit's later event before an earlier one (PRUNE-001),
// because event ids followed the join order.
func TestConformance(t *testing.T) {
	t.Parallel()
	all := conformance.Features{WakeNotifications: true, AdmissionGate: true, SchemaGuards: true}
	windowed := all
	windowed.TenantFairPolicy = true
	for _, tc := range []struct {
		name     string
		features conformance.Features
		factory  conformance.Factory
	}{
		{"ExtendedProtocolWithListener", all, factory(false)},
		{"SimpleProtocolPollOnly", conformance.Features{AdmissionGate: true, SchemaGuards: true}, factory(true)},
		{"GenericPlans", all, policyFactory(false, nil, true)},
		{"WindowedInterleaveGenericPlans", windowed, policyFactory(false, claim.WindowedInterleave, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			report := conformance.Run(t, tc.features, tc.factory)
			t.Logf("conformance on PostgreSQL (%s):\n%s", tc.name, report)
			if !report.Passed() {
				t.Errorf("failed invariants: %v; not run: %v", report.Failed(), report.NotRun())
			}
		})
	}
}
