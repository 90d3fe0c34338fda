package conformance

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Status is the outcome of one invariant in a Report.
type Status string

// Statuses. NotRun means the invariant's subtest never started (for
// example because go test -run filtered it out).
const (
	StatusPass   Status = "pass"
	StatusFail   Status = "fail"
	StatusSkip   Status = "skip"
	StatusNotRun Status = "not_run"
)

// Result is one invariant's outcome.
type Result struct {
	Invariant Invariant
	Status    Status
	// Messages holds the failure and skip messages when the suite ran on a
	// T that records them (RunStandalone); under go test they are in the
	// test log instead.
	Messages []string
	Elapsed  time.Duration
}

// Report lists every invariant of the suite with its outcome, in the
// suite's order (area, then ID).
type Report struct {
	mu      sync.Mutex
	results map[string]*Result
}

func newReport() *Report {
	r := &Report{results: make(map[string]*Result, len(registry))}
	for _, inv := range registry {
		r.results[inv.ID] = &Result{Invariant: inv, Status: StatusNotRun}
	}
	return r
}

func (r *Report) record(id string, status Status, messages []string, elapsed time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.results[id]
	res.Status = status
	res.Messages = append([]string(nil), messages...)
	res.Elapsed = elapsed
}

// Results returns every invariant's result in suite order.
func (r *Report) Results() []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Result, 0, len(registry))
	for _, inv := range registry {
		res := *r.results[inv.ID]
		res.Messages = append([]string(nil), res.Messages...)
		out = append(out, res)
	}
	return out
}

// Result returns the outcome of the invariant with the given ID.
func (r *Report) Result(id string) (Result, bool) {
	for _, res := range r.Results() {
		if res.Invariant.ID == id {
			return res, true
		}
	}
	return Result{}, false
}

// IDs returns the IDs of the invariants whose outcome is status.
func (r *Report) IDs(status Status) []string {
	var ids []string
	for _, res := range r.Results() {
		if res.Status == status {
			ids = append(ids, res.Invariant.ID)
		}
	}
	return ids
}

// Failed returns the IDs of the failed invariants.
func (r *Report) Failed() []string { return r.IDs(StatusFail) }

// NotRun returns the IDs of the invariants whose subtest never started: a
// go test -run filter left them out, or the suite was cut short. Either
// keeps the report from passing, so that a partial run never reads as a
// pass.
func (r *Report) NotRun() []string { return r.IDs(StatusNotRun) }

// Passed reports whether every invariant that ran passed and none was left
// unrun. Skipped invariants (disabled features) do not count against it.
func (r *Report) Passed() bool {
	for _, res := range r.Results() {
		if res.Status == StatusFail || res.Status == StatusNotRun {
			return false
		}
	}
	return true
}

// String renders one line per invariant plus a totals line, the format the
// CLI prints.
func (r *Report) String() string {
	var b strings.Builder
	counts := map[Status]int{}
	for _, res := range r.Results() {
		counts[res.Status]++
		fmt.Fprintf(&b, "%-8s %-12s %s\n", strings.ToUpper(string(res.Status)), res.Invariant.ID, res.Invariant.Behaviour)
		for _, m := range res.Messages {
			for _, line := range strings.Split(strings.TrimRight(m, "\n"), "\n") {
				fmt.Fprintf(&b, "         %s\n", line)
			}
		}
	}
	fmt.Fprintf(&b, "%d invariants: %d pass, %d fail, %d skip, %d not run\n",
		len(registry), counts[StatusPass], counts[StatusFail], counts[StatusSkip], counts[StatusNotRun])
	return b.String()
}
