package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
)

const (
	refAskAppend = "test.ask_append"
	refCountLog  = "test.count_log"
)

// registerFanNodes adds the fan-out nodes: ask_append interrupts until its
// resume field is set, then appends the answer to the log; count_log
// records how many entries the log held when the join fired.
func registerFanNodes(k *kit, joined chan<- int) {
	reqString := schema.String().AsRequired()
	k.registry.
		MustRegister(refAskAppend, node.New(obj(map[string]*schema.Schema{"resume_field": reqString}),
			func(_ context.Context, in node.Input) (node.Output, error) {
				k.record(in)
				resume := in.Config["resume_field"].(string)
				v, ok := in.State[resume]
				if !ok {
					return node.Interrupt(node.InterruptRequest{ResumeChannel: resume, Schema: schema.String()}), nil
				}
				return node.Update(map[string]any{"log": []any{v}}), nil
			})).
		MustRegister(refCountLog, node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			log, _ := in.State["log"].([]any)
			joined <- len(log)
			return node.Update(map[string]any{"joined": float64(len(log))}), nil
		}))
}

// askingFan: $start -> fan -> b0..b(n-1) (each asks, then appends its
// answer to log) -> [b0..b(n-1)] -> combine -> $finish.
func askingFan(n int) *graph.Builder {
	b := graph.New(fmt.Sprintf("asking-fan-%d", n)).
		State("log", schema.List(schema.String()), graph.Reducer(reducer.Append, nil)).
		State("joined", schema.Float()).
		Node("fan", refEcho).
		Node("combine", refCountLog).
		Edge("edge_start_fan", graph.Start, "fan").
		Edge("edge_combine_finish", "combine", graph.Finish).
		Output("log", "").
		Output("joined", "")
	var sources []string
	for i := range n {
		id := fmt.Sprintf("b%d", i)
		b = b.State("answer_"+id, schema.String()).
			Node(id, refAskAppend, cfg("resume_field", "answer_"+id)).
			Edge("edge_fan_"+id, "fan", id)
		sources = append(sources, id)
	}
	return b.Join("edge_join", sources, "combine")
}

func countEvents(events []run.Event, typ run.EventType) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// Eight branches interrupt in one superstep; each interrupt is answered
// twice at once from different goroutines. Exactly one answer per
// interrupt wins, the other is already_resolved, and the barrier folds
// every branch's write exactly once.
func TestConcurrentResolutionsOfAFanOutApplyEachAnswerOnce(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		const n = 8
		ctx := context.Background()
		k := newKit()
		joined := make(chan int, 4)
		registerFanNodes(k, joined)
		// Two engines drive the run; the signals come from both.
		e1 := startEngine(t, h.config(k))
		k2 := newKit()
		registerFanNodes(k2, joined)
		e2 := startEngine(t, h.config(k2))
		clients := []*engine.Client{e1.Client, e2.Client}

		r := saveAndStart(t, e1.Client, build(t, askingFan(n)), nil)
		waiting := await(t, e1.Client, r.ID)
		require.Equal(t, run.StatusWaiting, waiting.Status)
		require.Len(t, waiting.Interrupts, n)

		type result struct {
			iid string
			err error
		}
		results := make(chan result, 2*n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for iid, in := range waiting.Interrupts {
			for j := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, err := clients[j].ResolveInterrupt(ctx, r.ID, iid, fmt.Sprintf("%s-%d", in.NodeID, j))
					results <- result{iid, err}
				}()
			}
		}
		close(start)
		wg.Wait()
		close(results)
		wins := map[string]int{}
		for res := range results {
			if res.err == nil {
				wins[res.iid]++
				continue
			}
			// The loser finds the interrupt resolved, or the whole run
			// already done (a terminal run is checked first).
			if !errors.Is(res.err, engine.ErrInactiveRun) {
				assert.ErrorIs(t, res.err, superstep.ErrAlreadyResolved, "interrupt %s", res.iid)
			}
		}
		for iid := range waiting.Interrupts {
			assert.Equal(t, 1, wins[iid], "interrupt %s is resolved exactly once", iid)
		}

		done := await(t, e1.Client, r.ID)
		require.Equal(t, run.StatusDone, done.Status)
		events := allEvents(t, e1.Client, r.ID)
		requireHistory(t, done, events)
		assert.Equal(t, n, countEvents(events, run.EventInterruptResolved))
		log, _ := done.Output["log"].([]any)
		assert.Len(t, log, n, "every branch's answer is folded once")
		assert.Equal(t, float64(n), done.Output["joined"])
		assert.Equal(t, n, <-joined, "the barrier fired with every write")
		assert.Len(t, append(k.attemptsOf("combine"), k2.attemptsOf("combine")...), 1, "the barrier fires once")
		select {
		case extra := <-joined:
			t.Fatalf("the barrier fired again with %d writes", extra)
		default:
		}
	})
}

