package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDemoCommandPrintsACompletedRun(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"demo"})
	require.NoError(t, cmd.ExecuteContext(context.Background()))
	assert.Contains(t, out.String(), "done after 6 supersteps")
	assert.Contains(t, out.String(), "interrupt_resolved")
}

func TestDemoCommandRejectsArguments(t *testing.T) {
	t.Parallel()
	cmd := newRootCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"demo", "extra"})
	assert.Error(t, cmd.ExecuteContext(context.Background()))
}
