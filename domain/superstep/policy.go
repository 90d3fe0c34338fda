package superstep

import (
	"fmt"
	"math"
	"time"

	"github.com/docketgo/docket/domain/graph"
)

// DefaultMaxAttemptElapsedMS is the host's maximum attempt duration when the
// caller configures none; a node without timeout_ms runs under it.
const DefaultMaxAttemptElapsedMS = 2000

// CheckExecutionPolicy rejects a graph any of whose nodes sets an explicit
// timeout_ms above maxAttemptElapsedMS (incompatible_execution_policy), so
// nothing runs under a deadline the host would silently shorten. A value
// <= 0 means DefaultMaxAttemptElapsedMS. Invalid policies are left to the
// plan, which fails the run with invalid_policy.
func CheckExecutionPolicy(g *graph.Compiled, maxAttemptElapsedMS int) error {
	if maxAttemptElapsedMS <= 0 {
		maxAttemptElapsedMS = DefaultMaxAttemptElapsedMS
	}
	idx := indexOf(g) // policies resolved once per graph
	if idx.longestTimeoutMS <= maxAttemptElapsedMS {
		return nil
	}
	for _, id := range g.NodeIDs {
		if g.Nodes[id] == nil {
			continue
		}
		pol, err := idx.policy(g, id)
		if err != nil || pol.TimeoutMS <= maxAttemptElapsedMS {
			continue
		}
		return &Error{
			Code:   CodeIncompatibleExecutionPolicy,
			Phase:  "execute",
			NodeID: id,
			Message: fmt.Sprintf("node %q sets timeout_ms %d above the host maximum of %d ms",
				id, pol.TimeoutMS, maxAttemptElapsedMS),
			Details: map[string]any{
				"timeout_ms":             int64(pol.TimeoutMS),
				"max_attempt_elapsed_ms": int64(maxAttemptElapsedMS),
			},
		}
	}
	return nil
}

// EffectiveTimeout is an attempt's deadline: the node's timeout_ms capped
// by the host maximum, or the maximum when the node sets none. A maximum
// <= 0 means DefaultMaxAttemptElapsedMS.
func EffectiveTimeout(p graph.NodePolicy, maxAttemptElapsedMS int) time.Duration {
	if maxAttemptElapsedMS <= 0 {
		maxAttemptElapsedMS = DefaultMaxAttemptElapsedMS
	}
	ms := maxAttemptElapsedMS
	if p.TimeoutMS > 0 && p.TimeoutMS < ms {
		ms = p.TimeoutMS
	}
	return millis(ms)
}

// millis converts a policy's milliseconds to a duration, saturating where
// the product would overflow: a backoff of centuries must still lie in the
// future, not wrap into the past.
func millis(ms int) time.Duration {
	const most = math.MaxInt64 / int64(time.Millisecond)
	switch {
	case ms <= 0:
		return 0
	case int64(ms) > most:
		return time.Duration(most) * time.Millisecond // whole milliseconds, as stored timestamps need
	}
	return time.Duration(ms) * time.Millisecond
}

// ShortestTimeoutMS is the smallest explicit timeout_ms among g's nodes, or
// 0 when none sets one: a runner watching attempt deadlines need not look
// sooner than the host maximum or this. Invalid policies are skipped (such
// a node never runs).
func ShortestTimeoutMS(g *graph.Compiled) int {
	return indexOf(g).shortestTimeoutMS
}