// A cancellation races the answers of a fan-out's interrupts: the run ends
// cancelled, each answer either committed before the cancellation or was
// refused as inactive, and nothing commits after the cancellation.
func TestCancelRacingResolutionsOfAFanOut(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		const n = 8
		ctx := context.Background()
		k := newKit()
		joined := make(chan int, 4)
		registerFanNodes(k, joined)
		e := startEngine(t, h.config(k))

		// One more branch than answers: the run stays unfinished, so the
		// cancellation always applies.
		r := saveAndStart(t, e.Client, build(t, askingFan(n+1)), nil)
		waiting := await(t, e.Client, r.ID)
		require.Len(t, waiting.Interrupts, n+1)
		unanswered := ""
		for iid := range waiting.Interrupts {
			if unanswered == "" || iid < unanswered {
				unanswered = iid
			}
		}

		start := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var resolveErrs []error
		for iid := range waiting.Interrupts {
			if iid == unanswered {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := e.ResolveInterrupt(ctx, r.ID, iid, "yes")
				mu.Lock()
				resolveErrs = append(resolveErrs, err)
				mu.Unlock()
			}()
		}
		var cancelled *run.Run
		var cancelErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			time.Sleep(time.Millisecond)
			cancelled, cancelErr = e.CancelRun(ctx, r.ID)
		}()
		close(start)
		wg.Wait()
		require.NoError(t, cancelErr)
		require.Equal(t, run.StatusCancelled, cancelled.Status)
		for _, err := range resolveErrs {
			if err != nil {
				assert.ErrorIs(t, err, engine.ErrInactiveRun)
			}
		}

		events := requireQuietAfterCancel(t, e, cancelled)
		assert.Equal(t, run.EventRunCancelled, events[len(events)-2].Type)
	})
}

const refGatedAppend = "test.gated_append"

// sharedGate holds test.gated_append attempts of every engine of a test
// until released.
type sharedGate struct {
	started chan string
	release chan struct{}
}

func newSharedGate() *sharedGate {
	return &sharedGate{started: make(chan string, 256), release: make(chan struct{})}
}

func (g *sharedGate) register(k *kit) {
	k.registry.MustRegister(refGatedAppend, node.New(obj(nil), func(ctx context.Context, in node.Input) (node.Output, error) {
		k.record(in)
		g.started <- in.Task.NodeID
		select {
		case <-g.release:
			return node.Update(map[string]any{"log": []any{in.Task.NodeID}}), nil
		case <-ctx.Done():
			return node.Output{}, ctx.Err()
		}
	}))
}

func (g *sharedGate) waitStarted(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-g.started:
		case <-time.After(awaitLimit):
			t.Fatalf("fewer than %d gated attempts started", n)
		}
	}
}

// gatedFan: $start -> fan -> b0..b(n-1) (gated, each appends its id to
// log) -> [b0..b(n-1)] -> combine -> $finish.
func gatedFan(n int) *graph.Builder {
	return gatedFanWith(fmt.Sprintf("gated-fan-%d", n), n, nil).Output("log", "").Output("joined", "")
}

// gatedFanWith is a gated fan of n branches named name, branch i built
// with branch(i) (nil: no options).
func gatedFanWith(name string, n int, branch func(i int) []graph.RecordOption) *graph.Builder {
	b := graph.New(name).
		State("log", schema.List(schema.String()), graph.Reducer(reducer.Append, nil)).
		State("joined", schema.Float()).
		Node("fan", refEcho).
		Node("combine", refCountLog).
		Edge("edge_start_fan", graph.Start, "fan").
		Edge("edge_combine_finish", "combine", graph.Finish)
	var sources []string
	for i := range n {
		id := fmt.Sprintf("b%d", i)
		var opts []graph.RecordOption
		if branch != nil {
			opts = branch(i)
		}
		b = b.Node(id, refGatedAppend, opts...).Edge("edge_fan_"+id, "fan", id)
		sources = append(sources, id)
	}
	return b.Join("edge_join", sources, "combine")
}

