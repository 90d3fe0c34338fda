package otel_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	docketotel "github.com/docketgo/docket/adapters/otel"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// catalogFacts lists every catalog name, so the identity checks drive every
// instrument.
var catalogFacts = docketotel.CatalogNames()

// everyMeasurement feeds every instrument of every fact.
var everyMeasurement = ports.Measurements{
	"count": 1, "duration": 1e6, "concurrency": 4, "demand": 2, "in_flight": 2, "leases": 2,
	"poisoned": 1, "ready_candidates": 3, "expired_candidates": 1, "steals": 1, "bytes": 512,
	"committed_moments": 2, "elapsed_ms": 10, "claim_held_ms": 10, "events_deleted": 1,
	"runs_deleted": 1, "cascade_events_deleted": 1, "graphs_deleted": 1,
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

func uuidLike(t *testing.T) string {
	t.Helper()
	h := randomHex(t, 16)
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

func TestNoMetricCarriesAnIdentity(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	identities := map[string]string{
		"run_id":          "run-" + randomHex(t, 8),
		"tenant":          "tenant-" + randomHex(t, 8),
		"tenant_id":       "tenant-" + randomHex(t, 8),
		"scope_key":       "scope-" + randomHex(t, 8),
		"graph_id":        "graph-" + randomHex(t, 8),
		"graph_hash":      randomHex(t, 32),
		"task_id":         "task-" + randomHex(t, 8),
		"idempotency_key": "idem-" + randomHex(t, 8),
		"lifecycle_ref":   "ref-" + randomHex(t, 8),
		"attempt":         "17",
		"node":            "charge_card",
	}
	var labels []ports.Label
	for k, v := range identities {
		labels = append(labels, label(k, v))
	}
	// An identity smuggled into a bounded label must not survive either.
	for _, k := range []string{"result", "source", "stage", "reason", "operation", "outcome", "claim_policy"} {
		labels = append(labels, label(k, identities["run_id"]))
	}
	for _, name := range catalogFacts {
		h.tel.Emit(ctx, name, everyMeasurement, labels...)
		_, s := h.tel.StartSpan(ctx, name, labels...)
		s.End(identities["task_id"], everyMeasurement)
	}
	h.tel.Committed(ctx, ports.CommittedFact{CheckpointType: run.CheckpointRunCompleted, Disposition: run.DispositionTerminal, CheckpointSeq: 5, Step: 3})

	allowed := map[string]bool{}
	for _, k := range []string{
		"result", "source", "claim_policy", "preference", "fallback", "implementation", "contention_phase",
		"reason", "operation", "stage", "outcome", "budget", "park", "checkpoint_type", "disposition",
		"durable_success", "class", "kind",
	} {
		allowed["docket."+k] = true
	}
	rm := h.collect(t)
	exported := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, p := range pointsOfMetric(t, m) {
				exported++
				for k, v := range p.Attrs {
					assert.True(t, allowed[k], "%s carries attribute %s", m.Name, k)
					for idKey, id := range identities {
						assert.NotEqual(t, id, v, "%s carries the %s", m.Name, idKey)
					}
				}
			}
		}
	}
	require.Positive(t, exported, "the check looked at data points")
	metricsText := fmt.Sprintf("%+v", rm)
	for idKey, id := range identities {
		if idKey == "attempt" || idKey == "node" {
			continue // short values that may occur by chance in unrelated text
		}
		assert.NotContains(t, metricsText, id, "the %s appears in exported metrics", idKey)
	}
	assert.Contains(t, metricsText, "docket.commits", "the text search sees the metrics")
}

func TestClaimTokenNeverAppearsInSpansOrMetrics(t *testing.T) {
	t.Parallel()
	for _, shape := range []struct {
		name string
		raw  func(t *testing.T) string
	}{
		{"uuid token", uuidLike},
		{"hex token", func(t *testing.T) string { return randomHex(t, 16) }},
	} {
		t.Run(shape.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			ctx := context.Background()
			raw := shape.raw(t)
			token := ports.NewClaimToken(raw)
			marker := "run-" + randomHex(t, 8)

			require.True(t, strings.ContainsAny(raw, "0123456789-"), "tokens are never words")
			tokenLabels := []ports.Label{
				label("run_id", marker),
				label("claim_token", raw), label("token", raw), label("lease_token", raw),
				label(raw, "ok"), label("docket."+raw, raw),
				// The realistic path: a token formatted into a label.
				label("graph_id", fmt.Sprint(token)), label("task_id", fmt.Sprintf("%v", token)),
			}
			// Tokens are not words, so a bounded label cannot carry one.
			for _, k := range []string{"result", "source", "stage", "reason", "operation", "outcome", "class", "kind"} {
				tokenLabels = append(tokenLabels, label(k, raw))
			}
			tokenMeasurements := ports.Measurements{raw: 1, "count": 1, "leases": 1}

			for _, name := range append(catalogFacts, raw, "docket."+raw, "claim."+raw) {
				spanCtx, s := h.tel.StartSpan(ctx, name, tokenLabels...)
				h.tel.Emit(spanCtx, name, tokenMeasurements, tokenLabels...)
				h.tel.Emit(spanCtx, raw, tokenMeasurements, tokenLabels...)
				h.tel.Committed(spanCtx, ports.CommittedFact{CheckpointType: run.CheckpointStepCommitted, Disposition: run.DispositionContinue})
				s.End(raw, tokenMeasurements)
			}

			text := h.exportedText(t)
			assert.NotContains(t, text, raw)
			assert.Contains(t, text, marker, "the search looks through span attributes")
			assert.Contains(t, text, "[redacted]", "a formatted token stays redacted")
			assert.Contains(t, text, "docket.fence_losses", "the search looks through metrics")
		})
	}
}
