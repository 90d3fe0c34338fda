package cli

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// An empty listing says there is nothing to list, on stderr, rather than
// print a table header over no rows; its JSON form stays an empty array.
func TestEmptyListingsSayThereIsNothingToList(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)

	res := c.ok("runs", "list")
	assert.Empty(t, res.stdout, "no table header over no rows")
	assert.Equal(t, "no runs\n", res.stderr)
	assert.JSONEq(t, `{"runs":[],"has_more":false}`, c.ok("runs", "list", "--json").stdout)

	res = c.ok("interrupts", "list")
	assert.Empty(t, res.stdout)
	assert.Equal(t, "no open interrupts\n", res.stderr)
	assert.JSONEq(t, `[]`, c.ok("interrupts", "list", "--json").stdout)
}

func TestEmptyListingsOfARunSayThereIsNothingToList(t *testing.T) {
	t.Parallel()
	c, _, r := ownNodesRun(t)

	res := c.ok("runs", "events", r.ID, "--after", fmt.Sprint(r.EventSeq))
	assert.Empty(t, res.stdout)
	assert.Equal(t, fmt.Sprintf("no events after %d (the run's last event is %d)\n", r.EventSeq, r.EventSeq), res.stderr)
	var page eventPageJSON
	c.okJSON(&page, "runs", "events", r.ID, "--after", fmt.Sprint(r.EventSeq))
	assert.Empty(t, page.Events)
	assert.Contains(t, c.ok("runs", "events", r.ID, "--after", fmt.Sprint(r.EventSeq), "--json").stdout, `"events": []`)

	var answered runJSON
	c.okJSON(&answered, "interrupts", "resolve", r.ID, "question", "--string", "yes")
	res = c.ok("interrupts", "list", r.ID)
	assert.Empty(t, res.stdout)
	assert.Equal(t, "no open interrupts in run "+r.ID+"\n", res.stderr)
	assert.JSONEq(t, `[]`, c.ok("interrupts", "list", r.ID, "--json").stdout)
}

// A run whose events pruning deleted says so, rather than look as if it
// never had any.
func TestAnEmptyListingOfPrunedEventsSaysTheyWerePruned(t *testing.T) {
	t.Parallel()
	c, _, r := ownNodesRun(t)
	c.ok("prune", "--event-retention", "0s", "--run-retention", "90d")

	res := c.ok("runs", "events", r.ID)
	assert.Empty(t, res.stdout)
	assert.Equal(t, fmt.Sprintf("no events: pruning deleted the run's %d event(s)\n", r.EventSeq), res.stderr)
}
