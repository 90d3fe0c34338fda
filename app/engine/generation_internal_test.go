package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/docketgo/docket/app/node"
)

func TestRegistryGenerationFollowsTheRegisteredRefs(t *testing.T) {
	t.Parallel()
	noop := node.New(nil, func(context.Context, node.Input) (node.Output, error) { return node.Output{}, nil })
	reg := node.NewRegistry().MustRegister("b", noop)
	gen := registryGeneration(Config{Nodes: reg})
	first := gen()
	assert.Equal(t, "b\x00", first)
	assert.Equal(t, first, gen(), "no node added: the same generation")
	reg.MustRegister("a", noop)
	assert.Equal(t, "a\x00b\x00", gen(), "a node added: a new generation")
}
