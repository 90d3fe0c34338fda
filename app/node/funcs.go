package node

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/docketgo/docket/domain/schema"
)

// CallFunc handles one attempt; see Node.Call.
type CallFunc func(ctx context.Context, in Input) (Output, error)

type funcNode struct {
	schema *schema.Schema
	call   CallFunc
}

func (n funcNode) ConfigSchema() *schema.Schema { return n.schema.Clone() }

func (n funcNode) Call(ctx context.Context, in Input) (Output, error) { return n.call(ctx, in) }

// New returns a Node with the given config schema (nil accepts any
// portable config) whose attempts are handled by call. Use it for nodes
// that interrupt or need the task identity.
func New(configSchema *schema.Schema, call CallFunc) Node {
	return funcNode{schema: configSchema.Clone(), call: call}
}

// Func returns a Node that accepts any config and writes the update fn
// returns. It is the shortest way to write a node.
func Func(fn func(ctx context.Context, state map[string]any) (map[string]any, error)) Node {
	if fn == nil {
		return funcNode{} // refused by Register
	}
	return New(nil, func(ctx context.Context, in Input) (Output, error) {
		update, err := fn(ctx, in.State)
		if err != nil {
			return Output{}, err
		}
		return Update(update), nil
	})
}

// Typed returns a Node whose config, validated against configSchema by the
// compiler, is decoded into C (through JSON, so C's json tags apply) before
// fn runs. A config that does not decode is a permanent failure: retrying
// cannot fix it.
func Typed[C any](configSchema *schema.Schema, fn func(ctx context.Context, state map[string]any, cfg C) (map[string]any, error)) Node {
	if fn == nil {
		return funcNode{} // refused by Register
	}
	return TypedCall(configSchema, func(ctx context.Context, in Input, cfg C) (Output, error) {
		update, err := fn(ctx, in.State, cfg)
		if err != nil {
			return Output{}, err
		}
		return Update(update), nil
	})
}

// TypedCall is Typed for nodes that need the whole Input or interrupt.
func TypedCall[C any](configSchema *schema.Schema, fn func(ctx context.Context, in Input, cfg C) (Output, error)) Node {
	if fn == nil {
		return funcNode{} // refused by Register
	}
	return New(configSchema, func(ctx context.Context, in Input) (Output, error) {
		cfg, err := DecodeConfig[C](in.Config)
		if err != nil {
			return Output{}, Permanent(err)
		}
		return fn(ctx, in, cfg)
	})
}

// DecodeConfig decodes a portable config map into C through JSON.
func DecodeConfig[C any](config map[string]any) (C, error) {
	var cfg C
	raw, err := json.Marshal(config)
	if err != nil {
		return cfg, fmt.Errorf("encode node config: %w", err)
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return cfg, fmt.Errorf("decode node config into %T: %w", cfg, err)
	}
	return cfg, nil
}
