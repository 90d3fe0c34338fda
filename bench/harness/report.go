package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Status says whether a scenario produced numbers.
type Status string

// Scenario statuses.
const (
	StatusMeasured Status = "measured"
	// StatusRecorded marks figures copied from an earlier run on this kind
	// of machine, not measured in this run.
	StatusRecorded Status = "recorded"
	// StatusSkipped: the scenario could not run here (no database…).
	StatusSkipped Status = "skipped"
	// StatusNotImplemented: a hook for a scenario whose system does not
	// exist yet; it never carries numbers.
	StatusNotImplemented Status = "not_implemented"
	// StatusFailed: the scenario ran but an error or an invariant gate
	// failed; its numbers do not count.
	StatusFailed Status = "failed"
)

// Result is one system's measurement of one scenario.
type Result struct {
	Scenario string  `json:"scenario"`
	System   string  `json:"system"`
	Status   Status  `json:"status"`
	Note     string  `json:"note,omitempty"`
	Summary  Summary `json:"summary"`
	// Throughput is operations per second where the scenario is a
	// throughput scenario (jobs/s, commits/s); zero otherwise.
	Throughput float64  `json:"throughput_per_s,omitempty"`
	Samples    []Sample `json:"samples,omitempty"`
	// Plan is the query plan of the scenario's key statement (EXPLAIN
	// output), where the scenario records one; JSON only.
	Plan string `json:"plan,omitempty"`
}

// Comparison puts ours beside a peer for one scenario. Ratios are
// ours ÷ peer: below 1 means ours costs less time or fewer allocations
// (for throughput, above 1 means ours does more per second).
type Comparison struct {
	Scenario   string  `json:"scenario"`
	Ours       string  `json:"ours"`
	Peer       string  `json:"peer"`
	TimeRatio  float64 `json:"time_ratio,omitempty"`
	AllocRatio float64 `json:"alloc_ratio,omitempty"`
	// Goal is empty for a comparison reported for reference only: it has
	// no goal, and Met means nothing.
	Goal string `json:"goal"`
	Met  bool   `json:"met"`
	Note string `json:"note,omitempty"`
	// RoundRatios is the time (or throughput) ratio of each repeat alone,
	// where both sides ran the same alternating repeats: how far the
	// machine's noise moves the ratio the verdict is taken on.
	RoundRatios []float64 `json:"round_ratios,omitempty"`
}

// Report is everything one bench command run produced.
type Report struct {
	Profile     string       `json:"profile"`
	StartedAt   time.Time    `json:"started_at"`
	Duration    string       `json:"duration"`
	Machine     Machine      `json:"machine"`
	Results     []Result     `json:"results"`
	Comparisons []Comparison `json:"comparisons"`
}

