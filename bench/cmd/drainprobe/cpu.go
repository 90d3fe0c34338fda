package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/stat and /proc/self/stat (USER_HZ,
// 1/100 s on Linux).
const clockTick = 10 * time.Millisecond

// cpuUse is the CPU time the machine and this process had used at one
// moment. Read before and after a drain, it gives the CPU a step commit
// costs, which moves less than the rate on a shared virtual machine whose
// speed drifts between consecutive runs.
type cpuUse struct {
	machine time.Duration // every CPU's user, nice, system, irq and softirq time
	steal   time.Duration // time the hypervisor gave to other guests
	process time.Duration // this process's user and system time
}

// readCPU reads /proc; ok is false where there is none.
func readCPU() (cpuUse, bool) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuUse{}, false
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return cpuUse{}, false
	}
	u, ok := parseMachineStat(string(stat))
	if !ok {
		return cpuUse{}, false
	}
	if u.process, ok = parseProcessStat(string(self)); !ok {
		return cpuUse{}, false
	}
	return u, true
}

// parseMachineStat reads the aggregate "cpu" line of /proc/stat: user
// nice system idle iowait irq softirq steal …, in clock ticks.
func parseMachineStat(stat string) (cpuUse, bool) {
	for line := range strings.Lines(stat) {
		fields := strings.Fields(line)
		if len(fields) < 9 || fields[0] != "cpu" {
			continue
		}
		var ticks [8]int64
		for i := range ticks {
			n, err := strconv.ParseInt(fields[i+1], 10, 64)
			if err != nil {
				return cpuUse{}, false
			}
			ticks[i] = n
		}
		busy := ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]
		return cpuUse{machine: time.Duration(busy) * clockTick, steal: time.Duration(ticks[7]) * clockTick}, true
	}
	return cpuUse{}, false
}

// parseProcessStat reads utime and stime (fields 14 and 15) of
// /proc/self/stat. The command name (field 2) is in parentheses and may
// hold spaces, so fields are counted after its closing parenthesis.
func parseProcessStat(stat string) (time.Duration, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(stat[i+1:]) // from field 3, the state
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * clockTick, true
}

// perStep describes the CPU used between before and after per step
// commit: the machine's, this process's (the engine and its driver) and
// the rest (PostgreSQL, the kernel, other work), and the share of time
// stolen by the hypervisor.
func perStep(before, after cpuUse, steps int, elapsed time.Duration, cpus int) string {
	if steps <= 0 || elapsed <= 0 {
		return ""
	}
	machine, process := after.machine-before.machine, after.process-before.process
	per := func(d time.Duration) string {
		return fmt.Sprintf("%.0f µs", float64(d.Microseconds())/float64(steps))
	}
	steal := 100 * float64(after.steal-before.steal) / (float64(elapsed) * float64(cpus))
	return fmt.Sprintf("CPU per step commit: %s on the machine (this process %s, the rest %s); %.1f %% stolen",
		per(machine), per(process), per(machine-process), steal)
}
