package conformance_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docketgo/docket/conformance"
)

func TestInvariantIDsAreStableAndWellFormed(t *testing.T) {
	idPattern := regexp.MustCompile(`^([A-Z]+)-(\d{3})$`)
	behaviourPattern := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	areas := conformance.Areas()
	ids := map[string]bool{}
	behaviours := map[string]bool{}
	for _, inv := range conformance.Invariants() {
		m := idPattern.FindStringSubmatch(inv.ID)
		if m == nil {
			t.Errorf("%q is not AREA-NNN", inv.ID)
			continue
		}
		if m[1] != string(inv.Area) || !slices.Contains(areas, inv.Area) {
			t.Errorf("%s: area %q does not match its ID or is not listed", inv.ID, inv.Area)
		}
		if ids[inv.ID] {
			t.Errorf("%s is registered twice", inv.ID)
		}
		ids[inv.ID] = true
		if !behaviourPattern.MatchString(inv.Behaviour) || behaviours[inv.Behaviour] {
			t.Errorf("%s: behaviour %q must be unique snake_case", inv.ID, inv.Behaviour)
		}
		behaviours[inv.Behaviour] = true
		if inv.Summary == "" || inv.Source == "" {
			t.Errorf("%s: summary and source are required", inv.ID)
		}
	}
}

// Every §20 invariant of the PostgreSQL spec maps to at least one check;
// 56 and 57 are PostgreSQL-only and run behind the SchemaGuards feature.
func TestEverySpecInvariantIsCovered(t *testing.T) {
	covered := map[int][]string{}
	for _, inv := range conformance.Invariants() {
		for _, n := range inv.Spec {
			covered[n] = append(covered[n], inv.ID)
		}
	}
	for n := 1; n <= 57; n++ {
		if len(covered[n]) == 0 {
			t.Errorf("§20 invariant %d has no check", n)
		}
	}
	for n := range covered {
		if n < 1 || n > 57 {
			t.Errorf("unknown §20 invariant %d", n)
		}
	}
	for _, id := range append(covered[56], covered[57]...) {
		inv := find(t, id)
		if inv.Requires != conformance.FeatureSchemaGuards {
			t.Errorf("%s covers a PostgreSQL-only invariant and must require SchemaGuards", id)
		}
	}
}

func find(t *testing.T, id string) conformance.Invariant {
	t.Helper()
	for _, inv := range conformance.Invariants() {
		if inv.ID == id {
			return inv
		}
	}
	t.Fatalf("no invariant %s", id)
	return conformance.Invariant{}
}

func TestDocsListEveryInvariant(t *testing.T) {
	doc, err := os.ReadFile("../docs/conformance.md")
	if err != nil {
		t.Fatalf("reading docs/conformance.md: %v", err)
	}
	text := string(doc)
	for _, inv := range conformance.Invariants() {
		line := fmt.Sprintf("`%s` %s", inv.ID, inv.Behaviour)
		if !strings.Contains(text, line) {
			t.Errorf("docs/conformance.md lacks the line for %s (want it to contain %q)", inv.ID, line)
		}
	}
	for _, id := range regexp.MustCompile("`([A-Z]+-\\d{3})`").FindAllStringSubmatch(text, -1) {
		find(t, id[1])
	}
}

func TestDisabledFeaturesSkipWithAReason(t *testing.T) {
	t.Parallel()
	features := quickFeatures
	features.WakeNotifications = false
	report := conformance.RunStandalone(t.Context(), features, memoryFactory)
	for _, res := range report.Results() {
		gated := res.Invariant.Requires != "" && !features.Has(res.Invariant.Requires)
		switch {
		case gated && res.Status != conformance.StatusSkip:
			t.Errorf("%s requires %s (disabled) but is %s", res.Invariant.ID, res.Invariant.Requires, res.Status)
		case gated && (len(res.Messages) == 0 || !strings.Contains(res.Messages[0], string(res.Invariant.Requires))):
			t.Errorf("%s skipped without naming its feature: %v", res.Invariant.ID, res.Messages)
		case !gated && res.Invariant.ID == "OPS-005" && res.Status != conformance.StatusFail:
			t.Errorf("OPS-005 must catch a backend that listens while Features says it does not, got %s", res.Status)
		case !gated && res.Invariant.ID != "OPS-005" && res.Status != conformance.StatusPass:
			t.Errorf("%s: %s, want pass: %v", res.Invariant.ID, res.Status, res.Messages)
		}
	}
}