// stealingEngines starts three engines on the harness whose claims are
// stealable two (manual) minutes after their last commit.
func stealingEngines(t *testing.T, h *harness, gate *sharedGate, joined chan int, tweaks ...func(*engine.Config)) (*engine.Engine, []*kit) {
	var first *engine.Engine
	var kits []*kit
	for i := range 3 {
		k := newKit()
		registerFanNodes(k, joined)
		gate.register(k)
		c := h.config(k)
		c.MaxAttemptElapsed = time.Minute
		c.Vehicle.DrainBudget.MaxElapsed = time.Minute
		c.Dispatcher.OrphanTTL = 2 * time.Minute
		c.Dispatcher.DrainTimeout = 50 * time.Millisecond
		for _, tweak := range tweaks {
			tweak(&c)
		}
		e := startEngine(t, c)
		if i == 0 {
			first = e
		}
		kits = append(kits, k)
	}
	return first, kits
}

func attemptsOn(kits []*kit, nodeID string) int {
	n := 0
	for _, k := range kits {
		n += len(k.attemptsOf(nodeID))
	}
	return n
}

// Three engines share the schema; an eight-way fan-out's claim is stolen
// after the orphan TTL while every branch is still running, then all the
// attempts (stale and current) finish. Exactly one claim commits the
// round: the barrier folds each branch's write once and fires once.
func TestAStolenFanOutCommitsItsRoundOnce(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		const n = 8
		gate := newSharedGate()
		joined := make(chan int, 4)
		e, kits := stealingEngines(t, h, gate, joined)

		r := saveAndStart(t, e.Client, build(t, gatedFan(n)), nil)
		gate.waitStarted(t, n)
		h.clock.Advance(3 * time.Minute)
		gate.waitStarted(t, n) // the thief replays the round
		close(gate.release)

		done := await(t, e.Client, r.ID)
		require.Equal(t, run.StatusDone, done.Status)
		events := allEvents(t, e.Client, r.ID)
		requireHistory(t, done, events)
		log, _ := done.Output["log"].([]any)
		assert.Len(t, log, n, "every branch's write is folded once")
		assert.Equal(t, float64(n), done.Output["joined"])
		assert.Equal(t, 1, attemptsOn(kits, "combine"), "the barrier fires once")
		assert.Equal(t, n, <-joined)
		for i := range n {
			id := fmt.Sprintf("b%d", i)
			keys := map[string]bool{}
			for _, k := range kits {
				for _, task := range k.attemptsOf(id) {
					keys[task.IdempotencyKey] = true
				}
			}
			assert.Len(t, keys, 1, "the thief replays %s's attempt with its identity", id)
		}
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted,
			run.CheckpointStepCommitted, run.CheckpointStepCommitted, run.CheckpointRunCompleted}, checkpointTypes(events))
	})
}

// A cancellation lands while an eight-way round is held by a stale claim
// and a thief: when every attempt then finishes, neither commits.
func TestACancelledFanOutTakesNoCommitFromStaleOrStolenClaims(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		const n = 8
		ctx := context.Background()
		gate := newSharedGate()
		joined := make(chan int, 4)
		e, kits := stealingEngines(t, h, gate, joined)

		r := saveAndStart(t, e.Client, build(t, gatedFan(n)), nil)
		gate.waitStarted(t, n)
		h.clock.Advance(3 * time.Minute)
		gate.waitStarted(t, n)
		cancelled, err := e.CancelRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, run.StatusCancelled, cancelled.Status)
		close(gate.release)

		// Every attempt returns; give their vehicles time to try to commit.
		eventually(t, "every gated attempt finished", func() bool { return attemptsOn(kits, "b0") >= 2 })
		requireQuietAfterCancel(t, e, cancelled)
		assert.Equal(t, 0, attemptsOn(kits, "combine"))
		info, err := e.InspectRun(ctx, r.ID)
		require.NoError(t, err)
		assert.False(t, info.Claimed())
	})
}

