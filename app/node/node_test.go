package node_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/schema"
)

// The registry is what the compiler resolves implementations through.
var _ graph.Implementations = (*node.Registry)(nil)

func echo() node.Node {
	return node.Func(func(context.Context, map[string]any) (map[string]any, error) { return nil, nil })
}

func TestRegistryRejectsBadAndDuplicateRefs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ref  string
		node node.Node
		want error
	}{
		{"an empty ref", "", echo(), node.ErrInvalidRef},
		{"a ref starting with $", "$start", echo(), node.ErrInvalidRef},
		{"a nil node", "app.nil", nil, node.ErrInvalidRef},
		{"a nil pointer node", "app.nil.pointer", (*pointerNode)(nil), node.ErrInvalidRef},
		{"a function node without a function", "app.nil.func", node.Func(nil), node.ErrInvalidRef},
		{"a call node without a call", "app.nil.call", node.New(nil, nil), node.ErrInvalidRef},
		{"a ref registered twice", "app.echo", echo(), node.ErrDuplicateRef},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := node.NewRegistry().MustRegister("app.echo", echo())
			assert.ErrorIs(t, reg.Register(tc.ref, tc.node), tc.want)
			assert.Equal(t, []string{"app.echo"}, reg.Refs(), "a rejected registration changes nothing")
		})
	}
	assert.Panics(t, func() { node.NewRegistry().MustRegister("", echo()) })
}

func TestRegistryAnswersConfigSchemasForRegisteredRefsOnly(t *testing.T) {
	t.Parallel()
	configSchema := schema.Object(map[string]*schema.Schema{"to": schema.String().AsRequired()})
	var reg node.Registry // the zero value is usable
	require.NoError(t, reg.Register("app.copy", node.New(configSchema, func(context.Context, node.Input) (node.Output, error) { return node.Output{}, nil })))
	require.NoError(t, reg.Register("app.any", echo()))

	got, ok := reg.ConfigSchema("app.copy")
	require.True(t, ok)
	assert.Equal(t, configSchema, got)
	got, ok = reg.ConfigSchema("app.any")
	assert.True(t, ok)
	assert.Nil(t, got, "Func nodes accept any config")
	_, ok = reg.ConfigSchema("app.missing")
	assert.False(t, ok)
	n, ok := reg.Lookup("app.copy")
	assert.True(t, ok)
	assert.NotNil(t, n)
}

func TestRegistryLetsConfigSchemaPanicsReachTheCompiler(t *testing.T) {
	t.Parallel()
	reg := node.NewRegistry().MustRegister("app.bad", panicky{})
	assert.PanicsWithValue(t, "schema exploded", func() { reg.ConfigSchema("app.bad") })
}

type panicky struct{}

func (panicky) ConfigSchema() *schema.Schema { panic("schema exploded") }
func (panicky) Call(context.Context, node.Input) (node.Output, error) {
	return node.Output{}, nil
}

func TestOutputIsAnUpdateAnInterruptOrNeither(t *testing.T) {
	t.Parallel()
	update, ok := node.Update(map[string]any{"a": 1}).AsUpdate()
	assert.True(t, ok)
	assert.Equal(t, map[string]any{"a": 1}, update)
	_, ok = node.Update(map[string]any{}).AsInterrupt()
	assert.False(t, ok)

	update, ok = node.Update(nil).AsUpdate()
	assert.True(t, ok, "a nil update is an empty update")
	assert.Empty(t, update)

	req, ok := node.Interrupt(node.InterruptRequest{ResumeChannel: "answer"}).AsInterrupt()
	assert.True(t, ok)
	assert.Equal(t, "answer", req.ResumeChannel)
	_, ok = node.Interrupt(node.InterruptRequest{}).AsUpdate()
	assert.False(t, ok)

	var zero node.Output
	_, isUpdate := zero.AsUpdate()
	_, isInterrupt := zero.AsInterrupt()
	assert.False(t, isUpdate || isInterrupt)
}

