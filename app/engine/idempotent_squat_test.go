package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/claim"
)

// The run id an idempotency key derives is predictable, so an explicit
// run id of that form could take it first: another tenant's keyed start
// would then conflict forever, and the explicit start would tell its
// caller whether the other tenant had used the key. Derived ids are
// reserved for keyed starts instead.
func TestAnExplicitRunIDCannotTakeAnIdempotencyKeysRunID(t *testing.T) {
	t.Parallel()
	onTenantFairBackends(t, explicitRunIDCannotSquatAKey)
}

func explicitRunIDCannotSquatAKey(t *testing.T, h *harness) {
	ctx := context.Background()
	tenants := func(c *engine.Config) { c.TenantMode = engine.TenantRequired }
	e := manual(t, h, newKit(), tenants)

	// Where acme's key "order-1" leads, learnt on a store of its own.
	probe := manual(t, &harness{clock: h.clock, store: memory.New(memory.Options{Policy: claim.WindowedInterleave}), pollOnly: true}, newKit(), tenants)
	probeRef, err := probe.Tenant("acme").SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	derived, err := probe.Tenant("acme").StartRun(ctx, probeRef, map[string]any{"value": "a"}, engine.WithIdempotencyKey("order-1"))
	require.NoError(t, err)

	mallory := e.Tenant("mallory")
	malloryRef, err := mallory.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	_, err = mallory.StartRun(ctx, malloryRef, map[string]any{"value": "a"}, engine.WithRunID(derived.ID))
	require.ErrorIs(t, err, engine.ErrInvalidOptions, "a derived id is reserved for its key")
	_, err = e.Tenant("acme").StartRun(ctx, malloryRef, map[string]any{"value": "a"}, engine.WithRunID(derived.ID))
	require.ErrorIs(t, err, engine.ErrInvalidOptions, "in the key's own scope as well")

	acme := e.Tenant("acme")
	ref, err := acme.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	started, err := acme.StartRun(ctx, ref, map[string]any{"value": "a"}, engine.WithIdempotencyKey("order-1"))
	require.NoError(t, err, "the key's run id is still free")
	assert.Equal(t, derived.ID, started.ID, "and derived as before, so runs started before stay found by their key")
	again, err := acme.StartRun(ctx, ref, map[string]any{"value": "a"}, engine.WithIdempotencyKey("order-1"))
	require.NoError(t, err)
	assert.Equal(t, started.ID, again.ID)
	fetched, err := acme.FetchRun(ctx, started.ID)
	require.NoError(t, err, "a derived id names its run as any id does")
	assert.Equal(t, started.ID, fetched.ID)

	for _, id := range []string{"run_0123456789abcdef", "run_0123456789ABCDEF0123456789ABCDEF", "run_0123456789abcdef0123456789abcdef0"} {
		_, err = mallory.StartRun(ctx, malloryRef, map[string]any{"value": "a"}, engine.WithRunID(id))
		assert.NoError(t, err, "%q is not a derived id", id)
	}
}