// One branch of a fan-out asks while its sibling's chain goes on under a
// claim; the answer lands while the sibling's attempt is running. The
// vehicle loses that commit, the next claim replays the sibling with the
// answer in place, and the join fires once with both writes.
func TestAnAnswerLandingMidSuperstepIsAppliedOnce(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		gate := newSharedGate()
		joined := make(chan int, 4)
		e, kits := stealingEngines(t, h, gate, joined)

		g := graph.New("ask-and-work").
			State("log", schema.List(schema.String()), graph.Reducer(reducer.Append, nil)).
			State("joined", schema.Float()).
			State("answer_ask", schema.String()).
			Node("fan", refEcho).
			Node("ask", refAskAppend, cfg("resume_field", "answer_ask")).
			Node("prep", refEcho).
			Node("work", refGatedAppend).
			Node("combine", refCountLog).
			Edge("edge_start_fan", graph.Start, "fan").
			Edge("edge_fan_ask", "fan", "ask").
			Edge("edge_fan_prep", "fan", "prep").
			Edge("edge_prep_work", "prep", "work").
			Join("edge_join", []string{"ask", "work"}, "combine").
			Edge("edge_combine_finish", "combine", graph.Finish).
			Output("log", "").
			Output("joined", "")
		r := saveAndStart(t, e.Client, build(t, g), nil)
		gate.waitStarted(t, 1)
		mid, err := e.FetchRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, run.StatusRunning, mid.Status)
		require.Len(t, mid.Interrupts, 1)
		var iid string
		for iid = range mid.Interrupts {
		}
		resolved, err := e.ResolveInterrupt(ctx, r.ID, iid, "yes")
		require.NoError(t, err)
		assert.Equal(t, mid.CheckpointSeq+1, resolved.CheckpointSeq)
		close(gate.release)

		done := await(t, e.Client, r.ID)
		require.Equal(t, run.StatusDone, done.Status)
		requireHistory(t, done, allEvents(t, e.Client, r.ID))
		assert.ElementsMatch(t, []any{"yes", "work"}, done.Output["log"])
		assert.Equal(t, 1, attemptsOn(kits, "combine"), "the barrier fires once")
		assert.Equal(t, 2, attemptsOn(kits, "ask"), "asked once, then applied the answer once")
		assert.Equal(t, 2, <-joined)
	})
}

// Branches that time out and retry race a cancellation across three
// engines: the run ends cancelled and nothing commits after it.
func TestCancelRacingTimingOutRetryingBranches(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		const n = 8
		ctx := context.Background()
		gate := newSharedGate()
		joined := make(chan int, 4)
		e, kits := stealingEngines(t, h, gate, joined)

		b := gatedFanWith("timing-out-fan", n, func(i int) []graph.RecordOption { return []graph.RecordOption{graph.Timeout(20), graph.Retry(100, 0)} })
		r := saveAndStart(t, e.Client, build(t, b), nil)
		// Let a few rounds of timeouts and retries commit.
		gate.waitStarted(t, 3*n)
		cancelled, err := e.CancelRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, run.StatusCancelled, cancelled.Status)
		events := requireQuietAfterCancel(t, e, cancelled)
		assert.Equal(t, run.EventRunCancelled, events[len(events)-2].Type)
		assert.Equal(t, 0, attemptsOn(kits, "combine"))
		close(gate.release)
	})
}

