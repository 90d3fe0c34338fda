package conformance

import (
	"time"

	"github.com/docketgo/docket/ports"
)

func (h *harness) schemaProbe() SchemaProbe {
	h.Helper()
	if h.adapter.SchemaProbe == nil {
		h.Fatalf("Features.SchemaGuards is set but the Adapter has no SchemaProbe")
	}
	return h.adapter.SchemaProbe
}

func checkQueueShapeGuards(h *harness) {
	probe := h.schemaProbe()
	poisoned := h.insert(ports.Tenantless())
	h.poison(poisoned.ID, t0)
	claimed := h.insert(ports.Tenantless())
	h.claimOne(t0, claimed.ID)
	ready := h.insert(ports.Tenantless(), runOpts{wakeAt: at(time.Minute)})
	waitingRun := h.insert(ports.Tenantless(), runOpts{wakeAt: at(time.Hour)})
	h.must(errOf(h.mutate(ports.Tenantless(), waitingRun.ID, h.waitingMoment(waitingRun))), "parking")

	cases := []struct {
		runID string
		shape QueueShape
	}{
		{claimed.ID, ShapeRunningWithWakeAndClaim},
		{ready.ID, ShapeRunningWithoutWakeOrClaim},
		{waitingRun.ID, ShapeWaitingWithWake},
		{poisoned.ID, ShapePoisonedWithClaim},
	}
	for _, c := range cases {
		before := h.inspect(c.runID)
		err := probe.BreakQueueShape(h.ctx, c.runID, c.shape)
		h.expect(err != nil, "direct write leaving %s: the storage accepted it", c.shape)
		h.unchanged(before, "run after a rejected %s write", c.shape)
	}
}

func checkUnfinishedAccounting(h *harness) {
	probe := h.schemaProbe()
	owner := ports.Tenant(h.id("tenant"))
	const k, j = 4, 2
	var ids []string
	for range k {
		ids = append(ids, h.insert(owner, runOpts{wakeAt: at(time.Hour)}).ID)
	}
	for _, id := range ids[:j] {
		h.must(errOf(h.b.MutateRun(h.ctx, owner, id, cancelMutation(h))), "cancelling %s", id)
	}
	count := func(what string) {
		h.Helper()
		n, err := probe.UnfinishedCount(h.ctx, owner)
		h.must(err, "UnfinishedCount")
		eq(h, n, int64(k-j), "unfinished count %s", what)
	}
	count("after terminating some runs")
	for _, how := range []Tampering{TamperUpdateCount, TamperDeleteMembership, TamperTruncateRuns} {
		err := probe.TamperAccounting(h.ctx, owner, how)
		h.expect(err != nil, "tampering (%s): the storage accepted it", how)
		count("after rejected tampering (" + string(how) + ")")
	}
}
