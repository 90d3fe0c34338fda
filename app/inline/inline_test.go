package inline_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

func TestSleeperRunsOnlyAfterTheParkIsAccepted(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	stop := errors.New("shutting down")
	sleeper := inline.WithSleeper(func(context.Context, time.Duration) error { return stop })
	r, cps, err := inline.RunInline(context.Background(), build(t, retryThenContinue(3, 25)), nil, k.options(sleeper)...)
	require.ErrorIs(t, err, stop)
	assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointRetryScheduled}, types(cps),
		"the park committed before the sleeper failed")
	assert.Equal(t, cps[1].Run, r, "the returned run is the last committed one")
}

func TestCancellingTheContextAbandonsTheUncommittedSuperstep(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	reg := node.NewRegistry().MustRegister("wait", node.New(nil, func(ctx context.Context, _ node.Input) (node.Output, error) {
		cancel()
		<-ctx.Done()
		return node.Update(map[string]any{"out": "too late"}), nil
	}))
	g := build(t, singleNode("cancel", "wait"))
	r, cps, err := inline.RunInline(ctx, g, nil, inline.WithRegistry(reg), inline.WithMaxAttemptElapsed(time.Minute))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized}, types(cps))
	assert.Equal(t, run.StatusRunning, r.Status)
	assert.Equal(t, 0, r.Step, "nothing of the abandoned superstep committed")
}