// Machine describes where the report was measured.
type Machine struct {
	GOOS       string  `json:"goos"`
	GOARCH     string  `json:"goarch"`
	CPUs       int     `json:"cpus"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	CPUModel   string  `json:"cpu_model,omitempty"`
	MemoryGiB  float64 `json:"memory_gib,omitempty"`
	GoVersion  string  `json:"go_version"`
	LoadAvg    string  `json:"load_average,omitempty"`
	// Database describes the PostgreSQL server of the database scenarios.
	Database string `json:"database,omitempty"`
}

// DescribeMachine reads what it can about this machine.
func DescribeMachine() Machine {
	m := Machine{
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
	}
	m.CPUModel = firstField("/proc/cpuinfo", "model name")
	if kb := firstField("/proc/meminfo", "MemTotal"); kb != "" {
		var n float64
		if _, err := fmt.Sscanf(kb, "%f", &n); err == nil {
			m.MemoryGiB = n / (1 << 20)
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}

// firstField returns the value of the first "key : value" line of a
// /proc file, or "".
func firstField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Find returns the result of system in scenario.
func (r *Report) Find(scenario, system string) (Result, bool) {
	for _, x := range r.Results {
		if x.Scenario == scenario && x.System == system {
			return x, true
		}
	}
	return Result{}, false
}

// CompareCost adds the comparison of two cost results (time per op and
// allocations per op, lower is better): the goal is met when both ratios
// are at most maxRatio. Nothing is added unless both were measured or
// recorded.
func (r *Report) CompareCost(scenario, ours, peer string, maxRatio float64) {
	o, ok1 := r.Find(scenario, ours)
	p, ok2 := r.Find(scenario, peer)
	c := Comparison{Scenario: scenario, Ours: ours, Peer: peer,
		Goal: fmt.Sprintf("time and allocs ≤ %.1f× %s", maxRatio, peer)}
	if !ok1 || !ok2 || !hasNumbers(o) || !hasNumbers(p) {
		c.Note = "not compared: a side has no numbers"
		r.Comparisons = append(r.Comparisons, c)
		return
	}
	c.TimeRatio = o.Summary.NsPerOp / p.Summary.NsPerOp
	if p.Summary.AllocsPerOp > 0 {
		c.AllocRatio = o.Summary.AllocsPerOp / p.Summary.AllocsPerOp
	}
	c.Met = c.TimeRatio <= maxRatio && c.AllocRatio <= maxRatio
	c.RoundRatios = roundRatios(o, p, 1, costRatio)
	if p.Status == StatusRecorded {
		c.Note = "peer figures recorded, not measured in this run"
	}
	r.Comparisons = append(r.Comparisons, c)
}

// CompareThroughput adds the comparison of two throughput results (higher
// is better): met when ours ÷ peer is at least minRatio.
func (r *Report) CompareThroughput(scenario, ours, peer string, minRatio float64) {
	r.compareThroughput(scenario, ours, peer, minRatio, fmt.Sprintf("throughput ≥ %.1f× %s", minRatio, peer))
}

// ReferenceThroughput puts ours's throughput beside peer's in scenario
// without a goal.
func (r *Report) ReferenceThroughput(scenario, ours, peer string) {
	r.compareThroughput(scenario, ours, peer, 0, "")
}

func (r *Report) compareThroughput(scenario, ours, peer string, minRatio float64, goal string) {
	o, ok1 := r.Find(scenario, ours)
	p, ok2 := r.Find(scenario, peer)
	c := Comparison{Scenario: scenario, Ours: ours, Peer: peer, Goal: goal}
	if !ok1 || !ok2 || !hasNumbers(o) || !hasNumbers(p) || p.Throughput == 0 {
		c.Note = "not compared: a side has no numbers"
		r.Comparisons = append(r.Comparisons, c)
		return
	}
	c.TimeRatio = o.Throughput / p.Throughput
	c.Met = goal != "" && c.TimeRatio >= minRatio
	c.RoundRatios = roundRatios(o, p, 1, perSecondRatio)
	r.Comparisons = append(r.Comparisons, c)
}

// CompareBest compares the best throughput of ours and of peer over every
// scenario whose name starts with prefix (each at its own best setting).
func (r *Report) CompareBest(name, prefix, ours, peer string, minRatio float64) {
	best := func(system string) (Result, bool) {
		var b Result
		found := false
		for _, x := range r.Results {
			if x.System == system && strings.HasPrefix(x.Scenario, prefix) && hasNumbers(x) && x.Throughput > b.Throughput {
				b, found = x, true
			}
		}
		return b, found
	}
	o, ok1 := best(ours)
	p, ok2 := best(peer)
	c := Comparison{Scenario: name, Ours: ours, Peer: peer, Goal: fmt.Sprintf("best throughput ≥ %.1f× %s's best", minRatio, peer)}
	if !ok1 || !ok2 {
		c.Note = "not compared: a side has no numbers"
	} else {
		c.TimeRatio = o.Throughput / p.Throughput
		c.Met = c.TimeRatio >= minRatio
		if o.Scenario == p.Scenario { // else their rounds were not run side by side
			c.RoundRatios = roundRatios(o, p, 1, perSecondRatio)
		}
		c.Note = fmt.Sprintf("%s at %s vs %s at %s", ours, o.Scenario, peer, p.Scenario)
	}
	r.Comparisons = append(r.Comparisons, c)
}

// CompareLatencyP50 compares p50 latencies: met when ours ÷ peer is at
// most maxRatio.
func (r *Report) CompareLatencyP50(scenario, ours, peer string, maxRatio float64) {
	o, ok1 := r.Find(scenario, ours)
	p, ok2 := r.Find(scenario, peer)
	c := Comparison{Scenario: scenario, Ours: ours, Peer: peer, Goal: fmt.Sprintf("p50 latency ≤ %.1f× %s", maxRatio, peer)}
	if !ok1 || !ok2 || !hasNumbers(o) || !hasNumbers(p) || p.Summary.P50Ns == 0 {
		c.Note = "not compared: a side has no numbers"
	} else {
		c.TimeRatio = o.Summary.P50Ns / p.Summary.P50Ns
		c.Met = c.TimeRatio <= maxRatio
	}
	r.Comparisons = append(r.Comparisons, c)
}

// CompareLatencyGrowth compares one system's p50 latency in a large
// scenario with its p50 in a small one (the same operation at two sizes):
// met when large ÷ small is at most maxRatio.
func (r *Report) CompareLatencyGrowth(name, system, small, large string, maxRatio float64) {
	l, ok1 := r.Find(large, system)
	s, ok2 := r.Find(small, system)
	c := Comparison{Scenario: name, Ours: large, Peer: small,
		Goal: fmt.Sprintf("%s p50 latency ≤ %.1f× at %s", system, maxRatio, small)}
	if !ok1 || !ok2 || !hasNumbers(l) || !hasNumbers(s) || s.Summary.P50Ns == 0 {
		c.Note = "not compared: a size has no numbers"
	} else {
		c.TimeRatio = l.Summary.P50Ns / s.Summary.P50Ns
		c.Met = c.TimeRatio <= maxRatio
	}
	r.Comparisons = append(r.Comparisons, c)
}

// CompareMoments compares ours' moment commits per second (throughput ×
// commitsPerOp) with a peer scenario's throughput: met at minRatio or more.
func (r *Report) CompareMoments(oursScenario, ours, peerScenario, peer string, commitsPerOp, minRatio float64) {
	o, ok1 := r.Find(oursScenario, ours)
	p, ok2 := r.Find(peerScenario, peer)
	c := Comparison{Scenario: oursScenario + " vs " + peerScenario, Ours: ours, Peer: peer,
		Goal: fmt.Sprintf("moment commits/s ≥ %.1f× the limit probe", minRatio)}
	if !ok1 || !ok2 || !hasNumbers(o) || !hasNumbers(p) || p.Throughput == 0 {
		c.Note = "not compared: no run at this client count"
	} else {
		c.TimeRatio = o.Throughput * commitsPerOp / p.Throughput
		c.Met = c.TimeRatio >= minRatio
		c.RoundRatios = roundRatios(o, p, commitsPerOp, perSecondRatio)
	}
	r.Comparisons = append(r.Comparisons, c)
}

func hasNumbers(r Result) bool { return r.Status == StatusMeasured || r.Status == StatusRecorded }

// roundRatios pairs the samples of two results repeat by repeat and
// returns ratio(ours, peer) of their time per operation, the first scaled
// by scale, for each pair; nil unless both ran the same number (more than
// one) of repeats, measured in this run: only then is sample i of each
// from the same alternating round.
func roundRatios(o, p Result, scale float64, ratio func(ours, peer float64) float64) []float64 {
	if len(o.Samples) < 2 || len(o.Samples) != len(p.Samples) || o.Status != StatusMeasured || p.Status != StatusMeasured {
		return nil
	}
	out := make([]float64, len(o.Samples))
	for i := range o.Samples {
		ours, peer := o.Samples[i].NsPerOp/scale, p.Samples[i].NsPerOp
		if ours <= 0 || peer <= 0 {
			return nil
		}
		out[i] = ratio(ours, peer)
	}
	return out
}

// costRatio is ours ÷ peer in time per operation.
func costRatio(ours, peer float64) float64 { return ours / peer }

// perSecondRatio is ours ÷ peer in operations per second, from times per
// operation.
func perSecondRatio(ours, peer float64) float64 { return peer / ours }

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteMarkdown writes the results and comparisons as Markdown tables.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Profile `%s`, %s, %s/%s, %s, %d CPUs (GOMAXPROCS %d), %.0f GiB, %s, load %s.",
		r.Profile, r.StartedAt.Format(time.RFC3339), m.GOOS, m.GOARCH, m.CPUModel, m.CPUs, m.GOMAXPROCS, m.MemoryGiB, m.GoVersion, m.LoadAvg)
	if m.Database != "" {
		fmt.Fprintf(&b, " %s.", m.Database)
	}
	b.WriteString("\n\n")
	b.WriteString("| scenario | system | status | time/op (median) | p50 | p95 | p99 | allocs/op | B/op | throughput/s |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Results {
		if !hasNumbers(x) {
			fmt.Fprintf(&b, "| %s | %s | %s | – | – | – | – | – | – | – |\n", x.Scenario, x.System, statusText(x))
			continue
		}
		s := x.Summary
		tp := "–"
		if x.Throughput > 0 {
			tp = fmt.Sprintf("%.0f", x.Throughput)
		}
		allocs, bytes := "–", "–"
		if s.AllocsPerOp > 0 || s.BytesPerOp > 0 { // only cost scenarios count allocations
			allocs, bytes = fmt.Sprintf("%.0f", s.AllocsPerOp), fmt.Sprintf("%.0f", s.BytesPerOp)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Scenario, x.System, statusText(x),
			dur(s.NsPerOp), dur(s.P50Ns), dur(s.P95Ns), dur(s.P99Ns), allocs, bytes, tp)
	}
	if len(r.Comparisons) > 0 {
		b.WriteString("\n| scenario | ours ÷ peer | time ratio | allocs ratio | goal | met |\n")
		b.WriteString("|---|---|---:|---:|---|---|\n")
		for _, c := range r.Comparisons {
			goal, met := c.Goal, "no"
			switch {
			case goal == "":
				goal, met = "none (for reference)", "–"
			case c.Met:
				met = "yes"
			}
			if c.Note != "" {
				met += " (" + c.Note + ")"
			}
			if len(c.RoundRatios) > 0 {
				met += " (per round " + roundList(c.RoundRatios) + ")"
			}
			fmt.Fprintf(&b, "| %s | %s ÷ %s | %s | %s | %s | %s |\n", c.Scenario, c.Ours, c.Peer,
				ratio(c.TimeRatio), ratio(c.AllocRatio), goal, met)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func statusText(x Result) string {
	if x.Note == "" {
		return string(x.Status)
	}
	return string(x.Status) + ": " + x.Note
}

// roundList prints ratios in repeat order, "1.75 / 1.88 / 2.01".
func roundList(rs []float64) string {
	parts := make([]string, len(rs))
	for i, f := range rs {
		parts[i] = ratio(f)
	}
	return strings.Join(parts, " / ")
}

func ratio(f float64) string {
	if f == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", f)
}

// dur prints nanoseconds with a readable unit; zero (not measured) is "–".
func dur(ns float64) string {
	switch {
	case ns == 0:
		return "–"
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}