func TestStandaloneRunnerSurvivesABrokenFactory(t *testing.T) {
	t.Parallel()
	panicking := func(conformance.T) conformance.Adapter { panic("no database") }
	fataling := func(t conformance.T) conformance.Adapter {
		t.Fatalf("cannot connect")
		return conformance.Adapter{}
	}
	empty := func(conformance.T) conformance.Adapter { return conformance.Adapter{} }
	for name, factory := range map[string]conformance.Factory{"panics": panicking, "fatals": fataling, "empty": empty} {
		report := conformance.RunStandalone(context.Background(), conformance.Features{}, factory)
		for _, res := range report.Results() {
			want := conformance.StatusFail
			if res.Invariant.Requires != "" {
				want = conformance.StatusSkip
			}
			if res.Status != want {
				t.Errorf("factory %s: %s is %s, want %s", name, res.Invariant.ID, res.Status, want)
			}
			if want == conformance.StatusFail && len(res.Messages) == 0 {
				t.Errorf("factory %s: %s failed without a message", name, res.Invariant.ID)
			}
		}
		if report.Passed() {
			t.Errorf("factory %s: the report must not pass", name)
		}
		if !strings.Contains(report.String(), "0 pass") {
			t.Errorf("factory %s: summary line %q", name, lastLine(report.String()))
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// recorder is a minimal Subtester that only records names: Run must call
// every invariant by AREA/ID/behaviour.
type recorder struct {
	conformance.T
	names *[]string
	name  string
}

func (r recorder) Run(name string, f func(conformance.T)) bool {
	*r.names = append(*r.names, r.name+"/"+name)
	return true
}

func TestReportListsEveryInvariantEvenWhenNothingRan(t *testing.T) {
	var names []string
	report := conformance.Run(recorder{T: t, names: &names}, conformance.Features{}, memoryFactory)
	results := report.Results()
	if len(results) != len(conformance.Invariants()) {
		t.Fatalf("report has %d results for %d invariants", len(results), len(conformance.Invariants()))
	}
	for _, res := range results {
		if res.Status != conformance.StatusNotRun {
			t.Errorf("%s: %s, want not_run", res.Invariant.ID, res.Status)
		}
	}
	if report.Passed() {
		t.Error("a report with unrun invariants must not pass")
	}
	if len(report.NotRun()) != len(results) {
		t.Errorf("NotRun names %d invariants, want all %d", len(report.NotRun()), len(results))
	}
	want := make([]string, 0, len(conformance.Areas()))
	for _, a := range conformance.Areas() {
		want = append(want, "/"+string(a))
	}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("top-level subtests %v, want one per area %v", names, want)
	}
}

func TestSubtestNamesCarryAreaIDAndBehaviour(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	names := map[string]bool{}
	conformance.RunStandalone(context.Background(), conformance.Features{}, func(t conformance.T) conformance.Adapter {
		mu.Lock()
		names[t.Name()] = true
		mu.Unlock()
		t.Skipf("names only")
		return conformance.Adapter{}
	})
	for _, inv := range conformance.Invariants() {
		if inv.Requires != "" {
			continue
		}
		name := fmt.Sprintf("conformance/%s/%s/%s", inv.Area, inv.ID, inv.Behaviour)
		if !names[name] {
			t.Errorf("no subtest named %s", name)
		}
	}
}