func TestDefaultsGenerateRandomIDsAndSleepForReal(t *testing.T) {
	t.Parallel()
	reg := newKit(t).registry
	g := build(t, interruptReview())
	r, _, err := inline.RunInline(context.Background(), g, nil, inline.WithRegistry(reg))
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^run_[0-9a-f]{16}$`), r.ID)
	id, _ := onlyKey(t, r.Interrupts)
	assert.Regexp(t, regexp.MustCompile(`^interrupt_[0-9a-f]{16}$`), id)

	other, _, err := inline.RunInline(context.Background(), g, nil, inline.WithRegistry(reg))
	require.NoError(t, err)
	assert.NotEqual(t, r.ID, other.ID)

	start := time.Now()
	done, _, err := inline.RunInline(context.Background(), build(t, retryThenContinue(3, 5)), nil, inline.WithRegistry(reg))
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, done.Status)
	assert.GreaterOrEqual(t, time.Since(start), 10*time.Millisecond, "two real 5 ms backoffs")
}

func TestInvalidOptionsAreRejectedBeforeAnythingRuns(t *testing.T) {
	t.Parallel()
	g := build(t, minimalLinear())
	for name, opt := range map[string]inline.Option{
		"negative max supersteps": inline.WithMaxSupersteps(-1),
		"negative max steps":      inline.WithMaxSteps(-1),
		"sub-millisecond maximum": inline.WithMaxAttemptElapsed(time.Microsecond),
		"nil clock":               inline.WithClock(nil),
		"nil sleeper":             inline.WithSleeper(nil),
		"nil id generator":        inline.WithIDGenerator(nil),
		"nil option":              nil,
	} {
		_, cps, err := inline.RunInline(context.Background(), g, map[string]any{"value": "x"}, opt)
		assert.ErrorIs(t, err, inline.ErrInvalidOption, name)
		assert.Empty(t, cps, name)
	}
}

// The inline runner accepts the run ids the durable engine accepts, so a
// run it creates can be saved where the engine keeps its runs.
func TestRunIDsTheDurableEngineRefusesAreInvalidOptions(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	g := build(t, minimalLinear())
	input := map[string]any{"value": "x"}
	for name, id := range map[string]string{
		"longer than ports.MaxIDBytes": strings.Repeat("r", ports.MaxIDBytes+1),
		"not UTF-8":                    "run_\xff",
		"with NUL":                     "run_\x00",
		"an idempotency key's form":    "run_" + strings.Repeat("0a", 16),
	} {
		r, cps, err := inline.RunInline(context.Background(), g, input, k.options(inline.WithRunID(id))...)
		assert.ErrorIs(t, err, inline.ErrInvalidOption, name)
		assert.Nil(t, r, name)
		assert.Empty(t, cps, name)
		_, err = inline.NewRun(g, input, k.options(inline.WithRunID(id))...)
		assert.ErrorIs(t, err, inline.ErrInvalidOption, name)
	}
	created, err := inline.NewRun(g, input, k.options(inline.WithRunID(strings.Repeat("r", ports.MaxIDBytes)))...)
	require.NoError(t, err, "an id of ports.MaxIDBytes bytes is valid")
	assert.Len(t, created.ID, ports.MaxIDBytes)
}

func TestMissingRunsAndGraphsAreErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := build(t, minimalLinear())
	_, _, err := inline.StepInline(ctx, g, nil)
	assert.ErrorIs(t, err, inline.ErrNoRun)
	_, _, err = inline.ResumeInline(ctx, g, nil)
	assert.ErrorIs(t, err, inline.ErrNoRun)
	_, _, err = inline.ResolveInterruptInline(ctx, g, nil, "i", "v")
	assert.ErrorIs(t, err, inline.ErrNoRun)
	_, _, err = inline.RunInline(ctx, (*graph.Compiled)(nil), nil)
	assert.ErrorIs(t, err, graph.ErrInvalidGraph)
}

func TestRuntimeSuperstepLimitAppliesToACompiledGraphWithoutOne(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	c := k.compile(build(t, cycleCounter(false, 0)))
	require.Zero(t, c.MaxSupersteps)
	r, _, err := inline.RunInline(context.Background(), c, nil, k.options(inline.WithMaxSupersteps(2))...)
	require.NoError(t, err)
	assertFailedWith(t, r, "max_supersteps_exceeded")
	assert.Equal(t, 2, r.Step)
	assert.Zero(t, c.MaxSupersteps, "the caller's compiled graph is not changed")
}

func TestRuntimeSuperstepLimitLeavesAGraphsOwnLimit(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	own := *k.compile(build(t, cycleCounter(false, 0)))
	own.MaxSupersteps = 2
	r, _, err := inline.RunInline(context.Background(), &own, nil, k.options(inline.WithMaxSupersteps(5))...)
	require.NoError(t, err)
	assertFailedWith(t, r, "max_supersteps_exceeded")
	assert.Equal(t, 2, r.Step, "the graph's own limit holds; the option is for graphs without one")
}

func TestWithoutARegistryModuleNodesDoNotCompile(t *testing.T) {
	t.Parallel()
	_, _, err := inline.RunInline(context.Background(), build(t, minimalLinear()), map[string]any{"value": "x"})
	var compileErr *graph.CompileError
	require.ErrorAs(t, err, &compileErr)
	assert.NotEmpty(t, compileErr.Diagnostics)
}

func TestNewRunOfAnotherGraphCannotBeStepped(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	created, err := inline.NewRun(build(t, minimalLinear()), map[string]any{"value": "x"}, k.options()...)
	require.NoError(t, err)
	other := build(t, graph.New("other").State("s", schema.String()))
	_, cps, err := inline.StepInline(context.Background(), other, created, k.options()...)
	assert.ErrorIs(t, err, superstep.ErrGraphMismatch)
	assert.Empty(t, cps)
}

// TestMaxSuperstepsZeroMeansNoneAndNegativeIsInvalid pins
// WithMaxSupersteps' documented range.
func TestMaxSuperstepsZeroMeansNoneAndNegativeIsInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, err := graph.New("one").
		State("out", schema.String()).
		Node("w", "t.w").
		Edge("s", graph.Start, "w").
		Edge("f", "w", graph.Finish).
		Build()
	require.NoError(t, err)
	reg := node.NewRegistry().MustRegister("t.w", node.Func(func(context.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"out": "x"}, nil
	}))
	r, _, err := inline.RunInline(ctx, g, nil, inline.WithRegistry(reg), inline.WithMaxSupersteps(0))
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, r.Status)
	_, _, err = inline.RunInline(ctx, g, nil, inline.WithRegistry(reg), inline.WithMaxSupersteps(-1))
	assert.ErrorIs(t, err, inline.ErrInvalidOption)
}

// A node asking for an answer described by a schema that contains itself
// (a tree, easy to build in Go) fails with invalid_interrupt; copying or
// walking that schema would overflow the worker's stack, which no recover
// survives.
func TestAnInterruptSchemaThatContainsItselfFailsTheNode(t *testing.T) {
	t.Parallel()
	tree := &schema.Schema{Type: schema.TypeObject}
	tree.Fields = map[string]*schema.Schema{"children": {Type: schema.TypeList, Item: tree}}
	g, err := graph.New("ask-tree").
		State("answer", schema.Map()).
		Node("ask", "t.ask").
		Edge("s", graph.Start, "ask").
		Edge("f", "ask", graph.Finish).
		Output("answer", "answer").
		Build()
	require.NoError(t, err)
	reg := node.NewRegistry().MustRegister("t.ask", node.New(nil, func(context.Context, node.Input) (node.Output, error) {
		return node.Interrupt(node.InterruptRequest{ResumeChannel: "answer", Schema: tree}), nil
	}))
	for _, opts := range [][]inline.Option{{inline.WithRegistry(reg)}, {inline.WithRegistry(reg), inline.OnCallingGoroutine()}} {
		r, _, err := inline.RunInline(context.Background(), g, nil, opts...)
		require.NoError(t, err)
		require.Equal(t, run.StatusFailed, r.Status)
		assert.Contains(t, r.Failure.Details["errors"].(map[string]any)["ask"], "invalid_interrupt: interrupt schema contains itself")
	}
}

// A created run of the same graph id but another version of the graph
// (another hash) is another graph's run too.
func TestNewRunOfAnotherVersionOfTheGraphCannotBeStepped(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	g := build(t, minimalLinear())
	created, err := inline.NewRun(g, map[string]any{"value": "x"}, k.options()...)
	require.NoError(t, err)
	created.GraphHash = "sha256:another-version"
	_, cps, err := inline.StepInline(context.Background(), g, created, k.options()...)
	assert.ErrorIs(t, err, superstep.ErrGraphMismatch)
	assert.Empty(t, cps)
}