// An eight-way round loses its claims until the run is poisoned; then the
// poison is retried from three goroutines while a cancellation races
// them. The run ends cancelled; each retry either recovered the run or
// found it inactive; nothing commits after the cancellation.
func TestRetryPoisonedRacingCancelOfAFanOut(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		const n = 8
		ctx := context.Background()
		gate := newSharedGate()
		joined := make(chan int, 4)
		e, kits := stealingEngines(t, h, gate, joined, func(c *engine.Config) { c.Dispatcher.MaxClaimAttempts = 2 })

		r := saveAndStart(t, e.Client, build(t, gatedFan(n)), nil)
		// Every claim expires (the first one's commit of fan resets the
		// count) until admission poisons the run.
		for poisoned := false; !poisoned; {
			gate.waitStarted(t, n)
			h.clock.Advance(3 * time.Minute)
			eventually(t, "the claim is stolen or the run poisoned", func() bool {
				info, err := e.InspectRun(ctx, r.ID)
				require.NoError(t, err)
				poisoned = info.Poisoned()
				return poisoned || len(gate.started) >= n
			})
		}

		start := make(chan struct{})
		var wg sync.WaitGroup
		retryErrs := make(chan error, 3)
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := e.RetryPoisonedRun(ctx, r.ID)
				retryErrs <- err
			}()
		}
		var cancelled *run.Run
		var cancelErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			cancelled, cancelErr = e.CancelRun(ctx, r.ID)
		}()
		close(start)
		wg.Wait()
		close(retryErrs)
		close(gate.release)
		require.NoError(t, cancelErr)
		require.Equal(t, run.StatusCancelled, cancelled.Status)
		for err := range retryErrs {
			if err != nil {
				assert.ErrorIs(t, err, engine.ErrInactiveRun)
			}
		}

		requireQuietAfterCancel(t, e, cancelled)
		assert.Equal(t, 0, attemptsOn(kits, "combine"))
		info, err := e.InspectRun(ctx, r.ID)
		require.NoError(t, err)
		assert.False(t, info.Poisoned())
		assert.False(t, info.Claimed())
	})
}

const (
	refAppendID   = "test.append_id"
	refCountRound = "test.count_round"
)

// A cycle through an eight-way fan-out and its barrier, nested in an
// outer fan-out, is driven by three engines whose drain budget yields
// after every commit, so every round is claimed anew (often elsewhere).
// The barrier fires exactly once per round, each time with every write of
// that round folded once.
func TestABarrierInACycleFiresOncePerRoundAcrossYieldingEngines(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		const n, rounds = 8, 3
		seen := make(chan int, 4*rounds)
		var kits []*kit
		var e *engine.Engine
		for i := range 3 {
			k := newKit()
			k.registry.
				MustRegister(refAppendID, node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
					k.record(in)
					return node.Update(map[string]any{"log": []any{in.Task.NodeID}}), nil
				})).
				MustRegister(refCountRound, node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
					k.record(in)
					log, _ := in.State["log"].([]any)
					seen <- len(log)
					round, _ := in.State["round"].(float64)
					return node.Update(map[string]any{"round": round + 1}), nil
				}))
			c := h.config(k)
			c.Vehicle.DrainBudget.MaxMoments = 1
			started := startEngine(t, c)
			if i == 0 {
				e = started
			}
			kits = append(kits, k)
		}

		b := graph.New("fan-cycle").
			State("log", schema.List(schema.String()), graph.Reducer(reducer.Append, nil)).
			State("round", schema.Float(), graph.Default(0.0)).
			Node("outer", refEcho).
			Node("side", refAppendID).
			Node("fan", refEcho).
			Node("count", refCountRound).
			Edge("edge_start_outer", graph.Start, "outer").
			Edge("edge_outer_side", "outer", "side").
			Edge("edge_outer_fan", "outer", "fan").
			Edge("edge_loop", "count", "fan", graph.When(graph.Not(graph.Equals(graph.Path("round"), float64(rounds))))).
			Edge("edge_done", "count", graph.Finish, graph.When(graph.Equals(graph.Path("round"), float64(rounds)))).
			Output("log", "").
			Output("round", "").
			MaxSupersteps(50)
		var sources []string
		for i := range n {
			id := fmt.Sprintf("b%d", i)
			b = b.Node(id, refAppendID).Edge("edge_fan_"+id, "fan", id)
			sources = append(sources, id)
		}
		r := saveAndStart(t, e.Client, build(t, b.Join("edge_join", sources, "count")), nil)
		done := await(t, e.Client, r.ID)
		require.Equal(t, run.StatusDone, done.Status)
		requireHistory(t, done, allEvents(t, e.Client, r.ID))
		assert.Equal(t, float64(rounds), done.Output["round"])
		log, _ := done.Output["log"].([]any)
		assert.Len(t, log, rounds*n+1, "each round's writes (and the side branch's) are folded once")
		assert.Equal(t, rounds, attemptsOn(kits, "count"), "the barrier fires once per round")
		for round := 1; round <= rounds; round++ {
			got := <-seen
			// The side branch's write lands with the first round.
			assert.Equal(t, round*n+1, got, "round %d", round)
		}
	})
}