func TestPermanentMarksErrorsWithoutHidingThem(t *testing.T) {
	t.Parallel()
	cause := errors.New("quota exhausted")
	err := fmt.Errorf("call api: %w", node.Permanent(cause))
	assert.True(t, node.IsPermanent(err))
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, "call api: quota exhausted", err.Error())
	assert.False(t, node.IsPermanent(cause))
	assert.NoError(t, node.Permanent(nil))
}

func TestTaskTravelsInTheContext(t *testing.T) {
	t.Parallel()
	_, ok := node.TaskFrom(context.Background())
	assert.False(t, ok)
	task := node.Task{RunID: "r", NodeID: "n", TaskID: "r:0:n", Attempt: 1, IdempotencyKey: "r:0:n:1"}
	got, ok := node.TaskFrom(node.WithTask(context.Background(), task))
	assert.True(t, ok)
	assert.Equal(t, task, got)
}

type greetConfig struct {
	Greeting string  `json:"greeting"`
	Times    int     `json:"times"`
	Weight   float64 `json:"weight"`
}

func TestTypedDecodesConfigIntoAStruct(t *testing.T) {
	t.Parallel()
	configSchema := schema.Object(map[string]*schema.Schema{"greeting": schema.String()})
	greet := node.Typed(configSchema, func(_ context.Context, state map[string]any, cfg greetConfig) (map[string]any, error) {
		return map[string]any{"out": fmt.Sprintf("%s %v x%d w%.1f", cfg.Greeting, state["name"], cfg.Times, cfg.Weight)}, nil
	})
	assert.Equal(t, configSchema, greet.ConfigSchema())

	out, err := greet.Call(context.Background(), node.Input{
		State:  map[string]any{"name": "ada"},
		Config: map[string]any{"greeting": "hi", "times": int64(2), "weight": 0.5},
	})
	require.NoError(t, err)
	update, _ := out.AsUpdate()
	assert.Equal(t, map[string]any{"out": "hi ada x2 w0.5"}, update)

	_, err = greet.Call(context.Background(), node.Input{Config: map[string]any{"times": "two"}})
	require.Error(t, err)
	assert.True(t, node.IsPermanent(err), "a config that cannot decode never succeeds on retry")
}

func TestFuncAndTypedPassErrorsThrough(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	f := node.Func(func(context.Context, map[string]any) (map[string]any, error) { return nil, boom })
	_, err := f.Call(context.Background(), node.Input{})
	assert.ErrorIs(t, err, boom)
	assert.False(t, node.IsPermanent(err))

	typed := node.Typed(nil, func(context.Context, map[string]any, struct{}) (map[string]any, error) { return nil, boom })
	_, err = typed.Call(context.Background(), node.Input{})
	assert.ErrorIs(t, err, boom)
}

func TestTypedCallCanInterrupt(t *testing.T) {
	t.Parallel()
	type askConfig struct {
		Field string `json:"field"`
	}
	ask := node.TypedCall(nil, func(_ context.Context, in node.Input, cfg askConfig) (node.Output, error) {
		if v, ok := in.State[cfg.Field]; ok {
			return node.Update(map[string]any{"out": v}), nil
		}
		return node.Interrupt(node.InterruptRequest{ResumeChannel: cfg.Field}), nil
	})
	out, err := ask.Call(context.Background(), node.Input{Config: map[string]any{"field": "answer"}})
	require.NoError(t, err)
	req, ok := out.AsInterrupt()
	require.True(t, ok)
	assert.Equal(t, "answer", req.ResumeChannel)
}

// pointerNode is a node implemented on a pointer receiver.
type pointerNode struct{ field string }

func (n *pointerNode) ConfigSchema() *schema.Schema { return nil }

func (n *pointerNode) Call(context.Context, node.Input) (node.Output, error) {
	return node.Update(map[string]any{n.field: "v"}), nil
}
