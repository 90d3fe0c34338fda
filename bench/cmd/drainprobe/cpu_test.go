package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMachineStatCountsBusyTimeAndStealApart(t *testing.T) {
	stat := "cpu  100 2 30 5000 40 6 7 8 0 0\ncpu0 50 1 15 2500 20 3 3 4 0 0\nintr 12345\n"
	u, ok := parseMachineStat(stat)
	require.True(t, ok)
	assert.Equal(t, (100+2+30+6+7)*clockTick, u.machine, "user, nice, system, irq and softirq; not idle nor iowait")
	assert.Equal(t, 8*clockTick, u.steal)

	_, ok = parseMachineStat("cpu0 1 2 3 4 5 6 7 8\n")
	assert.False(t, ok, "only the aggregate line counts")
	_, ok = parseMachineStat("cpu  1 2 x 4 5 6 7 8\n")
	assert.False(t, ok)
}

func TestProcessStatSkipsACommandNameWithSpaces(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 120 and 30; the name holds a
	// space and a parenthesis.
	stat := "4242 (drain probe) x) S 1 4242 4242 0 -1 4194304 900 0 0 0 120 30 0 0 20 0 9 0 1000 1 1"
	d, ok := parseProcessStat(stat)
	require.True(t, ok)
	assert.Equal(t, 150*clockTick, d)

	_, ok = parseProcessStat("4242 (short) S 1 2")
	assert.False(t, ok)
}

func TestPerStepSplitsTheMachinesCPUFromThisProcesss(t *testing.T) {
	before := cpuUse{machine: time.Second, steal: 0, process: 200 * time.Millisecond}
	after := cpuUse{machine: 6 * time.Second, steal: 100 * time.Millisecond, process: 1700 * time.Millisecond}
	// 5 s of machine CPU and 1.5 s of this process's over 10,000 steps,
	// 0.1 s stolen from 2 CPUs during 5 s.
	got := perStep(before, after, 10000, 5*time.Second, 2)
	assert.Equal(t, "CPU per step commit: 500 µs on the machine (this process 150 µs, the rest 350 µs); 1.0 % stolen", got)
	assert.Empty(t, perStep(before, after, 0, time.Second, 2))
}