// Several cancellations of one fan-out race each other from two engines
// while its branches run: one commits, the others are repeats that return
// the cancelled run unchanged, and the history has one terminal event.
func TestConcurrentCancellationsCommitOnce(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		const n = 8
		ctx := context.Background()
		gate := newSharedGate()
		joined := make(chan int, 4)
		e, _ := stealingEngines(t, h, gate, joined)
		other, err := engine.New(h.config(newKit()))
		require.NoError(t, err)
		clients := []*engine.Client{e.Client, other.Client}

		r := saveAndStart(t, e.Client, build(t, gatedFan(n)), nil)
		gate.waitStarted(t, n)
		start := make(chan struct{})
		type result struct {
			r   *run.Run
			err error
		}
		results := make(chan result, 4)
		for i := range 4 {
			go func() {
				<-start
				got, err := clients[i%2].CancelRun(ctx, r.ID)
				results <- result{got, err}
			}()
		}
		close(start)
		seqs := map[int64]int{}
		for range 4 {
			res := <-results
			require.NoError(t, res.err)
			assert.Equal(t, run.StatusCancelled, res.r.Status)
			seqs[res.r.CheckpointSeq]++
		}
		close(gate.release)
		assert.Len(t, seqs, 1, "every caller sees the one cancellation")
		time.Sleep(50 * time.Millisecond)
		final, err := e.FetchRun(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, run.StatusCancelled, final.Status)
		requireHistory(t, final, allEvents(t, e.Client, r.ID))
	})
}

// A branch asks while its sibling fails and waits out a retry backoff;
// the question is held with the round until the retry settles it, then
// the answer is sent twice at once. One wins, and the round completes
// with the answer applied once and the join firing once.
func TestAnswersRacingASiblingsRetryBackoff(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		k := newKit()
		joined := make(chan int, 4)
		registerFanNodes(k, joined)
		e := startEngine(t, h.config(k))

		g := graph.New("ask-and-retry").
			State("log", schema.List(schema.String()), graph.Reducer(reducer.Append, nil)).
			State("joined", schema.Float()).
			State("answer_ask", schema.String()).
			State("out", schema.String()).
			Node("fan", refEcho).
			Node("ask", refAskAppend, cfg("resume_field", "answer_ask")).
			Node("flaky", refFlaky, cfg("failures", 1.0, "field", "out", "value", "done"), graph.Retry(3, 60_000)).
			Node("combine", refCountLog).
			Edge("edge_start_fan", graph.Start, "fan").
			Edge("edge_fan_ask", "fan", "ask").
			Edge("edge_fan_flaky", "fan", "flaky").
			Join("edge_join", []string{"ask", "flaky"}, "combine").
			Edge("edge_combine_finish", "combine", graph.Finish).
			Output("log", "").
			Output("out", "")
		r := saveAndStart(t, e.Client, build(t, g), nil)
		// The interrupt is held with the round until the retry settles it.
		waitParked(t, e.Client, r.ID)
		parked, err := e.FetchRun(ctx, r.ID)
		require.NoError(t, err)
		require.Empty(t, parked.Interrupts)
		h.clock.Advance(time.Minute)
		parked = await(t, e.Client, r.ID)
		require.Equal(t, run.StatusWaiting, parked.Status)
		require.Len(t, parked.Interrupts, 1)
		var iid string
		for iid = range parked.Interrupts {
		}

		errs := make(chan error, 2)
		for i := range 2 {
			go func() {
				_, err := e.ResolveInterrupt(ctx, r.ID, iid, fmt.Sprintf("answer-%d", i))
				errs <- err
			}()
		}
		wins := 0
		for range 2 {
			switch err := <-errs; {
			case err == nil:
				wins++
			case !errors.Is(err, engine.ErrInactiveRun): // else the run finished first
				assert.ErrorIs(t, err, superstep.ErrAlreadyResolved)
			}
		}
		assert.Equal(t, 1, wins)

		done := await(t, e.Client, r.ID)
		require.Equal(t, run.StatusDone, done.Status)
		requireHistory(t, done, allEvents(t, e.Client, r.ID))
		log, _ := done.Output["log"].([]any)
		assert.Len(t, log, 1, "the answer is applied once")
		assert.Equal(t, "done", done.Output["out"])
		assert.Len(t, k.attemptsOf("ask"), 2)
		assert.Len(t, k.attemptsOf("flaky"), 2)
		assert.Len(t, k.attemptsOf("combine"), 1)
		assert.Equal(t, 1, <-joined)
	})
}

// Eight branches with eight different timeouts all overrun them in one
// superstep, with no retry left: the run fails once, on the round's
// timeouts, and its history is whole.
func TestAFanOutOfStaggeredTimeoutsFailsTheRunOnce(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		const n = 8
		gate := newSharedGate()
		joined := make(chan int, 4)
		e, kits := stealingEngines(t, h, gate, joined)
		b := gatedFanWith("staggered-timeouts", n, func(i int) []graph.RecordOption { return []graph.RecordOption{graph.Timeout(10 * (i + 1))} })
		r := saveAndStart(t, e.Client, build(t, b), nil)
		done := await(t, e.Client, r.ID)
		t.Cleanup(func() { close(gate.release) })
		require.Equal(t, run.StatusFailed, done.Status)
		require.NotNil(t, done.Failure)
		events := allEvents(t, e.Client, r.ID)
		requireHistory(t, done, events)
		assert.Equal(t, n, countEvents(events, run.EventNodeFailed), "every branch's timeout is recorded once")
		assert.Equal(t, 0, attemptsOn(kits, "combine"))
		for i := range n {
			assert.Equal(t, 1, attemptsOn(kits, fmt.Sprintf("b%d", i)), "b%d ran once", i)
		}
	})
}

// An engine stops (past its drain deadline) in the middle of an eight-way
// round; an engine sharing the schema steals the claim after the orphan
// TTL and completes the round once.
func TestAFanOutAbandonedByAStoppedEngineCompletesElsewhere(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, h *harness) {
		const n = 8
		ctx := context.Background()
		gate := newSharedGate()
		joined := make(chan int, 4)
		tweak := func(c *engine.Config) { c.Dispatcher.DrainTimeout = 20 * time.Millisecond }
		kitA := newKit()
		registerFanNodes(kitA, joined)
		gate.register(kitA)
		cfgA := h.config(kitA)
		cfgA.MaxAttemptElapsed = time.Minute
		cfgA.Vehicle.DrainBudget.MaxElapsed = time.Minute
		cfgA.Dispatcher.OrphanTTL = 2 * time.Minute
		tweak(&cfgA)
		a, err := engine.New(cfgA)
		require.NoError(t, err)
		require.NoError(t, a.Start(ctx))

		r := saveAndStart(t, a.Client, build(t, gatedFan(n)), nil)
		gate.waitStarted(t, n)
		require.ErrorIs(t, a.Stop(ctx), context.DeadlineExceeded, "the round was still running")

		b, kits := stealingEngines(t, h, gate, joined, tweak)
		h.clock.Advance(3 * time.Minute)
		gate.waitStarted(t, n)
		close(gate.release)
		done := await(t, b.Client, r.ID)
		require.Equal(t, run.StatusDone, done.Status)
		requireHistory(t, done, allEvents(t, b.Client, r.ID))
		log, _ := done.Output["log"].([]any)
		assert.Len(t, log, n)
		assert.Equal(t, 1, attemptsOn(append(kits, kitA), "combine"))
		assert.Equal(t, n, <-joined)
	})
}

// requireQuietAfterCancel gives any vehicle that held the cancelled run a
// moment to try its commit, then requires that none landed: the run is as
// its cancellation left it, with a whole history, which it returns.
func requireQuietAfterCancel(t *testing.T, e *engine.Engine, cancelled *run.Run) []run.Event {
	t.Helper()
	time.Sleep(100 * time.Millisecond)
	final, err := e.FetchRun(context.Background(), cancelled.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusCancelled, final.Status)
	assert.Equal(t, cancelled.CheckpointSeq, final.CheckpointSeq, "nothing commits after the cancellation")
	events := allEvents(t, e.Client, cancelled.ID)
	requireHistory(t, final, events)
	return events
}
